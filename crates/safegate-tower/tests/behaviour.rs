//! Behaviour of the layer with mock inner services: limits, clones, cancellation, the
//! error mapping, priorities, dry run and the queue.
//!
//! Not in the loom build (`--cfg loom`), whose atomics work only inside a loom model.
#![cfg(not(loom))]

use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use safegate_core::{Action, Observation, Policy};
use safegate_tower::{AdmissionLayer, BoxError, ByReason, Overloaded, Reason};
use tokio::sync::oneshot;
use tower::{service_fn, Layer, Service, ServiceExt};

/// The inner service: a request is a receiver; its response comes when the test sends.
fn held() -> impl Service<
    oneshot::Receiver<()>,
    Response = (),
    Error = Infallible,
    Future = impl Future<Output = Result<(), Infallible>> + Send,
> + Clone {
    service_fn(|rx: oneshot::Receiver<()>| async move {
        let _ = rx.await;
        Ok::<_, Infallible>(())
    })
}

fn reason(e: &BoxError) -> Reason {
    e.downcast_ref::<Overloaded>().unwrap_or_else(|| panic!("not Overloaded: {e}")).reason
}

/// A nominal controller that always asks for the same admission share.
struct Share(f64);
impl Policy for Share {
    fn decide(&mut self, _obs: &Observation) -> Action {
        Action::admit(self.0)
    }
    fn name(&self) -> &'static str {
        "share"
    }
}

/// Offer one request the inner [`held`] service keeps until its sender, pushed to `hold`,
/// fires or is dropped.
async fn offer<S>(svc: &mut S, hold: &mut Vec<oneshot::Sender<()>>) -> std::pin::Pin<Box<S::Future>>
where
    S: Service<oneshot::Receiver<()>>,
    S::Error: std::fmt::Debug,
{
    let (tx, rx) = oneshot::channel();
    hold.push(tx);
    Box::pin(svc.ready().await.unwrap().call(rx))
}

/// Poll a future once with a no-op waker.
fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    let waker = std::task::Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    std::pin::Pin::new(f).poll(&mut cx)
}

#[tokio::test]
async fn rejects_over_the_limit_and_readmits_after_completion() {
    let layer = AdmissionLayer::builder().controller("static").max_concurrency(3).capacity(1000).build().unwrap();
    let mut svc = layer.layer(held());
    let mut senders = Vec::new();
    let mut futs = Vec::new();
    for _ in 0..3 {
        futs.push(offer(&mut svc, &mut senders).await);
    }
    assert_eq!(layer.snapshot().in_flight, 3);
    let (_tx, rx) = oneshot::channel();
    let err = svc.ready().await.unwrap().call(rx).await.unwrap_err();
    assert_eq!(reason(&err), Reason::Limit);
    let o = err.downcast_ref::<Overloaded>().unwrap();
    assert!(o.retry_after > Duration::ZERO);
    senders.remove(0).send(()).unwrap();
    futs.remove(0).await.unwrap();
    assert_eq!(layer.snapshot().in_flight, 2);
    let (tx, rx) = oneshot::channel();
    tx.send(()).unwrap();
    svc.ready().await.unwrap().call(rx).await.unwrap();
    let s = layer.snapshot();
    assert_eq!(s.rejected[0][Reason::Limit], 1);
    assert_eq!(s.completed, 2);
}

#[tokio::test]
async fn readiness_alone_holds_no_capacity_and_cancellation_frees_slots() {
    let layer = AdmissionLayer::builder().controller("static").max_concurrency(2).capacity(1000).build().unwrap();
    let svc = layer.layer(held());
    // Many clones poll readiness and never call: nothing is held.
    let mut idle: Vec<_> = (0..50).map(|_| svc.clone()).collect();
    for s in &mut idle {
        s.ready().await.unwrap();
    }
    assert_eq!(layer.snapshot().in_flight, 0);
    // Two requests start (one polled, one never polled), then are dropped.
    let mut s1 = svc.clone();
    let (_t1, r1) = oneshot::channel();
    let mut f1 = Box::pin(s1.ready().await.unwrap().call(r1));
    assert!(poll_once(&mut f1).is_pending());
    let (_t2, r2) = oneshot::channel();
    let f2 = s1.ready().await.unwrap().call(r2);
    assert_eq!(layer.snapshot().in_flight, 2);
    drop(f1);
    drop(f2);
    let s = layer.snapshot();
    assert_eq!((s.in_flight, s.cancelled, s.completed), (0, 2, 2));
    // The slots are free again.
    for _ in 0..2 {
        let (tx, rx) = oneshot::channel();
        tx.send(()).unwrap();
        idle[0].ready().await.unwrap().call(rx).await.unwrap();
    }
    assert_eq!(layer.snapshot().rejected_total(), 0);
}

