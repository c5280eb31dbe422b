//! F10: does a probability bound alone bound the excursion's expected severity?
//!
//! The seed's severity model ("The Boundary Only Watches Probability"): every design leaves
//! the safe set with the same chance ε, which is all a probability-only barrier (the seed's
//! Definition 3) controls; given an excursion, its severity is Pareto with median 1 and tail
//! index α, `S = (2u)^(−1/α)` ([`crate::experiments::severity::severity`]). Corollary 2's
//! CVaR constraint bounds `CVaR_η(S)`, the mean of the worst η share of excursions. If the
//! probability bound bounded it too, the CVaR would not depend on the tail at equal ε, and
//! it would settle as the sample of excursions grows.
//!
//! Measured: the empirical `CVaR_η` at η = 0.05 over samples of 10³ … `max_sample`
//! excursions, replicated, for α ∈ {3, 1.5, 1.1, 1}, on common uniforms. Exact reference
//! (Pareto with scale `x_m = 2^(−1/α)`; Acerbi & Tasche, "Expected Shortfall: a natural
//! coherent alternative to Value at Risk", Economic Notes 31(2), 2002, for the tail mean):
//! `VaR_η = x_m·η^(−1/α)`, `CVaR_η = α/(α − 1)·VaR_η` for α > 1, infinite for α ≤ 1.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use safegate_core::stats::quantile_sorted;

use super::{Criterion, Effort, Evidence, Figure, Outcome, Verdict};
use crate::experiments::severity::severity;

/// Tail indices: light (3), the seed's heavy ones (1.5, 1.1), and the edge of a finite mean.
pub const ALPHAS: [f64; 4] = [3.0, 1.5, 1.1, 1.0];

/// The CVaR's tail share η (the shipped boundary's).
pub const ETA: f64 = 0.05;

/// How many times the light tail's CVaR a heavy tail's must exceed, across replicates, for
/// the probability bound to be shown not to bound magnitude.
pub const SPREAD_FACTOR: f64 = 10.0;

/// Exact `CVaR_η` of the median-1 Pareto with tail index `alpha` (∞ for α ≤ 1).
pub fn cvar_exact(alpha: f64, eta: f64) -> f64 {
    if alpha <= 1.0 {
        return f64::INFINITY;
    }
    let x_m = 2f64.powf(-1.0 / alpha);
    alpha / (alpha - 1.0) * x_m * eta.powf(-1.0 / alpha)
}

/// Empirical CVaR of each α over one sample of `n` excursions: the mean severity of the
/// `⌈η·n⌉` worst, which are the smallest uniforms (severity falls with `u`).
fn cvars(n: u64, seed: u64) -> [f64; 4] {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut us: Vec<f64> = (0..n).map(|_| 1.0 - rng.random::<f64>()).collect();
    let k = ((ETA * n as f64).ceil() as usize).clamp(1, us.len());
    let worst = if k < us.len() { us.select_nth_unstable_by(k, f64::total_cmp).0 } else { &mut us[..] };
    ALPHAS.map(|a| worst.iter().map(|&u| severity(u, a)).sum::<f64>() / k as f64)
}

/// Replicated CVaRs at one sample size: for each α, the sorted replicates.
#[derive(Debug, Clone)]
pub struct AtSize {
    /// Excursions per sample.
    pub n: u64,
    /// For each α of [`ALPHAS`], the replicates' CVaRs, sorted.
    pub cvar: [Vec<f64>; 4],
}

impl AtSize {
    /// Median, 5th and 95th percentile of α index `i`.
    pub fn summary(&self, i: usize) -> (f64, f64, f64) {
        let q = |p| quantile_sorted(&self.cvar[i], p).unwrap_or(f64::NAN);
        (q(0.5), q(0.05), q(0.95))
    }
}

