//! F18: how long do the ensemble and the barrier stay on their historical prior?
//!
//! Two clocks, each started from a prior that is wrong in the way the seed fears (it was
//! calibrated on a light-tailed history, and the regime that arrives is heavy-tailed):
//! - **The ensemble.** The IMM runs with a Gaussian likelihood (the prior) while the noise
//!   is Student-t with ν = 1.5. Its false-alarm rate becomes trustworthy once the heavy tail
//!   is recognised, so that the robust likelihood ([`crate::experiments::imm::robust_config`])
//!   can take over. Recognition: the Hill estimate of the tail index of `|y − m₀|` over every
//!   observation so far (`k = ⌈√n⌉`), with its upper limit `α̂ + 2·se` below 3. The warm-up
//!   is the fewest observations at which that happens in ≥ 95 % of heavy-tailed runs and in
//!   ≤ 5 % of Gaussian ones; the exposure is the share of runs in which the plain IMM raises
//!   a false alarm within it.
//! - **The barrier.** ε is a promise about a horizon. With no exit observed, the 99 %
//!   Clopper–Pearson upper limit of the exit frequency reaches ε only after
//!   [`safegate_core::stats::trials_to_show`]`(ε)` independent horizons; until then the
//!   data cannot say that the prior's ε is right, only the prior can.
//!
//! Both are compared with the length of one of the seed's health dips.

use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal, StudentT};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use safegate_core::boundary::Boundary;
use safegate_core::estimators::{hill, hill_k, ImmConfig, TwoModeImm};
use safegate_core::stats::trials_to_show;

use super::{Criterion, Effort, Evidence, Figure, Outcome, Verdict};
use safegate_sim::config::Config;

/// Observation counts at which recognition is checked.
pub const CHECKPOINTS: [usize; 10] = [10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000];

/// Tail index the Hill upper limit must fall below to call the tail heavy.
pub const HEAVY_BELOW: f64 = 3.0;

/// ν of the heavy-tailed regime.
pub const NU: f64 = 1.5;

const BOUNDARY: &str = include_str!("../../../../boundaries/seed-80.toml");

/// Whether the Hill upper limit over `sample` is below [`HEAVY_BELOW`].
fn heavy(sample: &[f64]) -> bool {
    hill(sample, hill_k(sample.len())).is_some_and(|h| h.alpha + 2.0 * h.std_error < HEAVY_BELOW)
}

/// For each checkpoint, whether the tail was called heavy; and whether the plain IMM had
/// alarmed by then.
fn run(seed: u64, heavy_noise: bool) -> Vec<(bool, bool)> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let t = StudentT::new(NU).expect("ν > 0");
    let cfg = ImmConfig::default();
    let mut imm = TwoModeImm::new(cfg).expect("the default IMM is valid");
    let last = CHECKPOINTS[CHECKPOINTS.len() - 1];
    let mut abs = Vec::with_capacity(last);
    let mut out = Vec::with_capacity(CHECKPOINTS.len());
    let mut next = 0;
    for n in 1..=last {
        let y: f64 = if heavy_noise { t.sample(&mut rng) } else { StandardNormal.sample(&mut rng) };
        imm.update(cfg.mean0 + y);
        abs.push(y.abs());
        if n == CHECKPOINTS[next] {
            out.push((heavy(&abs), imm.alarmed()));
            next += 1;
        }
    }
    out
}

/// Per checkpoint: share of heavy-tailed runs recognised, share of Gaussian runs wrongly
/// called heavy, share of heavy-tailed runs in which the plain IMM alarmed.
pub fn recognition(trials: u64, seed: u64) -> Vec<(usize, f64, f64, f64)> {
    let count = |heavy_noise: bool| -> Vec<(u64, u64)> {
        (0..trials)
            .into_par_iter()
            .map(|k| {
                run(
                    seed ^ 0xF18 ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(heavy_noise).rotate_left(63),
                    heavy_noise,
                )
                .into_iter()
                .map(|(h, a)| (u64::from(h), u64::from(a)))
                .collect::<Vec<_>>()
            })
            .reduce(
                || vec![(0, 0); CHECKPOINTS.len()],
                |a, b| a.iter().zip(&b).map(|(x, y)| (x.0 + y.0, x.1 + y.1)).collect(),
            )
    };
    let h = count(true);
    let g = count(false);
    let n = trials.max(1) as f64;
    CHECKPOINTS.iter().enumerate().map(|(i, &w)| (w, h[i].0 as f64 / n, g[i].0 as f64 / n, h[i].1 as f64 / n)).collect()
}

/// The warm-up: the first checkpoint with ≥ 95 % recognised and ≤ 5 % false calls.
pub fn warmup(rec: &[(usize, f64, f64, f64)]) -> Option<(usize, f64)> {
    rec.iter().find(|r| r.1 >= 0.95 && r.2 <= 0.05).map(|r| (r.0, r.3))
}

