//! Scenario files: the seed's model as TOML, every field optional with the seed's default.
//!
//! ```toml
//! [model]
//! executors = 8        # P
//! comfortable = 4      # C
//! rate = 37.5          # s, req/s per executor
//! capacity = 200       # cap
//! busy = "whole"       # or "fluid"
//! [traffic]
//! rate = 80            # λ, req/s
//! [gate]
//! threshold = 0.7      # θ
//! sensitivity = 1.0    # 0 = no gate
//! [health]
//! kind = "cycle"       # constant | cycle | dip | trace
//! [run]
//! duration = 400
//! dt = 0.05
//! mode = "fluid"       # or "stochastic", "stepped"
//! seed = 1
//! ```
//!
//! Unknown keys are errors; a value out of range fails with its path, the value and the
//! allowed range, never a panic.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::behaviour::{Retries, RetryPath, ServiceLaw};
use crate::config::Config;
use crate::health::{DipShape, HealthNoise, HealthSchedule, HealthTrack};
use crate::model::{Busy, Pool};

/// Which simulator runs a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Deterministic forward Euler (reproduces the seed's numbers).
    #[default]
    Fluid,
    /// Exact discrete-event simulation with Poisson arrivals (for probabilities).
    Stochastic,
    /// Discrete-time stochastic chain on the `dt` grid (Monte Carlo at scale).
    Stepped,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Fluid => "fluid",
            Mode::Stochastic => "stochastic",
            Mode::Stepped => "stepped",
        })
    }
}

/// `[model]`: the executor pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelSection {
    /// `P`, executors (8).
    pub executors: u32,
    /// `C`, comfortable concurrency (4).
    pub comfortable: f64,
    /// `s`, per-executor rate [req/s] (37.5).
    pub rate: f64,
    /// Queue capacity (200).
    pub capacity: u32,
    /// Busy-executor counting in the fluid mode ("whole").
    pub busy: Busy,
}

impl Default for ModelSection {
    fn default() -> Self {
        Self { executors: 8, comfortable: 4.0, rate: 37.5, capacity: 200, busy: Busy::Whole }
    }
}

/// `[traffic]`: the offered load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrafficSection {
    /// Base traffic λ [req/s] (80).
    pub rate: f64,
    /// A step of traffic, `{ start = 60, duration = 20, rate = 105 }` (none by default).
    pub spike: Option<crate::config::Spike>,
}

impl Default for TrafficSection {
    fn default() -> Self {
        Self { rate: 80.0, spike: None }
    }
}

/// `[gate]`: the seed's admission gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GateSection {
    /// Rejection threshold θ as a fraction of capacity (0.7).
    pub threshold: f64,
    /// Rejection sensitivity in [0, 1] (1.0; 0 turns the gate off).
    pub sensitivity: f64,
}

impl Default for GateSection {
    fn default() -> Self {
        Self { threshold: 0.7, sensitivity: 1.0 }
    }
}

/// Kind of health schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum HealthKind {
    /// `H = high` throughout.
    Constant,
    /// The seed's repeating 19 s cycle.
    #[default]
    Cycle,
    /// One dip at `start`.
    Dip,
    /// A CSV file of `t,health` rows.
    Trace,
}

/// `[health]`: downstream health over time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HealthSection {
    /// Schedule kind ("cycle").
    pub kind: HealthKind,
    /// Health outside dips, and the constant level (1.0).
    pub high: f64,
    /// Health at the bottom of a dip (0.1).
    pub low: f64,
    /// Seconds at `high` per cycle (7).
    pub hold_high: f64,
    /// Seconds of ramp down (5).
    pub ramp_down: f64,
    /// Seconds at `low` (2).
    pub hold_low: f64,
    /// Seconds of ramp up (5).
    pub ramp_up: f64,
    /// Start of the single dip, for `kind = "dip"` \[s\] (20).
    pub start: f64,
    /// CSV of `t,health` rows for `kind = "trace"`, relative to the scenario file.
    pub file: Option<PathBuf>,
    /// Relative sd of multiplicative health noise (0: none).
    pub noise: f64,
    /// Seconds between noise redraws (1).
    pub noise_period: f64,
}

impl Default for HealthSection {
    fn default() -> Self {
        let d = DipShape::default();
        Self {
            kind: HealthKind::Cycle,
            high: d.high,
            low: d.low,
            hold_high: d.hold_high,
            ramp_down: d.ramp_down,
            hold_low: d.hold_low,
            ramp_up: d.ramp_up,
            start: 20.0,
            file: None,
            noise: 0.0,
            noise_period: 1.0,
        }
    }
}

