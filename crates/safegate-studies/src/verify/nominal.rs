//! The nominal controllers `verify` runs under the filter (static dispatch: a trajectory
//! step calls them with no indirection).

use safegate_core::{Open, Policy, SeedGate};
use serde::Serialize;

/// The nominal controller under the filter.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Nominal {
    /// Admit everything.
    Open,
    /// The seed's gate.
    SeedGate {
        /// θ.
        threshold: f64,
        /// Sensitivity.
        sensitivity: f64,
    },
}

impl Nominal {
    pub(super) fn policy(&self) -> NominalPolicy {
        match *self {
            Nominal::Open => NominalPolicy::Open(Open),
            Nominal::SeedGate { threshold, sensitivity } => NominalPolicy::Gate(
                SeedGate::new(threshold, sensitivity).unwrap_or_else(|_| SeedGate::new(0.7, 1.0).expect("valid")),
            ),
        }
    }
}

/// The nominal controllers verify can run (static dispatch).
#[derive(Debug, Clone)]
pub(super) enum NominalPolicy {
    Open(Open),
    Gate(SeedGate),
}

impl Policy for NominalPolicy {
    #[inline]
    fn decide(&mut self, obs: &safegate_core::Observation) -> safegate_core::Action {
        match self {
            NominalPolicy::Open(p) => p.decide(obs),
            NominalPolicy::Gate(p) => p.decide(obs),
        }
    }
    fn name(&self) -> &'static str {
        match self {
            NominalPolicy::Open(p) => p.name(),
            NominalPolicy::Gate(p) => p.name(),
        }
    }
}
