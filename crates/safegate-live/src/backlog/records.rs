//! What the backlog's operations return: an admission's outcome, the job accounting, a
//! delivery.

use serde::Serialize;

/// How an admission attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Admission {
    /// Enqueued.
    Admitted,
    /// Rejected by the admission share.
    Rejected,
    /// Rejected because the backlog was at its bound.
    Full,
}

/// The job accounting, as held in Redis (`ns:count`) plus the backlog's length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Accounting {
    /// Offers to the gate (first attempts and retries).
    pub offered: u64,
    /// Of `offered`, retries of failed jobs.
    pub offered_retries: u64,
    /// Jobs admitted into the backlog.
    pub admitted: u64,
    /// Of `admitted`, retries.
    pub admitted_retries: u64,
    /// Rejected by the admission share.
    pub rejected: u64,
    /// Rejected because the backlog was at its bound.
    pub rejected_full: u64,
    /// Jobs completed successfully.
    pub completed: u64,
    /// Jobs whose attempt failed (downstream error or timeout); some come back as retries.
    pub failed: u64,
    /// Jobs given back to the backlog after their executor died.
    pub redelivered: u64,
    /// Jobs in the backlog now (waiting or in service).
    pub in_backlog: u64,
    /// Jobs in service now (delivered, not acknowledged).
    pub in_service: u64,
    /// Sum of the time in the system of acknowledged jobs \[µs, wall\].
    pub latency_us: u64,
    /// The part of `latency_us` spent waiting for an executor \[µs, wall\].
    pub wait_us: u64,
}

impl Accounting {
    /// `admitted − completed − failed − in_backlog`: jobs unaccounted for (must be 0).
    pub fn lost(&self) -> i64 {
        self.admitted as i64 - self.completed as i64 - self.failed as i64 - self.in_backlog as i64
    }
}

/// A job as an executor received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The stream entry's id.
    pub id: String,
    /// The job's payload.
    pub job: String,
    /// Times it was given back before this delivery.
    pub redeliveries: u32,
}