/// Kind of retry rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RetryKind {
    /// No retries (the seed's numbers).
    #[default]
    Off,
    /// Constant probability per completion.
    Constant,
    /// `probability · (1 − H)`: rises as health falls.
    Health,
}

/// `[retries]`: failed completions re-entering.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct RetrySection {
    /// Rule ("off").
    pub kind: RetryKind,
    /// Retry probability (at zero health for `health`).
    pub probability: f64,
    /// Through the gate or around it ("gate").
    pub path: RetryPath,
}

/// Service-time law name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LawKind {
    /// Exponential (memoryless; the default).
    #[default]
    Exponential,
    /// Pareto with tail index `shape`.
    Pareto,
    /// Log-normal with log-sd `sigma`.
    Lognormal,
}

/// `[service]`: the law of one request's work (stochastic mode; mean fixed at 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceSection {
    /// Law ("exponential").
    pub distribution: LawKind,
    /// Pareto tail index α > 1 (2.5).
    pub shape: f64,
    /// Log-normal log-sd (1.0).
    pub sigma: f64,
}

impl Default for ServiceSection {
    fn default() -> Self {
        Self { distribution: LawKind::Exponential, shape: 2.5, sigma: 1.0 }
    }
}

/// `[run]`: how long, how fine, which simulator, which seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunSection {
    /// Simulated seconds (400).
    pub duration: f64,
    /// Fluid step / stochastic sampling interval \[s\] (0.05).
    pub dt: f64,
    /// Simulator ("fluid").
    pub mode: Mode,
    /// Seed (1).
    pub seed: u64,
    /// Queue depth at t = 0 (0).
    pub initial_queue: f64,
    /// Depth counted as drained (6).
    pub drain_level: f64,
    /// Start of the settled window for the summary's queue range \[s\] (0).
    pub warmup: f64,
}

impl Default for RunSection {
    fn default() -> Self {
        Self {
            duration: 400.0,
            dt: 0.05,
            mode: Mode::Fluid,
            seed: 1,
            initial_queue: 0.0,
            drain_level: 6.0,
            warmup: 0.0,
        }
    }
}

/// A scenario file. Every section and key is optional; defaults are the seed's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Scenario {
    /// A short name for reports.
    pub name: Option<String>,
    /// What the scenario shows.
    pub description: Option<String>,
    /// `[model]`.
    pub model: ModelSection,
    /// `[traffic]`.
    pub traffic: TrafficSection,
    /// `[gate]`.
    pub gate: GateSection,
    /// `[health]`.
    pub health: HealthSection,
    /// `[retries]`.
    pub retries: RetrySection,
    /// `[service]`.
    pub service: ServiceSection,
    /// `[run]`.
    pub run: RunSection,
    /// `[boundary]`: a safety boundary to run under (the same keys as a boundary file, as
    /// sub-tables: `[boundary.barrier]`, `[boundary.probability]`, …). Optional.
    pub boundary: Option<safegate_core::boundary::Boundary>,
}

