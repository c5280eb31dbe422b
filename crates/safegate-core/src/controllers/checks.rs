//! The limit-bounds check the limiters share (every other range check is
//! [`crate::error::check`]'s), and the two small functions of a limit the Netflix
//! ports share: `⌊L⌋` as enforced ([`whole`]) and Netflix's `Log10RootFunction`
//! ([`log10_root`]).

use crate::error::check;
use crate::RangeError;

/// Checks `1 ≤ min ≤ initial ≤ max < ∞` for a limit's bounds.
pub(crate) fn check_limits(min: f64, initial: f64, max: f64) -> Result<(), RangeError> {
    check::within("min_limit", min, 1.0, f64::MAX, "[1, ∞)")?;
    check::within("max_limit", max, min, f64::MAX, "[min_limit, ∞)")?;
    check::within("initial_limit", initial, min, max, "[min_limit, max_limit]").map(drop)
}

/// Netflix's `Log10RootFunction`: `max(1, ⌊log₁₀ ⌊L⌋⌋)` below 1000, `⌊√⌊L⌋⌋` from there (the
/// step of Vegas and a queue-size choice for Gradient2).
pub(crate) fn log10_root(limit: f64) -> f64 {
    let n = limit.max(0.0).floor();
    if n < 1000.0 {
        n.log10().floor().max(1.0)
    } else {
        n.sqrt().floor()
    }
}

/// The integer limit a float estimate enforces: `⌊L⌋`, at least 1 (Netflix `(int) limit`).
pub(crate) fn whole(limit: f64) -> u32 {
    if limit.is_finite() {
        limit.floor().clamp(1.0, u32::MAX as f64) as u32
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_floors_and_keeps_one() {
        assert_eq!(whole(4.9), 4);
        assert_eq!(whole(0.2), 1);
        assert_eq!(whole(f64::NAN), 1);
        assert_eq!(whole(1e30), u32::MAX);
    }
}