/// Measure at every power of ten from 10³ to `max_sample`.
pub fn measure(effort: &Effort) -> Vec<AtSize> {
    let mut sizes = Vec::new();
    let mut n = 1_000u64;
    while n <= effort.severity_max_sample.max(1_000) {
        sizes.push(n);
        n *= 10;
    }
    sizes
        .iter()
        .map(|&n| {
            let reps: Vec<[f64; 4]> = (0..effort.severity_replicates.max(1))
                .into_par_iter()
                .map(|r| cvars(n, effort.seed ^ 0xF10 ^ n.rotate_left(20) ^ r.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
                .collect();
            let cvar = std::array::from_fn(|i| {
                let mut v: Vec<f64> = reps.iter().map(|x| x[i]).collect();
                v.sort_unstable_by(f64::total_cmp);
                v
            });
            AtSize { n, cvar }
        })
        .collect()
}

/// The verdict from the measurements (a function of them alone, so it can be tested on
/// constructed ones).
pub fn judge(sizes: &[AtSize]) -> (Verdict, String) {
    let (first, last) = match (sizes.first(), sizes.last()) {
        (Some(f), Some(l)) => (f, l),
        _ => return (Verdict::Inconclusive, "no samples were drawn".into()),
    };
    let (_, _, light_hi) = last.summary(0);
    let (_, light_lo, _) = last.summary(0);
    // Separated: a heavy tail's 5th percentile above SPREAD_FACTOR × the light tail's 95th.
    let separated: Vec<f64> =
        (1..ALPHAS.len()).filter(|&i| last.summary(i).1 > SPREAD_FACTOR * light_hi).map(|i| ALPHAS[i]).collect();
    // Growing: at α = 1 the middle half at the largest sample lies above the middle half at
    // the smallest.
    let i1 = ALPHAS.len() - 1;
    let growing = sizes.len() >= 2 && quantile_sorted(&last.cvar[i1], 0.25) > quantile_sorted(&first.cvar[i1], 0.75);
    // Bounded by the probability alone: every heavy tail's 95th percentile within 2× the
    // light tail's 5th.
    let bounded = (1..ALPHAS.len()).all(|i| last.summary(i).2 <= 2.0 * light_lo);
    if bounded && !growing {
        return (
            Verdict::Falsified,
            format!("at equal ε every tail's CVaR stays within 2× the light tail's ({light_lo:.2}): the condition (a probability bound alone also bounds severity) is met"),
        );
    }
    if !separated.is_empty() || growing {
        let mut why = Vec::new();
        if !separated.is_empty() {
            why.push(format!(
                "at equal ε the CVaR under α = {} exceeds {SPREAD_FACTOR}× the light tail's in 95 % of replicates",
                separated.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(" and ")
            ));
        }
        if growing {
            why.push(format!(
                "at α = 1 it grows with the sample ({} → {} excursions: median {:.1} → {:.1}) and has no limit",
                first.n,
                last.n,
                first.summary(i1).0,
                last.summary(i1).0
            ));
        }
        return (
            Verdict::Holds,
            format!(
                "{}: the condition (a probability bound alone also bounds severity) is not met, so the magnitude bound is needed",
                why.join("; ")
            ),
        );
    }
    (
        Verdict::Inconclusive,
        "the heavy tails' CVaR is neither separated from the light tail's nor shown to grow at this sample size".into(),
    )
}

/// F10.
pub fn f10(effort: &Effort) -> Outcome {
    let sizes = measure(effort);
    let (verdict, mut reason) = judge(&sizes);
    let looped = super::severity_loop::run(&ALPHAS[..3], effort.loop_trials, effort.seed);
    let mut evidence = Vec::new();
    if let Some(last) = sizes.last() {
        let (heavy, light) = (last.summary(2).0, last.summary(0).0);
        evidence.push(Evidence::new(
            format!("CVaR_0.05 at α = 1.1 over α = 3, n = {}", last.n),
            heavy / light,
            "ratio of measured medians, same ε",
        ));
        for (i, &a) in ALPHAS.iter().enumerate() {
            let (med, lo, hi) = last.summary(i);
            evidence.push(Evidence::new(format!("CVaR_0.05 exact, α = {a}"), cvar_exact(a, ETA), "× median severity"));
            evidence.push(Evidence::new(
                format!("CVaR_0.05 measured, α = {a}, n = {}", last.n),
                med,
                format!("× median (median of {} replicates; 90 % of them in {lo:.2}–{hi:.2})", last.cvar[i].len()),
            ));
        }
        if let Some(first) = sizes.first() {
            let i1 = ALPHAS.len() - 1;
            evidence.push(Evidence::new(
                format!("CVaR growth at α = 1, n = {} → {}", first.n, last.n),
                last.summary(i1).0 / first.summary(i1).0,
                "ratio of medians",
            ));
        }
    }
    for r in looped.iter().filter(|r| !r.joint) {
        evidence.push(Evidence::new(
            format!("in the loop, α = {}: CVaR_0.05 of the overshoot, probability only", r.alpha),
            r.cvar,
            format!("barrier units (exits {} of {}; worst {:.2})", r.exits.exits, r.exits.trials, r.worst),
        ));
    }
    for r in looped.iter().filter(|r| r.joint) {
        evidence.push(Evidence::new(
            format!("in the loop, α = {}: CVaR_0.05 of the overshoot, joint (shipped ρ)", r.alpha),
            r.cvar,
            format!("barrier units (exits {} of {})", r.exits.exits, r.exits.trials),
        ));
    }
    let same = looped.chunks(2).all(|p| p.len() == 2 && p[0].cvar == p[1].cvar && p[0].exits == p[1].exits);
    if let (Some(light), Some(heavy)) = (looped.first(), looped.iter().rfind(|r| !r.joint)) {
        reason.push_str(&format!(
            ". With the filter in the loop and un-gated Pareto bursts, the overshoot's CVaR goes from {:.2} (α = {}) to {:.1} (α = {}){}",
            light.cvar,
            light.alpha,
            heavy.cvar,
            heavy.alpha,
            if same { ", the same with the shipped CVaR constraint as without: it never binds there" } else { "" }
        ));
    }
    let mut fig = Figure::new(
        "f10-cvar",
        "F10: CVaR_0.05 of the excursion severity at equal ε, by sample size",
        "log10 excursions in the sample",
        "log10 CVaR_0.05 (× median severity)",
    );
    for (i, &a) in ALPHAS.iter().enumerate() {
        fig = fig.line(
            &format!("α = {a} (median of replicates)"),
            sizes.iter().map(|s| (s.n as f64).log10()).collect(),
            sizes.iter().map(|s| s.summary(i).0.log10()).collect(),
        );
        if a > 1.0 {
            fig = fig.rule(cvar_exact(a, ETA).log10(), &format!("exact, α = {a}"));
        }
    }
    let n_max = sizes.last().map_or(0, |s| s.n);
    Outcome {
        criteria: vec![Criterion {
            id: "F10".into(),
            claim: "a barrier with only the probability bound (no CVaR constraint) also bounds the expected excursion severity under a heavy-tailed disturbance".into(),
            experiment: format!(
                "every design exits with the same ε; severity Pareto (median 1), α ∈ {{3, 1.5, 1.1, 1}}; empirical CVaR at η = {ETA} over 10³–{n_max} excursions, {} replicates each, against the exact value; and the shipped filter with and without its CVaR constraint on a queue hit by un-gated Pareto bursts, {} trajectories of 600 s per α and arm",
                effort.severity_replicates, effort.loop_trials
            ),
            evidence,
            verdict,
            reason,
        }],
        figures: vec![fig],
    }
}
