//! The inputs of the PostgreSQL study, checked before anything runs: how the curve is
//! measured and what the scenarios written from it say ([`CurveOptions`]), and the errors
//! of both steps' inputs ([`InputError`]), each naming its field so that a caller can name
//! it as the user gave it (a CLI's `secs` → `--secs`).

use crate::pg::PgSpec;

/// Most seconds a level of the curve runs in one pass.
pub const MAX_LEVEL_SECS: f64 = 600.0;
/// Most passes over the curve's levels.
pub const MAX_PASSES: usize = 100;
/// Longest run of a written scenario \[s\] (a day).
pub const MAX_DURATION: f64 = 86_400.0;
/// Largest backlog of a written scenario \[jobs\].
pub const MAX_CAPACITY: f64 = 1e6;

/// An input of the study refused before it runs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InputError {
    /// The workload's pool is too small for a curve (fewer than three levels to fit).
    #[error("{origin}: postgres.pool = {pool}: a curve needs at least 3 levels, so a pool of 3 or more")]
    PoolTooSmall {
        /// Where the workload came from (a scenario file, or how the database was given).
        origin: String,
        /// The pool's size.
        pool: usize,
    },
    /// An option out of its range: the option's field (`secs`, `retry_probability`), the
    /// value given, and what is expected.
    #[error("{field} {value}: expected {expected}")]
    Out {
        /// The option's field name.
        field: String,
        /// The value given, as text.
        value: String,
        /// What would do, in words.
        expected: String,
    },
}

impl InputError {
    /// `Out` naming `field`.
    pub(crate) fn out(field: &str, value: impl std::fmt::Display, expected: impl Into<String>) -> Self {
        InputError::Out { field: field.into(), value: value.to_string(), expected: expected.into() }
    }

    /// The option field the error names, if it names one.
    pub fn field(&self) -> Option<&str> {
        match self {
            InputError::Out { field, .. } => Some(field),
            InputError::PoolTooSmall { .. } => None,
        }
    }

    /// The same error with the field it names renamed by `rename` (a CLI's
    /// `retry_probability` → `--retry-probability`).
    pub fn rename_field(self, rename: impl Fn(&str) -> String) -> Self {
        match self {
            InputError::Out { field, value, expected } => InputError::Out { field: rename(&field), value, expected },
            other => other,
        }
    }
}

/// How [`super::measure_curve`] runs and what the scenarios written from its curve say
/// ([`super::PgCurve::files`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CurveOptions {
    /// Seconds each level runs in each pass, in `(0, MAX_LEVEL_SECS]`.
    pub secs: f64,
    /// Passes over the levels, in `[1, MAX_PASSES]`.
    pub passes: usize,
    /// The written scenarios' `run.duration` \[s\], in `(0, MAX_DURATION]`.
    pub duration: f64,
    /// The written scenarios' backlog capacity \[jobs\], a whole number in
    /// `[1, MAX_CAPACITY]`.
    pub capacity: f64,
}

impl CurveOptions {
    /// Check the options against the workload `spec` (from `origin`): its pool must give a
    /// curve at least three levels, then each option must be in its range (NaN never is).
    /// The first failure is the error.
    pub fn check(&self, spec: &PgSpec, origin: &str) -> Result<(), InputError> {
        if spec.pool < 3 {
            return Err(InputError::PoolTooSmall { origin: origin.into(), pool: spec.pool });
        }
        if !(self.secs > 0.0 && self.secs <= MAX_LEVEL_SECS) {
            return Err(InputError::out("secs", self.secs, format!("(0, {MAX_LEVEL_SECS}] seconds")));
        }
        if !(1..=MAX_PASSES).contains(&self.passes) {
            return Err(InputError::out("passes", self.passes, format!("1 to {MAX_PASSES}")));
        }
        if !(self.duration > 0.0 && self.duration <= MAX_DURATION) {
            return Err(InputError::out("duration", self.duration, format!("(0, {MAX_DURATION}] seconds")));
        }
        let c = self.capacity;
        if !((1.0..=MAX_CAPACITY).contains(&c) && c.fract() == 0.0) {
            return Err(InputError::out("capacity", c, "a whole number in [1, 1e6] jobs"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pool: usize) -> PgSpec {
        PgSpec {
            url: "postgres://x@127.0.0.1/y".into(),
            rows: 64,
            hold_ms: 2.0,
            isolation: crate::pg::Isolation::Serializable,
            pool,
            retries: 3,
        }
    }

    const OK: CurveOptions = CurveOptions { secs: 3.0, passes: 3, duration: 60.0, capacity: 200.0 };

    #[test]
    fn curve_options_are_checked_in_order_and_each_error_names_its_field() {
        assert_eq!(OK.check(&spec(8), "w.toml"), Ok(()));
        let e = OK.check(&spec(2), "w.toml").unwrap_err();
        assert_eq!(e.to_string(), "w.toml: postgres.pool = 2: a curve needs at least 3 levels, so a pool of 3 or more");
        assert_eq!(e.field(), None);
        let bad = |o: CurveOptions| o.check(&spec(8), "w.toml").unwrap_err().to_string();
        assert_eq!(bad(CurveOptions { secs: 0.0, ..OK }), "secs 0: expected (0, 600] seconds");
        assert_eq!(bad(CurveOptions { secs: f64::NAN, ..OK }), "secs NaN: expected (0, 600] seconds");
        assert_eq!(bad(CurveOptions { passes: 0, ..OK }), "passes 0: expected 1 to 100");
        assert_eq!(bad(CurveOptions { passes: 101, ..OK }), "passes 101: expected 1 to 100");
        assert_eq!(bad(CurveOptions { duration: 86_401.0, ..OK }), "duration 86401: expected (0, 86400] seconds");
        assert_eq!(
            bad(CurveOptions { capacity: 200.5, ..OK }),
            "capacity 200.5: expected a whole number in [1, 1e6] jobs"
        );
        // The pool first, then the options in order.
        let e = CurveOptions { secs: 0.0, passes: 0, ..OK }.check(&spec(2), "w.toml").unwrap_err();
        assert!(matches!(e, InputError::PoolTooSmall { pool: 2, .. }), "{e}");
        assert_eq!(bad(CurveOptions { secs: 0.0, passes: 0, ..OK }), "secs 0: expected (0, 600] seconds");
    }

    #[test]
    fn a_field_renamed_keeps_the_message() {
        let e = InputError::out("retry_probability", 2, "[0, 1]");
        assert_eq!(e.field(), Some("retry_probability"));
        let named = e.rename_field(|f| format!("--{}", f.replace('_', "-")));
        assert_eq!(named.to_string(), "--retry-probability 2: expected [0, 1]");
    }
}
