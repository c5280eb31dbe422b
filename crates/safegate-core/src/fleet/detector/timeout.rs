//! The plain timeout detector, [`Timeout`].

use super::failure_detector::elapsed;
use super::FailureDetector;
use crate::error::{check, RangeError};

/// is this rule with `timeout = heartbeat-interval + acceptable-heartbeat-pause`).
/// Its suspicion level is the elapsed time over the timeout; it suspects at 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeout {
    timeout: f64,
    last: Option<f64>,
}

impl Timeout {
    /// A detector with no heartbeat yet; `timeout` in `[1e-9, 1e9]` seconds.
    pub fn new(timeout: f64) -> Result<Self, RangeError> {
        Ok(Self { timeout: check::seconds("timeout", timeout)?, last: None })
    }

    /// The timeout \[s\].
    pub fn timeout(&self) -> f64 {
        self.timeout
    }
}

impl FailureDetector for Timeout {
    fn heartbeat(&mut self, now: f64) {
        if crate::finite(now) && self.last.is_none_or(|l| now >= l) {
            self.last = Some(now);
        }
    }

    fn suspicion(&self, now: f64) -> f64 {
        elapsed(self.last, now).map_or(0.0, |d| d / self.timeout)
    }

    fn suspect(&self, now: f64) -> bool {
        self.suspicion(now) >= 1.0
    }

    fn last_heartbeat(&self) -> Option<f64> {
        self.last
    }
}
