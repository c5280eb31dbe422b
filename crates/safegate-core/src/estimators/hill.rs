//! The Hill estimator of a distribution's tail index (Hill, "A Simple General Approach to
//! Inference About the Tail of a Distribution", Annals of Statistics 3(5), 1975).
//!
//! For a sample whose upper tail is Pareto-like, `P(X > x) ~ L(x)·x^{−α}`, with order
//! statistics `X₍₁₎ ≥ X₍₂₎ ≥ … ≥ X₍ₙ₎`, the estimate of the extreme-value index `ξ = 1/α`
//! from the top `k` is
//!
//! ```text
//! ξ̂ = (1/k)·Σ_{i=1..k} ln(X₍ᵢ₎ / X₍ₖ₊₁₎),   α̂ = 1/ξ̂
//! ```
//!
//! with asymptotic standard error `ξ/√k`, hence `≈ α̂/√k` for `α̂` (de Haan & Ferreira,
//! "Extreme Value Theory: An Introduction", Springer 2006, §3.2). `k` trades
//! variance (small `k`) against bias from the non-Pareto body (large `k`); [`hill_k`] picks
//! `⌈√n⌉`, a common default that grows with `n` while `k/n → 0`. A Student-t with `ν`
//! degrees of freedom has tail index `α = ν`, so the estimate on `|noise|` says how heavy the
//! tail is that a regime detector faces (the seed's F12) and which `ν` a robust likelihood
//! may assume. The estimator sees only the upper tail: pass `|x|` for a two-sided one.

/// A Hill estimate and what it rests on.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct HillEstimate {
    /// The tail index `α̂ = 1/ξ̂`.
    pub alpha: f64,
    /// The extreme-value index `ξ̂`, the mean log-excess of the top `k`.
    pub xi: f64,
    /// Order statistics used.
    pub k: usize,
    /// The threshold `X₍ₖ₊₁₎` the top `k` are measured from.
    pub threshold: f64,
    /// Asymptotic standard error of `α̂`, `α̂/√k`.
    pub std_error: f64,
}

/// `⌈√n⌉`, kept within `[1, n − 1]`; 0 when `n < 2` (no estimate is possible).
pub fn hill_k(n: usize) -> usize {
    if n < 2 {
        return 0;
    }
    let mut k = (n as f64).sqrt().ceil() as usize;
    // Guard the float square root at the edges of exactness.
    while k * k < n {
        k += 1;
    }
    while k > 1 && (k - 1) * (k - 1) >= n {
        k -= 1;
    }
    k.clamp(1, n - 1)
}

/// The Hill estimate from the top `k` of the finite values of `sample`; `None` unless
/// `1 ≤ k < (finite values)`, the threshold `X₍ₖ₊₁₎` is positive and the top `k` are not all
/// equal to it. Copies the finite values (O(n)) and partially sorts the copy (O(n) expected).
///
/// # Examples
///
/// ```
/// use safegate_core::estimators::hill;
///
/// // Top two e² and e above a threshold of 1: ξ̂ = (2 + 1)/2, α̂ = 2/3.
/// let e = std::f64::consts::E;
/// let est = hill(&[0.5, e * e, 1.0, 0.2, e], 2).unwrap();
/// assert!((est.xi - 1.5).abs() < 1e-12 && est.threshold == 1.0);
/// assert!((est.alpha - 2.0 / 3.0).abs() < 1e-12);
/// ```
pub fn hill(sample: &[f64], k: usize) -> Option<HillEstimate> {
    let mut xs: Vec<f64> = sample.iter().copied().filter(|x| x.is_finite()).collect();
    if k == 0 || k >= xs.len() {
        return None;
    }
    // Descending: xs[..k] are the top k, xs[k] is X₍ₖ₊₁₎.
    let (top, &mut threshold, _) = xs.select_nth_unstable_by(k, |a, b| b.total_cmp(a));
    if !(threshold > 0.0) {
        return None;
    }
    let lt = threshold.ln();
    let xi = top.iter().map(|x| x.ln() - lt).sum::<f64>() / k as f64;
    if !(xi > 0.0 && xi.is_finite()) {
        return None;
    }
    let alpha = 1.0 / xi;
    Some(HillEstimate { alpha, xi, k, threshold, std_error: alpha / (k as f64).sqrt() })
}

/// [`hill`] with `k = `[`hill_k`]`(finite values)`.
pub fn hill_auto(sample: &[f64]) -> Option<HillEstimate> {
    let n = sample.iter().filter(|x| x.is_finite()).count();
    hill(sample, hill_k(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimators::test_rng::SplitMix;

    /// Pareto(α) on [1, ∞) by inverse CDF: X = U^{−1/α}, U uniform on (0, 1].
    fn pareto(alpha: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = SplitMix(seed);
        (0..n).map(|_| (1.0 - rng.next_f64()).powf(-1.0 / alpha)).collect()
    }

    #[test]
    fn recovers_pareto_tail_indices() {
        for (alpha, seed) in [(1.5, 11), (3.0, 12)] {
            let xs = pareto(alpha, 40_000, seed);
            // The default k = 200: standard error α/√200 ≈ 7 %.
            let est = hill_auto(&xs).unwrap();
            assert_eq!(est.k, 200);
            assert!((est.alpha - alpha).abs() < 3.0 * est.std_error, "α {alpha}: {est:?}");
            assert!((est.alpha - alpha).abs() < 0.25 * alpha, "α {alpha}: {est:?}");
            // A pure Pareto has no body bias, so a large k is tight: se ≈ 1.6 %.
            let wide = hill(&xs, 4000).unwrap();
            assert!((wide.alpha - alpha).abs() < 0.06 * alpha, "α {alpha}: {wide:?}");
        }
    }

    #[test]
    fn tells_a_heavier_tail_from_a_lighter_one() {
        let heavy = hill_auto(&pareto(1.5, 10_000, 3)).unwrap();
        let light = hill_auto(&pareto(3.0, 10_000, 4)).unwrap();
        assert!(heavy.alpha + 2.0 * heavy.std_error < light.alpha - 2.0 * light.std_error, "{heavy:?} {light:?}");
    }

    #[test]
    fn the_default_k_is_the_ceiling_of_the_square_root() {
        assert_eq!([0, 1, 2, 4, 5, 100, 101, 40_000].map(hill_k), [0, 0, 1, 2, 3, 10, 11, 200]);
    }

    #[test]
    fn degenerate_samples_give_no_estimate() {
        assert_eq!(hill(&[], 1), None);
        assert_eq!(hill(&[3.0, 2.0], 2), None, "k must leave a threshold");
        assert_eq!(hill(&[3.0, 2.0], 0), None);
        assert_eq!(hill(&[3.0, -1.0, 0.5], 2), None, "threshold not positive");
        assert_eq!(hill(&[2.0, 2.0, 2.0], 2), None, "no excess over the threshold");
        assert_eq!(hill_auto(&[f64::NAN, 1.0]), None);
        // Non-finite values are dropped, not ranked.
        let with_nan = hill(&[f64::NAN, 4.0, f64::INFINITY, 2.0, 1.0], 2).unwrap();
        assert_eq!(with_nan, hill(&[4.0, 2.0, 1.0], 2).unwrap());
    }
}
