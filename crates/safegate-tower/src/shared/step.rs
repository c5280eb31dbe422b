//! The decision step: the controller (nominal + safety filter) run at most once per
//! decision period, in whichever timed request first crosses the period boundary and wins a
//! `try_lock`. It reads the counters, decides, publishes the limit, the shares, the shed
//! reason and the retry hint for the hot path, and returns a [`StepReport`] of what it saw
//! and decided, for the caller to hand on (the metrics publish it).

use std::sync::atomic::Ordering;

use safegate_core::safety::SafetyFilter;
use safegate_core::{Observation, Policy};

use super::slots;
use super::state::{Mode, Shared, TimedSums, ONE};
use crate::reason::{ByReason, Reason};

/// A latency and a wait \[s\].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct LatencyWait {
    pub(crate) latency: f64,
    pub(crate) wait: f64,
}

/// The controller behind the mutex: nominal + filter, and what the last step saw.
pub(crate) struct Controller {
    pub(crate) filter: SafetyFilter<Box<dyn Policy + Send>>,
    pub(crate) last_offered: Vec<u64>,
    /// All requests offered up to the last step, and the gate word's 32-bit count then.
    pub(crate) offered_total: u64,
    pub(crate) last_seq: u32,
    pub(crate) last_completed: u64,
    pub(crate) last_now_ns: u64,
    /// The timed completions' count and sums at the last step.
    pub(crate) last_timed: TimedSums,
    /// Mean latency and wait of the timed requests of the last period that had any.
    pub(crate) mean: LatencyWait,
    /// The cumulative latency and wait the observation carries.
    pub(crate) totals: LatencyWait,
    pub(crate) in_backup: bool,
    pub(crate) decisions: u64,
    pub(crate) exits: u64,
}

impl Controller {
    /// A controller that has not decided yet, for `classes` classes.
    pub(crate) fn new(filter: SafetyFilter<Box<dyn Policy + Send>>, classes: usize) -> Self {
        Controller {
            filter,
            last_offered: vec![0; classes],
            offered_total: 0,
            last_seq: 0,
            last_completed: 0,
            last_now_ns: 0,
            last_timed: TimedSums::default(),
            mean: LatencyWait::default(),
            totals: LatencyWait::default(),
            in_backup: false,
            decisions: 0,
            exits: 0,
        }
    }
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("nominal", &self.filter.nominal().name())
            .field("decisions", &self.decisions)
            .field("in_backup", &self.in_backup)
            .finish_non_exhaustive()
    }
}

/// What one decision step saw and decided, in plain numbers: what the metrics publish
/// (`crate::metrics::publish`), so that the step needs to know nothing of them.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) struct StepReport {
    /// The concurrency limit the step published.
    pub(crate) limit: u32,
    /// Requests in the inner service, and waiting, as the step read them.
    pub(crate) in_flight: u32,
    pub(crate) waiting: u32,
    /// The barrier's margin `θ·Q − q` \[requests\].
    pub(crate) margin: f64,
    /// Decisions so far, and those of them with `q > θ·Q`.
    pub(crate) decisions: u64,
    pub(crate) exits: u64,
    /// Filter decisions so far that changed the nominal proposal, and that found no safe
    /// admission (the backup acted).
    pub(crate) interventions: u64,
    pub(crate) backup_activations: u64,
    /// Requests so far cancelled, and failed by the inner service.
    pub(crate) cancelled: u64,
    pub(crate) errors: u64,
    /// Per class, the most important first.
    pub(crate) classes: Vec<ClassReport>,
}

/// One class in a [`StepReport`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) struct ClassReport {
    /// Requests offered so far.
    pub(crate) offered: u64,
    /// Rejections so far by reason, and would-be rejections (dry run).
    pub(crate) rejected: ByReason<u64>,
    pub(crate) would_reject: ByReason<u64>,
    /// The admission share the step published.
    pub(crate) share: f64,
}

