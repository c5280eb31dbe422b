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
#[serde(from = "HealthFile", into = "HealthFile")]
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

/// `[health]` as written: the shape's keys beside the section's own, flat. serde cannot
/// reject unknown keys across a flattened struct, so the file's shape is spelled out here
/// (private: the one public type is [`HealthSection`] with its [`DipShape`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct HealthFile {
    kind: HealthKind,
    high: f64,
    low: f64,
    hold_high: f64,
    ramp_down: f64,
    hold_low: f64,
    ramp_up: f64,
    start: f64,
    file: Option<PathBuf>,
    noise: f64,
    noise_period: f64,
}

impl Default for HealthFile {
    fn default() -> Self {
        HealthSection::default().into()
    }
}

impl From<HealthFile> for HealthSection {
    fn from(f: HealthFile) -> Self {
        let shape = DipShape {
            high: f.high,
            low: f.low,
            hold_high: f.hold_high,
            ramp_down: f.ramp_down,
            hold_low: f.hold_low,
            ramp_up: f.ramp_up,
        };
        Self { kind: f.kind, start: f.start, file: f.file, noise: f.noise, noise_period: f.noise_period, shape }
    }
}

impl From<HealthSection> for HealthFile {
    fn from(h: HealthSection) -> Self {
        let DipShape { high, low, hold_high, ramp_down, hold_low, ramp_up } = h.shape;
        Self {
            kind: h.kind,
            high,
            low,
            hold_high,
            ramp_down,
            hold_low,
            ramp_up,
            start: h.start,
            file: h.file,
            noise: h.noise,
            noise_period: h.noise_period,
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

/// The isolation level of a `[postgres]` downstream's transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// `SERIALIZABLE`: conflicts abort with SQLSTATE `40001` and are retried.
    #[default]
    Serializable,
    /// `REPEATABLE READ`: a concurrent update aborts with `40001`.
    RepeatableRead,
    /// `READ COMMITTED`: conflicts wait on row locks; only deadlocks abort.
    ReadCommitted,
}

impl Isolation {
    /// Every level, in the order messages list them.
    pub const ALL: [Isolation; 3] = [Isolation::Serializable, Isolation::RepeatableRead, Isolation::ReadCommitted];

    /// The name a scenario file and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::Serializable => "serializable",
            Isolation::RepeatableRead => "repeatable-read",
            Isolation::ReadCommitted => "read-committed",
        }
    }

    /// The level named `s` (`serializable`, `repeatable-read`, `read-committed`).
    pub fn parse(s: &str) -> Option<Isolation> {
        Isolation::ALL.into_iter().find(|i| i.name() == s.trim())
    }
}

impl std::str::FromStr for Isolation {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Isolation::parse(s).ok_or_else(|| format!("{s:?}: expected serializable, repeatable-read or read-committed"))
    }
}

/// `[postgres]`: the live system's downstream is a real PostgreSQL database instead of the
/// model's emulator (`safegate live`; the simulator runs the `[model]` curve, which for such
/// a scenario is the curve fitted to the database). Each job runs one transaction on a
/// connection of an application pool: it updates one of `rows` hot rows, holds the
/// transaction open `hold_ms`, updates a second and commits, retrying serialization
/// failures and deadlocks up to `retries` times, as applications do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PostgresSection {
    /// `postgres://…` URL of the database (none: the command line's `--pg-url`, else the
    /// environment's `SAFEGATE_PG_URL`).
    pub url: Option<String>,
    /// Hot rows the transactions pick two of (64), in `[2, 1e6]`.
    pub rows: u32,
    /// Time a transaction is held open between its two updates \[ms\] (2), in `[0, 10000]`.
    pub hold_ms: f64,
    /// Isolation level ("serializable").
    pub isolation: Isolation,
    /// Connections in the application pool (64), in `[1, 1000]`.
    pub pool: u32,
    /// Retries of a transaction that failed to serialize or deadlocked (3), in `[0, 100]`.
    pub retries: u32,
}

impl Default for PostgresSection {
    fn default() -> Self {
        Self { url: None, rows: 64, hold_ms: 2.0, isolation: Isolation::Serializable, pool: 64, retries: 3 }
    }
}

impl PostgresSection {
    /// Check the ranges; the error names the key (`rows`, `hold_ms`, …: prefix it with
    /// [`RangeError::at`](safegate_core::RangeError::at)).
    pub fn check(&self) -> Result<(), safegate_core::RangeError> {
        use safegate_core::RangeError;
        if !(2..=1_000_000).contains(&self.rows) {
            return Err(RangeError::new("rows", self.rows, "[2, 1000000] (each transaction updates two rows)"));
        }
        if !(0.0..=10_000.0).contains(&self.hold_ms) {
            return Err(RangeError::new("hold_ms", self.hold_ms, "[0, 10000] milliseconds"));
        }
        if !(1..=1000).contains(&self.pool) {
            return Err(RangeError::new("pool", self.pool, "[1, 1000] connections"));
        }
        if self.retries > 100 {
            return Err(RangeError::new("retries", self.retries, "[0, 100]"));
        }
        if self.url.as_deref().is_some_and(|u| u.trim().is_empty()) {
            return Err(RangeError::new("url", "\"\"", "a postgres://… URL (or leave the key out)"));
        }
        Ok(())
    }
}
