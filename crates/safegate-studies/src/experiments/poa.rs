//! The price of anarchy of the ungated pool (seed, "Why Rejecting Early Is Not Merely a
//! Good Idea"): total backlog-time with sensitivity 0 over the same with sensitivity 1 at
//! θ = 0.7, minus one, on the repeating cycle, Σq over t ∈ (60, 1200] (the first 60 s
//! discarded). The seed: 24.7 % at λ = 76, 14.3 % at λ = 120, "and continues to shrink at
//! yet higher traffic".

use super::{fluid_series, Figure, Report, Row, Setup};
use safegate_sim::health::{HealthSchedule, HealthTrack};
use safegate_sim::Config;

/// The price of anarchy at traffic `lambda`, as a fraction.
pub fn price_of_anarchy(setup: &Setup, lambda: f64) -> f64 {
    let shape = super::dip_shape(setup);
    let cfg = Config {
        traffic: lambda,
        health: HealthTrack::new(HealthSchedule::Cycle(shape)),
        duration: 1200.0,
        initial_queue: 0.0,
        ..setup.model()
    };
    let cost = |sens: f64| {
        let s = fluid_series(&cfg, sens, 0.7);
        s.t.iter().zip(&s.queue).filter(|(t, _)| **t > 60.0 + 1e-9).map(|(_, q)| q).sum::<f64>()
    };
    cost(0.0) / cost(1.0) - 1.0
}

/// Run the experiment.
pub fn run(setup: &Setup) -> Report {
    let a = price_of_anarchy(setup, 76.0) * 100.0;
    let b = price_of_anarchy(setup, 120.0) * 100.0;
    let trend_l = [120.0, 160.0, 240.0, 400.0, 800.0];
    let trend: Vec<f64> = trend_l.iter().map(|&l| price_of_anarchy(setup, l) * 100.0).collect();
    let shrinking = trend.windows(2).all(|w| w[1] < w[0]);
    let listing: Vec<String> = trend_l.iter().zip(&trend).map(|(l, p)| format!("{l}→{p:.1}%")).collect();
    let rows = vec![
        Row::close("poa-76", "price of anarchy at λ = 76 [%]", 24.7, a, 0.1, 1),
        Row::close("poa-120", "price of anarchy at λ = 120 [%]", 14.3, b, 0.1, 1),
        Row::new(
            "poa-trend",
            "the gap keeps shrinking at higher traffic",
            "keeps shrinking",
            listing.join(" "),
            "strictly decreasing",
            shrinking,
        ),
    ];
    let mut xs = Vec::new();
    let mut l = 76.0;
    while l <= 400.0 {
        xs.push(l);
        l += if l < 130.0 { 2.0 } else { 10.0 };
    }
    let ys: Vec<f64> = xs.iter().map(|&l| price_of_anarchy(setup, l) * 100.0).collect();
    let fig = Figure::new(
        "poa-trend",
        "Price of anarchy of the ungated pool (backlog-time, sens 0 vs 1)",
        "base traffic λ [req/s]",
        "extra backlog-time [%]",
    )
    .line("fluid model", xs, ys)
    .rule(24.7, "24.7 % at 76")
    .rule(14.3, "14.3 % at 120");
    Report { experiment: "poa", rows, figures: vec![fig] }
}
