//! Is a tail heavy, and how heavy: the seed's checklist step 3 ("Compute Your Own Boundary":
//! check whether excursion severity, conditional on leaving the safe set, is heavy-tailed;
//! if it is provably light-tailed, ε alone is close to the full guarantee).
//!
//! Two questions, two tools:
//!
//! - **Light or heavy?** Peaks over a threshold follow a generalised Pareto law
//!   `GPD(ξ, σ)` for any distribution in a max-domain of attraction (Pickands, "Statistical
//!   Inference Using Extreme Order Statistics", Annals of Statistics 3(1), 1975;
//!   Balkema & de Haan 1974). `ξ = 0` is the exponential (light: Gaussian, exponential,
//!   Poisson sums), `ξ < 0` a bounded tail, `ξ > 0` a Pareto-like tail with index `α = 1/ξ`.
//!   [`classify`] fits the GPD to the excesses over the top third of the sample by maximum likelihood
//!   (profile likelihood in `θ = ξ/σ`, Grimshaw, "Computing Maximum Likelihood Estimates
//!   for the Generalized Pareto Distribution", Technometrics 35(2), 1993) and tests
//!   `ξ = 0` against it with the likelihood ratio (`2·ΔLL ~ χ²₁` under the exponential):
//!   heavy when `ξ̂ > 0` and the ratio exceeds the 1 % critical value 6.63.
//! - **How heavy?** The Hill estimator ([`super::hill::hill`]) at a `k` chosen where the Hill
//!   plot is stable ([`stable_k`]), with the asymptotic interval `α̂·(1 ± z/√k)`.
//!
//! The Hill estimate alone cannot tell light from heavy: on an exponential sample its
//! top-`k` estimate is finite (about `ln(n/k)`) and drifts with `k`; the likelihood-ratio
//! test is what says "light".

use super::hill::{hill, HillEstimate};

/// χ²₁'s upper 1 % point: the likelihood-ratio test's critical value.
pub const LR_CRITICAL_1PCT: f64 = 6.634_896_601_021_214;

/// Fewest excesses over the threshold the GPD test is run on.
pub const MIN_EXCESSES: usize = 30;

/// Fewest values a tail analysis is attempted on.
pub const MIN_SAMPLE: usize = 50;

/// The verdict on a tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum TailClass {
    /// `ξ̂ > 0` and the exponential is rejected at 1 %.
    Heavy,
    /// The exponential (or a bounded tail) is not rejected.
    Light,
    /// Too few values to say.
    Inconclusive,
}

impl TailClass {
    /// `heavy`, `light`, `inconclusive`.
    pub fn name(self) -> &'static str {
        match self {
            TailClass::Heavy => "heavy",
            TailClass::Light => "light",
            TailClass::Inconclusive => "inconclusive",
        }
    }
}

/// A generalised-Pareto fit to the excesses over a threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct GpdFit {
    /// Shape `ξ̂` (`> 0` heavy, `0` exponential, `< 0` bounded).
    pub xi: f64,
    /// Scale `σ̂`.
    pub sigma: f64,
    /// Excesses the fit used.
    pub excesses: usize,
    /// The threshold they are measured from.
    pub threshold: f64,
    /// Log-likelihood of the GPD fit.
    pub log_lik: f64,
    /// Log-likelihood of the exponential fit (`ξ = 0`).
    pub log_lik_exp: f64,
    /// `2·(log_lik − log_lik_exp)`, χ²₁ under the exponential.
    pub lr: f64,
}

/// What [`classify`] found.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct TailReport {
    /// Finite values analysed.
    pub n: usize,
    /// The verdict.
    pub class: TailClass,
    /// Why, in words.
    pub reason: String,
    /// The GPD fit over the top third, if there were enough values.
    pub gpd: Option<GpdFit>,
    /// The Hill estimate at the stable `k`, if any.
    pub hill: Option<HillEstimate>,
    /// Its 95 % interval for `α`.
    pub alpha_interval: Option<(f64, f64)>,
    /// The Hill plot: `(k, α̂(k))` on a geometric grid of `k`.
    pub hill_plot: Vec<(usize, f64)>,
}

