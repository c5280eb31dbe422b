//! The queue against a real redis-server on a free loopback port.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use safegate_core::fleet::lease::{Grant as CoreGrant, GrantKeeper, KeeperConfig, KeeperInput, LossPolicy};
use safegate_core::{Action, Observation, Policy};
use safegate_queue::{Admission, Controller, GateMode, Job, JobError, Queue, QueueConfig, Reason, Worker};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Email {
    to: String,
    n: u32,
}

/// A policy that always proposes the same action.
struct Fixed(Action);

impl Policy for Fixed {
    fn decide(&mut self, _: &Observation) -> Action {
        self.0
    }
    fn name(&self) -> &'static str {
        "fixed"
    }
}

async fn wait_until(what: &str, limit: Duration, mut f: impl AsyncFnMut() -> bool) {
    let t0 = Instant::now();
    while !f().await {
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_jobs_are_enqueued_worked_and_counted() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "emails").await.unwrap();
    let p = q.producer::<Email>();
    for n in 0..200 {
        let a = p.enqueue(&Email { to: format!("u{n}@example.com"), n }).await.unwrap();
        assert!(a.is_admitted(), "{a:?}");
    }
    let seen = Arc::new(AtomicU32::new(0));
    let s = seen.clone();
    let (stop, stopped) = oneshot::channel::<()>();
    let w = tokio::spawn(Worker::new(&q).lanes(4).run(
        move |job: Job<Email>| {
            let s = s.clone();
            async move {
                assert_eq!(job.payload.to, format!("u{}@example.com", job.payload.n));
                assert_eq!(job.attempt, 1);
                s.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
        },
        async move {
            let _ = stopped.await;
        },
    ));
    wait_until("200 jobs done", Duration::from_secs(20), async || q.stats().await.unwrap().completed == 200).await;
    stop.send(()).unwrap();
    let report = w.await.unwrap().unwrap();
    assert_eq!((report.completed, report.abandoned), (200, false));
    assert_eq!(seen.load(Ordering::Relaxed), 200);
    let s = q.stats().await.unwrap();
    assert!(s.balanced(), "{s:?}");
    assert_eq!((s.offered, s.admitted, s.waiting()), (200, 200, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_controller_the_fallback_bound_holds() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "bounded").await.unwrap();
    q.configure(&QueueConfig { cap: 100, fallback: 10, ..QueueConfig::default() }).await.unwrap();
    let p = q.producer::<u32>();
    let mut admitted = 0;
    for n in 0..25 {
        match p.enqueue(&n).await.unwrap() {
            Admission::Admitted { .. } => admitted += 1,
            Admission::Rejected { reason, retry_after, mode } => {
                assert_eq!((reason, mode), (Reason::Full, GateMode::Bootstrap));
                assert!(retry_after >= Duration::from_millis(1), "{retry_after:?}");
            }
        }
    }
    assert_eq!(admitted, 10);
    let s = q.stats().await.unwrap();
    assert_eq!((s.rejected_full, s.in_stream), (15, 10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_share_admits_exactly_its_fraction_and_the_grant_freezes_then_falls_back() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "shared").await.unwrap();
    q.configure(&QueueConfig { cap: 1000, fallback: 40, ..QueueConfig::default() }).await.unwrap();
    let policy = Fixed(Action { admit: 0.25, concurrency: Some(3), shed_retries: false });
    let c = Controller::new(&q, Box::new(policy), 1000)
        .bound(60)
        .period(Duration::from_millis(20))
        .lease(Duration::from_millis(600));
    let (stop, stopped) = oneshot::channel::<()>();
    let h = tokio::spawn(c.run(async move {
        let _ = stopped.await;
    }));
    wait_until("a grant", Duration::from_secs(5), async || q.grant().await.unwrap().is_some()).await;
    let g = q.grant().await.unwrap().unwrap();
    assert_eq!((g.share, g.concurrency, g.bound, g.epoch), (0.25, Some(3), 60, 1));
    let p = q.producer::<u32>();
    let mut by = (0, 0);
    for n in 0..100 {
        match p.enqueue(&n).await.unwrap() {
            Admission::Admitted { .. } => by.0 += 1,
            Admission::Rejected { reason: Reason::Share, mode: GateMode::Granted, .. } => by.1 += 1,
            a => panic!("{a:?}"),
        }
    }
    // Error diffusion: exactly a quarter.
    assert_eq!(by, (25, 75));
    // The controller goes (it resigns its lease; the grant stays until its own lease ends).
    stop.send(()).unwrap();
    let report = h.await.unwrap().unwrap();
    assert!(report.published >= 1 && report.takeovers == 1, "{report:?}");
    match p.enqueue(&0).await.unwrap() {
        Admission::Admitted { .. } | Admission::Rejected { mode: GateMode::Granted, .. } => {}
        a => panic!("frozen grant expected: {a:?}"),
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    // Lease over: no share, the fallback bound (40, below the grant's 60): 25 or 26 in,
    // up to 40.
    let mut fallback = 0;
    for n in 0..100 {
        match p.enqueue(&n).await.unwrap() {
            Admission::Admitted { .. } => fallback += 1,
            Admission::Rejected { reason: Reason::Full, mode: GateMode::Fallback, .. } => {}
            a => panic!("{a:?}"),
        }
    }
    let s = q.stats().await.unwrap();
    assert_eq!(s.in_stream, 40, "{s:?} ({fallback} admitted in fallback)");
}

/// A producer's own draw: a coin under the share, beside the error diffusion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producers_own_draw_is_a_coin_under_the_share() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "shared").await.unwrap();
    let policy = Fixed(Action { admit: 0.25, concurrency: None, shed_retries: false });
    let c = Controller::new(&q, Box::new(policy), 1000).period(Duration::from_millis(20));
    let (stop, stopped) = oneshot::channel::<()>();
    let h = tokio::spawn(c.run(async move {
        let _ = stopped.await;
    }));
    wait_until("a grant", Duration::from_secs(5), async || q.grant().await.unwrap().is_some()).await;
    let p = q.producer::<u32>();
    // A draw of the producer's own: a coin, admitted iff u < share, and the diffusion's
    // credit left as it was (the next hundred plain offers are a quarter again).
    let mut drawn = Vec::new();
    for k in 0..100u32 {
        drawn.push(p.enqueue_drawn(&k, f64::from(k) / 100.0).await.unwrap().is_admitted());
    }
    assert_eq!(drawn.iter().position(|a| !a), Some(25), "{drawn:?}");
    assert_eq!(drawn.iter().filter(|a| **a).count(), 25);
    let plain = share_rejections(&p, 100).await;
    assert_eq!(plain, 75);
    // A draw outside [0, 1) is refused by name, here and by the server.
    for bad in [1.0, -0.1, f64::NAN] {
        let e = p.enqueue_drawn(&0, bad).await.unwrap_err().to_string();
        assert!(e.contains("draw u"), "{e}");
    }
    let mut con = redis::Client::open(r.url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> =
        ["jobs", "gate", "config", "count", "delayed"].iter().map(|k| format!("sg:{{shared}}:{k}")).collect();
    let e = redis::cmd("FCALL")
        .arg("sg_enqueue")
        .arg(5)
        .arg(&keys)
        .arg("{}")
        .arg("half")
        .query_async::<redis::Value>(&mut con)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("must be a number in [0, 1)"), "{e}");
    stop.send(()).unwrap();
    h.await.unwrap().unwrap();
}

/// Plain offers of `n` jobs; how many the share turned away.
async fn share_rejections(p: &safegate_queue::Producer<u32>, n: u32) -> usize {
    let mut by_share = 0;
    for k in 0..n {
        let a = p.enqueue(&k).await.unwrap();
        by_share += usize::from(matches!(a, Admission::Rejected { reason: Reason::Share, .. }));
    }
    by_share
}

/// The gate's bound is the decision core's GrantKeeper for one gate (hybrid, no learning
/// period: one gate has no fleet to share with): the same limit through a sequence of
/// grants, silences and expiries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gates_bound_is_the_grant_keepers() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "keeper").await.unwrap();
    let (cap, fallback) = (500u64, 50u64);
    q.configure(&QueueConfig { cap, fallback, ..QueueConfig::default() }).await.unwrap();
    let mut cfg = KeeperConfig::new(LossPolicy::Hybrid, fallback as f64, 1.0, 1).unwrap();
    cfg.learning = false;
    let mut keeper = GrantKeeper::new(cfg);
    let mut con = redis::Client::open(r.url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let gate = "sg:{keeper}:gate";
    // (grant's bound or none, lease left [ms]; negative: the previous grant, expired)
    let steps: [(Option<u64>, i64); 9] = [
        (None, 0),
        (Some(300), 5000),
        (Some(800), 5000),
        (Some(30), 5000),
        (Some(30), -1),
        (Some(300), 5000),
        (Some(300), -1),
        (Some(20), 5000),
        (Some(20), -1),
    ];
    for (i, (bound, left)) in steps.into_iter().enumerate() {
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut con).await.unwrap();
        let now_us = secs as i64 * 1_000_000 + micros as i64;
        let mut core_grant = None;
        if let Some(b) = bound {
            let expires_us = now_us + left * 1000;
            let () = redis::cmd("HSET")
                .arg(gate)
                .arg(&[("share", "1".to_string()), ("bound", b.to_string()), ("expires", expires_us.to_string())])
                .query_async(&mut con)
                .await
                .unwrap();
            core_grant =
                Some(CoreGrant { limit: (b.min(cap)) as f64, expires: expires_us as f64 * 1e-6, members: 1, epoch: 0 });
        }
        let d = keeper.decide(&KeeperInput {
            now: now_us as f64 * 1e-6,
            grant: core_grant,
            reachable: left > 0,
            proposal: f64::INFINITY,
        });
        // The gate's bound, probed: fill the stream until it says full.
        let () = redis::cmd("DEL").arg("sg:{keeper}:jobs").query_async(&mut con).await.unwrap();
        q.load_library().await.unwrap();
        let p = q.producer::<u8>();
        let mut n = 0u64;
        while p.enqueue(&0).await.unwrap().is_admitted() {
            n += 1;
            assert!(n <= cap, "step {i}: past the cap");
        }
        assert_eq!(n as f64, d.limit, "step {i}: gate {n}, keeper {:?}", d);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_retried_with_backoff_then_dead_lettered() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "flaky").await.unwrap();
    q.configure(&QueueConfig {
        max_attempts: 3,
        backoff: Duration::from_millis(20),
        backoff_max: Duration::from_millis(100),
        ..QueueConfig::default()
    })
    .await
    .unwrap();
    let p = q.producer::<Email>();
    for n in 0..10 {
        assert!(p.enqueue(&Email { to: "x".into(), n }).await.unwrap().is_admitted());
    }
    // A payload that is not an Email: fatal at once.
    assert!(q.producer::<String>().enqueue(&"garbage".to_string()).await.unwrap().is_admitted());
    let (stop, stopped) = oneshot::channel::<()>();
    let w = tokio::spawn(Worker::new(&q).lanes(2).run(
        |job: Job<Email>| async move {
            match job.payload.n % 3 {
                0 => Ok(()),
                1 if job.attempt >= 2 => Ok(()),
                2 => Err(JobError::fatal("never")),
                _ => Err(JobError::retry(format!("attempt {}", job.attempt))),
            }
        },
        async move {
            let _ = stopped.await;
        },
    ));
    // n % 3 == 0: 4 done at once; == 1: 3 done at their second attempt; == 2: 3 failed; and the garbage failed.
    wait_until("all settled", Duration::from_secs(20), async || {
        let s = q.stats().await.unwrap();
        s.completed + s.failed + s.dead == 11
    })
    .await;
    stop.send(()).unwrap();
    let report = w.await.unwrap().unwrap();
    let s = q.stats().await.unwrap();
    assert!(s.balanced(), "{s:?}");
    assert_eq!((s.completed, s.failed, s.dead, s.retried), (7, 4, 0, 3), "{s:?}");
    assert_eq!((report.completed, report.failed, report.retried), (7, 4, 3));
    let dead = q.dead_letters(10).await.unwrap();
    assert_eq!(dead.len(), 4);
    assert!(dead.iter().any(|d| d.error.contains("does not decode")), "{dead:?}");
    // Taken oldest first, each once; the books stay as they were.
    let first = q.take_dead_letters(3).await.unwrap();
    let rest = q.take_dead_letters(10).await.unwrap();
    assert_eq!((first.len(), rest.len()), (3, 1));
    let taken: Vec<_> = first.iter().chain(&rest).map(|d| d.id.clone()).collect();
    let oldest_first: Vec<_> = dead.iter().rev().map(|d| d.id.clone()).collect();
    assert_eq!(taken, oldest_first);
    assert!(q.take_dead_letters(10).await.unwrap().is_empty());
    assert!(q.dead_letters(10).await.unwrap().is_empty());
    assert_eq!(q.stats().await.unwrap(), s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_always_fails_is_dead_lettered_after_its_attempts() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "doomed").await.unwrap();
    q.configure(&QueueConfig {
        max_attempts: 4,
        backoff: Duration::from_millis(10),
        backoff_max: Duration::from_millis(40),
        ..QueueConfig::default()
    })
    .await
    .unwrap();
    assert!(q.producer::<u32>().enqueue(&7).await.unwrap().is_admitted());
    let attempts = Arc::new(AtomicU32::new(0));
    let a = attempts.clone();
    let (stop, stopped) = oneshot::channel::<()>();
    let w = tokio::spawn(Worker::new(&q).lanes(1).run(
        move |job: Job<u32>| {
            let a = a.clone();
            async move {
                a.fetch_add(1, Ordering::Relaxed);
                Err::<(), _>(std::io::Error::other(format!("down at attempt {}", job.attempt)).into())
            }
        },
        async move {
            let _ = stopped.await;
        },
    ));
    wait_until("dead-lettered", Duration::from_secs(20), async || q.stats().await.unwrap().dead == 1).await;
    stop.send(()).unwrap();
    w.await.unwrap().unwrap();
    assert_eq!(attempts.load(Ordering::Relaxed), 4);
    let d = &q.dead_letters(1).await.unwrap()[0];
    assert_eq!((d.attempts, d.kind.as_str(), d.payload.as_str()), (4, "dead", "7"));
    assert!(d.error.contains("attempt 4"), "{d:?}");
    assert!(q.stats().await.unwrap().balanced());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_wiped_on_reconnect_or_on_a_redis_restart() {
    let mut r = common::Redis::start(true);
    let q = Queue::connect(&r.url(), "kept").await.unwrap();
    let p = q.producer::<u32>();
    for n in 0..50 {
        assert!(p.enqueue(&n).await.unwrap().is_admitted());
    }
    drop((p, q));
    r.restart();
    let q = Queue::connect(&r.url(), "kept").await.unwrap();
    let s = q.stats().await.unwrap();
    assert_eq!((s.admitted, s.in_stream), (50, 50), "{s:?}");
    let (stop, stopped) = oneshot::channel::<()>();
    let w = tokio::spawn(Worker::new(&q).lanes(2).run(|_: Job<u32>| async { Ok(()) }, async move {
        let _ = stopped.await;
    }));
    wait_until("50 done", Duration::from_secs(20), async || q.stats().await.unwrap().completed == 50).await;
    stop.send(()).unwrap();
    w.await.unwrap().unwrap();
    assert!(q.stats().await.unwrap().balanced());
}

/// A policy that keeps what it saw.
struct Seen(Arc<std::sync::Mutex<Vec<Observation>>>);

impl Policy for Seen {
    fn decide(&mut self, o: &Observation) -> Action {
        self.0.lock().unwrap().push(*o);
        Action::OPEN
    }
    fn name(&self) -> &'static str {
        "seen"
    }
}

/// The observe hook changes what the policy sees, and the status reports it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controllers_hook_changes_what_its_policy_sees() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "observed").await.unwrap();
    for n in 0..7u32 {
        assert!(q.producer::<u32>().enqueue(&n).await.unwrap().is_admitted());
    }
    let too_fast = Controller::new(&q, Box::new(Fixed(Action::OPEN)), 100).period(Duration::from_micros(400));
    let e = too_fast.run(async {}).await.unwrap_err().to_string();
    assert!(e.contains("period") && e.contains("0.5 ms"), "{e}");
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let c = Controller::new(&q, Box::new(Seen(seen.clone())), 100)
        .period(Duration::from_micros(500))
        .observe(|o, stats| Observation { now: 1000.0 + o.now, offered_rate: stats.in_stream as f64 * 2.0, ..o });
    let mut statuses = Vec::new();
    let report =
        c.run_with(tokio::time::sleep(Duration::from_millis(100)), |st| statuses.push(st.observation)).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(report.decisions >= 10, "{report:?}");
    assert_eq!(seen.len(), statuses.len());
    for (o, st) in seen.iter().zip(&statuses) {
        assert_eq!(o, st);
        assert!(o.now >= 1000.0 && o.now < 1010.0, "{o:?}");
        assert_eq!((o.offered_rate, o.queue), (14.0, 7.0), "{o:?}");
    }
}

/// A worker follows the published concurrency at its `grant_poll`, not at its heartbeat's
/// cadence (250 ms here): a job held back by a concurrency of 0 runs soon after it rises.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_follows_the_grant_at_its_own_poll() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "followed").await.unwrap();
    let mut con = redis::Client::open(r.url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let set_conc = |c: i64| redis::cmd("HSET").arg("sg:{followed}:gate").arg("conc").arg(c).to_owned();
    let () = set_conc(0).query_async(&mut con).await.unwrap();
    // Settings outside their ranges are refused by name.
    for (w, what) in [
        (Worker::new(&q).poll(Duration::ZERO), "poll"),
        (Worker::new(&q).grant_poll(Duration::from_secs(61)), "grant poll"),
    ] {
        let e = w.run(|_: Job<u32>| async { Ok(()) }, async {}).await.unwrap_err().to_string();
        assert!(e.contains(what), "{e}");
    }
    let (stop, stopped) = oneshot::channel::<()>();
    let w = tokio::spawn(
        Worker::new(&q)
            .lanes(2)
            .heartbeat(Duration::from_secs(30))
            .poll(Duration::from_millis(20))
            .grant_poll(Duration::from_millis(10))
            .run(|_: Job<u32>| async { Ok(()) }, async move {
                let _ = stopped.await;
            }),
    );
    let p = q.producer::<u32>();
    for round in 1..=3u64 {
        assert!(p.enqueue(&0).await.unwrap().is_admitted());
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(q.stats().await.unwrap().completed, round - 1, "ran under a concurrency of 0");
        let () = set_conc(1).query_async(&mut con).await.unwrap();
        let t0 = Instant::now();
        wait_until("done after the rise", Duration::from_secs(5), async || q.stats().await.unwrap().completed == round)
            .await;
        // At the heartbeat's cadence (250 ms) it takes 0–250 ms: three rounds under 120 ms
        // would be luck (about 1 in 9); here it is about 25 ms.
        let took = t0.elapsed();
        assert!(took < Duration::from_millis(120), "round {round}: {took:?} after the rise");
        let () = set_conc(0).query_async(&mut con).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.send(()).unwrap();
    w.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_published_concurrency_caps_the_jobs_in_service() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "capped").await.unwrap();
    let c =
        Controller::new(&q, Box::new(Fixed(Action { admit: 1.0, concurrency: Some(3), shed_retries: false })), 1000)
            .period(Duration::from_millis(20))
            .lease(Duration::from_millis(500));
    let (stop_c, stopped_c) = oneshot::channel::<()>();
    let hc = tokio::spawn(c.run(async move {
        let _ = stopped_c.await;
    }));
    wait_until("a grant", Duration::from_secs(5), async || q.grant().await.unwrap().is_some()).await;
    let p = q.producer::<u32>();
    for n in 0..60 {
        assert!(p.enqueue(&n).await.unwrap().is_admitted());
    }
    let running = Arc::new(AtomicU32::new(0));
    let most = Arc::new(AtomicU32::new(0));
    let mut workers = Vec::new();
    let mut stops = Vec::new();
    for _ in 0..2 {
        let (running, most) = (running.clone(), most.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        stops.push(stop);
        workers.push(tokio::spawn(Worker::new(&q).lanes(4).run(
            move |_: Job<u32>| {
                let (running, most) = (running.clone(), most.clone());
                async move {
                    let n = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(15)).await;
                    running.fetch_sub(1, Ordering::SeqCst);
                    Ok(())
                }
            },
            async move {
                let _ = stopped.await;
            },
        )));
    }
    wait_until("60 done", Duration::from_secs(30), async || q.stats().await.unwrap().completed == 60).await;
    for s in stops {
        s.send(()).unwrap();
    }
    for w in workers {
        w.await.unwrap().unwrap();
    }
    stop_c.send(()).unwrap();
    hc.await.unwrap().unwrap();
    // 8 lanes over two workers, 3 slots published.
    let most = most.load(Ordering::SeqCst);
    assert!((2..=3).contains(&most), "{most} in service at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controllers_bounds_leave_the_other_settings_alone() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "settings").await.unwrap();
    let mine =
        QueueConfig { max_attempts: 9, backoff: Duration::from_millis(7), dead_max: 3, ..QueueConfig::default() };
    q.configure(&mine).await.unwrap();
    let b = safegate_core::boundary::Boundary::from_toml("[barrier]\nthreshold = 0.5\n", &[]).unwrap();
    let (_c, bounds) = Controller::with_boundary(&q, &b, "peak+pool", 400, 8).unwrap();
    assert_eq!((bounds.cap, bounds.fallback), (400, 200));
    q.set_bounds(bounds).await.unwrap();
    let got = q.config().await.unwrap();
    assert_eq!(got, QueueConfig { cap: 400, fallback: 200, ..mine });
    assert!(q.set_bounds(safegate_queue::Bounds { cap: 10, fallback: 11 }).await.is_err());
    assert!(q.configure(&QueueConfig { dead_max: u64::MAX, ..mine }).await.is_err());
}

/// An ACL user in the URL (the default user switched off): everything works, and an error
/// names the server without the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_in_the_url_works_and_its_password_is_never_shown() {
    let r = common::Redis::start_with(
        false,
        &["--user", "default", "off", "--user", "alice", "on", ">s3cret-pw", "~*", "&*", "+@all"],
    );
    let url = format!("redis://alice:s3cret-pw@127.0.0.1:{}/", r.port);
    let q = Queue::connect(&url, "acl").await.unwrap();
    assert!(!format!("{q:?}").contains("s3cret-pw"));
    assert!(q.producer::<u8>().enqueue(&1).await.unwrap().is_admitted());
    let (stop, stopped) = oneshot::channel::<()>();
    let w = tokio::spawn(Worker::new(&q).lanes(1).run(|_: Job<u8>| async { Ok(()) }, async move {
        let _ = stopped.await;
    }));
    wait_until("done", Duration::from_secs(10), async || q.stats().await.unwrap().completed == 1).await;
    stop.send(()).unwrap();
    w.await.unwrap().unwrap();
    // Without the user, or with a wrong password: refused, and the message hides it.
    for bad in [format!("redis://127.0.0.1:{}/", r.port), format!("redis://alice:wrong-pw@127.0.0.1:{}/", r.port)] {
        let e = Queue::connect(&bad, "acl").await.unwrap_err().to_string();
        assert!(!e.contains("wrong-pw") && e.contains(&format!("127.0.0.1:{}", r.port)), "{e}");
        // The server's own reason, not the library's load failing on an unauthenticated bulk.
        assert!(e.contains("NOAUTH") || e.contains("authentication failed"), "{e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_under_the_same_name_with_fewer_lanes_gets_every_held_job_back() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "shrunk").await.unwrap();
    let p = q.producer::<u32>();
    for n in 0..4 {
        assert!(p.enqueue(&n).await.unwrap().is_admitted());
    }
    // Four lanes take one job each and hang; the worker is then killed (its task dropped),
    // its 60-s heartbeat still alive.
    let hang = tokio::spawn(
        Worker::new(&q)
            .name("same")
            .lanes(4)
            .heartbeat(Duration::from_secs(60))
            .run(|_: Job<u32>| std::future::pending(), std::future::pending()),
    );
    wait_until("4 jobs held", Duration::from_secs(10), async || q.stats().await.unwrap().in_service == 4).await;
    hang.abort();
    let _ = hang.await;
    // The same name comes back with one lane, well within the old heartbeat's life: lanes
    // 1–3 are orphans (the heartbeat says one lane), their jobs come back at once.
    let (stop, stopped) = oneshot::channel::<()>();
    let w = tokio::spawn(Worker::new(&q).name("same").lanes(1).heartbeat(Duration::from_secs(60)).run(
        |_: Job<u32>| async { Ok(()) },
        async move {
            let _ = stopped.await;
        },
    ));
    wait_until("4 done by one lane", Duration::from_secs(10), async || q.stats().await.unwrap().completed == 4).await;
    stop.send(()).unwrap();
    w.await.unwrap().unwrap();
    let s = q.stats().await.unwrap();
    assert!(s.balanced() && s.in_service == 0, "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_library_is_never_downgraded_and_another_wire_format_is_refused() {
    use safegate_queue::{LIBRARY, LIBRARY_REVISION};
    let r = common::Redis::start(false);
    let cli = |lib: String| {
        let mut c = redis::Client::open(r.url()).unwrap().get_connection().unwrap();
        redis::cmd("FUNCTION").arg("LOAD").arg("REPLACE").arg(lib).query::<String>(&mut c).unwrap();
        c
    };
    let revision = format!("local REVISION = {LIBRARY_REVISION}\n");
    assert!(LIBRARY.contains(&revision), "library.lua and LIBRARY_REVISION disagree");
    // A later revision, same wire: kept, and the queue works on it.
    let mut c = cli(LIBRARY.replace(&revision, "local REVISION = 99\n"));
    let q = Queue::connect(&r.url(), "newer").await.unwrap();
    assert_eq!(redis::cmd("FCALL").arg("sg_revision").arg(0).query::<i64>(&mut c).unwrap(), 99);
    assert!(q.producer::<u32>().enqueue(&1).await.unwrap().is_admitted());
    // A later revision with another wire format: refused, by name.
    cli(LIBRARY.replace(&revision, "local REVISION = 99\n").replace("local WIRE = 1\n", "local WIRE = 7\n"));
    let e = Queue::connect(&r.url(), "newer").await.unwrap_err();
    assert!(e.to_string().contains("wire version 7"), "{e}");
    // An earlier revision: replaced.
    let mut c = cli(LIBRARY.replace(&revision, "local REVISION = 1\n"));
    Queue::connect(&r.url(), "newer").await.unwrap();
    let rev: i64 = redis::cmd("FCALL").arg("sg_revision").arg(0).query(&mut c).unwrap();
    assert_eq!(rev, LIBRARY_REVISION);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_past_the_job_timeout_is_stopped_retried_then_dead_lettered() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "slow").await.unwrap();
    q.configure(&QueueConfig {
        max_attempts: 2,
        backoff: Duration::from_millis(20),
        backoff_max: Duration::from_millis(50),
        ..QueueConfig::default()
    })
    .await
    .unwrap();
    let p = q.producer::<u32>();
    // Job 0 hangs on its first attempt only; job 1 hangs on every attempt.
    for n in 0..2 {
        assert!(p.enqueue(&n).await.unwrap().is_admitted());
    }
    let running = Arc::new(AtomicU32::new(0));
    let r2 = running.clone();
    let (stop, stopped) = oneshot::channel::<()>();
    let w = tokio::spawn(Worker::new(&q).lanes(2).job_timeout(Duration::from_millis(200)).run(
        move |job: Job<u32>| {
            let running = r2.clone();
            async move {
                if job.payload == 1 || job.attempt == 1 {
                    running.fetch_add(1, Ordering::SeqCst);
                    // Decremented only if the task is not aborted at the timeout.
                    std::future::pending::<()>().await;
                    running.fetch_sub(1, Ordering::SeqCst);
                }
                Ok(())
            }
        },
        async move {
            let _ = stopped.await;
        },
    ));
    wait_until("both settled", Duration::from_secs(10), async || {
        let s = q.stats().await.unwrap();
        s.completed + s.dead == 2
    })
    .await;
    stop.send(()).unwrap();
    let report = w.await.unwrap().unwrap();
    let s = q.stats().await.unwrap();
    assert!(s.balanced(), "{s:?}");
    assert_eq!((s.completed, s.dead, report.retried), (1, 1, 2), "{s:?} {report:?}");
    // Three attempts hung; each was stopped at the timeout and its lane went on.
    assert_eq!(running.load(Ordering::SeqCst), 3);
    let dead = q.dead_letters(10).await.unwrap();
    assert!(dead[0].error.contains("job timeout"), "{dead:?}");
    assert!(Worker::new(&q).job_timeout(Duration::ZERO).run(|_: Job<u32>| async { Ok(()) }, async {}).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_panics_fails_its_attempt_not_its_lane() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "panicky").await.unwrap();
    q.configure(&QueueConfig { backoff: Duration::from_millis(20), ..QueueConfig::default() }).await.unwrap();
    let p = q.producer::<u32>();
    for n in 0..20 {
        assert!(p.enqueue(&n).await.unwrap().is_admitted());
    }
    let (stop, stopped) = oneshot::channel::<()>();
    // One lane: every job's first attempt panics, in the handler's call and in its future.
    let w = tokio::spawn(Worker::new(&q).lanes(1).run(
        |job: Job<u32>| {
            assert!(job.attempt > 1 || job.payload.is_multiple_of(2), "a panic in the call");
            async move {
                assert!(job.attempt > 1, "a panic in the future");
                Ok(())
            }
        },
        async move {
            let _ = stopped.await;
        },
    ));
    wait_until("20 done", Duration::from_secs(20), async || q.stats().await.unwrap().completed == 20).await;
    stop.send(()).unwrap();
    let report = w.await.unwrap().unwrap();
    assert_eq!((report.completed, report.retried), (20, 20), "{report:?}");
    let s = q.stats().await.unwrap();
    assert!(s.balanced(), "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tower_service_is_a_handler_with_its_layers() {
    use tower::ServiceBuilder;
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "served").await.unwrap();
    q.configure(&QueueConfig { backoff: Duration::from_millis(20), ..QueueConfig::default() }).await.unwrap();
    let p = q.producer::<u32>();
    for n in 0..30 {
        assert!(p.enqueue(&n).await.unwrap().is_admitted());
    }
    let in_service = Arc::new(AtomicU32::new(0));
    let most = Arc::new(AtomicU32::new(0));
    let (i, m) = (in_service.clone(), most.clone());
    // A layer limits the jobs in service across 8 lanes to 2; odd jobs fail their first
    // attempt with an error of the service's own type.
    let service = ServiceBuilder::new().concurrency_limit(2).service(tower::service_fn(move |job: Job<u32>| {
        let (i, m) = (i.clone(), m.clone());
        async move {
            let now = i.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(5)).await;
            i.fetch_sub(1, Ordering::SeqCst);
            if job.payload % 2 == 1 && job.attempt == 1 {
                return Err(std::io::Error::other("first attempt"));
            }
            Ok(())
        }
    }));
    let (stop, stopped) = oneshot::channel::<()>();
    let w = tokio::spawn(Worker::new(&q).lanes(8).run_service(service, async move {
        let _ = stopped.await;
    }));
    wait_until("30 done", Duration::from_secs(20), async || q.stats().await.unwrap().completed == 30).await;
    stop.send(()).unwrap();
    let report = w.await.unwrap().unwrap();
    assert_eq!((report.completed, report.retried), (30, 15), "{report:?}");
    assert!(most.load(Ordering::SeqCst) <= 2, "{} in service at once", most.load(Ordering::SeqCst));
    assert!(q.stats().await.unwrap().balanced());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ack_given_the_entrys_time_counts_as_one_that_reads_it() {
    // sg_ack's optional `at_us` (the entry's `at`, as the worker read it) saves the entry's
    // re-read; the books are the same with it, without it, or with a value that is not a
    // number or not a time the entry could have (0, the future); a second ack of the same
    // job counts nothing.
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "acks").await.unwrap();
    let p = q.producer::<u32>();
    for n in 0..5 {
        assert!(p.enqueue(&n).await.unwrap().is_admitted());
    }
    let mut c = redis::Client::open(r.url()).unwrap().get_connection().unwrap();
    let read: redis::streams::StreamReadReply = redis::cmd("XREADGROUP")
        .arg(&["GROUP", "workers", "t/0", "COUNT", "5", "STREAMS", "sg:{acks}:jobs", ">"])
        .query(&mut c)
        .unwrap();
    let entries = &read.keys[0].ids;
    assert_eq!(entries.len(), 5);
    std::thread::sleep(Duration::from_millis(30));
    let ack = |c: &mut redis::Connection, id: &str, at: Option<&str>| -> i64 {
        let mut cmd = redis::cmd("FCALL");
        cmd.arg(&["sg_ack", "2", "sg:{acks}:jobs", "sg:{acks}:count", id, "workers", "5000"]);
        if let Some(at) = at {
            cmd.arg(at);
        }
        cmd.query(c).unwrap()
    };
    let at: String = redis::from_redis_value_ref(&entries[0].map["at"]).unwrap();
    let lats = [
        ack(&mut c, &entries[0].id, Some(&at)),
        ack(&mut c, &entries[1].id, None),
        ack(&mut c, &entries[2].id, Some("not a number")),
        ack(&mut c, &entries[3].id, Some("0")),
        ack(&mut c, &entries[4].id, Some("99999999999999999")),
    ];
    for lat in lats {
        // Each in the stream 30 ms or more, and far less than a second.
        assert!((30_000..1_000_000).contains(&lat), "{lats:?}");
    }
    assert_eq!(ack(&mut c, &entries[0].id, Some(&at)), 0, "a second ack counts nothing");
    let s = q.stats().await.unwrap();
    assert_eq!((s.completed, s.waiting(), s.in_service), (5, 0, 0), "{s:?}");
    assert!(s.balanced(), "{s:?}");
    assert_eq!(s.latency_us, lats.iter().map(|l| (l - 1) as u64).sum::<u64>(), "{s:?}");
    assert_eq!(s.service_us, 5 * 5000, "{s:?}");
}

/// The safety filter's backup may shed retries (`Action::shed_retries`): while the grant in
/// force says so, a failed attempt is dead-lettered (kind "shed", counted `dead`) instead of
/// re-entering the backlog, and so is a retry that was scheduled before and falls due; once
/// a grant says otherwise, failures are retried again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_that_sheds_retries_dead_letters_failures_until_one_that_does_not() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "shedding").await.unwrap();
    let second = Duration::from_secs(1);
    q.configure(&QueueConfig { backoff: second, backoff_max: second, ..QueueConfig::default() }).await.unwrap();
    // A controller that runs until its grant is the one asked for.
    let publish = |shed_retries: bool| {
        let q = q.clone();
        async move {
            let action = Action { shed_retries, ..Action::OPEN };
            let published = async {
                wait_until("the grant", Duration::from_secs(10), async || {
                    q.grant().await.unwrap().is_some_and(|g| g.shed_retries == shed_retries)
                })
                .await
            };
            Controller::new(&q, Box::new(Fixed(action)), 100)
                .period(Duration::from_millis(10))
                .lease(Duration::from_secs(30))
                .run(published)
                .await
                .unwrap();
        }
    };
    let settled = |what: &'static str, f: fn(&safegate_queue::Stats) -> bool| {
        let q = q.clone();
        async move {
            wait_until(what, Duration::from_secs(15), async || f(&q.stats().await.unwrap())).await;
            q.stats().await.unwrap()
        }
    };
    // Each job fails its first attempt and passes its second.
    let (stop, stopped) = oneshot::channel::<()>();
    let w = tokio::spawn(Worker::new(&q).lanes(2).heartbeat(Duration::from_millis(400)).run(
        |job: Job<u32>| async move {
            if job.attempt == 1 {
                Err(JobError::retry("the first attempt fails"))
            } else {
                Ok(())
            }
        },
        async move {
            let _ = stopped.await;
        },
    ));
    let p = q.producer::<u32>();
    // Two retries scheduled (0.5–1 s away) before any grant sheds.
    for n in 0..2 {
        assert!(p.enqueue(&n).await.unwrap().is_admitted());
    }
    settled("two retries scheduled", |s| s.delayed == 2).await;
    publish(true).await;
    // Two more fail under the shedding grant: dead-lettered at once; the two scheduled
    // retries are dead-lettered when they fall due.
    for n in 2..4 {
        assert!(p.enqueue(&n).await.unwrap().is_admitted());
    }
    let s = settled("four shed", |s| s.dead == 4 && s.waiting() == 0).await;
    assert_eq!((s.retried, s.completed), (2, 0), "{s:?}");
    let letters = q.take_dead_letters(10).await.unwrap();
    assert_eq!(letters.len(), 4);
    assert!(letters.iter().all(|l| l.kind == "shed" && l.attempts == 1), "{letters:?}");
    // A grant that does not shed: the same failures are retried, and pass.
    publish(false).await;
    for n in 0..4 {
        assert!(p.enqueue(&n).await.unwrap().is_admitted());
    }
    let s = settled("four done", |s| s.completed == 4 && s.waiting() == 0).await;
    stop.send(()).unwrap();
    w.await.unwrap().unwrap();
    assert_eq!((s.dead, s.retried, s.completed), (4, 6, 4), "{s:?}");
    assert!(s.balanced(), "{s:?}");
}
