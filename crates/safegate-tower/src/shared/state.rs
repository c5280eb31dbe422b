//! The state itself ([`Shared`]): settings, the published values the hot path reads, the
//! counters it writes, and the helpers of the hot path (sequence sampling, rejections).

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;

use super::owner::Gated;
use super::slots::Gate;
use super::step::Controller;
use crate::error::Overloaded;
use crate::reason::{ByReason, Reason};

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
    /// The layer's name: the `layer` label of its metrics.
    pub(crate) name: String,
    pub(crate) mode: Mode,
    pub(crate) dry_run: bool,
    pub(crate) max_concurrency: u32,
    /// The barrier's capacity `Q` (requests in the system: in service plus waiting).
    pub(crate) capacity: f64,
    /// The barrier's boundary `θ·Q`.
    pub(crate) boundary: f64,
    /// The most requests in service the limit may allow: `⌊θ·Q⌋` in reject mode (which
    /// holds the barrier deterministically), `max_concurrency` in queue mode.
    pub(crate) limit_cap: u32,
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
    pub(crate) rejected: ByReason<AtomicU64>,
    pub(crate) would_reject: ByReason<AtomicU64>,
}

impl ClassState {
    pub(crate) fn new(limit: u32) -> Self {
        Self {
            offered: Padded(AtomicU64::new(0)),
            threshold: AtomicU64::new(ONE),
            limit: AtomicU32::new(limit),
            rejected: ByReason::default(),
            would_reject: ByReason::default(),
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

/// The timed completions' count and sums at one instant (see [`Done`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TimedSums {
    pub(crate) count: u64,
    pub(crate) latency_ns: u64,
    pub(crate) wait_ns: u64,
}

impl Done {
    /// The timed completions so far (relaxed loads).
    pub(crate) fn timed_sums(&self) -> TimedSums {
        TimedSums {
            count: self.timed.load(Ordering::Relaxed),
            latency_ns: self.latency_ns.load(Ordering::Relaxed),
            wait_ns: self.wait_ns.load(Ordering::Relaxed),
        }
    }
}

/// Values the decision step publishes for the hot path.
#[derive(Debug)]
pub(crate) struct Published {
    pub(crate) next_decision_ns: AtomicU64,
    /// The decision interval in force \[ns\]: the period, or the shorter one the nominal
    /// asks for (the sampling's aim, [`next_sample_mask`]).
    pub(crate) interval_ns: AtomicU64,
    /// `k − 1` for timing one request in `k` now (see [`next_sample_mask`]).
    pub(crate) sample_mask: AtomicU64,
    pub(crate) limit: AtomicU32,
    /// The reason of a shed request ([`Reason::code`]).
    pub(crate) shed_reason: AtomicU8,
    /// The reason of a request over the limit: the barrier's cap or the nominal's limit.
    pub(crate) full_reason: AtomicU8,
    pub(crate) retry_after_ns: AtomicU64,
}

/// Everything one layer shares (owned by an [`Owner`](super::Owner) and the slots it
/// gives out).
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) clock: crate::clock::Ticker,
    pub(crate) start_raw: u64,
    pub(crate) settings: Settings,
    pub(crate) published: Padded<Published>,
    pub(crate) classes: Box<[ClassState]>,
    /// The gate word: offered requests (high 32 bits, wrapping) and requests in the inner
    /// service (low 32 bits); see [`Gate`].
    pub(crate) gate: Padded<Gate>,
    pub(crate) waiting: Padded<AtomicU32>,
    pub(crate) done: Padded<Done>,
    pub(crate) notify: Notify,
    pub(crate) controller: Mutex<Controller>,
    /// The request-duration histogram, taken at the first decision.
    #[cfg(feature = "metrics")]
    pub(crate) latency: std::sync::OnceLock<::metrics::Histogram>,
}

impl Gated for Shared {
    #[inline]
    fn gate(&self) -> &Gate {
        &self.gate.0
    }
}

// A layer is `Send + Sync` through its `Owner`, which asks it of the state it owns.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Shared>();
};

/// The Weyl sequence `frac(n·φ)` (φ the golden ratio) in 32 bits: consecutive requests of
/// a class get well-spread values, so admitting those below `a·2³²` admits a share `a` of
/// any run of requests, deterministically (Knuth, TAOCP vol. 3, §6.4, Fibonacci hashing).
#[inline]
pub(crate) fn weyl(n: u64) -> u64 {
    n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32
}

/// Timed requests aimed at per decision interval: enough for the interval's mean latency
/// and for the decision step to run at most `interval / TIMED_PER_INTERVAL` late.
pub(crate) const TIMED_PER_INTERVAL: u64 = 16;

/// The next sampling mask (`k − 1`, timing one request in `k`) after `dt_ns` passed between
/// two timed requests under `mask`: doubled when they come more than twice as often as
/// [`TIMED_PER_INTERVAL`] per decision interval (`interval_ns`) asks (up to `max`), halved
/// when they come less than half as often (down to timing every request). A light load
/// times every request, so the decision step runs on time; a heavy one reads the clock
/// rarely.
///
/// The interval is the one the nominal asks for, not always the period: `peak`'s opening
/// decides ten times a period and judges each level by the mean service time of its own
/// completions. Aimed at 16 timed arrivals per period, an overload that admits one arrival
/// in six timed one completion in ~13 ms at a knee of 4 and 5 ms: most of the opening's
/// decisions charged the level's completions the level below's latency, and the opening
/// doubled twice past the knee (to 16; a model of that sampling, `peak`'s test
/// `sampled_timing_does_not_carry_the_opening_past_a_small_knee`, shows the same).
pub(crate) fn next_sample_mask(mask: u64, dt_ns: u64, interval_ns: u64, max: u64) -> u64 {
    let target = interval_ns / TIMED_PER_INTERVAL;
    if dt_ns < target / 2 && mask < max {
        mask * 2 + 1
    } else if dt_ns > target * 2 && mask > 0 {
        mask / 2
    } else {
        mask
    }
}

impl Shared {
    /// Nanoseconds since the layer was built.
    #[inline]
    pub(crate) fn now_ns(&self, raw: u64) -> u64 {
        self.clock.delta_as_nanos(self.start_raw, raw)
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
        let interval = self.published.0.interval_ns.load(Ordering::Relaxed);
        let next = next_sample_mask(mask, dt, interval, self.settings.max_sample_mask);
        if next != mask {
            self.published.0.sample_mask.store(next, Ordering::Relaxed);
        }
    }
}