/// Maximum-likelihood GPD fit to `excesses` (all `≥ 0`, finite; at least 3 positive):
/// `None` otherwise.
///
/// Profile likelihood (Grimshaw 1993): for `θ = ξ/σ`, `ξ(θ) = mean ln(1 + θ·y)` and the
/// log-likelihood is `ℓ(θ) = −k·ln(ξ(θ)/θ) − k·(1 + ξ(θ))`, with the exponential
/// `ℓ(0) = −k·ln ȳ − k` as its limit. `θ` ranges over `(−1/y_max, ∞)`; a log grid on each
/// side of 0 then golden-section refinement finds the maximum.
pub fn gpd_fit(excesses: &[f64], threshold: f64) -> Option<GpdFit> {
    let k = excesses.len();
    if k < 3 || excesses.iter().any(|y| !(y.is_finite() && *y >= 0.0)) {
        return None;
    }
    let mean = excesses.iter().sum::<f64>() / k as f64;
    let y_max = excesses.iter().copied().fold(0.0, f64::max);
    if !(mean > 0.0) || excesses.iter().filter(|y| **y > 0.0).count() < 3 {
        return None;
    }
    let kf = k as f64;
    let ll_exp = -kf * mean.ln() - kf;
    let xi_of = |theta: f64| excesses.iter().map(|y| (theta * y).ln_1p()).sum::<f64>() / kf;
    let ll = |theta: f64| -> f64 {
        if theta == 0.0 {
            return ll_exp;
        }
        let xi = xi_of(theta);
        let s = xi / theta;
        if !(s > 0.0 && xi.is_finite()) {
            return f64::NEG_INFINITY;
        }
        -kf * s.ln() - kf * (1.0 + xi)
    };
    // Candidates: θ·ȳ on a log grid from 1e-6 to 1e6 (positive side) and θ·y_max from
    // −(1 − 1e-6) to −1e-6 (negative side).
    let mut best = (0.0, ll_exp);
    let mut grid = Vec::with_capacity(2 * 60 + 1);
    for i in 0..=60 {
        let f = 10f64.powf(-6.0 + 12.0 * i as f64 / 60.0);
        grid.push(f / mean);
    }
    for i in 0..=60 {
        let f = 10f64.powf(-6.0 + 6.0 * i as f64 / 60.0).min(1.0 - 1e-9);
        grid.push(-f / y_max);
    }
    for &t in &grid {
        let v = ll(t);
        if v > best.1 {
            best = (t, v);
        }
    }
    // Refine between the grid neighbours of the best point (same sign side).
    if best.0 != 0.0 {
        let t0 = best.0;
        let (mut a, mut b) = if t0 > 0.0 {
            (t0 / 10f64.powf(0.2), t0 * 10f64.powf(0.2))
        } else {
            ((t0 * 10f64.powf(0.1)).max(-(1.0 - 1e-12) / y_max), t0 / 10f64.powf(0.1))
        };
        let g = 0.5 * (5f64.sqrt() - 1.0);
        let (mut c, mut d) = (b - g * (b - a), a + g * (b - a));
        let (mut fc, mut fd) = (ll(c), ll(d));
        for _ in 0..80 {
            if fc > fd {
                b = d;
                d = c;
                fd = fc;
                c = b - g * (b - a);
                fc = ll(c);
            } else {
                a = c;
                c = d;
                fc = fd;
                d = a + g * (b - a);
                fd = ll(d);
            }
        }
        let t = 0.5 * (a + b);
        let v = ll(t);
        if v > best.1 {
            best = (t, v);
        }
    }
    let (theta, log_lik) = best;
    let (xi, sigma) = if theta == 0.0 { (0.0, mean) } else { (xi_of(theta), xi_of(theta) / theta) };
    Some(GpdFit {
        xi,
        sigma,
        excesses: k,
        threshold,
        log_lik,
        log_lik_exp: ll_exp,
        lr: (2.0 * (log_lik - ll_exp)).max(0.0),
    })
}

