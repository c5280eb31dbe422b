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

use crate::error::{check, RangeError};

/// Inputs of the horizon bounds, in barrier units.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
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

impl HorizonInputs {
    /// Checked inputs: `α ∈ (0, 1]`, a finite `σ_h ≥ 0`, a finite `δ > 0` and a finite `h₀`
    /// (a negative margin is a start outside the safe set: the bounds are then 1). The first
    /// value out of range is the error, in that order, with its field's name (`alpha`,
    /// `sigma_h`, `delta`, `h0`). Then the derived values: the variance sum `s²` must be a
    /// finite float (else `sigma_h` is the error: `σ_h = 1e200` over `δ = 0.05`), and so
    /// must `λ = α^K·h₀/δ` (else `h0`): a bound is never computed from an overflow.
    ///
    /// ```
    /// use safegate_core::filter::bound::HorizonInputs;
    ///
    /// assert!(HorizonInputs::new(0.35, 1.0, 0.01, 0.05, 100).is_ok());
    /// let e = HorizonInputs::new(0.35, 1.5, 0.01, 0.05, 100).unwrap_err();
    /// assert_eq!(e.to_string(), "alpha = 1.5 is out of range: allowed (0, 1]");
    /// ```
    pub fn new(h0: f64, alpha: f64, sigma_h: f64, delta: f64, steps: u64) -> Result<Self, RangeError> {
        let alpha = check::gain("alpha", alpha)?;
        let sigma_h = check::non_negative("sigma_h", sigma_h)?;
        let delta = check::positive("delta", delta)?;
        if !crate::finite(h0) {
            return Err(RangeError::new("h0", h0, "a finite margin"));
        }
        let x = Self { h0, alpha, sigma_h, delta, steps };
        let (delta, k) = (crate::error::number(delta), steps);
        if !crate::finite(variance_sum(&x)) {
            return Err(RangeError::new(
                "sigma_h",
                sigma_h,
                format!(
                    "[0, ∞) with s² = (σ_h/δ)²·(1 + α² + … + α^2(K−1)) a finite float (≤ 1.8e308); with δ = {delta}, K = {k} it overflows"
                ),
            ));
        }
        if !crate::finite(lambda(&x)) {
            return Err(RangeError::new(
                "h0",
                h0,
                format!("a finite margin with λ = α^K·h0/δ a finite float (≤ 1.8e308); with δ = {delta} it overflows"),
            ));
        }
        Ok(x)
    }
}

/// The Freedman-type bound's parameters and value.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
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
    // (σ_h/δ)², not σ_h²/δ²: the squares over- or underflow on their own (σ_h = δ = 1e308
    // gave ∞/∞ = NaN, σ_h = 0 with δ = 1e-200 gave 0/0).
    let r = x.sigma_h / x.delta;
    let v = r * r;
    if x.alpha >= 1.0 {
        k * v
    } else {
        let a2 = x.alpha * x.alpha;
        v * (1.0 - a2.powf(k)) / (1.0 - a2)
    }
}

/// `λ = α^K·h₀/δ` of the Freedman bound.
fn lambda(x: &HorizonInputs) -> f64 {
    x.alpha.powf(x.steps as f64) * x.h0 / x.delta
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
    let lambda = lambda(x);
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

/// The inverse design's question and answer.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct InverseDesign {
    /// The ε asked for.
    pub epsilon: f64,
    /// The smallest starting margin that gives it ([`required_margin`]); `None`: no margin
    /// does.
    pub required_h0: Option<f64>,
}

/// Every horizon bound for one set of inputs: what `safegate bound` prints.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct HorizonReport {
    /// The inputs.
    pub inputs: HorizonInputs,
    /// The Freedman-type bound.
    pub freedman: FreedmanBound,
    /// The Ville-type bound, when the barrier's upper bound `B` is given.
    pub ville: Option<f64>,
    /// The inverse design, when an ε is given.
    pub inverse: Option<InverseDesign>,
}

