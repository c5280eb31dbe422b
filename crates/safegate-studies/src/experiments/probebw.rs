//! When the probe causes the cliff it measures for (seed, "When the Probe Causes the Cliff
//! It Is Measuring For" and "The Backlog Does Not Drain Itself Afterward").
//!
//! A round-by-round model of BBR's ProbeBW cycle (gains 1.25, 0.75, then six rounds at 1)
//! paced on a bandwidth estimate held by BBR's windowed-maximum filter over one cycle of
//! delivered rate, read at each cycle's start. Downstream capacity, normally equal to the
//! estimate, collapses to a fraction `c` as a probe round begins. A round at gain `g` moves
//! the queue by `g·estimate − c` (never below empty). The seed's tables: the drain round adds
//! `0.75 − c` (it stops draining exactly at c = 0.75), probe and drain net `2(1 − c)`, the six
//! cruise rounds add `6(1 − c)` more; one cycle later, with the estimate caught up at 0.5, the
//! cycle sends .625/.375 and nets zero, so the backlog (1.00 over probe and drain alone, 4.00
//! with cruise) stays: a scar nothing in the cycle repays.

use safegate_core::controllers::probe::PROBE_BW_GAINS;
use safegate_core::estimators::WindowedMax;

use super::{Figure, Report, Row, Setup};

/// One round of the model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Round {
    /// Cycle number, from 1.
    pub cycle: u32,
    /// Round within the cycle, 0 = probe, 1 = drain, 2..8 = cruise.
    pub phase: usize,
    /// Rate sent: gain × estimate.
    pub sent: f64,
    /// Capacity this round.
    pub capacity: f64,
    /// Queue change this round.
    pub added: f64,
    /// Queue after the round.
    pub queue: f64,
}

/// Run `cycles` ProbeBW cycles; capacity is 1 until cycle `collapse_cycle`'s probe round,
/// `c` from then on. The estimate starts at 1.
pub fn simulate(c: f64, collapse_cycle: u32, cycles: u32) -> Vec<Round> {
    simulate_path(|cycle, _| if cycle >= collapse_cycle { c } else { 1.0 }, cycles)
}

/// Run `cycles` ProbeBW cycles against a capacity path: `capacity_at(cycle, round)` is the
/// capacity (a fraction of the starting estimate) in `round` (from 1, counted over the
/// whole run) of `cycle` (from 1). The estimate starts at 1.
pub fn simulate_path(capacity_at: impl Fn(u32, u64) -> f64, cycles: u32) -> Vec<Round> {
    let mut bw = WindowedMax::new(PROBE_BW_GAINS.len() as u64);
    bw.update(0, 1.0);
    let mut estimate = 1.0;
    let mut q: f64 = 0.0;
    let mut out = Vec::new();
    let mut round = 0u64;
    for cycle in 1..=cycles {
        if cycle > 1 {
            estimate = bw.get();
        }
        for (phase, gain) in PROBE_BW_GAINS.iter().enumerate() {
            round += 1;
            let capacity = capacity_at(cycle, round);
            let sent = gain * estimate;
            let before = q;
            q = (q + sent - capacity).max(0.0);
            let delivered = (before + sent).min(capacity);
            bw.update(round, delivered);
            out.push(Round { cycle, phase, sent, capacity, added: q - before, queue: q });
        }
    }
    out
}

fn fmt(x: f64) -> String {
    let s = format!("{x:.2}");
    if s == "-0.00" {
        "0.00".into()
    } else {
        s
    }
}