#[test]
fn never_more_than_the_limit_across_clones_on_two_threads() {
    const LIMIT: u32 = 6;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let layer = AdmissionLayer::builder().controller("static").max_concurrency(LIMIT).capacity(1000).build().unwrap();
    let now = Arc::new(AtomicU32::new(0));
    let peak = Arc::new(AtomicU32::new(0));
    let (n2, p2) = (now.clone(), peak.clone());
    let inner = service_fn(move |spin: u32| {
        let (n, p) = (n2.clone(), p2.clone());
        async move {
            let c = n.fetch_add(1, Ordering::SeqCst) + 1;
            p.fetch_max(c, Ordering::SeqCst);
            for _ in 0..spin {
                tokio::task::yield_now().await;
            }
            n.fetch_sub(1, Ordering::SeqCst);
            Ok::<_, Infallible>(())
        }
    });
    let svc = layer.layer(inner);
    let started = std::time::Instant::now();
    let (ok, rejected) = rt.block_on(async {
        let mut tasks = Vec::new();
        for t in 0..32u32 {
            let mut s = svc.clone();
            tasks.push(tokio::spawn(async move {
                let (mut ok, mut rej) = (0u32, 0u32);
                for i in 0..400u32 {
                    match s.ready().await.unwrap().call((i + t) % 4).await {
                        Ok(()) => ok += 1,
                        Err(e) => {
                            assert!(e.downcast_ref::<Overloaded>().is_some());
                            rej += 1;
                            tokio::task::yield_now().await;
                        }
                    }
                }
                (ok, rej)
            }));
        }
        let mut tot = (0, 0);
        for t in tasks {
            let (a, b) = t.await.unwrap();
            tot = (tot.0 + a, tot.1 + b);
        }
        tot
    });
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(ok + rejected, 32 * 400);
    assert!(peak.load(Ordering::SeqCst) <= LIMIT, "peak {} > limit {LIMIT}", peak.load(Ordering::SeqCst));
    assert!(rejected > 0 && ok > 0, "ok {ok}, rejected {rejected}: the test must load past the limit");
    assert_eq!(layer.snapshot().in_flight, 0);
}

#[cfg(feature = "http")]
#[test]
fn overloaded_maps_to_503_with_retry_after() {
    let o = Overloaded { reason: Reason::Barrier, retry_after: Duration::from_millis(1200), class: 1 };
    let r: http::Response<()> = o.to_response();
    assert_eq!(r.status().as_u16(), 503);
    assert_eq!(r.status().as_u16(), Overloaded::STATUS);
    assert_eq!(r.headers()["retry-after"], "2");
    assert_eq!(r.headers()["x-safegate-reject"], "barrier");
    let o = Overloaded { retry_after: Duration::from_millis(50), ..o };
    assert_eq!(o.retry_after_secs(), 1);
    assert!(o.to_string().contains("barrier"));
}

