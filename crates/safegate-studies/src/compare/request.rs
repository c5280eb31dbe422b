//! What `safegate compare` asks for, checked into a [`CompareConfig`].

use safegate_core::boundary::Boundary;
use safegate_core::controllers::PolicySpec;
use safegate_core::error::check;

use super::{default_policies, Case, CompareConfig, CompareError};

/// Traffic levels \[req/s\] of the goodput-vs-load curve, on the seed's health cycle.
pub const DEFAULT_CURVE_TRAFFIC: [f64; 8] = [40.0, 55.0, 70.0, 80.0, 90.0, 100.0, 120.0, 140.0];

/// Seconds per run: `duration`, or without it the boundary's horizon; it must be a positive,
/// finite number of seconds (a [`CompareError::Setting`] for the field `duration`).
pub fn run_duration(duration: Option<f64>, boundary: &Boundary) -> Result<f64, CompareError> {
    check::positive("duration", duration.unwrap_or(boundary.probability.horizon)).map_err(CompareError::Setting)
}

/// A comparison as asked for: the cases (see [`super::select_cases`] and
/// [`Case::from_scenario`]), the boundary and the settings.
#[derive(Debug, Clone)]
pub struct CompareRequest {
    /// The cases.
    pub cases: Vec<Case>,
    /// The boundary the filter enforces.
    pub boundary: Boundary,
    /// The policies; empty: [`default_policies`].
    pub policies: Vec<PolicySpec>,
    /// Stochastic replications per arm.
    pub seeds: u32,
    /// Extra stepped-chain trials per arm for the exit frequency inside the envelope.
    pub exit_trials: u32,
    /// Whether to run the goodput-vs-load curve (at [`DEFAULT_CURVE_TRAFFIC`]).
    pub curve: bool,
    /// Whether to record queue traces (for figures).
    pub traces: bool,
}

impl CompareRequest {
    /// The checked configuration: first the boundary's filter for each case's pool (a
    /// [`CompareError::Boundary`] naming the case), then everything [`CompareConfig::check`]
    /// checks.
    pub fn build(self) -> Result<CompareConfig, CompareError> {
        for c in &self.cases {
            self.boundary
                .safety_config(c.config.pool.capacity)
                .map_err(|e| CompareError::Boundary { case: c.name.clone(), message: e.to_string() })?;
        }
        let cc = CompareConfig {
            cases: self.cases,
            policies: if self.policies.is_empty() { default_policies() } else { self.policies },
            seeds: self.seeds,
            exit_trials: self.exit_trials,
            boundary: self.boundary,
            curve_traffic: if self.curve { DEFAULT_CURVE_TRAFFIC.to_vec() } else { Vec::new() },
            traces: self.traces,
        };
        cc.check()?;
        Ok(cc)
    }
}
