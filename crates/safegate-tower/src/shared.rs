//! The state one layer shares across all its services: atomics on the hot path, and the
//! controller (nominal + safety filter) that a request crossing a period boundary runs.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use safegate_core::safety::SafetyFilter;
use safegate_core::{Observation, Policy};
use tokio::sync::Notify;

use crate::error::{Overloaded, Reason};

/// `1.0` as an admission threshold: a request is admitted when its 32-bit hash is below it.
pub(crate) const ONE: u64 = 1 << 32;

/// Keeps a hot atomic on its own cache line (64 bytes on x86-64 and most aarch64), so that
/// counters written on every request do not invalidate the read-mostly published values.
#[repr(align(64))]
#[derive(Debug, Default)]
pub(crate) struct Padded<T>(pub(crate) T);

/// How the layer treats a request over the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Reject at once with [`Overloaded`].
    Reject,
    /// Wait in a bounded FIFO-ish queue of `capacity` requests for at most `deadline`, then
    /// reject with [`Reason::Deadline`]; a full queue rejects at once with [`Reason::Limit`].
    Queue {
        /// Most requests waiting at once.
        capacity: u32,
        /// Longest wait.
        deadline: Duration,
    },
}

/// The fixed settings of a layer.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) mode: Mode,
    pub(crate) dry_run: bool,
    pub(crate) max_concurrency: u32,
    /// The barrier's capacity `Q` (requests in the system: in service plus waiting).
    pub(crate) capacity: f64,
    /// The barrier's boundary `θ·Q`.
    pub(crate) boundary: f64,
    pub(crate) classes: usize,
    pub(crate) reserve: f64,
    pub(crate) period_ns: u64,
    /// `k − 1` for the most requests `k` (a power of two) per timed one.
    pub(crate) max_sample_mask: u64,
}

/// One priority class's counters and published admission values.
#[derive(Debug)]
pub(crate) struct ClassState {
    /// Offered requests of the class, counted only with several classes (one class's
    /// count is the gate word's).
    pub(crate) offered: Padded<AtomicU64>,
    /// Admission threshold (`ONE` admits all) and in-service cap, published per period.
    pub(crate) threshold: AtomicU64,
    pub(crate) limit: AtomicU32,
    /// Rejections by reason (enforced), and would-be rejections in dry-run mode.
    pub(crate) rejected: [AtomicU64; 4],
    pub(crate) would_reject: [AtomicU64; 4],
}

impl ClassState {
    pub(crate) fn new(limit: u32) -> Self {
        Self {
            offered: Padded(AtomicU64::new(0)),
            threshold: AtomicU64::new(ONE),
            limit: AtomicU32::new(limit),
            rejected: Default::default(),
            would_reject: Default::default(),
        }
    }
}

/// Timed completions (one request in `timing_sample`): their count, summed latency (time
/// in the layer, waiting included) and summed wait; cancellations and errors of all.
#[derive(Debug, Default)]
pub(crate) struct Done {
    pub(crate) timed: AtomicU64,
    pub(crate) latency_ns: AtomicU64,
    pub(crate) wait_ns: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) errors: AtomicU64,
    /// When the last timed request arrived \[ns since the layer was built\].
    pub(crate) last_timed_arrival_ns: AtomicU64,
}

