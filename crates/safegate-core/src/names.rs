//! The output contract: the name of every metric the tower layer, the live system and the
//! fleet publish, each with one meaning wherever it appears, and the one vocabulary of
//! rejection reasons ([`Reason`]). Dashboards, alerts and the telemetry checklist read
//! these names; a publisher never spells one itself.
//!
//! Names follow Prometheus's conventions: base units, `_total` for counters.

use core::fmt;

/// Requests (jobs) allowed in service at once: the concurrency limit in force \[gauge\].
pub const LIMIT: &str = "safegate_limit";
/// Requests (jobs) in service now \[gauge\].
pub const IN_FLIGHT: &str = "safegate_in_flight";
/// Requests (jobs) admitted and waiting for a slot \[gauge\].
pub const WAITING: &str = "safegate_waiting";
/// Share of offers the gate admits, in `[0, 1]` \[gauge\].
pub const ADMIT_SHARE: &str = "safegate_admit_share";
/// Admitted rate a fleet gate may send to the shared dependency \[req/s, gauge\].
pub const ADMIT_RATE: &str = "safegate_admit_rate";
/// The barrier's margin `θ·capacity − q` at the latest decision \[requests, gauge\].
pub const BARRIER_MARGIN: &str = "safegate_barrier_margin";
/// Share of decisions taken outside the safe set (`q > θ·capacity`) \[gauge\].
pub const OBSERVED_EXIT_FREQUENCY: &str = "safegate_observed_exit_frequency";
/// Decisions taken \[counter\].
pub const DECISIONS_TOTAL: &str = "safegate_decisions_total";
/// Decisions the safety filter changed \[counter\].
pub const FILTER_INTERVENTIONS_TOTAL: &str = "safegate_filter_interventions_total";
/// Decisions where no action met the boundary and the backup policy acted \[counter\].
pub const BACKUP_ACTIVATIONS_TOTAL: &str = "safegate_backup_activations_total";
/// Requests (jobs) offered to the gate \[counter\].
pub const REQUESTS_OFFERED_TOTAL: &str = "safegate_requests_offered_total";
/// Requests (jobs) admitted \[counter\].
pub const REQUESTS_ADMITTED_TOTAL: &str = "safegate_requests_admitted_total";
/// Requests (jobs) not admitted, labelled `reason` with a [`Reason`] \[counter\].
pub const REQUESTS_REJECTED_TOTAL: &str = "safegate_requests_rejected_total";
/// Requests the dry-run mode would have rejected, labelled `reason` \[counter\].
pub const REQUESTS_DRY_RUN_REJECTED_TOTAL: &str = "safegate_requests_dry_run_rejected_total";
/// Admitted requests that failed (an error, or a response classified as a failure) \[counter\].
pub const REQUESTS_FAILED_TOTAL: &str = "safegate_requests_failed_total";
/// Admitted requests dropped before they finished (the caller went away) \[counter\].
pub const REQUESTS_DROPPED_TOTAL: &str = "safegate_requests_dropped_total";
/// Time a request spent in the layer \[seconds, histogram\].
pub const REQUEST_DURATION_SECONDS: &str = "safegate_request_duration_seconds";
/// The label of a metric's reason.
pub const REASON_LABEL: &str = "reason";

/// Why a request (a job) was not admitted: one vocabulary for the tower layer, the live
/// system and the fleet, in the `reason` label of [`REQUESTS_REJECTED_TOTAL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// A bound of the nominal controller was reached: its concurrency limit (or the
    /// layer's maximum), the admission share it asked for left this request out, or the
    /// wait queue (the backlog) was full.
    Limit,
    /// The safety filter cut the nominal controller's admission to keep the occupancy
    /// barrier (the boundary's `θ`) with the boundary's probability.
    Barrier,
    /// No admission satisfied the boundary's constraints: the backup policy acted.
    Backup,
    /// The request waited in a bounded queue until its deadline without getting a slot.
    Deadline,
}

impl Reason {
    /// Every reason, in the order of their metric labels.
    pub const ALL: [Reason; 4] = [Reason::Limit, Reason::Barrier, Reason::Backup, Reason::Deadline];

    /// A short, stable label (`"limit"`, `"barrier"`, `"backup"`, `"deadline"`), used in
    /// metrics and messages.
    ///
    /// ```
    /// use safegate_core::names::Reason;
    /// assert_eq!(Reason::Barrier.as_str(), "barrier");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Limit => "limit",
            Reason::Barrier => "barrier",
            Reason::Backup => "backup",
            Reason::Deadline => "deadline",
        }
    }

    /// The reason as a one-byte code, for publishing it in an atomic ([`Reason::from_code`]
    /// reads it back).
    pub fn code(self) -> u8 {
        match self {
            Reason::Limit => 0,
            Reason::Barrier => 1,
            Reason::Backup => 2,
            Reason::Deadline => 3,
        }
    }

    /// The reason [`Reason::code`] made `b` from (`Limit` for any other byte).
    pub fn from_code(b: u8) -> Reason {
        match b {
            1 => Reason::Barrier,
            2 => Reason::Backup,
            3 => Reason::Deadline,
            _ => Reason::Limit,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_labels_are_distinct_and_round_trip() {
        for r in Reason::ALL {
            assert_eq!(Reason::from_code(r.code()), r);
        }
        assert_eq!(Reason::from_code(200), Reason::Limit);
        let labels: std::collections::BTreeSet<_> = Reason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(labels.len(), Reason::ALL.len());
    }
}
