//! The one error for a value out of range, and the checks that produce it.
//!
//! Every configuration in safegate — a boundary file, a scenario, a filter built by hand, a
//! controller's constants, a tower layer's builder — refuses a value it cannot use with a
//! [`RangeError`]: the field's dotted path, the value as given and the allowed range in
//! words. The checks here are the only place a range is written, so the same quantity
//! (a threshold θ, a capacity, a probability) has the same range everywhere.
//!
//! ```
//! use safegate_core::error::{check, RangeError};
//!
//! let e = check::threshold("barrier.threshold", 1.0).unwrap_err();
//! assert_eq!(e.to_string(), "barrier.threshold = 1 is out of range: allowed (0, 1)");
//! assert_eq!(e.at("boundary").field, "boundary.barrier.threshold");
//! assert!(check::capacity("model.capacity", 200.0).is_ok());
//! ```

use std::fmt;

/// A value outside its allowed range.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RangeError {
    /// The field's dotted path, as in the configuration (`probability.epsilon`).
    pub field: String,
    /// The value given, as text (`2`, `NaN`, `"latency"`).
    pub value: String,
    /// The allowed range, in words (`(0, 1)`).
    pub allowed: String,
}

impl RangeError {
    /// `field = value` is out of range; `allowed` says what would do.
    pub fn new(field: impl Into<String>, value: impl fmt::Display, allowed: impl Into<String>) -> Self {
        let mut value = value.to_string();
        // A float shown plainly can run to 300 digits (`1e308`, `1e-300`): shown as
        // [`number`] shows it instead.
        if value.len() > 24 {
            if let Ok(x) = value.parse::<f64>() {
                value = number(x);
            }
        }
        Self { field: field.into(), value, allowed: allowed.into() }
    }

    /// The same error with its path under `prefix` (`at("magnitude")`: `eta` →
    /// `magnitude.eta`). An empty prefix leaves it as is.
    pub fn at(mut self, prefix: &str) -> Self {
        if !prefix.is_empty() {
            self.field = if self.field.is_empty() { prefix.to_string() } else { format!("{prefix}.{}", self.field) };
        }
        self
    }
}

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {} is out of range: allowed {}", self.field, self.value, self.allowed)
    }
}

impl std::error::Error for RangeError {}

