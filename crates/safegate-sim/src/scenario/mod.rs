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

//! The sections are in [`schema`]; [`Scenario::config`] resolves and checks them
//! (in `resolve.rs`); health traces are read by [`load_trace`].

use std::path::{Path, PathBuf};

use safegate_core::boundary::Boundary;
use safegate_core::RangeError;
use serde::{Deserialize, Serialize};

use crate::model::Pool;

mod reach;
mod resolve;
pub mod schema;
mod trace;

pub use reach::Unread;
pub use schema::{
    GateSection, HealthKind, HealthSection, Isolation, LawKind, Mode, PostgresSection, RetryKind, RetrySection,
    RunSection, ServiceSection, TrafficSection,
};
pub use trace::load_trace;

/// A scenario file. Every section and key is optional; defaults are the seed's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Scenario {
    /// A short name for reports.
    pub name: Option<String>,
    /// What the scenario shows.
    pub description: Option<String>,
    /// `[model]`: the executor pool.
    pub model: Pool,
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
    /// `[postgres]`: the live system's downstream is this PostgreSQL workload instead of
    /// the model's emulator. Optional; the simulator does not read it.
    pub postgres: Option<PostgresSection>,
}

/// Why a scenario could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read {path}")]
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
    #[error("{origin}: {error}")]
    Invalid {
        /// The file (or `"<embedded>"`).
        origin: String,
        /// The field's dotted path (`health.low`), its value and the allowed range.
        error: RangeError,
    },
    /// A health trace file cannot be read or is malformed.
    #[error("health.file {}: {}{message}", path.display(), if *line > 0 { format!("line {line}: ") } else { String::new() })]
    Trace {
        /// The trace file.
        path: PathBuf,
        /// 1-based line number (0: the file as a whole).
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

    /// Parse a scenario from TOML text, then apply `key.path = value` overrides (see
    /// [`safegate_core::config_file::parse`]: an override fails like the file would).
    pub fn from_toml_with(text: &str, origin: &str, overrides: &[(String, String)]) -> Result<Self, ScenarioError> {
        safegate_core::config_file::parse(text, overrides)
            .map_err(|e| ScenarioError::Parse { origin: origin.to_string(), message: e.0 })
    }

    /// Read and parse a scenario file, with overrides (see [`Scenario::from_toml_with`]).
    pub fn load_with(path: &Path, overrides: &[(String, String)]) -> Result<Self, ScenarioError> {
        let text = read(path)?;
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

    /// The safe set's threshold θ, as a fraction of the queue's capacity: the boundary's
    /// barrier when the scenario has one, else the gate's threshold. The line
    /// `θ·capacity` is what the verdicts' "time beyond θ·cap", the live system's barrier
    /// margin and its observed exit frequency are measured against.
    pub fn safe_threshold(&self) -> f64 {
        self.boundary.as_ref().map_or(self.gate.threshold, |b| b.barrier.threshold)
    }
}

/// A scenario-like file read with the size bound of configuration files; an empty file,
/// or one of comments only, is refused (it would run every default in silence, and
/// nothing in it says which scenario was meant; `serve`'s API refuses the same texts).
pub fn read(path: &Path) -> Result<String, ScenarioError> {
    let text = crate::input::read_text(path, crate::input::MAX_CONFIG_BYTES)
        .map_err(|source| ScenarioError::Io { path: path.to_path_buf(), source })?;
    // Every line of a TOML text that is neither blank nor a comment is a table header or
    // a key (or a syntax error the parser reports), so the check is line by line.
    let mut lines = text.trim_start_matches('\u{feff}').lines().map(str::trim).filter(|l| !l.is_empty()).peekable();
    let what = if lines.peek().is_none() {
        "empty"
    } else if lines.all(|l| l.starts_with('#')) {
        "only comments"
    } else {
        return Ok(text);
    };
    Err(ScenarioError::Parse {
        origin: path.display().to_string(),
        message: format!("the file is {what} (a scenario, fleet or boundary file needs at least one table or key)"),
    })
}

/// Read and parse a boundary file ([`Boundary::from_toml`]), with the same error messages
/// as scenarios: unknown keys and wrong types name their path. Values are checked when the
/// boundary is used ([`Boundary::validate`]).
pub fn load_boundary(path: &Path) -> Result<Boundary, ScenarioError> {
    let text = read(path)?;
    Boundary::from_toml(&text, &[])
        .map_err(|e| ScenarioError::Parse { origin: path.display().to_string(), message: e.0 })
}

#[cfg(test)]
mod tests;
