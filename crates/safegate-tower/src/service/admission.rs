//! [`Admission`]: the admission-controlled service, and its hot path (`call`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_service::Service;

use super::future::ResponseFuture;
use super::permit::{wait_for_slot, Permit, WaitGuard};
use super::Snapshot;
use crate::classify::{Classify, SingleClass};
use crate::outcome::{ClassifyOutcome, ErrIsFailure};
use crate::reason::Reason;
use crate::shared::owner::Slot;
use crate::shared::slots::{self, Offer};
use crate::shared::{weyl, Mode, Owner, Shared};
use crate::BoxError;

/// The admission-controlled service (see the crate docs).
///
/// `poll_ready` only asks the inner service; capacity is taken in `call` and held by the
/// response future, so a connection that polls readiness and never sends holds nothing,
/// and a dropped (cancelled) response future frees its slot at once. `C` gives a
/// request's priority class ([`Classify`]), `K` judges its result ([`ClassifyOutcome`]).
///
/// ```
/// use std::convert::Infallible;
/// use safegate_tower::AdmissionLayer;
/// use tower::{service_fn, Layer, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let layer = AdmissionLayer::builder().build().unwrap();
/// let svc = layer.layer(service_fn(|x: u32| async move { Ok::<_, Infallible>(x + 1) }));
/// assert_eq!(svc.clone().oneshot(1).await.unwrap(), 2);
/// assert_eq!(svc.snapshot().completed, 1);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Admission<S, C = SingleClass, K = ErrIsFailure> {
    inner: S,
    shared: Arc<Owner<Shared>>,
    classify: C,
    outcome: K,
}

impl<S, C, K> Admission<S, C, K> {
    pub(super) fn new(inner: S, shared: Arc<Owner<Shared>>, classify: C, outcome: K) -> Self {
        Admission { inner, shared, classify, outcome }
    }

    /// What the layer has seen and decided so far (shared by all clones).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::of(&self.shared)
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The wrapped service, taken out of the layer.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, C, K, Req> Service<Req> for Admission<S, C, K>
where
    S: Service<Req> + Clone,
    S::Error: Into<BoxError>,
    C: Classify<Req>,
    K: ClassifyOutcome<S::Response, S::Error> + Clone,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future, S, Req, K>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // No capacity is taken here (see the type docs).
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    #[inline]
    fn call(&mut self, req: Req) -> Self::Future {
        self.call_typed(req)
    }
}

impl<S, C, K> Admission<S, C, K> {
    /// `call`, for any inner error type: the [`http`](crate::http) service keeps it.
    pub(crate) fn call_typed<Req>(&mut self, req: Req) -> ResponseFuture<S::Future, S, Req, K>
    where
        S: Service<Req> + Clone,
        C: Classify<Req>,
        K: Clone,
    {
        let owner = &*self.shared;
        let sh: &Shared = owner;
        let classes = sh.classes.len();
        let single = classes == 1;
        let class = if single { 0 } else { usize::from(self.classify.class(&req)).min(classes - 1) };
        let cs = &sh.classes[class];
        // The request's sequence number: with one class the gate word's offered count (as
        // read here; the compare-and-swap below may number it a little later under
        // contention, which only moves which request is timed), with several its class's.
        let n = if single {
            u64::from(slots::offered(sh.gate.0.word()))
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
            if sh.decision_due(now) {
                decide(sh, now);
            }
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
        let (outcome, slot) = if single {
            owner.offer(limit, dry, |n| weyl(u64::from(n)) >= threshold)
        } else {
            let shed = weyl(n) >= threshold;
            owner.offer(limit, dry, |_| shed)
        };
        let reason = || match outcome {
            Offer::Shed => Reason::from_code(sh.published.0.shed_reason.load(Ordering::Relaxed)),
            Offer::Full | Offer::Admitted => Reason::from_code(sh.published.0.full_reason.load(Ordering::Relaxed)),
        };
        if let Some(slot) = slot {
            if outcome != Offer::Admitted {
                // Dry run: over the limit or shed, and the slot taken anyway.
                cs.would_reject[reason()].fetch_add(1, Ordering::Relaxed);
            }
            return self.run(slot, raw, req);
        }
        let reason = reason();
        if let (Offer::Full, Mode::Queue { capacity, deadline }) = (outcome, sh.settings.mode) {
            if sh.waiting.0.fetch_add(1, Ordering::SeqCst) < capacity {
                let guard = WaitGuard(self.shared.clone());
                let ready = self.inner.clone();
                let svc = std::mem::replace(&mut self.inner, ready);
                return ResponseFuture::waiting(
                    wait_for_slot(guard, class, raw, deadline),
                    svc,
                    req,
                    self.outcome.clone(),
                );
            }
            sh.waiting.0.fetch_sub(1, Ordering::SeqCst);
        }
        cs.rejected[reason].fetch_add(1, Ordering::Relaxed);
        ResponseFuture::rejected(sh.overloaded(reason, class), self.outcome.clone())
    }
}

impl<S, C, K: Clone> Admission<S, C, K> {
    /// Call the inner service under `slot`, just taken in the gate word.
    #[inline]
    fn run<Req>(&mut self, slot: Slot<Shared>, start_raw: Option<u64>, req: Req) -> ResponseFuture<S::Future, S, Req, K>
    where
        S: Service<Req>,
    {
        let permit = Permit::new(slot, &self.shared, start_raw, 0);
        ResponseFuture::running(self.inner.call(req), permit, self.outcome.clone())
    }
}

/// Run the decision step, if this request wins it, and hand its report to the metrics
/// (the step itself knows nothing of them).
#[cold]
fn decide(sh: &Shared, now_ns: u64) {
    let Some(report) = sh.decide(now_ns) else { return };
    #[cfg(feature = "metrics")]
    crate::metrics::publish(&sh.latency, &sh.settings.name, &report);
    #[cfg(not(feature = "metrics"))]
    drop(report);
}
