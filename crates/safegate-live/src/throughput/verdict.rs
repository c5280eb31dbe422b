//! F19's verdict on a fitted curve.

use super::fit::{self, CurveFit};
use super::{Verdict, MATERIAL_GAP, MAX_HALF_WIDTH};

/// Judge a fitted curve: the verdict and its reason.
pub fn judge(fit: &CurveFit) -> (Verdict, String) {
    let Some(tail) = fit.tail else {
        return (
            Verdict::Inconclusive,
            format!("fewer than {} points past 2C = {:.1}", fit::MIN_TAIL_POINTS, 2.0 * fit.contention.comfortable),
        );
    };
    let interval = format!("p̂ = {:.3} [{:.3}, {:.3}] over {} points", tail.exponent, tail.lo, tail.hi, tail.points);
    let half = 0.5 * (tail.hi - tail.lo);
    if !(half <= MAX_HALF_WIDTH) {
        return (Verdict::Inconclusive, format!("too noisy: {interval}, half-width over {MAX_HALF_WIDTH}"));
    }
    if tail.contains(2.0) {
        return (Verdict::Holds, format!("the measured tail is 1/n: {interval} contains 2"));
    }
    let far = fit.tails.last().copied();
    let gap = far.map_or(0.0, |t| (t.free / t.contention - 1.0).abs());
    if gap > MATERIAL_GAP {
        (
            Verdict::Falsified,
            format!(
                "{interval} excludes 2, and at n = {:.0} the free-exponent tail is {:.0} % off the 1/n one",
                far.map_or(0.0, |t| t.n),
                100.0 * gap
            ),
        )
    } else {
        (
            Verdict::Inconclusive,
            format!("{interval} excludes 2, but the tails differ by only {:.1} % at 4× the largest n", 100.0 * gap),
        )
    }
}
