//! The seed's admission gate, and the no-gate baseline.
//!
//! The seed's widget rejects a share of arrivals that rises linearly from zero at the
//! Rejection Threshold θ to the Rejection Sensitivity at a full queue:
//!
//! ```text
//! rej(q) = sens · clamp((q/cap − θ) / (1 − θ), 0, 1)
//! ```
//!
//! (Polyulya, "Safe in Probability, Not in Size", 2026, section "This Model's Own Barrier,
//! Stated Explicitly": the threshold is the boundary of the safe set C and the sensitivity
//! is how hard the filter pushes back near it.)

use crate::error::{check, RangeError};
use crate::policy::{Action, Observation, Policy};

/// The seed's gate: reject `sens · clamp((q/cap − θ)/(1 − θ), 0, 1)` of arrivals.
///
/// # Examples
///
/// ```
/// use safegate_core::{Observation, Policy, SeedGate};
///
/// let mut gate = SeedGate::new(0.7, 1.0).unwrap();
/// // Below the threshold everything is admitted …
/// assert_eq!(gate.decide(&Observation::new(0.0, 100.0, 200.0)).admit, 1.0);
/// // … at a full queue everything is rejected.
/// assert_eq!(gate.decide(&Observation::new(0.0, 200.0, 200.0)).admit, 0.0);
/// // A threshold of 1 is not a gate.
/// assert!(SeedGate::new(1.0, 1.0).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeedGate {
    threshold: f64,
    sensitivity: f64,
    /// Precomputed `1 / (1 − θ)`.
    inv_span: f64,
}

impl SeedGate {
    /// A gate with Rejection Threshold θ ∈ (0, 1) (the range of every θ,
    /// [`check::threshold`]) and Rejection Sensitivity ∈ [0, 1].
    pub fn new(threshold: f64, sensitivity: f64) -> Result<Self, RangeError> {
        let threshold = check::threshold("threshold", threshold)?;
        let sensitivity = check::unit("sensitivity", sensitivity)?;
        Ok(Self { threshold, sensitivity, inv_span: 1.0 / (1.0 - threshold) })
    }

    /// The rejection threshold θ (fraction of capacity).
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The rejection sensitivity.
    pub fn sensitivity(&self) -> f64 {
        self.sensitivity
    }

    /// The share of arrivals rejected at occupancy `q/cap`; NaN occupancy rejects all.
    #[inline]
    pub fn rejection(&self, occupancy: f64) -> f64 {
        let x = (occupancy - self.threshold) * self.inv_span;
        if x.is_nan() {
            return self.sensitivity;
        }
        self.sensitivity * x.clamp(0.0, 1.0)
    }
}

impl Policy for SeedGate {
    #[inline]
    fn decide(&mut self, obs: &Observation) -> Action {
        Action::admit(1.0 - self.rejection(obs.occupancy()))
    }
    fn name(&self) -> &'static str {
        "seed-gate"
    }
}

/// No gate: admit everything (the seed's sensitivity-0 baseline).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Open;

impl Policy for Open {
    #[inline]
    fn decide(&mut self, _obs: &Observation) -> Action {
        Action::OPEN
    }
    fn name(&self) -> &'static str {
        "open"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rejection_is_linear_between_threshold_and_full() {
        let g = SeedGate::new(0.7, 0.8).unwrap();
        assert_eq!(g.rejection(0.7), 0.0);
        assert!((g.rejection(0.85) - 0.4).abs() < 1e-12);
        assert!((g.rejection(1.0) - 0.8).abs() < 1e-12);
        assert!((g.rejection(1.5) - 0.8).abs() < 1e-12);
    }

    #[test]
    fn bad_values_name_the_field() {
        let e = SeedGate::new(0.5, 1.5).unwrap_err();
        assert_eq!(e.field, "sensitivity");
        assert!(e.to_string().contains("[0, 1]"));
        assert!(SeedGate::new(f64::NAN, 1.0).is_err());
        // θ has one range everywhere: (0, 1).
        assert_eq!(SeedGate::new(0.0, 1.0).unwrap_err().allowed, "(0, 1)");
    }

    proptest! {
        #[test]
        fn admit_is_always_a_fraction(q in proptest::num::f64::ANY, th in 0.001f64..0.999, s in 0.0f64..=1.0) {
            let mut g = SeedGate::new(th, s).unwrap();
            let a = g.decide(&Observation::new(0.0, q, 200.0)).admit;
            prop_assert!((0.0..=1.0).contains(&a));
        }
    }
}