/// The Freedman bound of `x`, the Ville-type bound when `upper` (`B`) is given and the
/// inverse design when `epsilon` is given.
///
/// ```
/// use safegate_core::filter::bound::{horizon_report, HorizonInputs};
///
/// let x = HorizonInputs::new(0.35, 1.0, 0.01, 0.05, 100).unwrap();
/// let r = horizon_report(&x, Some(0.85), Some(0.01)).unwrap();
/// assert!((r.ville.unwrap() - 0.588).abs() < 1e-3);
/// assert!(r.inverse.unwrap().required_h0.unwrap() > 0.35);
/// ```
/// `upper` must be a finite bound at or above `h0`, `epsilon` a probability in (0, 1):
/// anything else is refused (`bound --upper nan` printed `P ≤ NaN`).
pub fn horizon_report(
    x: &HorizonInputs,
    upper: Option<f64>,
    epsilon: Option<f64>,
) -> Result<HorizonReport, RangeError> {
    if let Some(b) = upper {
        check::within("upper", b, x.h0.max(0.0), f64::MAX, "a finite bound ≥ h0 (and ≥ 0)")?;
    }
    if let Some(e) = epsilon {
        check::probability("epsilon", e)?;
    }
    Ok(HorizonReport {
        inputs: *x,
        freedman: freedman(x),
        ville: upper.map(|b| ville(x.h0, x.alpha, b, x.steps)),
        inverse: epsilon.map(|epsilon| InverseDesign { epsilon, required_h0: required_margin(x, epsilon) }),
    })
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
    fn the_checked_constructor_refuses_each_input_out_of_range() {
        assert_eq!(HorizonInputs::new(0.35, 1.0, 0.01, 0.05, 100), Ok(worked()));
        // A start outside the safe set is allowed (its bound is 1), and so is σ_h = 0.
        assert!(HorizonInputs::new(-0.3, 0.5, 0.0, 0.05, 0).is_ok());
        let field = |r: Result<HorizonInputs, RangeError>| r.unwrap_err().field;
        for alpha in [0.0, -0.5, 1.5, f64::NAN] {
            assert_eq!(field(HorizonInputs::new(0.35, alpha, 0.01, 0.05, 100)), "alpha");
        }
        for sigma in [-0.01, f64::INFINITY, f64::NAN] {
            assert_eq!(field(HorizonInputs::new(0.35, 1.0, sigma, 0.05, 100)), "sigma_h");
        }
        for delta in [0.0, -1.0, f64::INFINITY, f64::NAN] {
            assert_eq!(field(HorizonInputs::new(0.35, 1.0, 0.01, delta, 100)), "delta");
        }
        let e = HorizonInputs::new(f64::NAN, 1.0, 0.01, 0.05, 100).unwrap_err();
        assert_eq!(e.to_string(), "h0 = NaN is out of range: allowed a finite margin");
        // The first bad value in the order α, σ_h, δ, h₀ is the one reported.
        assert_eq!(field(HorizonInputs::new(f64::NAN, 2.0, -1.0, 0.0, 1)), "alpha");
        assert_eq!(field(HorizonInputs::new(f64::NAN, 1.0, -1.0, 0.0, 1)), "sigma_h");
    }

    /// Inputs each in range whose derived values overflow are refused, naming the input:
    /// `bound --sigma 1e308 --delta 1e308` printed `s² = NaN`, `--sigma 1e200` `s² = inf`.
    #[test]
    fn inputs_whose_derived_values_overflow_are_refused() {
        for (sigma, delta, alpha, steps) in [
            (1e200, 0.05, 1.0, 100),
            (1e200, 1.0, 1.0, 100),
            (1e154, 1e-10, 1.0, 1),
            (1e150, 1e-10, 0.999_999, 1_000_000),
            (1.0, f64::MIN_POSITIVE, 1.0, 1),
        ] {
            let e = HorizonInputs::new(0.35, alpha, sigma, delta, steps).unwrap_err();
            assert_eq!(e.field, "sigma_h", "{sigma:e} {delta:e}: {e}");
            assert!(e.to_string().contains("overflow"), "{e}");
        }
        let e = HorizonInputs::new(1e300, 1.0, 0.0, 1e-300, 10).unwrap_err();
        assert_eq!(e.field, "h0");
        assert_eq!(
            e.to_string(),
            "h0 = 1e300 is out of range: allowed a finite margin with λ = α^K·h0/δ a finite float (≤ 1.8e308); with δ = 1e-300 it overflows"
        );
        // Large or tiny but with finite derived values: accepted, and every number of the
        // bound is finite (σ_h = δ = 1e308 is s² = K, not ∞/∞).
        for (h0, sigma, delta) in
            [(1e10, 1e150, 1e-3), (1e300, 1e-300, 1.0), (0.35, 1e154, 1.0), (0.35, 1e308, 1e308), (0.35, 0.0, 1e-200)]
        {
            let x = HorizonInputs::new(h0, 1.0, sigma, delta, 1).unwrap();
            let b = freedman(&x);
            assert!(b.lambda.is_finite() && b.s2.is_finite() && b.probability.is_finite(), "{b:?}");
        }
        assert_eq!(freedman(&HorizonInputs::new(0.35, 1.0, 1e308, 1e308, 100).unwrap()).s2, 100.0);
    }

    #[test]
    fn the_report_has_each_bound_only_when_asked() {
        let x = worked();
        let r = horizon_report(&x, None, None).unwrap();
        assert_eq!((r.inputs, r.freedman, r.ville, r.inverse), (x, freedman(&x), None, None));
        let r = horizon_report(&x, Some(0.85), Some(0.016_13)).unwrap();
        assert_eq!(r.ville, Some(ville(0.35, 1.0, 0.85, 100)));
        let inv = r.inverse.unwrap();
        assert_eq!((inv.epsilon, inv.required_h0), (0.016_13, required_margin(&x, 0.016_13)));
        // An ε no margin reaches (the noise alone exceeds it): asked, but no answer.
        let noisy = HorizonInputs { sigma_h: 1e12, ..x };
        assert_eq!(horizon_report(&noisy, None, Some(0.5)).unwrap().inverse.unwrap().required_h0, None);
        // An upper bound or ε that is not a number is refused, not printed as `P ≤ NaN`.
        assert_eq!(horizon_report(&x, Some(f64::NAN), None).unwrap_err().field, "upper");
        assert_eq!(horizon_report(&x, None, Some(2.0)).unwrap_err().field, "epsilon");
    }

    #[test]
    fn decay_shrinks_the_variance_sum_and_the_margin() {
        let x = HorizonInputs { alpha: 0.99, ..worked() };
        let b = freedman(&x);
        assert!(b.s2 < 4.0 && b.lambda < 7.0);
        assert!(freedman_h(0.0, 4.0) == 1.0 && freedman_h(3.0, 0.0) == 0.0);
    }
}