/// Fewest requests in a period from which [`class_shares`] reads the split over classes.
pub(crate) const MIN_SPLIT: u64 = 8;

/// Admission shares per class, lowest classes shed first (DAGOR's level with a
/// fractional boundary class): given the admission share `admit` of all traffic and the
/// requests each class offered last period, the classes from the least important up lose
/// all their traffic until `(1 − admit)` of the total is shed; the class where that
/// happens is admitted in part; more important ones fully. With too little traffic last
/// period to say how it splits (fewer than [`MIN_SPLIT`] requests) every class gets `admit`.
pub(crate) fn class_shares(admit: f64, offered: &[u64], out: &mut [f64]) {
    let admit = if admit.is_nan() { 0.0 } else { admit.clamp(0.0, 1.0) };
    let total: u64 = offered.iter().sum();
    if total < MIN_SPLIT {
        out.iter_mut().for_each(|s| *s = admit);
        return;
    }
    let mut shed = (1.0 - admit) * total as f64;
    for k in (0..offered.len()).rev() {
        let d = offered[k] as f64;
        out[k] = if shed <= 1e-9 {
            1.0
        } else if d > 0.0 {
            let take = shed.min(d);
            shed -= take;
            1.0 - take / d
        } else {
            0.0
        };
    }
}

/// The 64-bit offered count from the one at the last step (`total`, whose low 32 bits the
/// gate word showed as `last_seq`) and the gate word's count now: exact as long as fewer
/// than 2³² requests arrive between two steps.
pub(crate) fn extend(total: u64, last_seq: u32, seq: u32) -> u64 {
    total.wrapping_add(u64::from(seq.wrapping_sub(last_seq)))
}

/// Requests that left the layer: offered, not rejected, not in service, not waiting.
pub(crate) fn completed_of(offered: u64, rejected: u64, in_flight: u32, waiting: u32) -> u64 {
    offered.saturating_sub(rejected).saturating_sub(u64::from(in_flight) + u64::from(waiting))
}

/// The in-service cap of class `k` of `classes`: the limit minus a reserve growing
/// linearly to `reserve · limit` for the least important class, at least 1.
pub(crate) fn class_limit(limit: u32, k: usize, classes: usize, reserve: f64) -> u32 {
    if classes <= 1 || k == 0 {
        return limit;
    }
    let held = (reserve * f64::from(limit) * k as f64 / (classes - 1) as f64).round();
    (f64::from(limit) - held).max(1.0) as u32
}

impl Shared {
    /// All requests offered so far, and per class, from the gate word `word` and the
    /// controller's count at its last step.
    pub(crate) fn offered(&self, c: &Controller, word: u64) -> (u64, Vec<u64>) {
        let total = extend(c.offered_total, c.last_seq, slots::offered(word));
        let by_class = if self.classes.len() == 1 {
            vec![total]
        } else {
            self.classes.iter().map(|k| k.offered.0.load(Ordering::Relaxed)).collect()
        };
        (total, by_class)
    }

    /// Whether `now_ns` is past the next decision instant (one relaxed load: the hot
    /// path's check before [`Shared::decide`]).
    #[inline]
    pub(crate) fn decision_due(&self, now_ns: u64) -> bool {
        now_ns >= self.published.0.next_decision_ns.load(Ordering::Relaxed)
    }

