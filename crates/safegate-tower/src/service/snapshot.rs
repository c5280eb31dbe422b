//! [`Snapshot`]: a layer's counters and published values at one instant.

use std::sync::atomic::Ordering;

use crate::reason::ByReason;
use crate::shared::{completed_of, slots, Shared, ONE};

/// Counters and published values of a layer at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The concurrency limit in force (requests in the inner service).
    pub limit: u32,
    /// Requests in the inner service now.
    pub in_flight: u32,
    /// Requests waiting in the queue now (queue mode).
    pub waiting: u32,
    /// Offered requests per class.
    pub offered: Vec<u64>,
    /// Rejections per class, by [`Reason`](crate::Reason) (`rejected[class][reason]`).
    pub rejected: Vec<ByReason<u64>>,
    /// Dry-run mode: rejections that would have happened, per class and reason.
    pub would_reject: Vec<ByReason<u64>>,
    /// Admission share per class published by the last decision.
    pub share: Vec<f64>,
    /// Requests that left the inner service (completed, failed or cancelled).
    pub completed: u64,
    /// Of those, cancelled (response future dropped before it finished).
    pub cancelled: u64,
    /// Of those, finished with an error from the inner service.
    pub errors: u64,
    /// Requests timed that have left (see [`Builder::timing_sample`](crate::Builder::timing_sample)).
    pub timed: u64,
    /// Decision steps run.
    pub decisions: u64,
    /// Filter decisions in which it changed the nominal proposal.
    pub interventions: u64,
    /// Filter decisions in which no admission was safe and the backup acted.
    pub backup_activations: u64,
}

impl Snapshot {
    pub(super) fn of(sh: &Shared) -> Self {
        // A step that panicked leaves the controller's counts as they were: still usable.
        let c = sh.controller.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (decisions, interventions, backup) =
            (c.decisions, c.filter.stats().interventions, c.filter.stats().infeasible);
        let word = sh.gate.0.word();
        let (total, offered) = sh.offered(&c, word);
        drop(c);
        let in_flight = slots::taken(word);
        let waiting = sh.waiting.0.load(Ordering::Relaxed);
        let rejected: Vec<ByReason<u64>> = sh.classes.iter().map(|c| c.rejected.load()).collect();
        Snapshot {
            limit: sh.published.0.limit.load(Ordering::Relaxed),
            in_flight,
            waiting,
            offered,
            completed: completed_of(total, rejected.iter().map(ByReason::total).sum(), in_flight, waiting),
            rejected,
            would_reject: sh.classes.iter().map(|c| c.would_reject.load()).collect(),
            share: sh.classes.iter().map(|c| c.threshold.load(Ordering::Relaxed) as f64 / ONE as f64).collect(),
            cancelled: sh.done.0.cancelled.load(Ordering::Relaxed),
            errors: sh.done.0.errors.load(Ordering::Relaxed),
            timed: sh.done.0.timed.load(Ordering::Relaxed),
            decisions,
            interventions,
            backup_activations: backup,
        }
    }

    /// All rejections of all classes.
    pub fn rejected_total(&self) -> u64 {
        self.rejected.iter().map(ByReason::total).sum()
    }
}
