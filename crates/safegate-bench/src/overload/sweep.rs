//! The small-knee sweep: which (knee, base time) pairs `bench overload` runs, one
//! [`Overload`](super::Overload) per pair.

use crate::error::{Error, Result};

/// The knees of `--sweep` when none are named.
pub const SWEEP_KNEES: [usize; 7] = [2, 4, 8, 16, 32, 64, 128];
/// The base times \[ms\] of `--sweep` when none are named.
pub const SWEEP_BASES_MS: [f64; 3] = [2.0, 5.0, 10.0];
/// The scenarios of `--sweep` when none are named.
pub const SWEEP_SCENARIOS: [&str; 2] = ["collapse-1.5x", "collapse-3x"];
/// Most (knee, base) pairs one sweep runs (each runs every scenario and stack).
pub const MAX_PAIRS: usize = 100;

/// The (knee, base) pairs to run: every base time with every knee; an empty list takes the
/// sweep's preset when `preset`, else the single default (knee 32, base 10 ms). More than
/// [`MAX_PAIRS`] is an error naming the field `knee`.
pub fn pairs(knees: &[usize], bases_ms: &[f64], preset: bool) -> Result<Vec<(usize, f64)>> {
    let knees = match (knees.is_empty(), preset) {
        (false, _) => knees.to_vec(),
        (true, true) => SWEEP_KNEES.to_vec(),
        (true, false) => vec![32],
    };
    let bases = match (bases_ms.is_empty(), preset) {
        (false, _) => bases_ms.to_vec(),
        (true, true) => SWEEP_BASES_MS.to_vec(),
        (true, false) => vec![10.0],
    };
    let out: Vec<(usize, f64)> = bases.iter().flat_map(|&b| knees.iter().map(move |&k| (k, b))).collect();
    if out.len() > MAX_PAIRS {
        return Err(Error::input(
            "knee",
            format!(
                "{} knees × {} base times = {} benches is out of range: allowed at most {MAX_PAIRS} (each runs every scenario and stack)",
                knees.len(),
                bases.len(),
                out.len()
            ),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_take_the_preset_or_the_default_and_are_bounded() {
        assert_eq!(pairs(&[], &[], false).unwrap(), vec![(32, 10.0)]);
        assert_eq!(pairs(&[], &[], true).unwrap().len(), 21);
        assert_eq!(pairs(&[4], &[], true).unwrap(), vec![(4, 2.0), (4, 5.0), (4, 10.0)]);
        let many: Vec<usize> = (1..=101).collect();
        let e = pairs(&many, &[1.0], false).unwrap_err().to_string();
        assert!(e.contains("knee") && e.contains("at most 100"), "{e}");
    }
}
