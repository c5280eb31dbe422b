//! The joint ceiling `Rate_max = P·s·(C/P)² = s·C²/P`, the USL comparison, and "does not
//! drain at any health setting" (seed, "Why a Rulebook Cannot Do This Job" and its USL
//! deep dive).
//!
//! Setup: the clearing rate with all `P` executors busy at `H = 1`, both from the closed form
//! and measured as one fluid step from a full queue with no arrivals. USL: `γ = s`,
//! `κ = 1/C²`, `σ = 0`, at `n = P`. No drain: λ = ceiling, a full queue, constant health at
//! several levels, 400 s.

use super::{Report, Row, Setup};
use safegate_sim::health::{HealthSchedule, HealthTrack};
use safegate_sim::model::usl_throughput;
use safegate_sim::{Config, RunOptions};

/// Run the experiment.
pub fn run(setup: &Setup) -> Report {
    let pool = setup.base.pool;
    let closed = pool.rate * pool.comfortable * pool.comfortable / pool.executors as f64;
    let one_step = Config {
        traffic: 0.0,
        health: HealthTrack::new(HealthSchedule::Constant { level: 1.0 }),
        initial_queue: pool.capacity,
        duration: 1.0,
        dt: 1.0,
        ..setup.model()
    };
    let measured = pool.capacity
        - safegate_sim::fluid::simulate(&one_step, &mut safegate_core::Open, RunOptions::default()).summary.queue_final;
    let ceiling = Row::close("ceiling", "joint ceiling with all P busy, s·C²/P [req/s]", 75.0, measured, 1e-9, 2)
        .note(format!("closed form {closed:.4}; simulated one step from a full queue at H = 1: {measured:.4}"));

    let usl = usl_throughput(pool.executors as f64, pool.rate, 0.0, 1.0 / (pool.comfortable * pool.comfortable));
    let usl_row = Row::close("usl", "USL X(8), γ = s, κ = 1/C², σ = 0 (\"roughly 67\") [req/s]", 67.0, usl, 0.5, 2)
        .note("the seed prints \"≈ 67\"; the formula gives 66.67; tolerance covers the rounding");

    // λ at the ceiling, queue full: no constant health ≤ 1 lets it drain.
    let levels = [1.0, 0.75, 0.5, 0.25, 0.1];
    let mut lowest = f64::MAX;
    for h in levels {
        let cfg = Config {
            traffic: closed,
            health: HealthTrack::new(HealthSchedule::Constant { level: h }),
            initial_queue: pool.capacity,
            duration: 400.0,
            ..setup.model()
        };
        lowest = lowest.min(
            safegate_sim::fluid::simulate(&cfg, &mut safegate_core::Open, RunOptions::default()).summary.queue_min,
        );
    }
    let no_drain = Row::new(
        "no-drain-any-health",
        "at λ = 75 a full queue does not drain at any health (1, .75, .5, .25, .1)",
        "does not drain",
        format!("lowest queue over 400 s: {lowest:.1}/{:.0}", pool.capacity),
        "queue stays ≥ cap − 1",
        lowest >= pool.capacity - 1.0,
    );
    Report { experiment: "ceiling", rows: vec![ceiling, usl_row, no_drain], figures: vec![] }
}
