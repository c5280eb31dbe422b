//! Fleet files: a `[fleet]` table (and an optional `[health]`, as in scenario files).
//!
//! ```toml
//! name = "two gates, one greedier"
//! [fleet]
//! comfortable = 4          # C, counted over every gate's in-flight work
//! service_rate = 37.5      # s [req/s]
//! duration = 400
//! dt = 0.01
//! gates = [
//!   { rate = 120, executors = 32, capacity = 200, delay = 0.05 },
//!   { rate = 120, executors = 8, capacity = 200, delay = 0.02, weight = 1 },
//! ]
//! [fleet.price]            # optional: the coordination price
//! gain = 0.05
//! [health]                 # optional: constant 1 when absent
//! kind = "constant"
//! ```
//!
//! Instead of `gates`, `rates = [80, 60, 40]` makes one gate per rate from the template
//! `gate = { executors = 8, … }`, or `copies = 4` makes four copies of the template.
//! Unknown keys are errors; out-of-range values name their path (`fleet.gates[1].rate`).

use std::path::Path;

use safegate_core::RangeError;
use serde::{Deserialize, Serialize};

use super::config::{FleetConfig, GateConfig, PriceConfig, MAX_GATES};
use safegate_sim::health::{HealthSchedule, HealthTrack};
use safegate_sim::model::Busy;
use safegate_sim::scenario::{HealthSection, ScenarioError};

/// A fleet file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct FleetScenario {
    /// A short name for reports.
    pub name: Option<String>,
    /// What the fleet shows.
    pub description: Option<String>,
    /// `[fleet]`.
    pub fleet: FleetSection,
    /// `[health]`, shared by every gate (constant 1 when absent).
    pub health: Option<HealthSection>,
}

/// `[fleet]`: the shared dependency, the run, the gates and the price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FleetSection {
    /// `C` (4).
    pub comfortable: f64,
    /// `s` [req/s] (37.5).
    pub service_rate: f64,
    /// Busy counting ("fluid"; [`FleetConfig::busy`]).
    pub busy: Busy,
    /// `θ` for the exit frequency (0.7).
    pub threshold: f64,
    /// Simulated seconds (400).
    pub duration: f64,
    /// Euler step \[s\] (0.01).
    pub dt: f64,
    /// Seed of the health noise, if any (1).
    pub seed: u64,
    /// The gates, one entry each (`gates = []` is refused: a fleet has at least one).
    pub gates: Option<Vec<GateConfig>>,
    /// One gate per rate, from `gate`.
    pub rates: Option<Vec<f64>>,
    /// This many copies of `gate` (with `rates`: must match its length).
    pub copies: Option<u32>,
    /// The template for `rates` and `copies`.
    pub gate: GateConfig,
    /// `[fleet.price]`: the coordination price (none by default).
    pub price: Option<PriceConfig>,
}

impl Default for FleetSection {
    fn default() -> Self {
        let d = FleetConfig::default();
        Self {
            comfortable: d.comfortable,
            service_rate: d.rate,
            busy: d.busy,
            threshold: d.threshold,
            duration: d.duration,
            dt: d.dt,
            seed: 1,
            gates: None,
            rates: None,
            copies: None,
            gate: GateConfig::default(),
            price: None,
        }
    }
}

impl FleetScenario {
    /// Parse a fleet file's text, with `key.path = value` overrides; `origin` names it in
    /// errors. Values are checked by [`FleetScenario::config`].
    pub fn from_toml_with(text: &str, origin: &str, overrides: &[(String, String)]) -> Result<Self, ScenarioError> {
        safegate_core::config_file::parse(text, overrides)
            .map_err(|e| ScenarioError::Parse { origin: origin.to_string(), message: e.0 })
    }

    /// Parse a fleet file's text.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, ScenarioError> {
        Self::from_toml_with(text, origin, &[])
    }

    /// Read and parse a fleet file.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = safegate_sim::scenario::read(path)?;
        let mut s = Self::from_toml(&text, &path.display().to_string())?;
        if let (Some(h), Some(dir)) = (s.health.as_mut(), path.parent()) {
            if let Some(file) = h.file.as_mut().filter(|f| f.is_relative()) {
                *file = dir.join(&*file);
            }
        }
        Ok(s)
    }

    /// Check every value and build the [`FleetConfig`].
    pub fn config(&self, origin: &str) -> Result<FleetConfig, ScenarioError> {
        let invalid = |error: RangeError| ScenarioError::Invalid { origin: origin.to_string(), error };
        let f = &self.fleet;
        let gates = match (&f.rates, f.copies, f.gates.is_none()) {
            (None, None, _) if f.gates.as_ref().is_some_and(Vec::is_empty) => {
                return Err(invalid(RangeError::new("fleet.gates", "[]", format!("[1, {MAX_GATES}] gates"))))
            }
            (None, None, _) => f.gates.clone().unwrap_or_else(|| vec![f.gate; 2]),
            (_, _, false) => {
                return Err(invalid(RangeError::new(
                    "fleet.gates",
                    "(with rates or copies)",
                    "either gates or rates/copies",
                )))
            }
            (Some(rates), copies, true) => {
                if let Some(n) = copies.filter(|&n| n as usize != rates.len()) {
                    return Err(invalid(RangeError::new(
                        "fleet.copies",
                        n,
                        format!("len(fleet.rates) = {}", rates.len()),
                    )));
                }
                rates.iter().map(|&rate| GateConfig { rate, ..f.gate }).collect()
            }
            (None, Some(n), true) => {
                if !(1..=MAX_GATES as u32).contains(&n) {
                    return Err(invalid(RangeError::new("fleet.copies", n, format!("[1, {MAX_GATES}]"))));
                }
                vec![f.gate; n as usize]
            }
        };
        let health = match &self.health {
            Some(h) => h.track(f.seed, origin)?,
            None => HealthTrack::new(HealthSchedule::Constant { level: 1.0 }),
        };
        let cfg = FleetConfig {
            gates,
            comfortable: f.comfortable,
            rate: f.service_rate,
            busy: f.busy,
            health,
            threshold: f.threshold,
            duration: f.duration,
            dt: f.dt,
            price: f.price,
        };
        cfg.check().map_err(invalid)?;
        Ok(cfg)
    }
}