/// The `k` of the Hill plot's stable stretch: walking up a geometric grid of `k` from
/// `max(⌈√n⌉, 10)` to `n/5`, the last `k` whose estimate is within 3.5 standard
/// deviations of the estimate at a quarter of it (nested estimates at `k' < k` differ by
/// about `α·√(1/k' − 1/k)`). On a pure Pareto sample the plot is flat and the walk goes far (small
/// variance); where the body bends the plot, the walk stops before the bias shows.
/// Returns the chosen `k` and the plot; `None` when the sample is too small.
pub fn stable_k(sample: &[f64]) -> Option<(usize, Vec<(usize, f64)>)> {
    let mut xs: Vec<f64> = sample.iter().copied().filter(|x| x.is_finite() && *x > 0.0).collect();
    xs.sort_unstable_by(|a, b| b.total_cmp(a));
    stable_k_descending(&xs)
}

/// [`stable_k`] on finite positive values already sorted in descending order.
fn stable_k_descending(xs: &[f64]) -> Option<(usize, Vec<(usize, f64)>)> {
    let n = xs.len();
    if n < MIN_SAMPLE {
        return None;
    }
    // Prefix sums of ln X₍ᵢ₎ make every α̂(k) O(1).
    let mut logs = Vec::with_capacity(n + 1);
    logs.push(0.0);
    for x in xs {
        let last = *logs.last().unwrap_or(&0.0);
        logs.push(last + x.ln());
    }
    let alpha_at = |k: usize| -> Option<f64> {
        let xi = logs[k] / k as f64 - xs[k].ln();
        (xi > 0.0 && xi.is_finite()).then(|| 1.0 / xi)
    };
    let k_lo = ((n as f64).sqrt().ceil() as usize).max(10).min(n - 1);
    let k_hi = (n / 5).max(k_lo).min(n - 1);
    let mut plot: Vec<(usize, f64)> = Vec::new();
    let mut k = k_lo;
    let mut chosen = None;
    let mut stable = true;
    loop {
        if let Some(a) = alpha_at(k) {
            // The estimate at a quarter of this k (or less): nested Hill estimates differ by
            // about α·√(1/k' − 1/k) in standard deviation, so a gap beyond 3.5 of those is
            // the body's bias showing, not noise.
            let reference: Option<(usize, f64)> = plot.iter().rev().find(|(kr, _)| 4 * kr <= k).copied();
            if let Some((kr, ar)) = reference {
                let sd = a.max(ar) * (1.0 / kr as f64 - 1.0 / k as f64).sqrt();
                if (a - ar).abs() > 3.5 * sd {
                    stable = false;
                }
            }
            plot.push((k, a));
            if stable {
                chosen = Some(k);
            }
        }
        if k >= k_hi {
            break;
        }
        k = ((k as f64 * 1.25).ceil() as usize).min(k_hi);
    }
    chosen.map(|k| (k, plot))
}

