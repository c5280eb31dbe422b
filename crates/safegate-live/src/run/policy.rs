//! The policy a live run decides with.

use safegate_core::boundary::Boundary;
use safegate_core::controllers::PolicySpec;
use safegate_core::safety::{FilterStats, SafetyFilter};
use safegate_core::{Observation, Policy};
use safegate_sim::variants::VariantPolicy;
use safegate_sim::Config;

/// The policy a live run decides with: the scenario's (its gate, or the filter over it),
/// or a registry spec (`cycle+pool`, `vegas`, …), optionally under a boundary's filter.
pub enum LivePolicy {
    /// The scenario's own ([`safegate_sim::variants::variants`]).
    Scenario(VariantPolicy),
    /// A registry policy alone.
    Nominal(Box<dyn Policy + Send>),
    /// A registry policy under the safety filter.
    Filtered(Box<SafetyFilter<Box<dyn Policy + Send>>>),
}

impl std::fmt::Debug for LivePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LivePolicy").field(&self.name()).finish()
    }
}

impl LivePolicy {
    /// `spec` for a pool like `cfg`'s, under `boundary`'s filter if given.
    pub fn from_spec(spec: &PolicySpec, cfg: &Config, boundary: Option<&Boundary>) -> Result<Self, String> {
        let nominal = safegate_studies::compare::build_spec(spec, cfg)?;
        match boundary {
            None => Ok(LivePolicy::Nominal(nominal)),
            Some(b) => {
                let safety = b.safety_config(cfg.pool.capacity).map_err(|e| format!("boundary: {e}"))?;
                let f = SafetyFilter::new(safety, nominal).map_err(|e| e.to_string())?;
                Ok(LivePolicy::Filtered(Box::new(f)))
            }
        }
    }

    /// The filter's counters, if a filter decides.
    pub fn filter_stats(&self) -> Option<FilterStats> {
        match self {
            LivePolicy::Scenario(v) => v.filter_stats(),
            LivePolicy::Nominal(_) => None,
            LivePolicy::Filtered(f) => Some(*f.stats()),
        }
    }
}

impl Policy for LivePolicy {
    fn decide(&mut self, obs: &Observation) -> safegate_core::Action {
        match self {
            LivePolicy::Scenario(v) => v.decide(obs),
            LivePolicy::Nominal(p) => p.decide(obs),
            LivePolicy::Filtered(f) => f.decide(obs),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            LivePolicy::Scenario(v) => v.name(),
            LivePolicy::Nominal(p) => p.name(),
            LivePolicy::Filtered(f) => f.name(),
        }
    }
}

impl From<VariantPolicy> for LivePolicy {
    fn from(v: VariantPolicy) -> Self {
        LivePolicy::Scenario(v)
    }
}