/// Values the decision step publishes for the hot path.
#[derive(Debug)]
pub(crate) struct Published {
    pub(crate) next_decision_ns: AtomicU64,
    /// `k − 1` for timing one request in `k` now (see [`next_sample_mask`]).
    pub(crate) sample_mask: AtomicU64,
    pub(crate) limit: AtomicU32,
    pub(crate) shed_reason: AtomicU8,
    pub(crate) retry_after_ns: AtomicU64,
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
    /// Timed completions, their latency and wait sums at the last step.
    pub(crate) last_timed: [u64; 3],
    /// Mean latency and wait of the timed requests of the last period that had any \[s\].
    pub(crate) mean: [f64; 2],
    /// The cumulative latency and wait the observation carries \[s\].
    pub(crate) totals: [f64; 2],
    pub(crate) in_backup: bool,
    pub(crate) decisions: u64,
    pub(crate) exits: u64,
    pub(crate) last_margin: f64,
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

/// Everything one layer shares (behind an `Arc`).
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) clock: quanta::Clock,
    pub(crate) start_raw: u64,
    pub(crate) settings: Settings,
    pub(crate) published: Padded<Published>,
    pub(crate) classes: Box<[ClassState]>,
    /// The gate word: offered requests (high 32 bits, wrapping) and requests in the inner
    /// service (low 32 bits); see [`slots`].
    pub(crate) gate: Padded<AtomicU64>,
    pub(crate) waiting: Padded<AtomicU32>,
    pub(crate) done: Padded<Done>,
    pub(crate) notify: Notify,
    pub(crate) controller: Mutex<Controller>,
    /// The request-duration histogram, taken at the first decision.
    #[cfg(feature = "metrics")]
    pub(crate) latency: std::sync::OnceLock<metrics::Histogram>,
}

/// The layer's state and who keeps it alive. Handles (the layer, its services, requests
/// waiting in the queue) share an `Arc<Owner>`; an admitted request keeps the state alive
/// by its slot in the gate word instead ([`Permit`](crate::service)), so admitting one
/// costs no reference count. The last handle retires the gate word ([`slots::retire`]);
/// the state is freed by whichever comes last, that handle if no slot is taken or the
/// release of the last slot ([`slots::release`]) — the protocol `tests/loom.rs` checks.
pub(crate) struct Owner(NonNull<Shared>);

// SAFETY: `Owner` is a shared reference to a `Shared` it co-owns; `Shared` is `Send + Sync`
// (asserted below), so handing the pointer to other threads is as safe as an `Arc<Shared>`.
#[allow(unsafe_code)]
unsafe impl Send for Owner {}
#[allow(unsafe_code)]
unsafe impl Sync for Owner {}
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Shared>();
};

#[allow(unsafe_code)]
impl Owner {
    pub(crate) fn new(shared: Shared) -> Self {
        Owner(NonNull::from(Box::leak(Box::new(shared))))
    }

    /// The state's address, for a request that takes a slot.
    pub(crate) fn ptr(&self) -> NonNull<Shared> {
        self.0
    }

    /// Free the state.
    ///
    /// # Safety
    /// `ptr` came from [`Owner::new`], and the caller is the one party [`slots::retire`] or
    /// [`slots::release`] told to free it: no handle and no slot is left, so nothing else
    /// can reach it.
    pub(crate) unsafe fn free(ptr: NonNull<Shared>) {
        // SAFETY: by the caller's contract, the allocation is ours alone.
        drop(unsafe { Box::from_raw(ptr.as_ptr()) });
    }
}

#[allow(unsafe_code)]
impl std::ops::Deref for Owner {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        // SAFETY: the state lives while any handle does (`Drop` below frees it only once the
        // gate is retired and no slot is taken, which needs this handle gone).
        unsafe { self.0.as_ref() }
    }
}

#[allow(unsafe_code)]
impl Drop for Owner {
    fn drop(&mut self) {
        if slots::retire(&self.gate.0) {
            // SAFETY: the last handle, and no slot taken: nothing else can reach the state.
            unsafe { Owner::free(self.0) }
        }
    }
}

impl std::fmt::Debug for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// The Weyl sequence `frac(n·φ)` (φ the golden ratio) in 32 bits: consecutive requests of
/// a class get well-spread values, so admitting those below `a·2³²` admits a share `a` of
/// any run of requests, deterministically (Knuth, TAOCP vol. 3, §6.4, Fibonacci hashing).
#[inline]
pub(crate) fn weyl(n: u64) -> u64 {
    n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32
}

/// Timed requests aimed at per decision period: enough for the period's mean latency and
/// for the decision step to run at most `period / TIMED_PER_PERIOD` late.
pub(crate) const TIMED_PER_PERIOD: u64 = 16;

