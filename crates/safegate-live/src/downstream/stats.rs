//! What the downstream reports: [`DownstreamStats`] (`GET /admin/state`) and the scheduler's
//! wake-up [`Precision`].

use serde::{Deserialize, Serialize};

/// A snapshot of the downstream (`GET /admin/state`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DownstreamStats {
    /// Requests in service now (`n`).
    pub in_service: u32,
    /// Requests whose service completed, including those answered 500 (in noop mode: every
    /// request answered).
    pub served: u64,
    /// Requests answered 500 by the `error_rate` fault.
    pub errors: u64,
    /// Model time now \[s\].
    pub t_model: f64,
    /// Health in force now: the fault's override, else the schedule's.
    pub health: f64,
    /// `∫ n dt` over model time since the start \[request-seconds\]: its increase over a
    /// window divided by the window's model time is the mean number in service (Little's
    /// `L`).
    #[serde(default)]
    pub request_seconds: f64,
    /// Requests waiting for a worker now (0 without [`Workers`](super::Workers)).
    #[serde(default)]
    pub waiting: u32,
    /// Requests answered 503 because every worker was busy and the queue full.
    #[serde(default)]
    pub full: u64,
}

/// Wake-up precision of the scheduler thread: how late its timed waits for a due completion
/// ended (all zero for a scheduler on a tokio clock, which counts none).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Precision {
    /// Timed wake-ups for a due completion.
    pub wakes: u64,
    /// Their mean lateness \[µs\].
    pub mean_late_us: f64,
    /// The largest \[µs\].
    pub max_late_us: f64,
}