#[tokio::test]
async fn lower_classes_find_the_limit_first() {
    // Limit 8, reserve 0.5 over three classes: caps 8, 6, 4.
    let layer = AdmissionLayer::builder()
        .controller("static")
        .max_concurrency(8)
        .capacity(1000)
        .classes(3, 0.5)
        .classifier(|r: &(u8, oneshot::Receiver<()>)| r.0)
        .build()
        .unwrap();
    let inner = service_fn(|(_, rx): (u8, oneshot::Receiver<()>)| async move {
        let _ = rx.await;
        Ok::<_, Infallible>(())
    });
    let mut svc = layer.layer(inner);
    let mut hold = Vec::new();
    let mut futs = Vec::new();
    let mut send = |svc: &mut _, class: u8| {
        let (tx, rx) = oneshot::channel();
        hold.push(tx);
        Service::call(svc, (class, rx))
    };
    for _ in 0..4 {
        futs.push(send(&mut svc, 0));
    }
    // In flight 4: class 2 (cap 4) is refused, class 1 (cap 6) admitted twice, then refused.
    assert_eq!(reason(&send(&mut svc, 2).await.unwrap_err()), Reason::Limit);
    futs.push(send(&mut svc, 1));
    futs.push(send(&mut svc, 1));
    assert_eq!(reason(&send(&mut svc, 1).await.unwrap_err()), Reason::Limit);
    // Class 0 still has two slots.
    futs.push(send(&mut svc, 0));
    futs.push(send(&mut svc, 0));
    assert_eq!(reason(&send(&mut svc, 0).await.unwrap_err()), Reason::Limit);
    assert_eq!(layer.snapshot().in_flight, 8);
    let s = layer.snapshot();
    assert_eq!((s.rejected[0].limit, s.rejected[1].limit, s.rejected[2].limit), (1, 1, 1));
}

#[tokio::test]
async fn admission_share_sheds_lowest_classes_first() {
    let mock = safegate_tower::ManualClock::new();
    let clock = mock.clone();
    let layer = AdmissionLayer::builder()
        .nominal(Box::new(Share(0.5)))
        .max_concurrency(1000)
        .classes(3, 0.0)
        .classifier(|r: &u8| *r)
        .timing_sample(1)
        .clock(clock)
        .build()
        .unwrap();
    let mut svc = layer.layer(service_fn(|_: u8| async { Ok::<_, Infallible>(()) }));
    // Period 1: the first decision has seen no traffic yet, so every class gets the
    // nominal share.
    let mut ok1 = 0;
    for i in 0..300u32 {
        ok1 += svc.ready().await.unwrap().call((i % 3) as u8).await.is_ok() as u32;
    }
    assert!((140..=160).contains(&ok1), "{ok1}");
    mock.advance(Duration::from_millis(60));
    // Period 2: the first call runs a decision; half the traffic goes, class 2 first.
    let mut ok = [0u32; 3];
    for i in 0..300u32 {
        let c = (i % 3) as u8;
        if svc.ready().await.unwrap().call(c).await.is_ok() {
            ok[c as usize] += 1;
        }
    }
    let s = layer.snapshot();
    assert!(s.decisions >= 1);
    assert_eq!(ok[0], 100, "class 0 fully admitted: {ok:?}, shares {:?}", s.share);
    assert!((45..=55).contains(&ok[1]), "class 1 half: {ok:?}");
    assert_eq!(ok[2], 0, "class 2 shed first: {ok:?}");
}

#[tokio::test]
async fn dry_run_never_rejects() {
    let mock = safegate_tower::ManualClock::new();
    let clock = mock.clone();
    let layer = AdmissionLayer::builder()
        .nominal(Box::new(Share(0.2)))
        .max_concurrency(2)
        .capacity(1000)
        .dry_run(true)
        .timing_sample(1)
        .clock(clock)
        .build()
        .unwrap();
    let mut svc = layer.layer(held());
    let mut hold = Vec::new();
    let mut futs = Vec::new();
    for round in 0..3 {
        for _ in 0..20 {
            let mut f = offer(&mut svc, &mut hold).await;
            assert!(poll_once(&mut f).is_pending(), "round {round}: a dry run must not reject");
            futs.push(f);
        }
        mock.advance(Duration::from_millis(60));
    }
    let s = layer.snapshot();
    assert_eq!(s.rejected_total(), 0);
    assert_eq!(s.in_flight, 60);
    let would: u64 = s.would_reject.iter().map(ByReason::total).sum();
    assert!(would >= 50, "would-be rejections recorded: {:?}", s.would_reject);
    for tx in hold {
        let _ = tx.send(());
    }
    for f in futs {
        f.await.unwrap();
    }
    assert_eq!(layer.snapshot().in_flight, 0);
}