/// Why a scenario could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The TOML is malformed, has an unknown key or a value of the wrong type.
    #[error("{origin}: {message}")]
    Parse {
        /// The file (or `"<embedded>"`).
        origin: String,
        /// The parser's message, with the key and the line.
        message: String,
    },
    /// A value is out of range.
    #[error("{origin}: {field} = {value} is out of range: allowed {allowed}")]
    Invalid {
        /// The file (or `"<embedded>"`).
        origin: String,
        /// Dotted path of the field (`health.low`).
        field: String,
        /// The value given.
        value: String,
        /// The allowed range.
        allowed: String,
    },
    /// A health trace file is malformed.
    #[error("{path}: line {line}: {message}")]
    Trace {
        /// The trace file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

impl Scenario {
    /// Parse a scenario from TOML text; `origin` names it in errors. Values are not yet
    /// range-checked: [`Scenario::config`] does that.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, ScenarioError> {
        Self::from_toml_with(text, origin, &[])
    }

    /// Parse a scenario from TOML text, then apply `key.path = value` overrides (values in
    /// TOML syntax; a bare word is taken as a string). Overrides go through the same parser,
    /// so an unknown key or a wrong type fails the same way as in a file.
    pub fn from_toml_with(text: &str, origin: &str, overrides: &[(String, String)]) -> Result<Self, ScenarioError> {
        let parse_err = |message: String| ScenarioError::Parse { origin: origin.to_string(), message };
        let mut root: toml::Table =
            toml::from_str(text).map_err(|e| parse_err(e.to_string().trim().replace('\n', " ")))?;
        for (path, raw) in overrides {
            let value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
                Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(raw.clone())),
                Err(_) => toml::Value::String(raw.clone()),
            };
            let mut keys: Vec<&str> = path.split('.').collect();
            let last = keys
                .pop()
                .filter(|k| !k.is_empty())
                .ok_or_else(|| parse_err(format!("override `{path}`: empty key")))?;
            let mut table = &mut root;
            for k in keys {
                let entry = table.entry(k.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
                table = entry
                    .as_table_mut()
                    .ok_or_else(|| parse_err(format!("override `{path}`: `{k}` is not a table")))?;
            }
            table.insert(last.to_string(), value);
        }
        Scenario::deserialize(toml::Value::Table(root)).map_err(|e| parse_err(e.to_string().trim().replace('\n', " ")))
    }

    /// Read and parse a scenario file, with overrides (see [`Scenario::from_toml_with`]).
    pub fn load_with(path: &Path, overrides: &[(String, String)]) -> Result<Self, ScenarioError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ScenarioError::Io { path: path.to_path_buf(), source })?;
        let mut s = Self::from_toml_with(&text, &path.display().to_string(), overrides)?;
        // Trace files are relative to the scenario file.
        if let (Some(file), Some(dir)) = (s.health.file.as_mut(), path.parent()) {
            if file.is_relative() {
                *file = dir.join(&*file);
            }
        }
        Ok(s)
    }

    /// Read and parse a scenario file.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        Self::load_with(path, &[])
    }

    /// Check every value and build the runtime [`Config`]. `origin` names the scenario in
    /// errors.
    pub fn config(&self, origin: &str) -> Result<Config, ScenarioError> {
        let invalid = |field: &str, value: &dyn fmt::Display, allowed: &str| ScenarioError::Invalid {
            origin: origin.to_string(),
            field: field.to_string(),
            value: value.to_string(),
            allowed: allowed.to_string(),
        };
        let pos =
            |field: &str, v: f64| if v > 0.0 && v.is_finite() { Ok(()) } else { Err(invalid(field, &v, "(0, ∞)")) };
        let nonneg =
            |field: &str, v: f64| if v >= 0.0 && v.is_finite() { Ok(()) } else { Err(invalid(field, &v, "[0, ∞)")) };
        let unit =
            |field: &str, v: f64| if (0.0..=1.0).contains(&v) { Ok(()) } else { Err(invalid(field, &v, "[0, 1]")) };

        let m = &self.model;
        if !(1..=1_000_000).contains(&m.executors) {
            return Err(invalid("model.executors", &m.executors, "an integer in [1, 1000000]"));
        }
        pos("model.comfortable", m.comfortable)?;
        pos("model.rate", m.rate)?;
        if !(1..=100_000_000).contains(&m.capacity) {
            return Err(invalid("model.capacity", &m.capacity, "an integer in [1, 100000000]"));
        }
        nonneg("traffic.rate", self.traffic.rate)?;
        if let Some(sp) = self.traffic.spike {
            nonneg("traffic.spike.start", sp.start)?;
            pos("traffic.spike.duration", sp.duration)?;
            nonneg("traffic.spike.rate", sp.rate)?;
        }
        if !(0.0..1.0).contains(&self.gate.threshold) {
            return Err(invalid("gate.threshold", &self.gate.threshold, "[0, 1)"));
        }
        unit("gate.sensitivity", self.gate.sensitivity)?;

        let h = &self.health;
        nonneg("health.high", h.high)?;
        if !(h.low >= 0.0 && h.low <= h.high) {
            return Err(invalid("health.low", &h.low, &format!("[0, health.high = {}]", h.high)));
        }
        nonneg("health.hold_high", h.hold_high)?;
        pos("health.ramp_down", h.ramp_down)?;
        nonneg("health.hold_low", h.hold_low)?;
        pos("health.ramp_up", h.ramp_up)?;
        nonneg("health.start", h.start)?;
        if !(0.0..=10.0).contains(&h.noise) {
            return Err(invalid("health.noise", &h.noise, "[0, 10]"));
        }
        pos("health.noise_period", h.noise_period)?;
        let shape = DipShape {
            high: h.high,
            low: h.low,
            hold_high: h.hold_high,
            ramp_down: h.ramp_down,
            hold_low: h.hold_low,
            ramp_up: h.ramp_up,
        };
        let schedule = match h.kind {
            HealthKind::Constant => HealthSchedule::Constant { level: h.high },
            HealthKind::Cycle => HealthSchedule::Cycle(shape),
            HealthKind::Dip => HealthSchedule::Dip { shape, start: h.start },
            HealthKind::Trace => {
                let file = h
                    .file
                    .as_ref()
                    .ok_or_else(|| invalid("health.file", &"(missing)", "a CSV path when health.kind = \"trace\""))?;
                HealthSchedule::Trace { points: load_trace(file)? }
            }
        };
        let noise = (h.noise > 0.0).then_some(HealthNoise {
            sigma: h.noise,
            period: h.noise_period,
            seed: self.run.seed ^ 0x5EED_4EA1_7400_0000,
        });

        let r = &self.retries;
        unit("retries.probability", r.probability)?;
        let retries = match r.kind {
            RetryKind::Off => Retries::Off,
            RetryKind::Constant => {
                if r.probability >= 1.0 {
                    return Err(invalid(
                        "retries.probability",
                        &r.probability,
                        "[0, 1) for a constant rule (1 never clears)",
                    ));
                }
                Retries::Constant { probability: r.probability, path: r.path }
            }
            RetryKind::Health => Retries::Health { probability: r.probability, path: r.path },
        };

        let sv = &self.service;
        let service = match sv.distribution {
            LawKind::Exponential => ServiceLaw::Exponential,
            LawKind::Pareto => {
                if !(sv.shape > 1.0 && sv.shape <= 100.0) {
                    return Err(invalid("service.shape", &sv.shape, "(1, 100] (the mean must be finite)"));
                }
                ServiceLaw::Pareto { shape: sv.shape }
            }
            LawKind::Lognormal => {
                if !(sv.sigma > 0.0 && sv.sigma <= 5.0) {
                    return Err(invalid("service.sigma", &sv.sigma, "(0, 5]"));
                }
                ServiceLaw::Lognormal { sigma: sv.sigma }
            }
        };

        let run = &self.run;
        if !(run.duration > 0.0 && run.duration <= 1e9) {
            return Err(invalid("run.duration", &run.duration, "(0, 1e9] seconds"));
        }
        if !(run.dt > 0.0 && run.dt <= run.duration) {
            return Err(invalid("run.dt", &run.dt, &format!("(0, run.duration = {}]", run.duration)));
        }
        if run.duration / run.dt > 1e11 {
            return Err(invalid("run.dt", &run.dt, "at least run.duration / 1e11 (too many steps)"));
        }
        if !(run.initial_queue >= 0.0 && run.initial_queue <= m.capacity as f64) {
            return Err(invalid(
                "run.initial_queue",
                &run.initial_queue,
                &format!("[0, model.capacity = {}]", m.capacity),
            ));
        }
        nonneg("run.drain_level", run.drain_level)?;
        nonneg("run.warmup", run.warmup)?;

        Ok(Config {
            pool: Pool {
                executors: m.executors,
                comfortable: m.comfortable,
                rate: m.rate,
                capacity: m.capacity as f64,
                busy: m.busy,
            },
            traffic: self.traffic.rate,
            spike: self.traffic.spike,
            health: HealthTrack { schedule, noise },
            retries,
            service,
            duration: run.duration,
            dt: run.dt,
            seed: run.seed,
            initial_queue: run.initial_queue,
            drain_level: run.drain_level,
            warmup: run.warmup,
        })
    }

    /// The seed's gate as configured (sensitivity 0 is the open, ungated pool).
    pub fn gate(&self) -> Result<safegate_core::SeedGate, ScenarioError> {
        safegate_core::SeedGate::new(self.gate.threshold, self.gate.sensitivity).map_err(|e| ScenarioError::Invalid {
            origin: self.name.clone().unwrap_or_default(),
            field: format!("gate.{}", e.field),
            value: e.value.to_string(),
            allowed: e.allowed.to_string(),
        })
    }
}

