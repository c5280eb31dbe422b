//! "Base Traffic 75 itself is already pinned at the queue cap, 200 out of 200, after 400
//! simulated seconds, the same outright saturation Base Traffic 76 and above also reach"
//! (seed, "Why a Rulebook Cannot Do This Job").
//!
//! Setup: the repeating health cycle from t = 0, no gate, fluid, 400 s.

use super::{Report, Row, Setup};
use safegate_sim::health::{HealthSchedule, HealthTrack};
use safegate_sim::{Config, RunOptions};

fn final_queue(setup: &Setup, lambda: f64) -> f64 {
    let shape = super::dip_shape(setup);
    let cfg = Config {
        traffic: lambda,
        health: HealthTrack::new(HealthSchedule::Cycle(shape)),
        duration: 400.0,
        initial_queue: 0.0,
        ..setup.model()
    };
    safegate_sim::fluid::simulate(&cfg, &mut safegate_core::Open, RunOptions::default()).summary.queue_final
}

/// Run the experiment.
pub fn run(setup: &Setup) -> Report {
    let cap = setup.base.pool.capacity;
    let q75 = final_queue(setup, 75.0);
    let pinned = Row::new(
        "pinned-75",
        "λ = 75, health cycle, no gate: queue at t = 400 s",
        "200/200",
        format!("{q75:.1}/{cap:.0}"),
        "= cap",
        q75 >= cap - 1e-9,
    )
    .values(Some(200.0), Some(q75));
    let higher: Vec<(f64, f64)> = [76.0, 80.0, 100.0, 120.0].iter().map(|&l| (l, final_queue(setup, l))).collect();
    let all = higher.iter().all(|&(_, q)| q >= cap - 1e-9);
    let listing: Vec<String> = higher.iter().map(|(l, q)| format!("{l}→{q:.0}")).collect();
    let above = Row::new(
        "pinned-76+",
        "λ = 76, 80, 100, 120 reach the same saturation",
        "200/200",
        listing.join(" "),
        "= cap each",
        all,
    );
    Report { experiment: "pinned", rows: vec![pinned, above], figures: vec![] }
}