// Paused time: each `sleep` below returns once every other task is idle (the runtime
// advances the clock only then), so the test waits for the layer's tasks, not for the wall
// clock, and the 300-ms deadline passes in no wall time.
#[tokio::test(start_paused = true)]
async fn queue_mode_waits_bounded_with_a_deadline() {
    let layer = AdmissionLayer::builder()
        .controller("static")
        .max_concurrency(1)
        .capacity(1000)
        .queue(2, Duration::from_millis(300))
        .build()
        .unwrap();
    let mut svc = layer.layer(held());
    let (t1, r1) = oneshot::channel();
    let f1 = tokio::spawn(svc.ready().await.unwrap().call(r1));
    let (t2, r2) = oneshot::channel();
    let f2 = tokio::spawn(svc.ready().await.unwrap().call(r2));
    let (_t3, r3) = oneshot::channel();
    let f3 = tokio::spawn(svc.ready().await.unwrap().call(r3));
    // Queue (2) full: the fourth is rejected at once.
    let (_t4, r4) = oneshot::channel();
    assert_eq!(reason(&svc.ready().await.unwrap().call(r4).await.unwrap_err()), Reason::Limit);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(layer.snapshot().waiting, 2);
    // The first finishes; the second gets its slot and finishes; the third times out,
    // since the second's slot is held until it finishes (after the deadline).
    t1.send(()).unwrap();
    f1.await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(layer.snapshot().in_flight, 1);
    let e3 = f3.await.unwrap().unwrap_err();
    assert_eq!(reason(&e3), Reason::Deadline);
    t2.send(()).unwrap();
    f2.await.unwrap().unwrap();
    let s = layer.snapshot();
    assert_eq!((s.in_flight, s.waiting), (0, 0));
    assert_eq!(s.rejected[0][Reason::Deadline], 1);
}

#[tokio::test]
async fn builder_errors_are_typed() {
    assert!(AdmissionLayer::builder().max_concurrency(0).build().is_err());
    assert!(AdmissionLayer::builder().controller("nope").build().is_err());
    assert!(AdmissionLayer::builder().classes(0, 0.1).build().is_err());
    assert!(AdmissionLayer::builder().queue(0, Duration::from_secs(1)).build().is_err());
    // Reject mode, a stated capacity: θ·Q = 0.7 requests, not one could be in service.
    let e = AdmissionLayer::builder().max_concurrency(1).capacity(1).build().unwrap_err();
    assert!(e.to_string().contains("θ·Q ≥ 1"), "{e}");
    assert!(AdmissionLayer::builder().max_concurrency(3).capacity(3).build().is_ok(), "θ·Q = 2.1: two in service");
    // No capacity stated: `max_concurrency(n)` is the limit itself, even for n = 1.
    let one = AdmissionLayer::builder().max_concurrency(1).build().unwrap();
    assert_eq!(one.snapshot().limit, 1);
    // Queue mode: θ·Q = 0.7·(3 + 5) = 5.6 requests, too small for one period's arrivals.
    let e = AdmissionLayer::builder().max_concurrency(3).queue(5, Duration::from_secs(1)).build().unwrap_err();
    assert!(e.to_string().contains("θ·Q ≥ 10"), "{e}");
}

#[cfg(feature = "toml")]
#[tokio::test]
async fn boundary_file_errors_are_typed() {
    let e = AdmissionLayer::builder().boundary_file("/nonexistent/b.toml").build().unwrap_err();
    assert!(e.to_string().contains("/nonexistent/b.toml"), "{e}");
    let e = safegate_tower::parse_boundary("[barrier]\nthreshhold = 0.7\n", "t").unwrap_err();
    assert!(e.to_string().contains("threshhold"), "{e}");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../boundaries/seed-80.toml");
    AdmissionLayer::builder().boundary_file(path).build().unwrap();
    // Boundaries whose sizes would not fit in memory give a server a BuildError naming
    // the field (a period finer than any clock; a σ window of a billion seconds).
    for (text, field) in [
        ("[decision]\nperiod = 1e-12\n", "decision.period"),
        ("[disturbance]\nwindow = 1e9\n", "disturbance.window"),
        ("[probability]\nhorizon = 1e12\n", "probability.horizon"),
    ] {
        let b = safegate_tower::parse_boundary(text, "t").unwrap();
        let e = AdmissionLayer::builder().boundary(b).build().unwrap_err();
        assert!(e.to_string().contains(field), "{text}: {e}");
    }
}