/// Read a `t,health` CSV (an optional header line; `#` comments and blank lines skipped).
pub fn load_trace(path: &Path) -> Result<Vec<(f64, f64)>, ScenarioError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| ScenarioError::Io { path: path.to_path_buf(), source })?;
    let err = |line: usize, message: String| ScenarioError::Trace { path: path.to_path_buf(), line, message };
    let mut points: Vec<(f64, f64)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut cols = line.split(',').map(str::trim);
        let (a, b) = (cols.next().unwrap_or(""), cols.next().unwrap_or(""));
        let (t, h) = match (a.parse::<f64>(), b.parse::<f64>()) {
            (Ok(t), Ok(h)) => (t, h),
            _ if points.is_empty() && i == 0 => continue, // header
            _ => return Err(err(i + 1, format!("expected `t,health` numbers, got {line:?}"))),
        };
        if !(t.is_finite() && h >= 0.0 && h.is_finite()) {
            return Err(err(i + 1, format!("t must be finite and health in [0, ∞), got {t}, {h}")));
        }
        if let Some(&(prev, _)) = points.last() {
            if t <= prev {
                return Err(err(i + 1, format!("times must increase: {t} after {prev}")));
            }
        }
        points.push((t, h));
    }
    if points.is_empty() {
        return Err(err(0, "no data rows".to_string()));
    }
    Ok(points)
}

