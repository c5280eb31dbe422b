//! The detector interface, [`FailureDetector`], and the elapsed time both detectors read.

/// A failure detector fed with heartbeats; time is passed in, in seconds.
pub trait FailureDetector {
    /// A heartbeat arrived at `now`. A `now` that is not finite, or earlier than the last
    /// heartbeat (a message out of order), is ignored.
    fn heartbeat(&mut self, now: f64);

    /// The suspicion level at `now`, never below 0: φ for [`PhiAccrual`](super::PhiAccrual), elapsed time over
    /// the timeout for [`Timeout`](super::Timeout). 0 before the first heartbeat (nothing is monitored
    /// yet); `+∞` when `now` is not finite (an unknown clock cannot vouch for liveness).
    fn suspicion(&self, now: f64) -> f64;

    /// Whether the monitored process is suspected at `now`: its suspicion level has reached
    /// the detector's threshold.
    fn suspect(&self, now: f64) -> bool;

    /// The time of the last heartbeat taken, if any.
    fn last_heartbeat(&self) -> Option<f64>;
}

/// Elapsed time since the last heartbeat, clamped at 0 (a `now` before it reads as 0);
/// `None` before the first heartbeat, `+∞` for a `now` that is not finite.
pub(super) fn elapsed(last: Option<f64>, now: f64) -> Option<f64> {
    let last = last?;
    if !crate::finite(now) {
        return Some(f64::INFINITY);
    }
    Some((now - last).max(0.0))
}