/// Four requests per 60-ms period on the mock clock for `periods` periods, into a service
/// over [`held`] that never answers: the senders that hold them, the admitted requests'
/// futures (pending), and the reasons of the rejected ones.
async fn offer_held<S>(
    svc: &mut S,
    mock: &safegate_tower::ManualClock,
    periods: usize,
) -> (Vec<oneshot::Sender<()>>, Vec<std::pin::Pin<Box<S::Future>>>, Vec<Reason>)
where
    S: Service<oneshot::Receiver<()>, Response = (), Error = BoxError>,
{
    let (mut hold, mut futs, mut reasons) = (Vec::new(), Vec::new(), Vec::new());
    for _period in 0..periods {
        for _ in 0..4 {
            let mut f = offer(svc, &mut hold).await;
            match poll_once(&mut f) {
                Poll::Pending => futs.push(f),
                Poll::Ready(Err(e)) => reasons.push(reason(&e)),
                Poll::Ready(Ok(())) => panic!("a held request cannot finish"),
            }
        }
        mock.advance(Duration::from_millis(60));
    }
    (hold, futs, reasons)
}

/// Reject mode holds the barrier by the limit: requests that never finish fill the service
/// to exactly ⌊θ·Q⌋ = ⌊0.7·20⌋ = 14, every later one is rejected for the barrier (the
/// nominal asks for no limit at all), and no share of traffic is shed before that.
#[tokio::test]
async fn reject_mode_holds_the_barrier_by_the_limit() {
    let mock = safegate_tower::ManualClock::new();
    let clock = mock.clone();
    let layer = AdmissionLayer::builder()
        .nominal(Box::new(Share(1.0)))
        .max_concurrency(1000)
        .capacity(20)
        .timing_sample(1)
        .clock(clock)
        .build()
        .unwrap();
    let mut svc = layer.layer(held());
    let (hold, futs, reasons) = offer_held(&mut svc, &mock, 10).await;
    let s = layer.snapshot();
    assert_eq!(futs.len(), 14, "admitted up to the barrier and no further");
    assert_eq!(s.in_flight, 14);
    assert_eq!(reasons, vec![Reason::Barrier; 40 - 14], "only the barrier's cap rejects");
    assert_eq!(s.backup_activations, 0, "{s:?}");
    drop(hold);
    for f in futs {
        f.await.unwrap();
    }
    assert_eq!(layer.snapshot().in_flight, 0);
}

/// Queue mode: what waits is not decided per request, and the filter acts on it. Requests
/// that never finish fill the layer toward the barrier (θ·Q = 0.7·20 = 14): the filter
/// first trims the admission share (reason `Barrier`), then finds no safe action (reason
/// `Backup`) — never the concurrency limit, which is far away — and the layer stays below
/// the barrier plus one period's arrivals.
#[tokio::test]
async fn queue_mode_filter_rejects_for_the_barrier_and_then_the_backup() {
    let mock = safegate_tower::ManualClock::new();
    let clock = mock.clone();
    let layer = AdmissionLayer::builder()
        .nominal(Box::new(Share(1.0)))
        .max_concurrency(1000)
        .queue(100, Duration::from_secs(1))
        .capacity(20)
        .timing_sample(1)
        .clock(clock)
        .build()
        .unwrap();
    let mut svc = layer.layer(held());
    let (hold, futs, reasons) = offer_held(&mut svc, &mock, 40).await;
    let s = layer.snapshot();
    assert!(!reasons.contains(&Reason::Limit), "{reasons:?}");
    assert!(reasons.contains(&Reason::Backup), "no backup rejection: {reasons:?}");
    assert!(s.in_flight + s.waiting <= 14 + 4, "{} in the layer, beyond the barrier", s.in_flight + s.waiting);
    assert!(s.backup_activations >= 1, "{s:?}");
    let filter_reasons = reasons.iter().filter(|r| matches!(r, Reason::Barrier | Reason::Backup)).count();
    assert_eq!(filter_reasons, reasons.len());
    drop(hold);
    for f in futs {
        f.await.unwrap();
    }
    assert_eq!(layer.snapshot().in_flight, 0);
}

