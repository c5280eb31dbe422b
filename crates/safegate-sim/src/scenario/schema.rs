//! The sections of a scenario file besides `[model]` (which is [`crate::Pool`]) and
//! `[boundary]` (a [`safegate_core::boundary::Boundary`]).

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::behaviour::RetryPath;
use crate::health::DipShape;

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

impl Mode {
    /// Every mode, in the order `--help` lists them.
    pub const ALL: [Mode; 3] = [Mode::Fluid, Mode::Stochastic, Mode::Stepped];

    /// The name a scenario file and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Fluid => "fluid",
            Mode::Stochastic => "stochastic",
            Mode::Stepped => "stepped",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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

/// `[health]`: downstream health over time. The dip's shape keys (`high`, `low`,
/// `hold_high`, `ramp_down`, `hold_low`, `ramp_up`) are [`DipShape`]'s, beside these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "HealthKeys", into = "HealthKeys")]
pub struct HealthSection {
    /// Schedule kind ("cycle").
    pub kind: HealthKind,
    /// Start of the single dip, for `kind = "dip"` \[s\] (20).
    pub start: f64,
    /// CSV of `t,health` rows for `kind = "trace"`, relative to the scenario file.
    pub file: Option<PathBuf>,
    /// Relative sd of multiplicative health noise (0: none).
    pub noise: f64,
    /// Seconds between noise redraws (1).
    pub noise_period: f64,
    /// The dip's shape, and `high` as the constant level (its keys sit in `[health]`).
    pub shape: DipShape,
}

/// The keys of `[health]` as they are written: the section's own and the shape's, side by
/// side. (Not `#[serde(flatten)]`: serde does not refuse unknown keys through a flattened
/// field, and `[health]` must, like every other section.)
#[derive(Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct HealthKeys {
    kind: HealthKind,
    start: f64,
    file: Option<PathBuf>,
    noise: f64,
    noise_period: f64,
    high: f64,
    low: f64,
    hold_high: f64,
    ramp_down: f64,
    hold_low: f64,
    ramp_up: f64,
}

impl Default for HealthKeys {
    fn default() -> Self {
        HealthSection::default().into()
    }
}

impl From<HealthKeys> for HealthSection {
    fn from(k: HealthKeys) -> Self {
        let shape = DipShape {
            high: k.high,
            low: k.low,
            hold_high: k.hold_high,
            ramp_down: k.ramp_down,
            hold_low: k.hold_low,
            ramp_up: k.ramp_up,
        };
        Self { kind: k.kind, start: k.start, file: k.file, noise: k.noise, noise_period: k.noise_period, shape }
    }
}

impl From<HealthSection> for HealthKeys {
    fn from(h: HealthSection) -> Self {
        let DipShape { high, low, hold_high, ramp_down, hold_low, ramp_up } = h.shape;
        Self {
            kind: h.kind,
            start: h.start,
            file: h.file,
            noise: h.noise,
            noise_period: h.noise_period,
            high,
            low,
            hold_high,
            ramp_down,
            hold_low,
            ramp_up,
        }
    }
}

impl Default for HealthSection {
    fn default() -> Self {
        Self {
            kind: HealthKind::Cycle,
            start: 20.0,
            file: None,
            noise: 0.0,
            noise_period: 1.0,
            shape: DipShape::default(),
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
