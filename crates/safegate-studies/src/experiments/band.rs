//! The gate's band at λ = 80 (seed, "This Model's Own Barrier, Stated Explicitly"): with
//! sensitivity 1 and θ = 0.7 the queue oscillates in 143.8–193.9 and never drains; with the
//! gate off it pins at 200/200. Setup: the repeating cycle, fluid, min and max of q over
//! t ∈ [100, 400]. Analytic floor: at full health the gate admits exactly the pool's 75 req/s
//! when `80·(1 − (q/cap − θ)/(1 − θ)) = 75`, i.e. `q = cap·(θ + (1 − θ)(1 − 75/80))` = 143.75.

use super::{fluid_series, Figure, Report, Row, Setup};
use safegate_sim::health::{HealthSchedule, HealthTrack};
use safegate_sim::Config;

fn window(setup: &Setup, sens: f64) -> (f64, f64, safegate_sim::Series) {
    let shape = super::dip_shape(setup);
    let cfg = Config {
        traffic: 80.0,
        health: HealthTrack::new(HealthSchedule::Cycle(shape)),
        duration: 400.0,
        initial_queue: 0.0,
        ..setup.model()
    };
    let s = fluid_series(&cfg, sens, 0.7);
    let (lo, hi) =
        s.t.iter()
            .zip(&s.queue)
            .filter(|(t, _)| **t >= 100.0 - 1e-9 && **t <= 400.0 + 1e-9)
            .fold((f64::MAX, f64::MIN), |(a, b), (_, q)| (a.min(*q), b.max(*q)));
    (lo, hi, s)
}

/// Run the experiment.
pub fn run(setup: &Setup) -> Report {
    let (lo, hi, on) = window(setup, 1.0);
    let (off_lo, off_hi, off) = window(setup, 0.0);
    let cap = setup.base.pool.capacity;
    let ceiling = setup.base.pool.saturated_ceiling();
    let analytic = cap * (0.7 + 0.3 * (1.0 - ceiling / 80.0));
    let rows = vec![
        Row::close("band-80-floor", "λ = 80, θ 0.7, sens 1: lowest queue over t ∈ [100, 400]", 143.8, lo, 0.1, 1),
        Row::close("band-80-top", "λ = 80, θ 0.7, sens 1: highest queue over t ∈ [100, 400]", 193.9, hi, 0.1, 1),
        Row::close("band-80-floor-analytic", "floor = cap·(θ + (1 − θ)(1 − ceiling/λ))", 143.75, analytic, 0.005, 2)
            .note(format!("simulated floor {lo:.3}")),
        Row::new(
            "band-80-off",
            "λ = 80 with the gate off: queue range over t ∈ [100, 400]",
            "200/200",
            format!("{off_lo:.1}–{off_hi:.1}"),
            "= cap throughout",
            off_lo >= cap - 1e-9,
        ),
        Row::new(
            "band-80-no-drain",
            "with the gate on the queue never drains (80 > what 8 executors clear)",
            "does not drain to zero",
            format!("lowest {lo:.1}"),
            "lowest > θ·cap",
            lo > 0.7 * cap,
        ),
    ];
    let fig = Figure::new("band-80", "λ = 80 on the health cycle: the gate holds a band", "time [s]", "queue depth q")
        .line("gate off", off.t.clone(), off.queue.clone())
        .line("gate on (θ 0.7, sens 1)", on.t.clone(), on.queue.clone())
        .rule(143.8, "143.8")
        .rule(193.9, "193.9")
        .rule(0.7 * cap, "θ·cap");
    Report { experiment: "band", rows, figures: vec![fig] }
}
