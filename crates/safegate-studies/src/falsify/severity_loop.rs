//! F10 with the filter in the loop: the shipped filter, with and without its CVaR
//! constraint, on a queue hit by heavy-tailed bursts.
//!
//! The stepped chain's disturbances are Poisson, so no trajectory leaves the safe set there
//! and the question cannot be asked. Here a queue of capacity Q = 200 receives Poisson
//! arrivals at λ = 80 req/s, each admitted with the filter's share, and is served by
//! Poisson completions at μ = 75 req/s (the seed's ceiling at full health), per 50 ms step.
//! On top, with probability [`BURST_CHANCE`] per step, a burst of work arrives that the
//! gate cannot refuse (a correlated batch: retries of work already admitted), its size
//! Pareto with median [`BURST_MEDIAN`] and tail index α. The filter observes the queue and
//! the completions as it would in production (`safegate_core::safety::SafetyFilter`, the
//! shipped boundary `seed-80`, nominal open), so its σ and drift carry the bursts.
//!
//! Per trajectory of 600 s (the boundary's horizon): whether the queue crossed θ·Q and the
//! largest overshoot `max (q/Q − θ)⁺` (the queue is not capped here, so the overshoot is the
//! excursion's full severity).

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Poisson};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use safegate_core::boundary::Boundary;
use safegate_core::safety::{SafetyConfig, SafetyFilter};
use safegate_core::stats::{empirical_cvar, Frequency};
use safegate_core::{Observation, Open, Policy};

/// Chance of a burst per 50 ms step (one every 25 s on average).
pub const BURST_CHANCE: f64 = 0.002;

/// Median burst size \[requests\].
pub const BURST_MEDIAN: f64 = 10.0;

const LAMBDA: f64 = 80.0;
const MU: f64 = 75.0;
const CAPACITY: f64 = 200.0;

/// One arm's result at one α.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoopResult {
    /// Tail index of the bursts.
    pub alpha: f64,
    /// Whether the CVaR constraint was on.
    pub joint: bool,
    /// Exit frequency over the horizon.
    pub exits: Frequency,
    /// Empirical CVaR at η = 0.05 of the per-trajectory overshoot \[barrier units\].
    pub cvar: f64,
    /// Largest overshoot seen \[barrier units\].
    pub worst: f64,
}

fn trajectory(safety: &SafetyConfig, alpha: f64, seed: u64, steps: u64, dt: f64, boundary: f64) -> (bool, f64) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut filter = SafetyFilter::new(safety.clone(), Open).expect("a validated boundary builds its filter");
    let arrivals = Poisson::new(LAMBDA * dt).expect("positive mean");
    let service = Poisson::new(MU * dt).expect("positive mean");
    let x_m = BURST_MEDIAN * 2f64.powf(-1.0 / alpha);
    let (mut q, mut offered, mut admitted, mut completed, mut worst) = (0.0f64, 0.0, 0.0, 0.0, 0.0f64);
    for k in 0..steps {
        let obs = Observation {
            offered_rate: LAMBDA,
            offered,
            admitted,
            completed,
            in_service: q.min(8.0),
            ..Observation::new(k as f64 * dt, q, CAPACITY)
        };
        let a = filter.decide(&obs).admit.clamp(0.0, 1.0);
        let n: f64 = arrivals.sample(&mut rng);
        let took = (0..n as u64).filter(|_| rng.random::<f64>() < a).count() as f64;
        let burst = if rng.random::<f64>() < BURST_CHANCE {
            (x_m * (1.0 - rng.random::<f64>()).powf(-1.0 / alpha)).round()
        } else {
            0.0
        };
        let done = service.sample(&mut rng).min(q + took + burst);
        q = q + took + burst - done;
        offered += n;
        admitted += took + burst;
        completed += done;
        worst = worst.max(q);
    }
    (worst > boundary, (worst / CAPACITY - boundary / CAPACITY).max(0.0))
}

/// Run `trials` trajectories per α of `alphas`, probability-only and joint, on the same seeds.
pub fn run(alphas: &[f64], trials: u64, seed: u64) -> Vec<LoopResult> {
    let joint = Boundary::from_toml(include_str!("../../../../boundaries/seed-80.toml"), &[])
        .expect("the shipped boundary parses");
    let mut prob = joint.clone();
    prob.magnitude = None;
    let dt = joint.decision.period;
    let steps = (joint.probability.horizon / dt).round() as u64;
    let boundary = joint.barrier.threshold * CAPACITY;
    let mut out = Vec::new();
    for &alpha in alphas {
        for (b, is_joint) in [(&prob, false), (&joint, true)] {
            let safety = b.safety_config(CAPACITY).expect("the shipped boundary's variants are valid");
            let runs: Vec<(bool, f64)> = (0..trials)
                .into_par_iter()
                .map(|k| {
                    let s = seed ^ 0x0F10_100F ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ alpha.to_bits().rotate_left(7);
                    trajectory(&safety, alpha, s, steps, dt, boundary)
                })
                .collect();
            let exits = runs.iter().filter(|r| r.0).count() as u64;
            let mut over: Vec<f64> = runs.iter().map(|r| r.1).collect();
            let worst = over.iter().copied().fold(0.0, f64::max);
            out.push(LoopResult {
                alpha,
                joint: is_joint,
                exits: Frequency::from_counts(exits, trials),
                cvar: empirical_cvar(&mut over, 0.05),
                worst,
            });
        }
    }
    out
}