/// A nominal controller that says when the layer's state (which owns it) is freed.
struct Watched(Arc<AtomicU32>);
impl Policy for Watched {
    fn decide(&mut self, _obs: &Observation) -> Action {
        Action::admit(1.0)
    }
    fn name(&self) -> &'static str {
        "watched"
    }
}
impl Drop for Watched {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// The layer's state outlives its last handle while requests are in it (their slots keep
/// it), is freed exactly once when the last of them finishes or is dropped, and at once
/// when none is; in both modes.
#[tokio::test]
async fn the_state_lives_as_long_as_a_handle_or_a_request_and_no_longer() {
    for queue in [false, true] {
        let freed = Arc::new(AtomicU32::new(0));
        let mut b =
            AdmissionLayer::builder().nominal(Box::new(Watched(freed.clone()))).max_concurrency(2).capacity(1000);
        if queue {
            b = b.queue(4, Duration::from_secs(5));
        }
        let layer = b.build().unwrap();
        let mut svc = layer.layer(held());
        let (t1, r1) = oneshot::channel();
        let f1 = tokio::spawn(svc.ready().await.unwrap().call(r1));
        let (_t2, r2) = oneshot::channel();
        let mut f2 = Box::pin(svc.ready().await.unwrap().call(r2));
        assert!(poll_once(&mut f2).is_pending());
        // Every handle gone; two requests in the service.
        drop(svc);
        drop(layer);
        tokio::task::yield_now().await;
        assert_eq!(freed.load(Ordering::SeqCst), 0, "queue {queue}: freed under two requests");
        t1.send(()).unwrap();
        f1.await.unwrap().unwrap();
        assert_eq!(freed.load(Ordering::SeqCst), 0, "queue {queue}: freed under one request");
        // The last request is cancelled: its dropped permit frees the state.
        drop(f2);
        assert_eq!(freed.load(Ordering::SeqCst), 1, "queue {queue}: freed once after the last request");
    }
    // No request in it: the last handle frees it.
    let freed = Arc::new(AtomicU32::new(0));
    let layer = AdmissionLayer::builder().nominal(Box::new(Watched(freed.clone()))).capacity(1000).build().unwrap();
    let svc = layer.layer(held());
    drop(layer);
    assert_eq!(freed.load(Ordering::SeqCst), 0);
    drop(svc);
    assert_eq!(freed.load(Ordering::SeqCst), 1);
}

/// The decision step runs every period at any rate: a light load (100 req/s) times every
/// request and decides on time; a heavy one (10⁶ req/s) times few requests, yet decides.
#[tokio::test]
async fn decisions_keep_their_period_at_light_load_and_the_clock_is_read_rarely_at_heavy() {
    // `n` instant requests `gap` apart on a mock clock, through a layer of `capacity`.
    async fn run(capacity: u32, n: u32, gap: Duration) -> safegate_tower::Snapshot {
        let mock = safegate_tower::ManualClock::new();
        let clock = mock.clone();
        let layer = AdmissionLayer::builder().controller("static").capacity(capacity).clock(clock).build().unwrap();
        let mut svc = layer.layer(service_fn(|_: ()| async { Ok::<_, Infallible>(()) }));
        for _ in 0..n {
            svc.ready().await.unwrap().call(()).await.unwrap();
            mock.advance(gap);
        }
        layer.snapshot()
    }
    // 100 req/s for 2 s: a request every 10 ms, the period 50 ms → about 40 decisions.
    let s = run(1000, 200, Duration::from_millis(10)).await;
    assert!((38..=41).contains(&s.decisions), "{} decisions in 2 s of 50-ms periods", s.decisions);
    assert_eq!(s.timed, 200, "a light load times every request");

    // 10⁶ req/s for 0.2 s: 200,000 requests, 4 periods.
    let s = run(10_000_000, 200_000, Duration::from_micros(1)).await;
    assert!((4..=5).contains(&s.decisions), "{} decisions in 0.2 s", s.decisions);
    // At most one in 256 after a ramp of a few hundred requests.
    assert!((700..=1_200).contains(&s.timed), "{} of 200,000 requests timed", s.timed);
}

/// A nominal controller that panics in its second decision.
struct PanicsOnce(u32);
impl Policy for PanicsOnce {
    fn decide(&mut self, _obs: &Observation) -> Action {
        self.0 += 1;
        assert_ne!(self.0, 2, "a bug in a user's controller");
        Action::admit(1.0)
    }
    fn name(&self) -> &'static str {
        "panics-once"
    }
}

