//! F11: does the ProbeBW drain phase ever fail to drain under realistic collapses?
//!
//! The seed's round model of BBR's ProbeBW cycle ([`crate::experiments::probebw`]): gains
//! 1.25, 0.75, then six rounds at 1, paced on a windowed-maximum bandwidth estimate read at
//! each cycle's start. The drain round sends `0.75 × estimate`; it adds to the queue whenever
//! capacity is below that, i.e. below 75 % of the pre-collapse estimate. A step collapse
//! below 0.75 always does. A real collapse ramps down over some rounds, and the estimate
//! follows within about a cycle, so what matters is how fast capacity falls per round.
//!
//! Measured: collapses to every depth of the seed's envelope (lowest health 0.10 … 1.00 in
//! steps of 0.01, capacity proportional to health as in the model), starting at each of the
//! cycle's eight rounds, as a step and as linear ramps of 8 … 256 rounds and of the model's
//! own dip (its `ramp_down`, in rounds of one service time `1/s` at full health, the pool's
//! round trip with no queue). A collapse counts as a drain failure if any drain round from
//! its start until four cycles after it settles sends more than capacity.

use super::{Criterion, Evidence, Figure, Outcome, Verdict};
use crate::experiments::probebw::simulate_path;
use safegate_sim::config::Config;

/// Rounds per ProbeBW cycle.
const CYCLE: u64 = 8;

/// Share of collapses at which drain failure counts as occurring, not "essentially never".
pub const NEVER: f64 = 0.01;

/// Ramp lengths tried, in rounds (0: a step).
pub const RAMPS: [u64; 7] = [0, 8, 16, 32, 64, 128, 256];

/// Capacity in `round` (from 1) of a collapse from 1 to `c` starting at round `start`,
/// linear over `ramp` rounds.
pub fn capacity(round: u64, start: u64, ramp: u64, c: f64) -> f64 {
    if round < start {
        1.0
    } else if ramp == 0 || round >= start + ramp {
        c
    } else {
        1.0 - (1.0 - c) * (round - start + 1) as f64 / ramp as f64
    }
}

/// What one collapse did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Collapse {
    /// Whether a drain round sent more than capacity.
    pub drain_failed: bool,
    /// Rounds from the end of the ramp until the estimate is within 5 % of the new capacity
    /// (`None` if it never is within the run).
    pub adapt_rounds: Option<u64>,
    /// Queue left four cycles after the collapse settled \[rounds at the old estimate\].
    pub scar: f64,
}

/// Run one collapse to depth `c` starting at round `offset` of the second cycle.
pub fn collapse(c: f64, ramp: u64, offset: u64) -> Collapse {
    let start = CYCLE + 1 + offset;
    let settled = start + ramp;
    let cycles = (settled / CYCLE + 6) as u32;
    let rounds = simulate_path(|_, round| capacity(round, start, ramp, c), cycles);
    let mut drain_failed = false;
    let mut adapt_rounds = None;
    for (i, r) in rounds.iter().enumerate() {
        let n = i as u64 + 1;
        if n >= start && r.phase == 1 && r.sent > r.capacity + 1e-12 {
            drain_failed = true;
        }
        // The estimate behind a round is its rate over its gain.
        let gain = safegate_core::controllers::probe::PROBE_BW_GAINS[r.phase];
        if adapt_rounds.is_none() && n >= settled && r.sent / gain <= 1.05 * c {
            adapt_rounds = Some(n - settled);
        }
    }
    Collapse { drain_failed, adapt_rounds, scar: rounds.last().map_or(0.0, |r| r.queue) }
}

/// Share of drain failures over the envelope's depths and the cycle's offsets, for a ramp.
pub fn failure_share(depths: &[f64], ramp: u64) -> f64 {
    let mut failed = 0u64;
    let mut total = 0u64;
    for &c in depths {
        for offset in 0..CYCLE {
            total += 1;
            failed += u64::from(collapse(c, ramp, offset).drain_failed);
        }
    }
    failed as f64 / total.max(1) as f64
}

/// The longest ramp (rounds) at which a collapse to `c` still fails to drain at some offset.
pub fn longest_failing_ramp(c: f64) -> Option<u64> {
    (0..=512u64).rev().find(|&ramp| (0..CYCLE).any(|o| collapse(c, ramp, o).drain_failed))
}

/// The verdict: `step` and `model` are the failure shares of step collapses and of the
/// model's ramp over the envelope's depths, `running` the share of the cycle's offsets at
/// which the running case's own dip fails, `threshold` the longest failing ramp at its depth.
pub fn judge(step: f64, model: f64, running: f64, model_ramp: u64, threshold: Option<u64>) -> (Verdict, String) {
    let thr = threshold.map_or("none".to_string(), |t| format!("{t} rounds"));
    if step < NEVER && model < NEVER && running == 0.0 {
        (
            Verdict::Falsified,
            format!("drain failure occurs in under {} % of the envelope's collapses, as a step and as the model's ramp, and never in the running case's dip: the condition (it essentially never occurs) is met", NEVER * 100.0),
        )
    } else if running >= 0.5 || model >= NEVER {
        (
            Verdict::Holds,
            format!(
                "the running case's own dip ({model_ramp}-round ramp) makes the drain round add to the queue at {:.0} % of the cycle's offsets, and {:.1} % of the envelope's collapses on that ramp do ({:.0} % as steps; ramps up to {thr} still fail at that depth): the condition (it essentially never occurs) is not met",
                running * 100.0,
                model * 100.0,
                step * 100.0
            ),
        )
    } else {
        (
            Verdict::Inconclusive,
            format!(
                "the drain round adds to the queue in {:.0} % of step collapses and for ramps up to {thr}, but in {:.1} % of the model's own dips ({model_ramp}-round ramps at a round of one service time): whether it \"essentially never occurs\" depends on how fast production capacity falls per round trip, which the model does not pin down",
                step * 100.0,
                model * 100.0
            ),
        )
    }
}

