//! The budgets the boundary's checks share with the simulator: most steps of one run
//! ([`MAX_STEPS`]), most offered rate ([`MAX_RATE`]) and the check itself ([`budget`]).
//!
//! A typo (a decision period of `1e-12`, a horizon a million times too long) must get an
//! error that names the input and says what would fit, not an abort in the allocator.
//! [`Boundary::validate`](crate::boundary::Boundary::validate) checks a boundary's horizon in
//! decision steps and its traffic envelope against these. The simulator's other budgets
//! (events, trajectories, trials, grid and series points) live beside them in
//! `safegate_sim::limits`, which re-exports these three; `docs/limits.md` lists them all
//! with the inputs that drive them.

use crate::error::RangeError;

/// Most simulation steps of one run (fluid or stepped): `duration / dt`, or a boundary's
/// `horizon / period` (one trajectory). A fluid step costs about 55 ns here, so the longest
/// run allowed takes seconds (58 simulated days at the seed's 50 ms).
pub const MAX_STEPS: f64 = 1e8;
/// Most offered rate \[req/s\] a model accepts (traffic, spikes).
pub const MAX_RATE: f64 = 1e7;

/// `Err` unless the size `derived` (what `what` names, e.g. "horizon / decision.period
/// decision steps") that the input `field = value` drives is at most `max`.
///
/// ```
/// use safegate_core::limits::{budget, MAX_STEPS};
///
/// let e = budget("probability.horizon", 1e12, 1e12 / 0.05, MAX_STEPS, "horizon / decision.period decision steps").unwrap_err();
/// assert_eq!(e.to_string(), "probability.horizon = 1000000000000 is out of range: allowed horizon / decision.period decision steps = 2e13; at most 1e8");
/// ```
pub fn budget(
    field: &str,
    value: impl std::fmt::Display,
    derived: f64,
    max: f64,
    what: &str,
) -> Result<(), RangeError> {
    if derived <= max {
        Ok(())
    } else {
        Err(RangeError::new(field, value, format!("{what} = {}; at most {}", sci(derived), sci(max))))
    }
}

/// A number in short scientific form: `2e13`, `1.5e9`, `NaN`.
fn sci(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let s = format!("{x:.2e}");
    // `2.00e13` → `2e13`, `1.50e9` → `1.5e9`.
    match s.split_once('e') {
        Some((m, e)) => format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.')),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_name_the_input_and_what_fits() {
        assert!(budget("x", 1, 10.0, 10.0, "things").is_ok());
        let e = budget("run.duration", 1e9, 2e10, MAX_STEPS, "run.duration / run.dt steps").unwrap_err();
        assert_eq!(e.field, "run.duration");
        assert!(e.allowed.contains("2e10") && e.allowed.contains("at most 1e8"), "{e}");
        assert!(budget("x", "NaN", f64::NAN, 1.0, "n").is_err(), "NaN is not within any budget");
        assert_eq!(sci(1.5e9), "1.5e9");
    }
}