/// Run the experiment.
pub fn run(_setup: &Setup) -> Report {
    let mut rows = Vec::new();
    // The drain table: collapse at cycle 1's probe round.
    let cs = [1.0, 0.9, 0.8, 0.75, 0.7, 0.5, 0.3];
    let mut ok = true;
    let mut nets = Vec::new();
    let mut drains = Vec::new();
    for &c in &cs {
        let r = simulate(c, 1, 1);
        let (probe, drain) = (r[0].added, r[1].added);
        let cruise: f64 = r[2..].iter().map(|x| x.added).sum();
        ok &= (probe - (1.25 - c)).abs() < 1e-12
            && (drain - (0.75 - c)).abs() < 1e-12
            && (probe + drain - 2.0 * (1.0 - c)).abs() < 1e-12
            && (cruise - 6.0 * (1.0 - c)).abs() < 1e-12;
        nets.push(format!("{c}→{}", fmt(probe + drain)));
        drains.push(drain);
    }
    rows.push(Row::new(
        "probebw-drain-table",
        "probe adds 1.25 − c, drain 0.75 − c, net 2(1 − c), cruise 6(1 − c), c ∈ {1, .9, .8, .75, .7, .5, .3}",
        "net 0, .2, .4, .5, .6, 1.0, 1.4",
        nets.join(" "),
        "exact (1e-12)",
        ok,
    ));
    // Where the drain round stops draining: bisection on c.
    let (mut lo, mut hi) = (0.0f64, 1.0f64); // drain adds > 0 at lo, < 0 at hi
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if simulate(mid, 1, 1)[1].added > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let line = 0.5 * (lo + hi);
    rows.push(Row::close(
        "probebw-drain-75",
        "capacity (fraction of the estimate) below which the drain round adds to the queue",
        0.75,
        line,
        1e-9,
        4,
    ));
    let cruise75: f64 = simulate(0.75, 1, 1)[2..].iter().map(|x| x.added).sum();
    let cruise50: f64 = simulate(0.5, 1, 1)[2..].iter().map(|x| x.added).sum();
    rows.push(Row::new(
        "probebw-cruise",
        "a collapse persisting through the six cruise rounds adds 6(1 − c) more",
        "1.5 at .75, 3.0 at .5",
        format!("{} at .75, {} at .5", fmt(cruise75), fmt(cruise50)),
        "±0.005",
        (cruise75 - 1.5).abs() < 0.005 && (cruise50 - 3.0).abs() < 0.005,
    ));

    // The cycle table: normal cycle 1, collapse to .5 at cycle 2's probe, estimate caught up
    // at cycle 3.
    let r = simulate(0.5, 2, 4);
    let cyc = |k: u32| r.iter().filter(move |x| x.cycle == k);
    let probe_drain = |k: u32| cyc(k).filter(|x| x.phase < 2).map(|x| x.added).sum::<f64>();
    let c2 = probe_drain(2);
    let c3: Vec<f64> = cyc(3).filter(|x| x.phase < 2).map(|x| x.sent).collect();
    let c3_net = probe_drain(3);
    let scar_pd = probe_drain(2) + probe_drain(3) + probe_drain(4);
    let scar_full = r.iter().rfind(|x| x.cycle == 4).map_or(0.0, |x| x.queue);
    let after_c2 = r.iter().rfind(|x| x.cycle == 2).map_or(0.0, |x| x.queue);
    let ok = (c2 - 1.0).abs() < 1e-9
        && (c3[0] - 0.625).abs() < 1e-9
        && (c3[1] - 0.375).abs() < 1e-9
        && c3_net.abs() < 1e-9
        && (scar_pd - 1.0).abs() < 1e-9;
    rows.push(Row::new(
        "probebw-cycles",
        "collapse to .5: cycle 2 nets +1.00; cycle 3 (estimate caught up) sends .625/.375 and the backlog stays 1.00",
        "+1.00; .625/.375; 1.00",
        format!("+{}; {:.3}/{:.3}; {}", fmt(c2), c3[0], c3[1], fmt(scar_pd)),
        "exact (1e-9), probe and drain rounds as the seed scopes them",
        ok,
    ));
    rows.push(Row::new(
        "probebw-scar",
        "with the cruise rounds counted, the scar is 4.0 and nothing afterwards repays it",
        "4.0 rather than 1.0",
        format!("{} after cycle 2, {} after cycle 4", fmt(after_c2), fmt(scar_full)),
        "±1e-9",
        (after_c2 - 4.0).abs() < 1e-9 && (scar_full - 4.0).abs() < 1e-9,
    ));

    let mut fig = Figure::new(
        "probebw",
        "ProbeBW: capacity collapses at cycle 2's probe round",
        "round (8 per cycle)",
        "queue (rounds at the estimate)",
    );
    for c in [0.8, 0.75, 0.5] {
        let r = simulate(c, 2, 4);
        fig = fig.line(
            &format!("capacity → {c}"),
            (1..=r.len()).map(|i| i as f64).collect(),
            r.iter().map(|x| x.queue).collect(),
        );
    }
    Report { experiment: "probebw", rows, figures: vec![fig] }
}
