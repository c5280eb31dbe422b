//! Recovery delay after one health dip, and critical slowing down near the ceiling (seed,
//! "Why a Rulebook Cannot Do This Job" and "Naming the Shape: Metastability").
//!
//! Setup (docs/model.md §How each of the seed's numbers is measured): one dip starting at
//! t = 20 s, no gate, fluid mode; the delay is the
//! time from the dip's end until the queue is first back to ≤ 6. The sweep runs λ = 40 …
//! 74.9; near the ceiling the delay should grow like `1/(75 − λ)` (a single fixed point
//! approached ever more slowly), which the `critical-slowing` row checks.

use super::{Figure, Report, Row, Setup};
use safegate_sim::health::{HealthSchedule, HealthTrack};
use safegate_sim::{Config, RunOptions};

/// Recovery delay after a dip at 20 s with the setup's pool and dip shape, or `None`.
pub fn recovery_delay(setup: &Setup, lambda: f64) -> Option<f64> {
    let shape = super::dip_shape(setup);
    let ceiling = setup.base.pool.saturated_ceiling();
    // Long enough for the slowest recovery we ask about: (q_peak)/(ceiling − λ) plus margin.
    let gap = (ceiling - lambda).max(1e-3);
    let duration = (60.0 + 1.5 * setup.base.pool.capacity / gap).min(200_000.0);
    let cfg = Config {
        traffic: lambda,
        health: HealthTrack::new(HealthSchedule::Dip { shape, start: 20.0 }),
        duration,
        drain_level: 6.0,
        initial_queue: 0.0,
        ..setup.model()
    };
    safegate_sim::fluid::simulate(&cfg, &mut safegate_core::Open, RunOptions::default()).summary.recovery_after_dip
}

/// Run the experiment.
pub fn run(setup: &Setup) -> Report {
    let mut rows = Vec::new();
    for (lambda, seed, source) in [(55.0, 9.0, "seed"), (74.5, 386.1, "seed")] {
        let got = recovery_delay(setup, lambda);
        rows.push(
            Row::close(
                &format!("recovery-{lambda}"),
                &format!("recovery after one dip at λ = {lambda} [s] ({source})"),
                seed,
                got.unwrap_or(f64::INFINITY),
                0.1,
                1,
            )
            .note("dip at 20 s, no gate, from the dip's end until q ≤ 6"),
        );
    }
    let model_points =
        [(40.0, 2.2), (50.0, 6.6), (60.0, 12.4), (65.0, 19.1), (70.0, 38.5), (72.0, 64.4), (74.0, 193.1)];
    let mut worst: f64 = 0.0;
    let mut listing = Vec::new();
    for (lambda, expect) in model_points {
        let got = recovery_delay(setup, lambda).unwrap_or(f64::INFINITY);
        worst = worst.max((got - expect).abs());
        listing.push(format!("{lambda}→{got:.1}"));
    }
    rows.push(
        Row::new(
            "recovery-sweep",
            "recovery at λ = 40, 50, 60, 65, 70, 72, 74 [s] (docs/model.md: 2.2, 6.6, 12.4, 19.1, 38.5, 64.4, 193.1)",
            "2.2 … 193.1",
            listing.join(" "),
            "±0.1 each",
            worst <= 0.1 + 1e-9,
        )
        .values(None, Some(worst)),
    );

    // Critical slowing down: delay·(ceiling − λ) settles to a constant as λ → ceiling.
    let ceiling = setup.base.pool.saturated_ceiling();
    let near = [ceiling - 2.0, ceiling - 1.0, ceiling - 0.5, ceiling - 0.2, ceiling - 0.1];
    let products: Vec<f64> =
        near.iter().map(|&l| recovery_delay(setup, l).unwrap_or(f64::INFINITY) * (ceiling - l)).collect();
    let (lo, hi) = products.iter().fold((f64::MAX, f64::MIN), |(a, b), &p| (a.min(p), b.max(p)));
    rows.push(
        Row::new(
            "critical-slowing",
            "near the ceiling the delay grows like 1/(75 − λ): delay·(75 − λ) ≈ constant for λ = 73 … 74.9",
            "metastable: relaxation time collapses toward the ceiling",
            format!("{lo:.1} … {hi:.1} req (spread {:.1} %)", (hi / lo - 1.0) * 100.0),
            "spread ≤ 10 %",
            hi / lo - 1.0 <= 0.10,
        )
        .values(None, Some(hi / lo - 1.0)),
    );

    // The sweep figure: every 0.5 req/s from 40 (at most 200 points, so a faster pool from
    // `--set model.rate=1e6` sweeps in the same time rather than for hours), then every 0.1
    // over the last 3 req/s below the ceiling.
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    let coarse = ((ceiling - 43.0) / 200.0).max(0.5);
    let mut l = 40.0;
    while l < ceiling - 0.05 {
        if let Some(d) = recovery_delay(setup, l) {
            xs.push(l);
            ys.push(d);
        }
        l += if l < ceiling - 3.0 { coarse } else { 0.1 };
    }
    let fig = Figure::new(
        "recovery-sweep",
        "Recovery delay after one health dip (no gate)",
        "base traffic λ [req/s]",
        "recovery delay [s]",
    )
    .line("fluid model", xs, ys)
    .rule(9.0, "9.0 s at λ = 55")
    .rule(386.1, "386.1 s at λ = 74.5");
    Report { experiment: "recovery", rows, figures: vec![fig] }
}