/// A controller that panicked once (poisoning the controller's lock) does not freeze the
/// layer: the request that ran the step sees the panic, later periods decide again.
#[test]
fn decisions_go_on_after_a_controller_panicked() {
    let mock = safegate_tower::ManualClock::new();
    let clock = mock.clone();
    let layer = AdmissionLayer::builder()
        .nominal(Box::new(PanicsOnce(0)))
        .capacity(1000)
        .timing_sample(1)
        .clock(clock)
        .build()
        .unwrap();
    let mut svc = layer.layer(service_fn(|_: ()| std::future::ready(Ok::<_, Infallible>(()))));
    let one = |svc: &mut _| {
        let mut f = Box::pin(Service::call(svc, ()));
        assert!(matches!(poll_once(&mut f), Poll::Ready(Ok(()))));
    };
    one(&mut svc);
    assert_eq!(layer.snapshot().decisions, 1);
    mock.advance(Duration::from_millis(60));
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| one(&mut svc)));
    assert!(panicked.is_err(), "the second decision panics in the request that runs it");
    assert_eq!(layer.snapshot().in_flight, 0, "the panicking request took no slot");
    for _ in 0..3 {
        mock.advance(Duration::from_millis(60));
        one(&mut svc);
    }
    assert_eq!(layer.snapshot().decisions, 4, "decisions resume after the panic");
}

/// A nominal controller that admits everything and records what each decision saw:
/// completions, summed latency and summed wait.
struct Record(Arc<std::sync::Mutex<Vec<(f64, f64, f64)>>>);
impl Policy for Record {
    fn decide(&mut self, obs: &Observation) -> Action {
        self.0.lock().unwrap().push((obs.completed, obs.latency_total, obs.wait_total));
        Action::admit(1.0)
    }
    fn name(&self) -> &'static str {
        "record"
    }
}

/// Queue mode: the latency and wait a decision sees are of the same requests, those that
/// left. One slot; A is served 100 ms while B, C wait; when A leaves, B starts after a
/// 100-ms wait. A decision then sees one departure of 100 ms latency and no wait (service
/// 100 ms): B's wait belongs to B's departure. Charging it when B took its slot read as a
/// service time of 0, and a controller judging the service time (`peak`'s stalls) took the
/// next period's true 100 ms for a stall.
#[tokio::test]
async fn queue_mode_charges_a_wait_with_its_requests_departure() {
    let mock = safegate_tower::ManualClock::new();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let layer = AdmissionLayer::builder()
        .nominal(Box::new(Record(seen.clone())))
        .max_concurrency(1)
        .queue(8, Duration::from_secs(30))
        .capacity(1000)
        .timing_sample(1)
        .clock(mock.clone())
        .build()
        .unwrap();
    let svc = layer.layer(held());
    let settle = || tokio::time::sleep(Duration::from_millis(20));
    let spawn_one = |hold: &mut Vec<oneshot::Sender<()>>| {
        let (tx, rx) = oneshot::channel();
        hold.push(tx);
        tokio::spawn(svc.clone().oneshot(rx))
    };
    let mut hold = Vec::new();
    let a = spawn_one(&mut hold);
    settle().await;
    let _b = spawn_one(&mut hold);
    let _c = spawn_one(&mut hold);
    settle().await;
    assert_eq!((layer.snapshot().in_flight, layer.snapshot().waiting), (1, 2));
    mock.advance(Duration::from_millis(100));
    hold.remove(0).send(()).unwrap();
    a.await.unwrap().unwrap();
    settle().await;
    assert_eq!((layer.snapshot().in_flight, layer.snapshot().waiting), (1, 1), "B took A's slot");
    // A decision after the period: offered by a fourth request (it waits too).
    mock.advance(Duration::from_millis(60));
    let _d = spawn_one(&mut hold);
    settle().await;
    let seen = seen.lock().unwrap().clone();
    let &(completed, latency, wait) = seen.last().unwrap();
    assert_eq!(completed, 1.0, "{seen:?}");
    let service = (latency - wait) / completed;
    assert!((service - 0.1).abs() < 0.005, "a service time of {service} s seen for 0.1 s: {seen:?}");
    drop(hold);
}