/// The verdict: the ensemble's warm-up and the barrier's in seconds, against a dip.
pub fn judge(imm_secs: Option<f64>, eps_secs: f64, dip: f64) -> (Verdict, String) {
    match imm_secs {
        Some(s) if s <= dip && eps_secs <= dip => (
            Verdict::Falsified,
            format!("both the ensemble ({s:.1} s) and the barrier ({eps_secs:.0} s) leave their prior within one {dip:.0} s dip: the condition (a window short enough not to matter) is met"),
        ),
        _ if eps_secs > 10.0 * dip => (
            Verdict::Holds,
            format!(
                "{}; but the exit frequency cannot confirm the prior's ε until {:.0} h of exit-free horizons, {:.0}× a dip: the condition (a window short enough not to matter) is not met",
                match imm_secs {
                    Some(s) => format!("the ensemble recognises the heavy tail after {s:.1} s of observations"),
                    None => "the ensemble does not recognise the heavy tail within the run".into(),
                },
                eps_secs / 3600.0,
                eps_secs / dip
            ),
        ),
        _ => (
            Verdict::Inconclusive,
            "the warm-up is longer than a dip but not by an order of magnitude, or the ensemble's could not be measured".into(),
        ),
    }
}

/// F18.
pub fn f18(effort: &Effort) -> Outcome {
    let trials = (effort.imm_trials / 10).max(50);
    let rec = recognition(trials, effort.seed);
    let boundary = Boundary::from_toml(BOUNDARY, &[]).expect("the shipped boundary parses");
    let period = boundary.decision.period;
    let eps = boundary.probability.epsilon;
    let horizons = trials_to_show(eps);
    let eps_secs = horizons as f64 * boundary.probability.horizon;
    let shape = match &Config::default().health.schedule {
        safegate_sim::HealthSchedule::Cycle(s) | safegate_sim::HealthSchedule::Dip { shape: s, .. } => *s,
        _ => safegate_sim::DipShape::default(),
    };
    let dip = shape.dip_length();
    let w = warmup(&rec);
    let imm_secs = w.map(|(n, _)| n as f64 * period);
    let (verdict, reason) = judge(imm_secs, eps_secs, dip);
    let evidence = vec![
        Evidence::new("exit-free operation before the 99 % upper limit reaches ε", eps_secs / 3600.0, "h"),
        Evidence::new(
            "ensemble warm-up (heavy tail recognised)",
            w.map_or(f64::NAN, |x| x.0 as f64),
            format!(
                "observations (≥ 95 % of ν = {NU} runs, ≤ 5 % of Gaussian; {trials} runs each; null: not within {})",
                CHECKPOINTS[CHECKPOINTS.len() - 1]
            ),
        ),
        Evidence::new(
            "ensemble warm-up at one observation per decision",
            imm_secs.unwrap_or(f64::NAN),
            format!("s ({period} s a decision)"),
        ),
        Evidence::new(
            "plain IMM runs with a false alarm within the warm-up",
            w.map_or(f64::NAN, |x| x.1),
            "share of heavy-tailed runs",
        ),
        Evidence::new(
            "exit-free horizons before the 99 % upper limit reaches ε",
            horizons as f64,
            format!("horizons of {} s (ε = {eps})", boundary.probability.horizon),
        ),
        Evidence::new("one health dip", dip, "s (ramp down, hold, ramp up)"),
    ];
    let xs: Vec<f64> = rec.iter().map(|r| (r.0 as f64).log10()).collect();
    let fig = Figure::new(
        "f18-warmup",
        "F18: recognising a heavy tail from a Gaussian prior (Hill upper limit < 3)",
        "log10 observations",
        "share of runs",
    )
    .line(&format!("ν = {NU} noise: recognised"), xs.clone(), rec.iter().map(|r| r.1).collect())
    .line("Gaussian noise: wrongly called heavy", xs.clone(), rec.iter().map(|r| r.2).collect())
    .line("ν = 1.5: plain IMM has raised a false alarm", xs, rec.iter().map(|r| r.3).collect())
    .rule(0.95, "95 %")
    .rule(0.05, "5 %");
    Outcome {
        criteria: vec![Criterion {
            id: "F18".into(),
            claim: "from a historical prior, the ensemble reaches a trustworthy false-alarm rate and the barrier a calibrated ε within too few cycles for the blind regime to matter".into(),
            experiment: format!(
                "IMM on a Gaussian prior facing t ν = {NU} noise, Hill recognition checked at 10–10⁴ observations ({trials} runs per law); Clopper–Pearson count of exit-free {} s horizons to show ε = {eps}; against a {dip:.0} s dip",
                boundary.probability.horizon
            ),
            evidence,
            verdict,
            reason,
        }],
        figures: vec![fig],
    }
}