/// Light, heavy or inconclusive, with the Hill estimate and its interval: see the module
/// documentation. Non-finite values are ignored; the GPD test uses the excesses over the
/// top third (at least 60 values, of which [`MIN_EXCESSES`] must exceed the threshold).
///
/// # Examples
///
/// ```
/// use safegate_core::estimators::tail::{classify, TailClass};
///
/// // Exponential quantiles: a light tail.
/// let n = 2000;
/// let exp: Vec<f64> = (1..=n).map(|i| -(1.0 - i as f64 / (n as f64 + 1.0)).ln()).collect();
/// assert_eq!(classify(&exp).class, TailClass::Light);
/// // Pareto(1.5) quantiles: a heavy tail, and α̂ near 1.5.
/// let par: Vec<f64> = (1..=n).map(|i| (1.0 - i as f64 / (n as f64 + 1.0)).powf(-1.0 / 1.5)).collect();
/// let r = classify(&par);
/// assert_eq!(r.class, TailClass::Heavy);
/// assert!((r.hill.unwrap().alpha - 1.5).abs() < 0.1);
/// ```
pub fn classify(sample: &[f64]) -> TailReport {
    let mut xs: Vec<f64> = sample.iter().copied().filter(|x| x.is_finite()).collect();
    let n = xs.len();
    let empty = |reason: String| TailReport {
        n,
        class: TailClass::Inconclusive,
        reason,
        gpd: None,
        hill: None,
        alpha_interval: None,
        hill_plot: Vec::new(),
    };
    if n < MIN_SAMPLE {
        return empty(format!("{n} values; at least {MIN_SAMPLE} are needed to judge a tail"));
    }
    xs.sort_unstable_by(|a, b| b.total_cmp(a));
    let k_gpd = (n / 3).max(2 * MIN_EXCESSES).min(n - 1);
    let threshold = xs[k_gpd];
    // Only values strictly above the threshold: a mass of ties at it (a capped signal) is
    // not a tail.
    let excesses: Vec<f64> = xs[..k_gpd].iter().map(|x| x - threshold).filter(|y| *y > 0.0).collect();
    if excesses.len() < MIN_EXCESSES {
        return empty(format!(
            "only {} of {n} values exceed the top third's threshold {threshold} (ties at a cap?): no tail to fit",
            excesses.len()
        ));
    }
    let Some(gpd) = gpd_fit(&excesses, threshold) else {
        return empty(format!("the top {k_gpd} of {n} values do not exceed the threshold {threshold}: no tail to fit"));
    };
    // `xs` is sorted in descending order: its positive values are a prefix.
    let positive = xs.partition_point(|x| *x > 0.0);
    let (hill_est, plot) = match stable_k_descending(&xs[..positive]) {
        Some((k, plot)) => (hill(&xs, k), plot),
        None => (None, Vec::new()),
    };
    let alpha_interval = hill_est.map(|h| {
        let half = 1.96 * h.alpha / (h.k as f64).sqrt();
        ((h.alpha - half).max(0.0), h.alpha + half)
    });
    let heavy = gpd.xi > 0.0 && gpd.lr > LR_CRITICAL_1PCT;
    let reason = if heavy {
        format!(
            "the top {} excesses fit a generalised Pareto with ξ̂ = {:.3} (α ≈ {:.2}) far better than an exponential: likelihood ratio {:.1} > {:.2} (1 %)",
            gpd.excesses,
            gpd.xi,
            1.0 / gpd.xi,
            gpd.lr,
            LR_CRITICAL_1PCT
        )
    } else if gpd.xi <= 0.0 {
        format!(
            "the top {} excesses fit a bounded or exponential tail (ξ̂ = {:.3} ≤ 0; likelihood ratio {:.1})",
            gpd.excesses, gpd.xi, gpd.lr
        )
    } else {
        format!(
            "the top {} excesses are consistent with an exponential tail (ξ̂ = {:.3}, likelihood ratio {:.1} ≤ {:.2})",
            gpd.excesses, gpd.xi, gpd.lr, LR_CRITICAL_1PCT
        )
    };
    TailReport {
        n,
        class: if heavy { TailClass::Heavy } else { TailClass::Light },
        reason,
        gpd: Some(gpd),
        hill: hill_est,
        alpha_interval,
        hill_plot: plot,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimators::test_rng::SplitMix;

    fn pareto(alpha: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = SplitMix(seed);
        (0..n).map(|_| (1.0 - rng.next_f64()).powf(-1.0 / alpha)).collect()
    }

    fn exponential(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = SplitMix(seed);
        (0..n).map(|_| -(1.0 - rng.next_f64()).ln()).collect()
    }

    /// Box–Muller.
    fn gaussian(n: usize, seed: u64, mean: f64, sd: f64) -> Vec<f64> {
        let mut rng = SplitMix(seed);
        (0..n)
            .map(|_| {
                let (u, v) = (1.0 - rng.next_f64(), rng.next_f64());
                mean + sd * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
            })
            .collect()
    }

    /// The acceptance case: α within ±0.2 on n = 10⁴ Pareto samples, α ∈ [1.1, 3], and a
    /// heavy verdict on each.
    #[test]
    fn recovers_alpha_within_a_fifth_on_ten_thousand_pareto_values() {
        for (i, alpha) in [1.1, 1.3, 1.5, 1.8, 2.0, 2.5, 3.0].into_iter().enumerate() {
            for seed in 0..10u64 {
                let r = classify(&pareto(alpha, 10_000, 100 * i as u64 + seed));
                let h = r.hill.unwrap();
                assert!((h.alpha - alpha).abs() <= 0.2, "α {alpha} seed {seed}: α̂ {} at k {}", h.alpha, h.k);
                assert_eq!(r.class, TailClass::Heavy, "α {alpha} seed {seed}: {}", r.reason);
                let (lo, hi) = r.alpha_interval.unwrap();
                assert!(lo < h.alpha && h.alpha < hi);
            }
        }
    }

    #[test]
    fn says_light_for_exponential_and_gaussian_samples() {
        for seed in 0..12u64 {
            let e = classify(&exponential(10_000, seed));
            assert_eq!(e.class, TailClass::Light, "exponential seed {seed}: {}", e.reason);
            let g = classify(&gaussian(10_000, 50 + seed, 0.0, 1.0));
            assert_eq!(g.class, TailClass::Light, "gaussian seed {seed}: {}", g.reason);
            // Location and scale do not matter to the verdict.
            let g = classify(&gaussian(10_000, 70 + seed, 100.0, 3.0));
            assert_eq!(g.class, TailClass::Light, "shifted gaussian seed {seed}: {}", g.reason);
            let e: Vec<f64> = exponential(2_000, 90 + seed).iter().map(|x| 5.0 + 0.1 * x).collect();
            assert_eq!(classify(&e).class, TailClass::Light, "shifted exponential seed {seed}");
        }
    }

    #[test]
    fn the_gpd_fit_recovers_its_shape() {
        // GPD(ξ, σ) by inverse CDF: y = σ/ξ·(U^{−ξ} − 1).
        for xi in [-0.3, 0.0, 0.25, 0.5, 0.9] {
            let mut rng = SplitMix(7);
            let ys: Vec<f64> = (0..20_000)
                .map(|_| {
                    let u = 1.0 - rng.next_f64();
                    if xi == 0.0 {
                        -2.0 * u.ln()
                    } else {
                        2.0 / xi * (u.powf(-xi) - 1.0)
                    }
                })
                .collect();
            let fit = gpd_fit(&ys, 0.0).unwrap();
            assert!((fit.xi - xi).abs() < 0.05, "ξ {xi}: {fit:?}");
            assert!((fit.sigma - 2.0).abs() < 0.15, "ξ {xi}: {fit:?}");
        }
    }

    #[test]
    fn small_or_degenerate_samples_are_inconclusive_not_a_panic() {
        assert_eq!(classify(&[]).class, TailClass::Inconclusive);
        assert_eq!(classify(&[1.0; 10]).class, TailClass::Inconclusive);
        let flat = classify(&[3.0; 500]);
        assert_eq!(flat.class, TailClass::Inconclusive, "{}", flat.reason);
        let with_nan: Vec<f64> = (0..200).map(|i| if i % 2 == 0 { f64::NAN } else { i as f64 }).collect();
        assert_eq!(classify(&with_nan).n, 100);
        assert!(gpd_fit(&[1.0, f64::NAN, 2.0, 3.0], 0.0).is_none());
        assert!(gpd_fit(&[1.0, -2.0, 2.0, 3.0], 0.0).is_none());
        assert!(stable_k(&[1.0; 20]).is_none());
    }
}