    /// Run a decision step if `now_ns` is past the next decision instant and no other
    /// request is running one: its report, or `None` (the losers keep the published
    /// values).
    pub(crate) fn decide(&self, now_ns: u64) -> Option<StepReport> {
        let mut c = match self.controller.try_lock() {
            Ok(c) => c,
            // A nominal controller that panicked in an earlier step left the lock poisoned;
            // the controller's state is plain numbers, so keep deciding rather than freeze
            // the published limit for good.
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        let p = &self.published.0;
        if now_ns < p.next_decision_ns.load(Ordering::Relaxed) {
            return None;
        }
        p.next_decision_ns.store(now_ns + self.settings.period_ns, Ordering::Relaxed);
        let report = self.step(&mut c, now_ns);
        // A nominal may ask for its next decision sooner (`peak`'s opening: once per round
        // trip). Reject mode only: there the nominal runs alone, while the safety filter of
        // queue mode is stated per decision period.
        let mut interval = self.settings.period_ns;
        if self.settings.mode == Mode::Reject {
            if let Some(within) = c.filter.nominal().next_decision_within() {
                interval = (within * 1e9).clamp(1e5, self.settings.period_ns as f64) as u64;
                p.next_decision_ns.store(now_ns + interval, Ordering::Relaxed);
            }
        }
        p.interval_ns.store(interval, Ordering::Relaxed);
        Some(report)
    }

    /// One decision: observe, run nominal + filter, publish limit, shares, reason, hint.
    pub(crate) fn step(&self, c: &mut Controller, now_ns: u64) -> StepReport {
        let s = &self.settings;
        let word = self.gate.0.word();
        let (total_offered, offered) = self.offered(c, word);
        let rejected_by_class: Vec<ByReason<u64>> = self.classes.iter().map(|k| k.rejected.load()).collect();
        let rejected: u64 = rejected_by_class.iter().map(ByReason::total).sum();
        let done = &self.done.0;
        let in_flight = slots::taken(word);
        let waiting = self.waiting.0.load(Ordering::Relaxed);
        let queue = f64::from(in_flight) + f64::from(waiting);
        // Departures are what was admitted and is no longer in the layer (counting them
        // here saves the hot path an atomic); the snapshot of several counters can be a
        // request off, so the count is kept monotone.
        let completed = completed_of(total_offered, rejected, in_flight, waiting).max(c.last_completed);
        // The timed requests give the period's mean latency and wait; every departure of
        // the period is charged that mean (the last known one if none was timed).
        let timed = done.timed_sums();
        let dn = timed.count.saturating_sub(c.last_timed.count);
        if dn > 0 {
            let mean_s = |now: u64, then: u64| now.saturating_sub(then) as f64 * 1e-9 / dn as f64;
            c.mean = LatencyWait {
                latency: mean_s(timed.latency_ns, c.last_timed.latency_ns),
                wait: mean_s(timed.wait_ns, c.last_timed.wait_ns),
            };
        }
        c.last_timed = timed;
        let departed = completed.saturating_sub(c.last_completed) as f64;
        c.totals.latency += departed * c.mean.latency;
        c.totals.wait += departed * c.mean.wait;

        let mut obs = Observation::new(now_ns as f64 * 1e-9, queue, s.capacity);
        obs.in_service = f64::from(in_flight);
        obs.offered = total_offered as f64;
        obs.admitted = total_offered.saturating_sub(rejected) as f64;
        obs.completed = completed as f64;
        // What the response classifier called failures (the inner error by default, a 5xx
        // for HTTP): the limiters read them as drops, `peak` climbs successes.
        obs.failed = done.errors.load(Ordering::Relaxed) as f64;
        obs.latency_total = c.totals.latency;
        obs.wait_total = c.totals.wait;

        // docs/tower.md §What the barrier means for a service.
        // Reject mode: requests in the layer are requests in service, and each is admitted
        // under the limit by the gate word's compare-and-swap, so capping the limit at
        // ⌊θ·Q⌋ holds the barrier deterministically: the nominal controller runs alone, and
        // no share of traffic is shed for a margin a request/response service does not
        // need. Queue mode: what waits is not decided per request, and the safety filter
        // acts on it, with the noise it measures (the net change per period).
        let (action, feasible, filtered) = match s.mode {
            Mode::Reject => (c.filter.nominal_mut().decide(&obs), true, false),
            Mode::Queue { .. } => {
                let action = c.filter.decide(&obs);
                let (feasible, bound) =
                    c.filter.last_decision().map_or((true, false), |d| (d.feasible, d.bound_by.is_some()));
                (action, feasible, bound)
            }
        };
        let wanted = action.concurrency.map_or(s.max_concurrency, |n| n.clamp(1, s.max_concurrency));
        let limit = wanted.min(s.limit_cap);
        // Over the limit: the barrier's cap when that is what binds, else the nominal's.
        let full_reason = if wanted > s.limit_cap { Reason::Barrier } else { Reason::Limit };
        let reason = if !feasible {
            Reason::Backup
        } else if filtered {
            Reason::Barrier
        } else {
            Reason::Limit
        };
        // Shares per class from last period's offered traffic.
        let delta: Vec<u64> = offered.iter().zip(&c.last_offered).map(|(a, b)| a.saturating_sub(*b)).collect();
        let mut shares = vec![1.0; s.classes];
        class_shares(action.admit, &delta, &mut shares);
        for (k, cs) in self.classes.iter().enumerate() {
            cs.threshold.store((shares[k] * ONE as f64).round() as u64, Ordering::Relaxed);
            cs.limit.store(class_limit(limit, k, s.classes, s.reserve), Ordering::Relaxed);
        }

        // Retry-after: time to clear the backlog at last period's completion rate.
        let period = s.period_ns as f64 * 1e-9;
        let dt = (now_ns.saturating_sub(c.last_now_ns)) as f64 * 1e-9;
        let rate = if dt > 0.0 { completed.saturating_sub(c.last_completed) as f64 / dt } else { 0.0 };
        let mut hint = if rate > 0.0 { (queue + 1.0) / rate } else { 1.0 };
        if reason == Reason::Backup {
            hint = hint.max(1.0);
        }
        let hint = hint.clamp(period, 30.0);

        let p = &self.published.0;
        let old_limit = p.limit.swap(limit, Ordering::Relaxed);
        p.shed_reason.store(reason.code(), Ordering::Relaxed);
        p.full_reason.store(full_reason.code(), Ordering::Relaxed);
        p.retry_after_ns.store((hint * 1e9) as u64, Ordering::Relaxed);
        if limit > old_limit && waiting > 0 {
            self.notify.notify_waiters();
        }

        let entering_backup = !feasible && !c.in_backup;
        let leaving_backup = feasible && c.in_backup;
        c.in_backup = !feasible;
        c.decisions += 1;
        if queue > s.boundary {
            c.exits += 1;
        }
        c.last_seq = slots::offered(word);
        c.offered_total = total_offered;
        c.last_completed = completed;
        c.last_now_ns = now_ns;

        #[cfg(feature = "tracing")]
        {
            if old_limit != limit {
                tracing::debug!(target: "safegate_tower", old = old_limit, new = limit, admit = action.admit, queue, "limit changed");
            }
            if entering_backup {
                tracing::warn!(target: "safegate_tower", queue, boundary = s.boundary, "no admission satisfies the boundary: backup rejects all");
            }
            if leaving_backup {
                tracing::info!(target: "safegate_tower", queue, "backup ended");
            }
        }
        let _ = (entering_backup, leaving_backup);

        let stats = c.filter.stats();
        let report = StepReport {
            limit,
            in_flight,
            waiting,
            margin: s.boundary - queue,
            decisions: c.decisions,
            exits: c.exits,
            interventions: stats.interventions,
            backup_activations: stats.infeasible,
            cancelled: done.cancelled.load(Ordering::Relaxed),
            errors: done.errors.load(Ordering::Relaxed),
            classes: self
                .classes
                .iter()
                .zip(&offered)
                .zip(rejected_by_class)
                .zip(&shares)
                .map(|(((cs, &offered), rejected), &share)| ClassReport {
                    offered,
                    rejected,
                    would_reject: cs.would_reject.load(),
                    share,
                })
                .collect(),
        };
        c.last_offered = offered;
        report
    }
}
