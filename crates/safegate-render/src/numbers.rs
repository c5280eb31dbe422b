//! Numbers as the renderers print them: in a bounded width, and shares only where they
//! have a denominator.
//!
//! - [`number`]: a value as given (a flag, a scenario's field): plain for ordinary
//!   magnitudes, exponent form for very small or large ones (`1e-320`, not `0.000…` with
//!   320 digits), `0` for `-0`.
//! - [`fixed`]: a result with a fixed number of decimals (`{:.1}`), falling back to
//!   [`number`] where the fixed form would run long (`{:.1}` of `1e300` is 302 characters);
//!   [`nonzero`]: the same, but never a value that is not 0 shown as `0.0`.
//! - [`ratio`], [`percent`], [`percent_of`]: a share of a whole, `n/a` when the whole is 0,
//!   subnormal or not finite (no "100 % of 0"), or when the share is not a finite number.
//!
//! ```
//! use safegate_render::numbers::{fixed, number, percent_of};
//!
//! assert_eq!(number(1e-320), "1e-320");
//! assert_eq!(number(-0.0), "0");
//! assert_eq!(fixed(75.25, 1), "75.2");
//! assert_eq!(fixed(1e300, 1), "1e300");
//! assert_eq!(percent_of(50.5, 65.0, 0), "78 %");
//! assert_eq!(percent_of(0.0, 0.0, 0), "n/a");
//! ```

pub use safegate_core::error::number;

/// What a share with no denominator prints.
pub const NOT_APPLICABLE: &str = "n/a";

/// Magnitudes from which [`fixed`] gives the exponent form: `{:.N}` would print 16 or more
/// integer digits.
const LARGE: f64 = 1e15;

/// `v` with `decimals` decimals, in a bounded width: `{:.N}` for ordinary magnitudes (a
/// tiny value rounds to `0.0`, never `-0.0`), [`number`]'s exponent form from 1e15 up,
/// `n/a` for NaN and `∞`/`-∞` for the infinities.
pub fn fixed(v: f64, decimals: usize) -> String {
    if v.is_nan() {
        NOT_APPLICABLE.into()
    } else if v.is_infinite() {
        if v > 0.0 { "∞" } else { "-∞" }.into()
    } else if v.abs() >= LARGE {
        number(v)
    } else {
        let s = format!("{v:.decimals$}");
        // `-0.0`, `-0.00`: a sign on a value that rounds to nothing.
        if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
            s[1..].to_string()
        } else {
            s
        }
    }
}

/// [`fixed`], unless that shows a value that is not 0 as 0 (`0.0000` for `λ = 1e-320`):
/// then [`number`]'s exponent form. For a figure a reader compares with 0 (a limit, a
/// derived bound), where `0.0` next to `n/a` would read as a share of nothing.
pub fn nonzero(v: f64, decimals: usize) -> String {
    let s = fixed(v, decimals);
    if v != 0.0 && v.is_finite() && s.trim_start_matches(['0', '.']).is_empty() {
        number(v)
    } else {
        s
    }
}

/// `part / whole`, or `None` when that is no share: `whole` is 0, subnormal (the quotient
/// has lost its precision), not finite, or the quotient is not finite.
pub fn ratio(part: f64, whole: f64) -> Option<f64> {
    if !whole.is_normal() {
        return None;
    }
    Some(part / whole).filter(|r| r.is_finite())
}

/// A share (`0.78`) as a percentage with `decimals` decimals (`78 %`), or `n/a` for `None`
/// or a share that is not finite (a NaN a report carries for "no share").
pub fn percent(share: Option<f64>, decimals: usize) -> String {
    match share.filter(|s| s.is_finite()) {
        Some(s) => format!("{} %", fixed(100.0 * s, decimals)),
        None => NOT_APPLICABLE.into(),
    }
}

/// [`percent`] without the space (`78%`), for the tables that print it so.
pub fn percent_tight(share: Option<f64>, decimals: usize) -> String {
    match share.filter(|s| s.is_finite()) {
        Some(s) => format!("{}%", fixed(100.0 * s, decimals)),
        None => NOT_APPLICABLE.into(),
    }
}

/// `part` as a percentage of `whole` ([`ratio`], [`percent`]).
pub fn percent_of(part: f64, whole: f64, decimals: usize) -> String {
    percent(ratio(part, whole), decimals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_of_nothing_is_not_applicable() {
        for whole in [0.0, -0.0, 1e-320, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(ratio(1.0, whole), None, "{whole:e}");
            assert_eq!(percent_of(0.0, whole, 0), "n/a", "{whole:e}");
            assert_eq!(percent_of(1e-320, whole, 1), "n/a", "{whole:e}");
        }
        assert_eq!(ratio(f64::NAN, 2.0), None);
        assert_eq!(ratio(1e308, 1e-300), None);
        assert_eq!(percent(Some(f64::NAN), 1), "n/a");
        assert_eq!(percent(None, 1), "n/a");
        assert_eq!(percent_tight(Some(f64::INFINITY), 1), "n/a");
        assert_eq!(percent_of(50.5, 65.0, 0), "78 %");
        assert_eq!(percent_of(0.0, 65.0, 0), "0 %");
        assert_eq!(percent_tight(Some(0.123), 1), "12.3%");
        assert_eq!(percent(Some(-1e-9), 1), "0.0 %");
    }

    #[test]
    fn every_number_has_a_bounded_width() {
        let values =
            [0.0, -0.0, 1e-320, -1e-320, 5e-324, 1e-7, 0.1 + 0.2, 75.25, 1e15, 1e16, 1e300, f64::MAX, f64::MIN];
        for v in values {
            for d in [0, 1, 2, 4, 6] {
                let s = fixed(v, d);
                assert!(s.chars().count() <= 24, "{v:e} {d}: {s}");
                assert!(!s.starts_with("-0"), "{v:e} {d}: {s}");
            }
            assert!(number(v).chars().count() <= 24, "{v:e}: {}", number(v));
        }
        assert_eq!(fixed(-1e-320, 1), "0.0");
        assert_eq!(fixed(-0.0, 0), "0");
        assert_eq!(fixed(-2.5, 1), "-2.5");
        assert_eq!(fixed(1e300, 4), "1e300");
        assert_eq!(fixed(f64::NAN, 1), "n/a");
        assert_eq!(fixed(f64::NEG_INFINITY, 1), "-∞");
        assert_eq!(fixed(123_456.789, 2), "123456.79");
        assert_eq!(nonzero(1e-320, 4), "1e-320");
        assert_eq!(nonzero(-1e-7, 1), "-1e-7");
        assert_eq!(nonzero(0.04, 1), "0.04");
        assert_eq!(nonzero(0.0, 1), "0.0");
        assert_eq!(nonzero(-0.0, 1), "0.0");
        assert_eq!(nonzero(7.0, 4), "7.0000");
    }
}
