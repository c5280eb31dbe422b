//! What a comparison runs ([`CompareConfig`]), why it may not ([`CompareError`]), and the
//! checks of every input before the first run.

use safegate_core::boundary::Boundary;
use safegate_core::controllers::PolicySpec;
use safegate_core::safety::SafetyConfig;
use safegate_sim::config::Config;
use safegate_sim::limits::{budget, MAX_EVENTS, MAX_TRAJECTORY_STEPS};
use safegate_sim::Mode;

use super::{build_spec, Case};

/// What to run.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// The cases.
    pub cases: Vec<Case>,
    /// The policies (see [`build_policy`](super::build_policy) and [`default_policies`](super::default_policies)).
    pub policies: Vec<PolicySpec>,
    /// Stochastic replications per arm.
    pub seeds: u32,
    /// Extra stepped-chain trials per arm for the exit frequency inside the envelope (0:
    /// use the replications).
    pub exit_trials: u32,
    /// The boundary the filter enforces and the exits are counted against.
    pub boundary: Boundary,
    /// Traffic levels of the goodput-vs-load curve (on the health cycle); empty: none.
    pub curve_traffic: Vec<f64>,
    /// Record queue traces of the first replication (for figures).
    pub traces: bool,
}

/// Why a comparison could not run. Everything is checked before the first run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompareError {
    /// A policy name is unknown or cannot be built.
    #[error("{0}")]
    Policy(String),
    /// A case's configuration is out of range.
    #[error("case {case}: {error}")]
    Case {
        /// The case's name.
        case: String,
        /// The field, value and allowed range.
        error: safegate_core::RangeError,
    },
    /// The boundary cannot build a filter for a case (a value out of range).
    #[error("boundary{}: {message}", if case.is_empty() { String::new() } else { format!(" (case {case})") })]
    Boundary {
        /// The case whose capacity it was built for (empty: all).
        case: String,
        /// What is wrong.
        message: String,
    },
    /// Too little to measure.
    #[error("{0}")]
    Empty(String),
    /// A case asked for by name is not one of the seed's ([`select_cases`](super::select_cases)).
    #[error("unknown case {name:?}: the default cases are {}", known.join(", "))]
    UnknownCase {
        /// The name as given.
        name: String,
        /// The names of the seed's cases.
        known: Vec<String>,
    },
    /// A setting of the request out of range (the run's `duration`).
    #[error("{0}")]
    Setting(safegate_core::RangeError),
}

impl CompareConfig {
    /// Check everything [`compare`](super::compare) checks before its first run: every policy builds, at
    /// least one seed, case and policy, every case's model and the boundary's filter for its
    /// pool, and the load curve's points.
    pub fn check(&self) -> Result<(), CompareError> {
        filters(self).map(|_| ())
    }
}

/// The filter of each case (for its capacity) and of the load curve (the default pool),
/// after checking every input.
pub(super) fn filters(cc: &CompareConfig) -> Result<(Vec<SafetyConfig>, SafetyConfig), CompareError> {
    for p in &cc.policies {
        build_spec(p, &Config::default()).map_err(CompareError::Policy)?;
    }
    if cc.seeds == 0 {
        return Err(CompareError::Empty("seeds must be at least 1".into()));
    }
    if cc.cases.is_empty() {
        return Err(CompareError::Empty("no case to run".into()));
    }
    if cc.policies.is_empty() {
        return Err(CompareError::Empty("no policy to run".into()));
    }
    let b = &cc.boundary;
    let safety_for = |case: &str, capacity: f64| -> Result<SafetyConfig, CompareError> {
        b.safety_config(capacity).map_err(|e| CompareError::Boundary { case: case.to_string(), message: e.to_string() })
    };
    let mut safety = Vec::with_capacity(cc.cases.len());
    for c in &cc.cases {
        c.config.check_for(Mode::Stochastic).map_err(|error| CompareError::Case { case: c.name.clone(), error })?;
        safety.push(safety_for(&c.name, c.config.pool.capacity)?);
    }
    let duration = cc.cases[0].config.duration;
    let curve_config = |traffic: f64| Config { traffic, seed: 77, duration, ..Config::default() };
    for &t in &cc.curve_traffic {
        curve_config(t)
            .check_for(Mode::Stochastic)
            .map_err(|error| CompareError::Case { case: format!("load curve at {t} req/s"), error })?;
    }
    let curve_safety = safety_for("load curve", Config::default().pool.capacity)?;
    // The whole comparison's work: arrivals of every stochastic run, steps of every exit
    // trial (a run is checked on its own above; many of them add up).
    let runs = f64::from(cc.seeds) * 2.0 * cc.policies.len() as f64;
    let arrivals: f64 = cc.cases.iter().map(|c| c.config.traffic.max(1.0) * c.config.duration).sum::<f64>() * runs
        + cc.curve_traffic.iter().map(|t| t.max(1.0) * duration).sum::<f64>() * 2.0 * cc.policies.len() as f64;
    let setting = |error| CompareError::Setting(error);
    budget("seeds", cc.seeds, arrivals, 100.0 * MAX_EVENTS, "expected arrivals over all runs").map_err(setting)?;
    let steps: f64 = cc.cases.iter().map(|c| c.config.steps() as f64).sum();
    let trials = f64::from(cc.exit_trials) * 2.0 * cc.policies.len() as f64;
    budget("exit_trials", cc.exit_trials, trials * steps, MAX_TRAJECTORY_STEPS, "trajectory-steps of the exit trials")
        .map_err(setting)?;
    Ok((safety, curve_safety))
}
