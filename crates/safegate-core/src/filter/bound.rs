//! Horizon bounds: how likely the queue is to leave the safe set within `K` steps.
//!
//! Freedman-type bound (Cosner, Culbertson & Ames, "Bounding Stochastic Safety: Leveraging
//! Freedman's Inequality with Discrete-Time Control Barrier Functions", IEEE L-CSS 8, 2024,
//! Theorem 3, with the tighter variance sum): if for all `k ≤ K`,
//! `E[h(x_{k+1}) | F_k] ≥ α·h(x_k)`, the upward surprise is bounded,
//! `h(x_{k+1}) − E[h(x_{k+1}) | F_k] ≥ −δ`, and `Var(h(x_{k+1}) | F_k) ≤ σ_h²`, then
//!
//! ```text
//! P[∃k ≤ K: h(x_k) < 0] ≤ H(λ, s²),  λ = α^K·h₀/δ,  s² = σ_h²(1 − α^{2K}) / (δ²(1 − α²))
//! H(λ, s²) = (s²/(λ + s²))^(λ + s²) · e^λ
//! ```
//!
//! (`s² → K·σ_h²/δ²` at α = 1). The older Ville-type bound needs `h ≤ B` and gives
//! `1 − α^K·h₀/B` (Kushner 1967; Santoyo, Dutreix & Coogan 2021). The inverse design bisects
//! the smallest `λ*` with `H(λ*, s²) ≤ ε` and returns the deepest safe start
//! `q₀ ≤ Q(θ − δλ*/α^K)`.

/// Inputs of the horizon bounds, in barrier units.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct HorizonInputs {
    /// Starting margin `h₀ = θ − q₀/Q`.
    pub h0: f64,
    /// Decay α ∈ (0, 1] of the expectation condition.
    pub alpha: f64,
    /// Std of the one-step change of h, `σ_h = σ_q/Q`.
    pub sigma_h: f64,
    /// Bound on the upward surprise of the queue, `δ = ξ_max/Q`.
    pub delta: f64,
    /// Steps `K`.
    pub steps: u64,
}

/// The Freedman-type bound's parameters and value.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct FreedmanBound {
    /// `λ = α^K h₀/δ`.
    pub lambda: f64,
    /// `s² = σ_h²(1 − α^{2K})/(δ²(1 − α²))`.
    pub s2: f64,
    /// `H(λ, s²)`, capped at 1.
    pub probability: f64,
}

/// `H(λ, s²) = (s²/(λ + s²))^(λ + s²) · e^λ`, computed in logs; 1 when λ ≤ 0.
pub fn freedman_h(lambda: f64, s2: f64) -> f64 {
    if !(lambda > 0.0) {
        return 1.0;
    }
    if s2 <= 0.0 {
        return 0.0; // no variance: the margin cannot be crossed
    }
    let ln = (lambda + s2) * (s2 / (lambda + s2)).ln() + lambda;
    ln.exp().min(1.0)
}

/// `s²` of the Freedman bound.
fn variance_sum(x: &HorizonInputs) -> f64 {
    let k = x.steps as f64;
    let v = x.sigma_h * x.sigma_h / (x.delta * x.delta);
    if x.alpha >= 1.0 {
        k * v
    } else {
        let a2 = x.alpha * x.alpha;
        v * (1.0 - a2.powf(k)) / (1.0 - a2)
    }
}

/// The Freedman-type bound (Cosner, Culbertson & Ames 2024, Theorem 3).
///
/// # Examples
///
/// The worked check of docs/math.md §Horizon bound: Q = 200, θ = 0.85, q₀ = 100, K = 100,
/// σ_q = 2, ξ_max = 10, α = 1.
///
/// ```
/// use safegate_core::filter::bound::{freedman, HorizonInputs};
///
/// let b = freedman(&HorizonInputs { h0: 0.35, alpha: 1.0, sigma_h: 0.01, delta: 0.05, steps: 100 });
/// assert!((b.lambda - 7.0).abs() < 1e-12 && (b.s2 - 4.0).abs() < 1e-9);
/// assert!((b.probability - 0.016).abs() < 0.0005);
/// ```
pub fn freedman(x: &HorizonInputs) -> FreedmanBound {
    let lambda = x.alpha.powf(x.steps as f64) * x.h0 / x.delta;
    let s2 = variance_sum(x);
    FreedmanBound { lambda, s2, probability: freedman_h(lambda, s2) }
}

/// The Ville-type bound `1 − α^K·h₀/B` for a barrier bounded above by `B` (clamped to [0, 1]).
pub fn ville(h0: f64, alpha: f64, bound: f64, steps: u64) -> f64 {
    (1.0 - alpha.powf(steps as f64) * h0 / bound).clamp(0.0, 1.0)
}

/// Inverse design: the smallest starting margin `h₀` for which the Freedman bound is ≤ ε
/// (the same inputs otherwise; `x.h0` is ignored), or `None` if no margin achieves it.
pub fn required_margin(x: &HorizonInputs, epsilon: f64) -> Option<f64> {
    let s2 = variance_sum(x);
    if freedman_h(1e12, s2) > epsilon {
        return None;
    }
    // H falls as λ grows: bisect λ*.
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while freedman_h(hi, s2) > epsilon {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if freedman_h(mid, s2) > epsilon {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(hi * x.delta / x.alpha.powf(x.steps as f64))
}

/// Inverse design in queue units: the deepest starting depth `q₀ ≤ Q(θ − δλ*/α^K)`.
pub fn deepest_start(threshold: f64, capacity: f64, x: &HorizonInputs, epsilon: f64) -> Option<f64> {
    required_margin(x, epsilon).map(|h| capacity * (threshold - h)).filter(|q| *q >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worked() -> HorizonInputs {
        HorizonInputs { h0: 0.35, alpha: 1.0, sigma_h: 0.01, delta: 0.05, steps: 100 }
    }

    #[test]
    fn worked_example_of_math_md() {
        let b = freedman(&worked());
        assert!((b.lambda - 7.0).abs() < 1e-12);
        assert!((b.s2 - 4.0).abs() < 1e-9);
        // (4/11)^11 · e^7 = 0.01613…
        assert!((b.probability - 0.016_13).abs() < 1e-4, "{}", b.probability);
        // Ville with B = θ = 0.85: 1 − 0.35/0.85 ≈ 0.59.
        assert!((ville(0.35, 1.0, 0.85, 100) - 0.588_235).abs() < 1e-5);
    }

    #[test]
    fn inverse_design_inverts_the_bound() {
        let x = worked();
        let h = required_margin(&x, 0.016_13).unwrap();
        assert!((h - 0.35).abs() < 1e-3, "{h}");
        let q = deepest_start(0.85, 200.0, &x, 0.016_13).unwrap();
        assert!((q - 100.0).abs() < 0.2, "{q}");
        // A tighter ε needs a larger margin.
        assert!(required_margin(&x, 1e-4).unwrap() > h);
    }

    #[test]
    fn decay_shrinks_the_variance_sum_and_the_margin() {
        let x = HorizonInputs { alpha: 0.99, ..worked() };
        let b = freedman(&x);
        assert!(b.s2 < 4.0 && b.lambda < 7.0);
        assert!(freedman_h(0.0, 4.0) == 1.0 && freedman_h(3.0, 0.0) == 0.0);
    }
}