/// F11.
pub fn f11() -> Outcome {
    let base = Config::default();
    let shape = match &base.health.schedule {
        safegate_sim::HealthSchedule::Cycle(s) | safegate_sim::HealthSchedule::Dip { shape: s, .. } => *s,
        _ => safegate_sim::DipShape::default(),
    };
    let round = 1.0 / base.pool.rate; // one service time at full health [s]
    let model_ramp = (shape.ramp_down / round).round() as u64;
    // The envelope's depths: lowest health 0.10 … 1.00, capacity ∝ health.
    let depths: Vec<f64> = (10..=100).map(|k| k as f64 / 100.0 / shape.high.max(1e-9)).map(|c| c.min(1.0)).collect();
    let below = depths.iter().filter(|&&c| c < 0.75).count() as f64 / depths.len() as f64;
    let shares: Vec<(u64, f64)> = RAMPS.iter().map(|&r| (r, failure_share(&depths, r))).collect();
    let step = shares[0].1;
    let model = failure_share(&depths, model_ramp);
    let c_low = shape.low / shape.high.max(1e-9);
    let threshold = longest_failing_ramp(c_low);
    let step_half = collapse(0.5, 0, 0);
    let adapt: Vec<u64> = (0..CYCLE).filter_map(|o| collapse(0.5, 0, o).adapt_rounds).collect();
    let adapt_max = adapt.iter().copied().max().map_or(f64::NAN, |a| a as f64);
    let adapt_min = adapt.iter().copied().min().map_or(f64::NAN, |a| a as f64);
    let running = (0..CYCLE).filter(|&o| collapse(c_low, model_ramp, o).drain_failed).count() as f64 / CYCLE as f64;
    let (verdict, reason) = judge(step, model, running, model_ramp, threshold);

    let mut evidence = vec![
        Evidence::new(
            format!("the running case's dip (1 → {c_low:.2} over {model_ramp} rounds): offsets whose drain round adds"),
            running,
            "share of the cycle's 8 offsets",
        ),
        Evidence::new(
            "envelope depths with capacity below 0.75 of the estimate",
            below,
            "share (lowest health uniform on 0.10–1.00)",
        ),
        Evidence::new("drain failures, step collapses", step, "share of depth × offset"),
    ];
    for &(r, s) in &shares[1..] {
        evidence.push(Evidence::new(format!("drain failures, {r}-round ramps"), s, "share of depth × offset"));
    }
    evidence.extend([
        Evidence::new(
            format!("drain failures, the model's dip ({model_ramp}-round ramp)"),
            model,
            "share of depth × offset",
        ),
        Evidence::new(
            format!("longest ramp still failing at depth {c_low:.2}"),
            threshold.map_or(f64::NAN, |t| t as f64),
            format!("rounds ({:.2} s at {:.1} ms a round)", threshold.unwrap_or(0) as f64 * round, round * 1e3),
        ),
        Evidence::new("estimate within 5 % of a step collapse to 0.5, fastest offset", adapt_min, "rounds"),
        Evidence::new("estimate within 5 % of a step collapse to 0.5, slowest offset", adapt_max, "rounds"),
        Evidence::new("backlog left by a step collapse to 0.5", step_half.scar, "rounds at the old estimate"),
    ]);
    // The figure's curves: the envelope's share at the tried ramps and the model's, and the
    // deepest dip's share of offsets every 8 rounds.
    let mut curve = shares.clone();
    curve.push((model_ramp, model));
    curve.sort_by_key(|s| s.0);
    let deepest: Vec<(u64, f64)> = (0..=RAMPS[RAMPS.len() - 1] / CYCLE)
        .map(|k| {
            let ramp = k * CYCLE;
            (ramp, (0..CYCLE).filter(|&o| collapse(c_low, ramp, o).drain_failed).count() as f64 / CYCLE as f64)
        })
        .collect();
    let fig = Figure::new(
        "f11-drain",
        "F11: share of collapses whose drain round adds to the queue, by ramp length",
        "ramp length [rounds]",
        "share of collapses whose drain round adds",
    )
    .line("all envelope depths", curve.iter().map(|s| s.0 as f64).collect(), curve.iter().map(|s| s.1).collect())
    .line(
        &format!("depth {c_low:.2} (the running case's dip), share of offsets"),
        deepest.iter().map(|s| s.0 as f64).collect(),
        deepest.iter().map(|s| s.1).collect(),
    )
    .rule(below, "share of depths below 0.75")
    .rule(NEVER, "\"essentially never\" (1 %)");
    Outcome {
        criteria: vec![Criterion {
            id: "F11".into(),
            claim: "the windowed-max estimate adapts fast enough, or real collapses are shallow enough, that the drain round (capacity below 75 % of the estimate) essentially never adds to the queue".into(),
            experiment: format!(
                "ProbeBW round model; collapses to every envelope depth (health 0.10–1.00), at each of 8 offsets, as steps, ramps of 8–256 rounds and the model's {:.0} s dip ramp ({model_ramp} rounds of {:.1} ms)",
                shape.ramp_down,
                round * 1e3
            ),
            evidence,
            verdict,
            reason,
        }],
        figures: vec![fig],
    }
}