/// A number in a bounded width, as errors and reports echo a value given: plain where that
/// is short (`0.7`, `-50`, `NaN`, `inf`), in exponent form where plain would be long
/// (`1e308`, `1e-12`, `1e-320`: `{}` of these runs to hundreds of digits), and `0` for
/// `-0` (a sign on nothing).
///
/// At most 24 characters for any `f64`.
///
/// ```
/// use safegate_core::error::number;
///
/// assert_eq!(number(0.7), "0.7");
/// assert_eq!(number(1e-320), "1e-320");
/// assert_eq!(number(-1.5e300), "-1.5e300");
/// assert_eq!(number(-0.0), "0");
/// ```
pub fn number(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if a.is_finite() && !(1e-6..1e16).contains(&a) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// A configuration file that is not valid TOML, has an unknown key or a value of the wrong
/// type; the message names the key (and the line, for the file's own text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

/// The range checks. Each returns the value when it is allowed, so a constructor reads
/// `let eps = check::probability("epsilon", eps)?;`. NaN fails every check.
pub mod check {
    use super::RangeError;

    /// Largest queue capacity any part of safegate accepts \[requests\].
    pub const MAX_CAPACITY: f64 = 1e8;

    /// `lo ≤ v ≤ hi`.
    ///
    /// A range whose end is the smallest normal number ([`f64::MIN_POSITIVE`], the `(0` of an
    /// open interval here) refuses the subnormal values between 0 and it: the error then
    /// says so, not just the interval `v` seems to lie in.
    ///
    /// ```
    /// use safegate_core::error::check;
    ///
    /// let e = check::positive("delta", 1e-320).unwrap_err();
    /// assert_eq!(
    ///     e.to_string(),
    ///     "delta = 1e-320 is out of range: allowed (0, ∞), a normal float (≥ 2.2e-308); 1e-320 is subnormal"
    /// );
    /// ```
    pub fn within(field: &str, v: f64, lo: f64, hi: f64, allowed: &str) -> Result<f64, RangeError> {
        if v >= lo && v <= hi {
            return Ok(v);
        }
        let shown = super::number(v);
        // Refused for being subnormal alone: below a bound no larger than the smallest
        // normal (or above one no smaller than its negative), on the same side of 0.
        let subnormal = v.is_subnormal()
            && ((v > 0.0 && v < lo && lo <= f64::MIN_POSITIVE) || (v < 0.0 && v > hi && hi >= -f64::MIN_POSITIVE));
        if subnormal {
            let normal = format!("{}{}", if v < 0.0 { "≤ -" } else { "≥ " }, SMALLEST_NORMAL);
            Err(RangeError::new(field, &shown, format!("{allowed}, a normal float ({normal}); {shown} is subnormal")))
        } else {
            Err(RangeError::new(field, shown, allowed))
        }
    }

    /// [`f64::MIN_POSITIVE`], the smallest normal `f64` (2.2250738585072014e-308), as the
    /// range errors round it.
    const SMALLEST_NORMAL: &str = "2.2e-308";

    /// The smallest normal number above 0 and the largest below 1: the ends of open
    /// intervals, so every check is one closed [`within`]. (A subnormal "positive" value
    /// overflows the first division it meets.)
    const ABOVE_ZERO: f64 = f64::MIN_POSITIVE;
    const BELOW_ONE: f64 = 1.0 - f64::EPSILON / 2.0;

    /// A finite `v > 0`.
    pub fn positive(field: &str, v: f64) -> Result<f64, RangeError> {
        within(field, v, ABOVE_ZERO, f64::MAX, "(0, ∞)")
    }

    /// A finite `v ≥ 0`.
    pub fn non_negative(field: &str, v: f64) -> Result<f64, RangeError> {
        within(field, v, 0.0, f64::MAX, "[0, ∞)")
    }

    /// A probability strictly between 0 and 1 (ε, η).
    pub fn probability(field: &str, v: f64) -> Result<f64, RangeError> {
        within(field, v, ABOVE_ZERO, BELOW_ONE, "(0, 1)")
    }

    /// A share in `[0, 1]` (a sensitivity, a retry probability).
    pub fn unit(field: &str, v: f64) -> Result<f64, RangeError> {
        within(field, v, 0.0, 1.0, "[0, 1]")
    }

    /// A decay factor α in `[0, 1)`.
    pub fn decay(field: &str, v: f64) -> Result<f64, RangeError> {
        within(field, v, 0.0, BELOW_ONE, "[0, 1)")
    }

    /// A rate-of-closure gain γ in `(0, 1]`.
    pub fn gain(field: &str, v: f64) -> Result<f64, RangeError> {
        within(field, v, ABOVE_ZERO, 1.0, "(0, 1]")
    }

    /// The occupancy threshold θ of a barrier or a gate, as a share of capacity: `(0, 1)`.
    ///
    /// One range for every θ: at 0 the safe set is an empty queue, at 1 it is the whole
    /// buffer (a queue can never leave it, so there is nothing to enforce).
    pub fn threshold(field: &str, v: f64) -> Result<f64, RangeError> {
        probability(field, v)
    }

    /// A span of time in seconds, `[1e-9, 1e9]`: a ramp, a window, a period.
    pub fn seconds(field: &str, v: f64) -> Result<f64, RangeError> {
        within(field, v, 1e-9, 1e9, "[1e-9, 1e9] seconds")
    }

    /// A queue capacity: `[1, 1e8]` requests, the same in scenarios, the simulator, the
    /// filter and the tower layer.
    pub fn capacity(field: &str, v: f64) -> Result<f64, RangeError> {
        within(field, v, 1.0, MAX_CAPACITY, "[1, 1e8] requests")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_fails_every_check() {
        for (lo, hi) in [(0.0, 1.0), (f64::MIN_POSITIVE, 1.0 - 1e-16)] {
            assert!(check::probability("p", lo).is_err() == (lo == 0.0));
            assert!(check::probability("p", hi).is_err() == (hi == 1.0));
        }
        assert!(check::decay("d", 0.0).is_ok() && check::gain("g", 1.0).is_ok() && check::gain("g", 0.0).is_err());
        for f in [
            check::positive,
            check::non_negative,
            check::probability,
            check::unit,
            check::decay,
            check::gain,
            check::threshold,
            check::capacity,
        ] {
            let e = f("x", f64::NAN).unwrap_err();
            assert_eq!((e.field.as_str(), e.value.as_str()), ("x", "NaN"));
        }
    }

    #[test]
    fn a_long_float_is_shown_in_exponent_form() {
        assert_eq!(RangeError::new("x", 1e308, "y").value, "1e308");
        assert_eq!(RangeError::new("x", 1e-300, "y").value, "1e-300");
        assert_eq!(RangeError::new("x", 0.05, "y").value, "0.05");
        assert_eq!(RangeError::new("x", "(a long text that is not a number at all)", "y").value.len(), 41);
    }

    #[test]
    fn minus_zero_is_shown_as_zero_and_every_number_is_short() {
        assert_eq!(number(-0.0), "0");
        assert_eq!(number(0.0), "0");
        assert_eq!(number(1e-320), "1e-320");
        assert_eq!(number(-5e-324), "-5e-324");
        for v in [f64::MAX, f64::MIN, f64::MIN_POSITIVE, 1e-320, 0.1 + 0.2, 1.234_567_890_123_456_7e-6, 9.999e15, -1e16]
        {
            assert!(number(v).len() <= 24, "{v:e}: {}", number(v));
            assert_eq!(number(v).parse::<f64>().unwrap(), v);
        }
    }

    /// A subnormal value refused by a range whose open end is the smallest normal: the
    /// error names that rule, not only `(0, …)`, which the value seems to be in.
    #[test]
    fn a_subnormal_value_is_refused_as_subnormal() {
        let e = check::positive("delta", 1e-320).unwrap_err();
        assert_eq!(
            e.to_string(),
            "delta = 1e-320 is out of range: allowed (0, ∞), a normal float (≥ 2.2e-308); 1e-320 is subnormal"
        );
        let e = check::threshold("barrier.threshold", 1e-320).unwrap_err().at("boundary");
        assert_eq!(
            e.to_string(),
            "boundary.barrier.threshold = 1e-320 is out of range: allowed (0, 1), a normal float (≥ 2.2e-308); 1e-320 is subnormal"
        );
        for f in [check::positive, check::probability, check::gain, check::threshold] {
            for v in [f64::from_bits(1), 1e-310, f64::MIN_POSITIVE / 2.0] {
                let e = f("x", v).unwrap_err();
                assert!(e.allowed.ends_with("is subnormal"), "{e}");
                assert!(e.allowed.contains("≥ 2.2e-308"), "{e}");
            }
            // The smallest normal itself is allowed.
            assert_eq!(f("x", f64::MIN_POSITIVE), Ok(f64::MIN_POSITIVE));
        }
        // A hand-written range with the same open end says the same.
        let e = check::within("smoothing", 1e-320, f64::MIN_POSITIVE, 1.0, "(0, 1]").unwrap_err();
        assert_eq!(e.allowed, "(0, 1], a normal float (≥ 2.2e-308); 1e-320 is subnormal");
        let e = check::within("x", -1e-320, -1.0, -f64::MIN_POSITIVE, "[-1, 0)").unwrap_err();
        assert_eq!(e.allowed, "[-1, 0), a normal float (≤ -2.2e-308); -1e-320 is subnormal");
        // Values outside for another reason keep the plain message: negative, zero, below a
        // larger lower end, not a number.
        for (v, lo) in [(-1e-320, f64::MIN_POSITIVE), (0.0, f64::MIN_POSITIVE), (1e-320, 1e-9), (f64::NAN, 0.0)] {
            let e = check::within("x", v, lo, 1.0, "[lo, 1]").unwrap_err();
            assert_eq!(e.allowed, "[lo, 1]", "{v:e}");
        }
        assert_eq!(check::seconds("t", 1e-320).unwrap_err().allowed, "[1e-9, 1e9] seconds");
        // Where 0 is allowed, so is a subnormal.
        assert_eq!(check::non_negative("x", 1e-320), Ok(1e-320));
    }

    #[test]
    fn the_path_nests() {
        let e = RangeError::new("eta", 2.0, "(0, 1)").at("magnitude").at("boundary");
        assert_eq!(e.field, "boundary.magnitude.eta");
        assert_eq!(e.to_string(), "boundary.magnitude.eta = 2 is out of range: allowed (0, 1)");
        assert_eq!(RangeError::new("", 1, "x").at("p").field, "p");
    }

    #[test]
    fn one_threshold_range() {
        assert!(check::threshold("t", 0.0).is_err());
        assert!(check::threshold("t", 1.0).is_err());
        assert!(check::threshold("t", 0.7).is_ok());
        assert!(check::capacity("c", 1e9).is_err());
        assert!(check::capacity("c", 0.5).is_err());
    }
}