/// Read and parse a boundary file (`safegate_core::boundary::Boundary`), with the same
/// error messages as scenarios: unknown keys and wrong types name their path.
pub fn load_boundary(path: &Path) -> Result<safegate_core::boundary::Boundary, ScenarioError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| ScenarioError::Io { path: path.to_path_buf(), source })?;
    parse_boundary(&text, &path.display().to_string())
}

/// Parse a boundary from TOML text; `origin` names it in errors.
pub fn parse_boundary(text: &str, origin: &str) -> Result<safegate_core::boundary::Boundary, ScenarioError> {
    let parse_err = |message: String| ScenarioError::Parse { origin: origin.to_string(), message };
    let table: toml::Table = toml::from_str(text).map_err(|e| parse_err(e.to_string().trim().replace('\n', " ")))?;
    safegate_core::boundary::Boundary::deserialize(toml::Value::Table(table))
        .map_err(|e| parse_err(e.to_string().trim().replace('\n', " ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_is_the_seed() {
        let s = Scenario::from_toml("", "t").unwrap();
        let c = s.config("t").unwrap();
        assert_eq!(c.pool, Pool::default());
        assert_eq!(c.traffic, 80.0);
        assert_eq!(c.steps(), 8000);
    }

    #[test]
    fn unknown_keys_fail_with_their_name() {
        let e = Scenario::from_toml("[model]\nexecutor = 8\n", "t").unwrap_err().to_string();
        assert!(e.contains("executor"), "{e}");
        let e = Scenario::from_toml("[modle]\n", "t").unwrap_err().to_string();
        assert!(e.contains("modle"), "{e}");
    }

    #[test]
    fn out_of_range_values_name_path_value_and_range() {
        let cases = [
            ("[gate]\nthreshold = 1.2", "gate.threshold", "1.2"),
            ("[health]\nlow = 2.0", "health.low", "2"),
            ("[run]\ndt = 0", "run.dt", "0"),
            ("[model]\nexecutors = 0", "model.executors", "0"),
            ("[traffic]\nrate = -1", "traffic.rate", "-1"),
            ("[traffic]\nrate = nan", "traffic.rate", "NaN"),
            ("[service]\ndistribution = \"pareto\"\nshape = 0.9", "service.shape", "0.9"),
            ("[health]\nkind = \"trace\"", "health.file", "(missing)"),
        ];
        for (text, field, value) in cases {
            let e = Scenario::from_toml(text, "t").unwrap().config("t").unwrap_err();
            match &e {
                ScenarioError::Invalid { field: f, value: v, allowed, .. } => {
                    assert_eq!(f, field);
                    assert_eq!(v, value);
                    assert!(!allowed.is_empty());
                }
                other => panic!("{text}: {other}"),
            }
        }
    }

    #[test]
    fn overrides_set_nested_keys_and_fail_like_files() {
        let ov = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        let s = Scenario::from_toml_with("[traffic]\nrate = 55", "t", &ov("traffic.rate", "74.5")).unwrap();
        assert_eq!(s.traffic.rate, 74.5);
        let s = Scenario::from_toml_with("", "t", &ov("health.kind", "dip")).unwrap();
        assert_eq!(s.health.kind, HealthKind::Dip);
        let e = Scenario::from_toml_with("", "t", &ov("gate.treshold", "0.5")).unwrap_err().to_string();
        assert!(e.contains("treshold"), "{e}");
        let e = Scenario::from_toml_with("", "t", &ov("run.seed", "-3")).unwrap_err().to_string();
        assert!(e.contains("seed") || e.contains("-3"), "{e}");
    }

    #[test]
    fn wrong_types_fail_with_the_key() {
        let e = Scenario::from_toml("[model]\nexecutors = \"eight\"", "t").unwrap_err().to_string();
        assert!(e.contains("model.executors"), "{e}");
        let e = Scenario::from_toml("[model]\nexecutors = -1", "t").unwrap_err().to_string();
        assert!(e.contains("model.executors") && e.contains("-1"), "{e}");
    }
}
