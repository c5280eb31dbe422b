//! What the check is asked ([`CheckOptions`]), the ranges its options must be in, and why it
//! may refuse to run ([`CheckError`]). Errors name an option by its field, never by how a
//! caller set it: a command line maps the field to its flag.

use std::fmt;

use safegate_core::boundary::Boundary;

use super::{Signal, TelemetryError};

/// What the check is asked.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// θ, the occupancy the signal must stay at or below (0.7).
    pub threshold: f64,
    /// Q, the signal's capacity; `None`: the telemetry's `capacity`, else an error.
    pub capacity: Option<f64>,
    /// The proposed ε (0.01).
    pub epsilon: f64,
    /// The horizon T \[s\] ε is over (600).
    pub horizon: f64,
    /// CVaR tail fraction η (0.05).
    pub eta: f64,
    /// The retry budget, as a share of offered load (0.1); flagged above twice it.
    pub retry_budget: f64,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self { threshold: 0.7, capacity: None, epsilon: 0.01, horizon: 600.0, eta: 0.05, retry_budget: 0.1 }
    }
}

impl CheckOptions {
    /// Every option against the range the boundary file it drafts accepts (the checks
    /// `safegate verify --boundary` applies), so no option makes a draft verify refuses.
    /// `source` names the input in the error.
    pub(super) fn validate(&self, source: &str) -> Result<(), CheckError> {
        use safegate_core::boundary::MIN_EPSILON;
        use safegate_core::error::check;
        let option = |field: &'static str, value: String, rule: String| CheckError::Option {
            source: source.to_string(),
            field,
            value,
            rule,
        };
        let boundary_range = |field: &'static str, r: Result<f64, safegate_core::error::RangeError>| {
            r.map(|_| ()).map_err(|e| {
                option(field, e.value, format!("must be in {} (the range a boundary file accepts)", e.allowed))
            })
        };
        boundary_range("threshold", check::threshold("threshold", self.threshold))?;
        if let Some(c) = self.capacity {
            boundary_range("capacity", check::capacity("capacity", c))?;
        }
        boundary_range(
            "epsilon",
            check::within("epsilon", self.epsilon, MIN_EPSILON, 1.0 - f64::EPSILON, "[1e-12, 1)"),
        )?;
        // The draft boundary carries the horizon: it must be one a boundary file accepts,
        // from one decision period to MAX_STEPS of them.
        let period = Boundary::default().decision.period;
        let longest = period * safegate_sim::limits::MAX_STEPS;
        if !(self.horizon >= period && self.horizon <= longest) {
            return Err(option(
                "horizon",
                self.horizon.to_string(),
                format!(
                    "must be between one decision period ({period} s) and {longest:.0} s, the horizons a boundary file accepts"
                ),
            ));
        }
        boundary_range("eta", check::within("eta", self.eta, 1e-9, 1.0 - f64::EPSILON, "[1e-9, 1)"))?;
        if !(self.retry_budget > 0.0 && self.retry_budget < 1.0) {
            return Err(option("retry_budget", self.retry_budget.to_string(), "must be in (0, 1)".into()));
        }
        Ok(())
    }
}

/// Why the checklist could not run. Every case names the input (`source`); an option is
/// named by its field in [`CheckOptions`].
#[derive(Debug, Clone, PartialEq)]
pub enum CheckError {
    /// An option outside what it may be, or one the data cannot answer (a horizon shorter
    /// than the sampling interval).
    Option {
        /// The input's name (its path).
        source: String,
        /// The field of [`CheckOptions`]: `threshold`, `capacity`, `epsilon`, `horizon`,
        /// `eta` or `retry_budget`.
        field: &'static str,
        /// Its value, as text.
        value: String,
        /// What is wrong with it, in words (`must be in (0, 1)`).
        rule: String,
    },
    /// No capacity to measure the margin against: none among the options, none in the data.
    UnknownCapacity {
        /// The input's name (its path).
        source: String,
        /// The signal whose capacity is missing.
        signal: Signal,
        /// What in the data would give it (`add a `capacity` column / …`).
        in_data: &'static str,
    },
    /// The data cannot answer at all (fewer than two rows).
    Data(TelemetryError),
}

impl CheckError {
    /// No capacity for `signal`, in `source`.
    pub(super) fn unknown_capacity(source: &str, signal: Signal) -> Self {
        CheckError::UnknownCapacity {
            source: source.to_string(),
            signal,
            in_data: match signal {
                Signal::InFlight => "add a `capacity` column / the safegate_backlog_bound metric, or a `limit` column",
                Signal::Queue => "add a `capacity` column / the safegate_backlog_bound metric",
            },
        }
    }
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::Option { source, field, value, rule } => write!(f, "{source}: {field} = {value}: {rule}"),
            CheckError::UnknownCapacity { source, signal, in_data } => write!(
                f,
                "{source}: the {}'s capacity is unknown: give it as the `capacity` option (or {in_data})",
                signal.name()
            ),
            CheckError::Data(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CheckError {}
