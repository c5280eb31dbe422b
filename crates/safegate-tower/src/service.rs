//! [`AdmissionLayer`], [`Admission`], the response future and the permit.

use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use crate::classify::{Classify, SingleClass};
use crate::error::{Overloaded, Reason};
use crate::shared::slots::{self, Offer};
use crate::shared::{weyl, Mode, Owner, Shared};
use crate::BoxError;

/// A tower [`Layer`] that puts every service it wraps under one shared admission
/// controller (one limit per layer: all services and clones made from it share it).
///
/// Build it with [`AdmissionLayer::builder`].
#[derive(Debug, Clone)]
pub struct AdmissionLayer<C = SingleClass> {
    pub(crate) shared: Arc<Owner>,
    pub(crate) classify: C,
}

impl AdmissionLayer<SingleClass> {
    /// A builder with the defaults: `vegas` under the default boundary, reject mode,
    /// at most 100 requests in service, one class.
    pub fn builder() -> crate::Builder<SingleClass> {
        crate::Builder::new()
    }
}

impl<C> AdmissionLayer<C> {
    /// What the layer has seen and decided so far.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::of(&self.shared)
    }

    /// The same layer state with another priority classifier.
    pub fn with_classifier<C2>(self, classify: C2) -> AdmissionLayer<C2> {
        AdmissionLayer { shared: self.shared, classify }
    }
}

impl<S, C: Clone> Layer<S> for AdmissionLayer<C> {
    type Service = Admission<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        Admission { inner, shared: self.shared.clone(), classify: self.classify.clone() }
    }
}

/// The admission-controlled service (see the crate docs).
///
/// `poll_ready` only asks the inner service; capacity is taken in `call` and held by the
/// response future, so a connection that polls readiness and never sends holds nothing,
/// and a dropped (cancelled) response future frees its slot at once.
#[derive(Debug, Clone)]
pub struct Admission<S, C = SingleClass> {
    inner: S,
    shared: Arc<Owner>,
    classify: C,
}

impl<S, C> Admission<S, C> {
    /// What the layer has seen and decided so far (shared by all clones).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::of(&self.shared)
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

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
    /// Rejections per class, by [`Reason`] (indexed as [`Reason::ALL`]).
    pub rejected: Vec<[u64; 4]>,
    /// Dry-run mode: rejections that would have happened, per class and reason.
    pub would_reject: Vec<[u64; 4]>,
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
    fn of(sh: &Shared) -> Self {
        let load4 = |a: &[std::sync::atomic::AtomicU64; 4]| [0, 1, 2, 3].map(|i: usize| a[i].load(Ordering::Relaxed));
        // A step that panicked leaves the controller's counts as they were: still usable.
        let c = sh.controller.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (decisions, interventions, backup) =
            (c.decisions, c.filter.stats().interventions, c.filter.stats().infeasible);
        let word = sh.gate.0.load(Ordering::Relaxed);
        let (total, offered) = sh.offered(&c, word);
        drop(c);
        let in_flight = crate::shared::slots::taken(word);
        let waiting = sh.waiting.0.load(Ordering::Relaxed);
        Snapshot {
            limit: sh.published.0.limit.load(Ordering::Relaxed),
            in_flight,
            waiting,
            offered,
            rejected: sh.classes.iter().map(|c| load4(&c.rejected)).collect(),
            would_reject: sh.classes.iter().map(|c| load4(&c.would_reject)).collect(),
            share: sh
                .classes
                .iter()
                .map(|c| c.threshold.load(Ordering::Relaxed) as f64 / crate::shared::ONE as f64)
                .collect(),
            completed: crate::shared::completed_of(
                total,
                sh.classes.iter().flat_map(|c| c.rejected.iter()).map(|r| r.load(Ordering::Relaxed)).sum(),
                in_flight,
                waiting,
            ),
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
        self.rejected.iter().flatten().sum()
    }
}

/// The slot a request holds while it is in the inner service. Dropping it frees the slot
/// and records the request's time in the layer; if the request did not finish
/// (`outcome` still pending), it counts as cancelled.
///
/// The slot, not a reference count, keeps the layer's state alive (see [`Owner`]); in
/// queue mode the permit also holds a handle, so that it can wake a waiter after its
/// release.
#[derive(Debug)]
pub(crate) struct Permit {
    shared: NonNull<Shared>,
    keep: Option<Arc<Owner>>,
    /// The arrival time, for a timed request.
    start_raw: Option<u64>,
    /// 0 pending, 1 finished ok, 2 finished with an error.
    outcome: u8,
}

// SAFETY: the permit reaches `Shared` (`Send + Sync`) through a slot it owns; see `Owner`.
#[allow(unsafe_code)]
unsafe impl Send for Permit {}
#[allow(unsafe_code)]
unsafe impl Sync for Permit {}

impl Permit {
    /// The permit of a request that has just taken a slot in `owner`'s gate word.
    fn new(owner: &Arc<Owner>, start_raw: Option<u64>) -> Self {
        let keep = matches!(owner.settings.mode, Mode::Queue { .. }).then(|| owner.clone());
        Permit { shared: owner.ptr(), keep, start_raw, outcome: 0 }
    }
}

#[allow(unsafe_code)]
impl Drop for Permit {
    #[inline]
    fn drop(&mut self) {
        if self.start_raw.is_some() || self.outcome != 1 || self.keep.is_some() {
            self.drop_slow();
            return;
        }
        // An untimed request that finished, in reject mode: only the slot to give back.
        self.release_slot();
    }
}

impl Permit {
    /// Give the slot back, and free the state if it was the last slot of a retired layer
    /// (true then: the state must not be touched any more).
    #[inline]
    #[allow(unsafe_code)]
    fn release_slot(&self) -> bool {
        // SAFETY: the slot keeps the state alive until this release; nothing reads it after.
        let last = slots::release(unsafe { &self.shared.as_ref().gate.0 });
        if last {
            // SAFETY: the last slot of a retired layer (no handle left, so `keep` is None):
            // nothing else can reach the state.
            unsafe { Owner::free(self.shared) };
        }
        last
    }

