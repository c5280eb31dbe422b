//! Health over model time as the scheduler integrates it: exactly, piece by linear piece.

use safegate_sim::HealthTrack;

/// Most pieces of the health schedule one solve or integration walks before it gives up
/// and asks to be woken at the point it reached (a schedule at health 0 for a long time).
const MAX_PIECES: usize = 4096;

/// Health over model time as the scheduler sees it: the schedule, or the fault's override.
#[derive(Debug, Clone)]
pub(super) struct Health<'a> {
    track: &'a HealthTrack,
    fixed: Option<f64>,
}

impl Health<'_> {
    /// `(H(t), dH/dt, model time until the linear piece ends)`, clamped to `H ≥ 0`.
    pub(super) fn piece(&self, t: f64) -> (f64, f64, f64) {
        match self.fixed {
            Some(h) => (h.max(0.0), 0.0, f64::INFINITY),
            None => {
                let (h, slope, left) = self.track.segment(t);
                if h.is_finite() && slope.is_finite() && h >= 0.0 {
                    // A sub-nanosecond piece is stepped over (rounding at a corner).
                    (h, slope, if left > 1e-9 { left } else { 1e-9 })
                } else {
                    (0.0, 0.0, if left > 1e-9 { left } else { 1e-9 })
                }
            }
        }
    }

    /// `∫ H dt` over `[t0, t1]` (exact for piecewise-linear health).
    pub(super) fn integral(&self, t0: f64, t1: f64) -> f64 {
        let mut t = t0;
        let mut sum = 0.0;
        for _ in 0..MAX_PIECES {
            if !(t < t1) {
                return sum;
            }
            let (h, slope, left) = self.piece(t);
            let tau = left.min(t1 - t);
            sum += (h * tau + 0.5 * slope * tau * tau).max(0.0);
            t += tau;
        }
        // Too many pieces (cannot happen for a checked schedule over a short span): the
        // rest at the current value.
        sum + self.piece(t).0 * (t1 - t).max(0.0)
    }

    /// The model time at which `∫ H dt` from `t0` reaches `need`, or `Err(t)`: not within
    /// the pieces walked, which end at `t` (wake up there and solve again).
    pub(super) fn reach(&self, t0: f64, need: f64) -> Result<f64, f64> {
        let mut t = t0;
        let mut need = need.max(0.0);
        for _ in 0..MAX_PIECES {
            if need <= 0.0 {
                return Ok(t);
            }
            let (h, slope, left) = self.piece(t);
            let whole = if left.is_finite() { (h * left + 0.5 * slope * left * left).max(0.0) } else { f64::INFINITY };
            if whole >= need {
                // Solve h·τ + slope·τ²/2 = need for the smallest τ ≥ 0 (the rationalised
                // root stays accurate when slope ≈ 0).
                let tau = if slope == 0.0 {
                    if h > 0.0 {
                        need / h
                    } else {
                        return if left.is_finite() { Err(t + left) } else { Err(f64::INFINITY) };
                    }
                } else {
                    let disc = (h * h + 2.0 * slope * need).max(0.0);
                    let den = h + disc.sqrt();
                    if den > 0.0 {
                        2.0 * need / den
                    } else {
                        left
                    }
                };
                return Ok(t + tau.min(left).max(0.0));
            }
            need -= whole;
            t += left;
        }
        Err(t)
    }
}

impl<'a> Health<'a> {
    /// Health from `track`, or `fixed` while the fault overrides it.
    pub(super) fn new(track: &'a HealthTrack, fixed: Option<f64>) -> Self {
        Health { track, fixed }
    }
}