/// The next sampling mask (`k − 1`, timing one request in `k`) after `dt_ns` passed between
/// two timed requests under `mask`: doubled when they come more than twice as often as
/// [`TIMED_PER_PERIOD`] per period asks (up to `max`), halved when they come less than
/// half as often (down to timing every request). A light load times every request, so
/// the decision step runs on time; a heavy one reads the clock rarely.
pub(crate) fn next_sample_mask(mask: u64, dt_ns: u64, period_ns: u64, max: u64) -> u64 {
    let target = period_ns / TIMED_PER_PERIOD;
    if dt_ns < target / 2 && mask < max {
        mask * 2 + 1
    } else if dt_ns > target * 2 && mask > 0 {
        mask / 2
    } else {
        mask
    }
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
    /// Nanoseconds since the layer was built.
    #[inline]
    pub(crate) fn now_ns(&self, raw: u64) -> u64 {
        self.clock.delta_as_nanos(self.start_raw, raw)
    }

    /// Take one in-service slot for a request already counted if fewer than `limit` are
    /// taken.
    #[inline]
    pub(crate) fn try_acquire(&self, limit: u32) -> bool {
        slots::try_acquire(&self.gate.0, limit)
    }

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

    /// A rejection of class `class` for `reason`, with the published hint.
    pub(crate) fn overloaded(&self, reason: Reason, class: usize) -> Overloaded {
        let ns = self.published.0.retry_after_ns.load(Ordering::Relaxed);
        Overloaded { reason, retry_after: Duration::from_nanos(ns), class: class as u8 }
    }

    /// A timed request arrived at `now_ns` under sampling mask `mask`: adapt the mask to the
    /// traffic ([`next_sample_mask`]). Racing timed requests may adapt it from the same
    /// reading; the next ones correct it.
    #[inline]
    pub(crate) fn adapt_sampling(&self, now_ns: u64, mask: u64) {
        let last = &self.done.0.last_timed_arrival_ns;
        let before = last.load(Ordering::Relaxed);
        last.store(now_ns, Ordering::Relaxed);
        if before == 0 {
            // The first timed request (or all so far at instant 0): no interval yet.
            return;
        }
        let dt = now_ns.saturating_sub(before);
        let next = next_sample_mask(mask, dt, self.settings.period_ns, self.settings.max_sample_mask);
        if next != mask {
            self.published.0.sample_mask.store(next, Ordering::Relaxed);
        }
    }

    /// Run a decision step if `now_ns` is past the next decision instant and no other
    /// request is running one (the losers keep the published values).
    #[inline]
    pub(crate) fn maybe_decide(&self, now_ns: u64) {
        if now_ns >= self.published.0.next_decision_ns.load(Ordering::Relaxed) {
            self.decide_slow(now_ns);
        }
    }

    #[cold]
    fn decide_slow(&self, now_ns: u64) {
        let mut c = match self.controller.try_lock() {
            Ok(c) => c,
            // A nominal controller that panicked in an earlier step left the lock poisoned;
            // the controller's state is plain numbers, so keep deciding rather than freeze
            // the published limit for good.
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        let p = &self.published.0;
        if now_ns < p.next_decision_ns.load(Ordering::Relaxed) {
            return;
        }
        p.next_decision_ns.store(now_ns + self.settings.period_ns, Ordering::Relaxed);
        self.step(&mut c, now_ns);
    }

    /// One decision: observe, run nominal + filter, publish limit, shares, reason, hint.
    pub(crate) fn step(&self, c: &mut Controller, now_ns: u64) {
        let s = &self.settings;
        let word = self.gate.0.load(Ordering::Relaxed);
        let (total_offered, offered) = self.offered(c, word);
        let rejected: u64 =
            self.classes.iter().flat_map(|k| k.rejected.iter()).map(|r| r.load(Ordering::Relaxed)).sum();
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
        let timed = [
            done.timed.load(Ordering::Relaxed),
            done.latency_ns.load(Ordering::Relaxed),
            done.wait_ns.load(Ordering::Relaxed),
        ];
        let dn = timed[0].saturating_sub(c.last_timed[0]);
        if dn > 0 {
            c.mean[0] = timed[1].saturating_sub(c.last_timed[1]) as f64 * 1e-9 / dn as f64;
            c.mean[1] = timed[2].saturating_sub(c.last_timed[2]) as f64 * 1e-9 / dn as f64;
        }
        c.last_timed = timed;
        let departed = completed.saturating_sub(c.last_completed) as f64;
        c.totals[0] += departed * c.mean[0];
        c.totals[1] += departed * c.mean[1];

        let mut obs = Observation::new(now_ns as f64 * 1e-9, queue, s.capacity);
        obs.in_service = f64::from(in_flight);
        obs.offered = total_offered as f64;
        obs.admitted = total_offered.saturating_sub(rejected) as f64;
        obs.completed = completed as f64;
        obs.latency_total = c.totals[0];
        obs.wait_total = c.totals[1];

        let action = c.filter.decide(&obs);
        let (feasible, bound) = c.filter.last_decision().map_or((true, false), |d| (d.feasible, d.bound_by.is_some()));
        let limit = action.concurrency.map_or(s.max_concurrency, |n| n.clamp(1, s.max_concurrency));
        let reason = if !feasible {
            Reason::Backup
        } else if bound {
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
        p.shed_reason.store(reason.index() as u8, Ordering::Relaxed);
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
        c.last_margin = s.boundary - queue;
        c.last_offered = offered;
        c.offered_total = total_offered;
        c.last_seq = slots::offered(word);
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
        #[cfg(feature = "metrics")]
        crate::metrics::publish(self, c, limit, &shares);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_shed_lowest_first() {
        let mut out = [0.0; 3];
        class_shares(0.5, &[100, 100, 100], &mut out);
        assert_eq!(out[2], 0.0);
        assert!((out[1] - 0.5).abs() < 1e-12);
        assert_eq!(out[0], 1.0);
        class_shares(1.0, &[10, 20, 30], &mut out);
        assert_eq!(out, [1.0; 3]);
        class_shares(0.0, &[10, 20, 30], &mut out);
        assert_eq!(out, [0.0; 3]);
        // A silent low class below the boundary class is closed too.
        class_shares(0.4, &[50, 50, 0], &mut out);
        assert_eq!(out[2], 0.0);
        assert_eq!(out[1], 0.0);
        assert!((out[0] - 0.8).abs() < 1e-12);
        // No traffic: the uniform share.
        class_shares(0.3, &[0, 0, 0], &mut out);
        assert_eq!(out, [0.3; 3]);
        class_shares(0.3, &[1, 0, 0], &mut out);
        assert_eq!(out, [0.3; 3]);
        class_shares(f64::NAN, &[10, 10, 10], &mut out);
        assert_eq!(out, [0.0; 3]);
    }

    #[test]
    fn class_limits_hold_back_a_reserve() {
        assert_eq!(class_limit(20, 0, 3, 0.5), 20);
        assert_eq!(class_limit(20, 1, 3, 0.5), 15);
        assert_eq!(class_limit(20, 2, 3, 0.5), 10);
        assert_eq!(class_limit(1, 2, 3, 0.9), 1);
        assert_eq!(class_limit(20, 0, 1, 0.5), 20);
    }

    #[test]
    fn sampling_thins_under_load_and_times_every_request_when_light() {
        let period = 50_000_000; // 50 ms: aim at a timed request every 3.125 ms
        let max = 255;
        // 10 M req/s: k requests take k·100 ns; the mask doubles up to the most allowed.
        let mut mask = 0;
        for _ in 0..20 {
            mask = next_sample_mask(mask, (mask + 1) * 100, period, max);
        }
        assert_eq!(mask, max);
        // 100 req/s: every request is 10 ms apart; the mask comes back down to 0.
        for _ in 0..20 {
            mask = next_sample_mask(mask, 10_000_000, period, max);
        }
        assert_eq!(mask, 0);
        // 5,000 req/s: settles where a timed request comes every 1.6–6.3 ms.
        let mut mask = 0;
        for _ in 0..40 {
            mask = next_sample_mask(mask, (mask + 1) * 200_000, period, max);
        }
        let dt = (mask + 1) * 200_000;
        assert!((1_562_500..=6_250_000).contains(&dt), "mask {mask}: {dt} ns apart");
        assert_eq!(next_sample_mask(mask, dt, period, max), mask, "stable");
        // Never above the cap.
        assert_eq!(next_sample_mask(0, 1, period, 0), 0);
    }

    #[test]
    fn the_offered_count_survives_the_gate_words_wrap() {
        assert_eq!(extend(0, 0, 10), 10);
        assert_eq!(extend(100, 100, 130), 130);
        // The 32-bit count wraps between two steps.
        let before = (1u64 << 32) - 5;
        assert_eq!(extend(before, before as u32, 7), (1 << 32) + 7);
        // Several wraps over many steps.
        let (mut total, mut last) = (0u64, 0u32);
        let mut true_total = 0u64;
        for _ in 0..10 {
            true_total += 1_500_000_000;
            let seq = true_total as u32;
            total = extend(total, last, seq);
            last = seq;
        }
        assert_eq!(total, true_total);
    }

    #[test]
    fn one_word_counts_offers_and_holds_slots() {
        use slots::{offer, offered, release, taken, try_acquire, Offer};
        let g = AtomicU64::new(0);
        assert_eq!(offer(&g, 2, false, |_| false), (0, Offer::Admitted));
        assert_eq!(offer(&g, 2, false, |n| n == 1), (1, Offer::Shed));
        assert_eq!(offer(&g, 2, false, |_| false), (2, Offer::Admitted));
        assert_eq!(offer(&g, 2, false, |_| false), (3, Offer::Full));
        let w = g.load(Ordering::Relaxed);
        assert_eq!((offered(w), taken(w)), (4, 2));
        // Dry run: counted and given a slot whatever the outcome.
        assert_eq!(offer(&g, 2, true, |_| false), (4, Offer::Full));
        assert_eq!(taken(g.load(Ordering::Relaxed)), 3);
        release(&g);
        release(&g);
        assert!(try_acquire(&g, 2));
        assert!(!try_acquire(&g, 2));
        let w = g.load(Ordering::Relaxed);
        assert_eq!((offered(w), taken(w)), (5, 2));
        // The count wraps into nothing but itself.
        let g = AtomicU64::new(u64::from(u32::MAX) << 32);
        assert_eq!(offer(&g, 1, false, |_| false), (u32::MAX, Offer::Admitted));
        let w = g.load(Ordering::Relaxed);
        assert_eq!((offered(w), taken(w)), (0, 1));
    }

    #[test]
    fn weyl_admits_the_share_in_every_window() {
        for share in [0.1, 0.25, 0.5, 0.9] {
            let thr = (share * ONE as f64) as u64;
            for start in [0u64, 17, 1000] {
                let n = (start..start + 200).filter(|&n| weyl(n) < thr).count();
                assert!((n as f64 - 200.0 * share).abs() <= 3.0, "share {share}: {n} of 200");
            }
        }
    }
}

/// The gate word's operations: one `AtomicU64` holding the offered count (high 32 bits,
/// wrapping) and the slots taken (low 32 bits), so that a request is counted, shed or
/// admitted in one compare-and-swap. Generic over the atomic so that a model checker runs
/// the very code the layer runs (`tests/loom.rs` checks every interleaving of a few threads
/// with loom's atomics). Not part of the API.
#[doc(hidden)]
pub mod slots {
    use std::sync::atomic::{AtomicU64, Ordering};

    /// One offered request in the gate word.
    pub const OFFER: u64 = 1 << 32;

    /// The gate word's retired mark (bit 31): the layer's last handle is gone, and the
    /// release of the last slot frees its state.
    pub const RETIRED: u64 = 1 << 31;

    /// Most slots ever taken at once. Limits are far below (`max_concurrency` ≤ 10⁶); only
    /// a dry run takes slots past its limit, and reaching this needs 2³⁰ requests in the
    /// service at once, i.e. leaked (`mem::forget`) response futures. Past it [`offer`]
    /// aborts, as `Arc` does on a reference-count overflow: the count must never carry
    /// into [`RETIRED`], which would free the state under a live layer.
    pub const MAX_TAKEN: u32 = 1 << 30;

    /// The offered count (mod 2³²) of a gate word.
    #[inline]
    pub fn offered(word: u64) -> u32 {
        (word >> 32) as u32
    }

    /// The slots taken of a gate word.
    #[inline]
    pub fn taken(word: u64) -> u32 {
        word as u32 & !(RETIRED as u32)
    }

    /// An atomic gate word.
    pub trait Counter {
        /// The current word (relaxed).
        fn current(&self) -> u64;
        /// Compare-and-swap `cur → new` (may fail spuriously); the value seen on failure.
        fn swap_if(&self, cur: u64, new: u64) -> Result<u64, u64>;
        /// Give one slot back; the word before.
        fn give_back(&self) -> u64;
        /// Set the [`RETIRED`] mark; the word before.
        fn mark_retired(&self) -> u64;
    }

    impl Counter for AtomicU64 {
        #[inline]
        fn current(&self) -> u64 {
            self.load(Ordering::Relaxed)
        }
        #[inline]
        fn swap_if(&self, cur: u64, new: u64) -> Result<u64, u64> {
            self.compare_exchange_weak(cur, new, Ordering::SeqCst, Ordering::Relaxed)
        }
        #[inline]
        fn give_back(&self) -> u64 {
            self.fetch_sub(1, Ordering::SeqCst)
        }
        #[inline]
        fn mark_retired(&self) -> u64 {
            self.fetch_or(RETIRED, Ordering::SeqCst)
        }
    }

    /// What [`offer`] did with a request.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Offer {
        /// A slot was free and is now the request's.
        Admitted,
        /// The admission share turned it away (no slot taken unless `take_anyway`).
        Shed,
        /// Every slot up to the limit is taken (no slot taken unless `take_anyway`).
        Full,
    }

    /// Count one offered request and, unless `shed(n)` turns it away (`n` its sequence
    /// number, the offered count before it) or `limit` slots are taken, give it a slot; with
    /// `take_anyway` (dry run) it takes a slot whatever the outcome. One compare-and-swap
    /// loop: every request gets its own `n`, and without `take_anyway` the slots taken
    /// never pass `limit`, whatever the interleaving.
    #[inline]
    pub fn offer<C: Counter + ?Sized>(
        c: &C,
        limit: u32,
        take_anyway: bool,
        shed: impl Fn(u32) -> bool,
    ) -> (u32, Offer) {
        debug_assert!(limit <= MAX_TAKEN);
        let mut cur = c.current();
        loop {
            if take_anyway && taken(cur) >= MAX_TAKEN {
                overflow();
            }
            let n = offered(cur);
            let outcome = if shed(n) {
                Offer::Shed
            } else if taken(cur) >= limit {
                Offer::Full
            } else {
                Offer::Admitted
            };
            let slot = u64::from(take_anyway || outcome == Offer::Admitted);
            match c.swap_if(cur, cur.wrapping_add(OFFER + slot)) {
                Ok(_) => return (n, outcome),
                Err(v) => cur = v,
            }
        }
    }

    /// Take one slot for a request already counted (one that waited in the queue) if fewer
    /// than `limit` are taken.
    #[inline]
    pub fn try_acquire<C: Counter + ?Sized>(c: &C, limit: u32) -> bool {
        debug_assert!(limit <= MAX_TAKEN);
        let mut cur = c.current();
        loop {
            if taken(cur) >= limit {
                return false;
            }
            match c.swap_if(cur, cur + 1) {
                Ok(_) => return true,
                Err(v) => cur = v,
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn overflow() -> ! {
        eprintln!("safegate-tower: {MAX_TAKEN} slots taken at once (leaked response futures in dry run); aborting");
        std::process::abort()
    }

    /// Give back a slot taken by [`offer`] or [`try_acquire`]: true when it was the last
    /// slot of a retired gate, and the caller is the one to free the state.
    #[inline]
    pub fn release<C: Counter + ?Sized>(c: &C) -> bool {
        let before = c.give_back();
        before & RETIRED != 0 && taken(before) == 1
    }

    /// Mark the gate retired (its last handle is gone, no request can be offered any
    /// more): true when no slot is taken, and the caller is the one to free the state;
    /// otherwise the release of the last slot is ([`release`]). Exactly one of the two
    /// says so, whatever the interleaving.
    #[inline]
    pub fn retire<C: Counter + ?Sized>(c: &C) -> bool {
        taken(c.mark_retired()) == 0
    }
}
