//! The permit an admitted request holds while it is in the inner service, and the wait for
//! a slot in queue mode.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::error::Overloaded;
use crate::reason::Reason;
use crate::shared::owner::Slot;
use crate::shared::{Mode, Owner, Shared};

/// How an admitted request's inner future ended, as far as its permit knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Not finished (yet): dropped now, the request counts as cancelled.
    Pending,
    /// Finished with a response.
    Ok,
    /// Finished with the inner service's error.
    Err,
}

/// The slot a request holds while it is in the inner service. Dropping it records the
/// request's time in the layer (a timed request) and its outcome (`Pending`: cancelled),
/// then frees the slot.
///
/// The slot, not a reference count, keeps the layer's state alive (see
/// [`Owner`](crate::shared::owner)); in queue mode the permit also holds a handle, so that
/// it can wake a waiter after the slot's release.
#[derive(Debug)]
pub(crate) struct Permit {
    // Fields drop in this order, after `Drop::drop`: the slot is given back first, then
    // (queue mode) a waiter woken for it, by `_wake`'s drop (its only use).
    slot: Slot<Shared>,
    _wake: Option<WakeOnDrop>,
    /// The arrival time, for a timed request.
    start_raw: Option<u64>,
    /// A timed request's wait for its slot \[ns\] (queue mode), recorded with its latency
    /// when it leaves, so that a period's latency and wait sums are of the same requests.
    waited_ns: u64,
    pub(super) outcome: Outcome,
}

impl Permit {
    /// The permit of a request that has just taken `slot` in `owner`'s gate word, after
    /// waiting `waited_ns` for it (0 in reject mode).
    pub(super) fn new(slot: Slot<Shared>, owner: &Arc<Owner<Shared>>, start_raw: Option<u64>, waited_ns: u64) -> Self {
        let wake = matches!(owner.settings.mode, Mode::Queue { .. }).then(|| WakeOnDrop(owner.clone()));
        Permit { slot, _wake: wake, start_raw, waited_ns, outcome: Outcome::Pending }
    }

    /// Bookkeeping before the slot goes: timed, cancelled or failed requests.
    #[cold]
    fn account(&self) {
        let sh = &*self.slot;
        let d = &sh.done.0;
        if let Some(start) = self.start_raw {
            let ns = sh.clock.delta_as_nanos(start, sh.clock.raw());
            d.latency_ns.fetch_add(ns, Ordering::Relaxed);
            if self.waited_ns > 0 {
                d.wait_ns.fetch_add(self.waited_ns, Ordering::Relaxed);
            }
            d.timed.fetch_add(1, Ordering::Relaxed);
            #[cfg(feature = "metrics")]
            crate::metrics::record_latency(&sh.latency, ns);
        }
        match self.outcome {
            Outcome::Pending => {
                d.cancelled.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Err => {
                d.errors.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Ok => {}
        }
    }
}

impl Drop for Permit {
    #[inline]
    fn drop(&mut self) {
        // An untimed request that finished has nothing to record: only its slot to give
        // back (the field's drop, next).
        if self.start_raw.is_some() || self.outcome != Outcome::Ok {
            self.account();
        }
    }
}

/// Queue mode: a handle that, dropped after its permit's slot, wakes a waiter for it.
#[derive(Debug)]
struct WakeOnDrop(Arc<Owner<Shared>>);

impl Drop for WakeOnDrop {
    fn drop(&mut self) {
        if self.0.waiting.0.load(Ordering::SeqCst) > 0 {
            self.0.notify.notify_one();
        }
    }
}

/// Decrements the waiting count however the wait ends (slot, deadline, cancellation).
pub(super) struct WaitGuard(pub(super) Arc<Owner<Shared>>);

impl Drop for WaitGuard {
    fn drop(&mut self) {
        self.0.waiting.0.fetch_sub(1, Ordering::SeqCst);
    }
}

pub(super) type WaitFuture = Pin<Box<dyn Future<Output = Result<Permit, Overloaded>> + Send>>;

/// Wait for a slot of class `class` until `deadline` (the guard counts this request as
/// waiting from before this future is made).
pub(super) fn wait_for_slot(guard: WaitGuard, class: usize, start_raw: Option<u64>, deadline: Duration) -> WaitFuture {
    Box::pin(async move {
        let sh = guard.0.clone();
        let until = tokio::time::Instant::now() + deadline;
        loop {
            let notified = sh.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let limit = sh.classes[class].limit.load(Ordering::Relaxed);
            if let Some(slot) = sh.try_acquire(limit) {
                // Charged when the request leaves (`Permit::account`), with its latency: a
                // wait added here, at the start of service, would belong to another period's
                // completions than its latency, and while a queue builds the period's mean
                // wait would run ahead of its mean latency and read as a short service.
                let waited = start_raw.map_or(0, |start| sh.clock.delta_as_nanos(start, sh.clock.raw()));
                drop(guard);
                return Ok(Permit::new(slot, &sh, start_raw, waited));
            }
            if tokio::time::timeout_at(until, notified).await.is_err() {
                drop(guard);
                sh.classes[class].rejected[Reason::Deadline].fetch_add(1, Ordering::Relaxed);
                return Err(sh.overloaded(Reason::Deadline, class));
            }
        }
    })
}