    /// Drop with bookkeeping: timed, cancelled or failed requests, and queue mode.
    #[cold]
    #[allow(unsafe_code)]
    fn drop_slow(&mut self) {
        {
            // SAFETY: the slot this permit holds keeps the state alive until it is released
            // after this block; nothing reads `sh` after that.
            let sh = unsafe { self.shared.as_ref() };
            let d = &sh.done.0;
            if let Some(start) = self.start_raw {
                let ns = sh.clock.delta_as_nanos(start, sh.clock.raw());
                d.latency_ns.fetch_add(ns, Ordering::Relaxed);
                d.timed.fetch_add(1, Ordering::Relaxed);
                #[cfg(feature = "metrics")]
                crate::metrics::record_latency(sh, ns);
            }
            match self.outcome {
                0 => {
                    d.cancelled.fetch_add(1, Ordering::Relaxed);
                }
                2 => {
                    d.errors.fetch_add(1, Ordering::Relaxed);
                }
                _ => {}
            }
        }
        if self.release_slot() {
            return;
        }
        // Queue mode: wake a waiter for the slot just freed (the handle keeps the state).
        if let Some(sh) = &self.keep {
            if sh.waiting.0.load(Ordering::SeqCst) > 0 {
                sh.notify.notify_one();
            }
        }
    }
}

/// Decrements the waiting count however the wait ends (slot, deadline, cancellation).
struct WaitGuard(Arc<Owner>);

impl Drop for WaitGuard {
    fn drop(&mut self) {
        self.0.waiting.0.fetch_sub(1, Ordering::SeqCst);
    }
}

type WaitFuture = Pin<Box<dyn Future<Output = Result<Permit, Overloaded>> + Send>>;

/// Wait for a slot of class `class` until `deadline` (the guard counts this request as
/// waiting from before this future is made).
fn wait_for_slot(guard: WaitGuard, class: usize, start_raw: Option<u64>, deadline: std::time::Duration) -> WaitFuture {
    Box::pin(async move {
        let sh = guard.0.clone();
        let until = tokio::time::Instant::now() + deadline;
        loop {
            let notified = sh.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let limit = sh.classes[class].limit.load(Ordering::Relaxed);
            if sh.try_acquire(limit) {
                if let Some(start) = start_raw {
                    let waited = sh.clock.delta_as_nanos(start, sh.clock.raw());
                    sh.done.0.wait_ns.fetch_add(waited, Ordering::Relaxed);
                }
                drop(guard);
                return Ok(Permit::new(&sh, start_raw));
            }
            if tokio::time::timeout_at(until, notified).await.is_err() {
                drop(guard);
                sh.classes[class].rejected[Reason::Deadline.index()].fetch_add(1, Ordering::Relaxed);
                return Err(sh.overloaded(Reason::Deadline, class));
            }
        }
    })
}

pin_project! {
    /// The response future of [`Admission`]: a rejection, a wait in the queue, or the inner
    /// future holding its permit.
    pub struct ResponseFuture<F, S, Req> {
        #[pin]
        state: State<F, S, Req>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, S, Req> {
        Rejected { err: Option<Overloaded> },
        Waiting { wait: WaitFuture, svc: Option<S>, req: Option<Req> },
        Running { #[pin] fut: F, permit: Option<Permit> },
    }
}

impl<F, S, Req> std::fmt::Debug for ResponseFuture<F, S, Req> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseFuture")
    }
}

impl<F, E, T, S, Req> Future for ResponseFuture<F, S, Req>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
    S: Service<Req, Future = F, Response = T, Error = E>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        loop {
            match state.as_mut().project() {
                StateProj::Rejected { err } => {
                    let e = err.take().expect("ResponseFuture polled after completion");
                    return Poll::Ready(Err(Box::new(e)));
                }
                StateProj::Waiting { wait, svc, req } => {
                    let permit = match wait.as_mut().poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(Box::new(e))),
                        Poll::Ready(Ok(p)) => p,
                    };
                    let (mut svc, req) = match (svc.take(), req.take()) {
                        (Some(s), Some(r)) => (s, r),
                        _ => unreachable!("waiting state holds its service and request"),
                    };
                    let fut = svc.call(req);
                    state.set(State::Running { fut, permit: Some(permit) });
                }
                StateProj::Running { fut, permit } => {
                    let out = match fut.poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(out) => out,
                    };
                    if let Some(mut p) = permit.take() {
                        p.outcome = if out.is_ok() { 1 } else { 2 };
                    }
                    return Poll::Ready(out.map_err(Into::into));
                }
            }
        }
    }
}

