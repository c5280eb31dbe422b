//! A run's books: the queue's own ([`safegate_queue::Stats`]) in the live system's terms,
//! with the retries the load generator offered.

use serde::Serialize;

/// The job accounting of a run: the queue's books plus the load generator's retry tags.
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

/// Retries the load generator offered and saw admitted (the queue's books do not tag
/// them: the generator, in the controller's process, counts them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetryCounts {
    /// Retries offered.
    pub offered: u64,
    /// Retries admitted.
    pub admitted: u64,
}

impl Accounting {
    /// The queue's books `s` with the retries `r`. A job failed for good and one
    /// dead-lettered are both `failed` here (the live pool fails a job at its first failed
    /// attempt; the load generator decides on a retry).
    pub fn from_stats(s: &safegate_queue::Stats, r: RetryCounts) -> Self {
        Accounting {
            offered: s.offered,
            offered_retries: r.offered,
            admitted: s.admitted,
            admitted_retries: r.admitted,
            rejected: s.rejected_share,
            rejected_full: s.rejected_full,
            completed: s.completed,
            failed: s.failed + s.dead,
            redelivered: s.redelivered,
            in_backlog: s.waiting(),
            in_service: s.in_service,
            latency_us: s.latency_us,
            wait_us: s.latency_us.saturating_sub(s.service_us),
        }
    }

    /// `admitted − completed − failed − in_backlog`: jobs unaccounted for (must be 0).
    pub fn lost(&self) -> i64 {
        self.admitted as i64 - self.completed as i64 - self.failed as i64 - self.in_backlog as i64
    }
}