impl<S, C, Req> Service<Req> for Admission<S, C>
where
    S: Service<Req> + Clone,
    S::Error: Into<BoxError>,
    C: Classify<Req>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future, S, Req>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // No capacity is taken here (see the type docs).
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        let sh = &*self.shared;
        let classes = sh.classes.len();
        let single = classes == 1;
        let class = if single { 0 } else { usize::from(self.classify.class(&req)).min(classes - 1) };
        let cs = &sh.classes[class];
        // The request's sequence number: with one class the gate word's offered count (as
        // read here; the compare-and-swap below may number it a little later under
        // contention, which only moves which request is timed), with several its class's.
        let n = if single {
            u64::from(slots::offered(sh.gate.0.load(Ordering::Relaxed)))
        } else {
            cs.offered.0.fetch_add(1, Ordering::Relaxed)
        };
        // One request in `k` (adapted to the traffic) reads the clock: it is timed, and it
        // runs the decision step when a period has passed (before its own admission is
        // decided).
        let mask = sh.published.0.sample_mask.load(Ordering::Relaxed);
        let raw = if n & mask == 0 {
            let raw = sh.clock.raw();
            let now = sh.now_ns(raw);
            sh.maybe_decide(now);
            sh.adapt_sampling(now, mask);
            Some(raw)
        } else {
            None
        };
        let threshold = cs.threshold.load(Ordering::Relaxed);
        let limit = cs.limit.load(Ordering::Relaxed);
        let dry = sh.settings.dry_run;
        // Counted, shed by the admission share (nominal and filter, lowest classes first) or
        // given a slot under the concurrency limit, in one compare-and-swap on the gate word;
        // with several classes each class's share runs on its own sequence.
        let (_, outcome) = if single {
            slots::offer(&sh.gate.0, limit, dry, |n| weyl(u64::from(n)) >= threshold)
        } else {
            let shed = weyl(n) >= threshold;
            slots::offer(&sh.gate.0, limit, dry, |_| shed)
        };
        let reason = match outcome {
            Offer::Admitted => return self.run(raw, req),
            Offer::Shed => Reason::from_index(sh.published.0.shed_reason.load(Ordering::Relaxed)),
            Offer::Full => Reason::Limit,
        };
        if dry {
            // The slot was taken anyway.
            cs.would_reject[reason.index()].fetch_add(1, Ordering::Relaxed);
            return self.run(raw, req);
        }
        if let (Offer::Full, Mode::Queue { capacity, deadline }) = (outcome, sh.settings.mode) {
            if sh.waiting.0.fetch_add(1, Ordering::SeqCst) < capacity {
                let guard = WaitGuard(self.shared.clone());
                let ready = self.inner.clone();
                let svc = std::mem::replace(&mut self.inner, ready);
                return ResponseFuture {
                    state: State::Waiting {
                        wait: wait_for_slot(guard, class, raw, deadline),
                        svc: Some(svc),
                        req: Some(req),
                    },
                };
            }
            sh.waiting.0.fetch_sub(1, Ordering::SeqCst);
        }
        cs.rejected[reason.index()].fetch_add(1, Ordering::Relaxed);
        rejected(sh.overloaded(reason, class))
    }
}

impl<S, C> Admission<S, C> {
    /// Call the inner service under a slot already taken in the gate word.
    #[inline]
    fn run<Req>(&mut self, start_raw: Option<u64>, req: Req) -> ResponseFuture<S::Future, S, Req>
    where
        S: Service<Req>,
    {
        let permit = Permit::new(&self.shared, start_raw);
        ResponseFuture { state: State::Running { fut: self.inner.call(req), permit: Some(permit) } }
    }
}

fn rejected<F, S, Req>(e: Overloaded) -> ResponseFuture<F, S, Req> {
    ResponseFuture { state: State::Rejected { err: Some(e) } }
}
