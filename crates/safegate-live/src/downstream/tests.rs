//! The scheduler's fidelity against `μ(n, H)`, the faults, the HTTP API.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use safegate_sim::{DipShape, HealthSchedule, HealthTrack};

use super::sched::Health;
use super::*;

/// The timing tests run one at a time: on 2 cores two closed loops would slow each other.
static TIMING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

async fn start(speed: f64, health: f64, seed: u64) -> Downstream {
    let mut cfg = DownstreamConfig::new(ModelClock::start(speed));
    cfg.health = HealthTrack::new(HealthSchedule::Constant { level: health });
    cfg.seed = seed;
    Downstream::start(cfg, local()).await.unwrap()
}

/// Keep exactly `n` requests outstanding in process; after `warm` completions, the model
/// throughput over the next `count` \[req/s\].
async fn closed_loop(ds: &Downstream, n: usize, warm: u64, count: u64) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let sub = ds.submitter();
            let stop = stop.clone();
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    if sub.submit().await.is_none() {
                        break;
                    }
                }
            })
        })
        .collect();
    let base = ds.stats().served;
    let wait_for = |target: u64| async move {
        loop {
            let s = ds.stats();
            if s.served >= target {
                return s;
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
    };
    let a = wait_for(base + warm).await;
    let b = wait_for(a.served + count).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.abort();
    }
    (b.served - a.served) as f64 / (b.t_model - a.t_model)
}

fn within(measured: f64, expected: f64, tol: f64) -> bool {
    (measured / expected - 1.0).abs() <= tol
}

/// How many times a throughput measurement is taken before it counts as failed. The
/// scheduler's wake-ups are wall-clock timers: when other tests (or another job) take both
/// cores for a second, every service runs late by the time the scheduler waits for a core, and
/// a closed loop's throughput falls with it. A miss is measured again on a fresh downstream,
/// and every attempt is printed, so a real drift (every attempt off) still fails.
const ATTEMPTS: usize = 3;

/// The model throughput of a fresh downstream at `speed` under constant `health` (with
/// `faults` set) driven by `n` closed-loop clients, measured until it is within `tol` of
/// `expected` or [`ATTEMPTS`] tries are spent. Returns one report line per attempt and
/// whether the last one was within.
async fn rate_near(
    (speed, health, seed): (f64, f64, u64),
    faults: Option<Faults>,
    (n, warm, count): (usize, u64, u64),
    expected: f64,
    tol: f64,
) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    for attempt in 0..ATTEMPTS {
        let ds = start(speed, health, seed + 1000 * attempt as u64).await;
        if let Some(f) = faults {
            ds.set_faults(f).unwrap();
        }
        let x = closed_loop(&ds, n, warm, count).await;
        let p = ds.precision();
        assert!(ds.stats().in_service <= n as u32);
        ds.shutdown().await;
        lines.push(format!(
            "speed {speed}, health {:?}, n = {n}: {x:.2} req/s (μ = {expected}, {:+.1} %), \
             wake-up lateness mean {:.0} µs max {:.0} µs over {} (attempt {})",
            faults.as_ref().and_then(|f| f.health).unwrap_or(health),
            100.0 * (x / expected - 1.0),
            p.mean_late_us,
            p.max_late_us,
            p.wakes,
            attempt + 1
        ));
        if within(x, expected, tol) {
            return (lines, true);
        }
    }
    (lines, false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throughput_matches_mu_n_h_at_speed_10() {
    let _g = TIMING.lock().await;
    let mut report = Vec::new();
    for (n, expected, count) in [(1usize, 37.5, 1500u64), (4, 150.0, 2000), (8, 75.0, 1500)] {
        let (lines, ok) = rate_near((10.0, 1.0, 7), None, (n, 50, count), expected, 0.08).await;
        report.extend(lines);
        assert!(ok, "{}", report.join("\n"));
    }
    eprintln!("{}", report.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_scales_the_rate_schedule_and_override() {
    let _g = TIMING.lock().await;
    // Constant health 0.5 in the schedule: μ(4, 0.5) = 75.
    let ds = start(10.0, 0.5, 11).await;
    assert_eq!(ds.stats().health, 0.5);
    ds.shutdown().await;
    let (mut report, ok) = rate_near((10.0, 0.5, 11), None, (4, 50, 1500), 75.0, 0.08).await;
    assert!(ok, "{}", report.join("\n"));

    // The override: health 2 doubles μ(4, 1) = 150 to 300. At speed 5, so each service takes
    // the same wall time (2.7 ms) as μ = 150 at speed 10: at speed 10 the 0.7 ms services
    // lost 10 % to wake-up lateness on a loaded 2-core CI machine (268 req/s measured).
    let ds = start(5.0, 1.0, 12).await;
    ds.set_faults(Faults { health: Some(2.0), ..Faults::default() }).unwrap();
    assert_eq!(ds.stats().health, 2.0);
    ds.shutdown().await;
    let faults = Faults { health: Some(2.0), ..Faults::default() };
    let (lines, ok) = rate_near((5.0, 1.0, 12), Some(faults), (4, 50, 1500), 300.0, 0.08).await;
    report.extend(lines);
    assert!(ok, "{}", report.join("\n"));
    eprintln!("{}", report.join("\n"));
}

/// `speed 1` is ten times slower in wall time: run by hand (`--ignored`) for the report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn throughput_matches_mu_n_h_at_speed_1() {
    let _g = TIMING.lock().await;
    for (n, expected, count) in [(1usize, 37.5, 300u64), (4, 150.0, 1500), (8, 75.0, 750)] {
        let ds = start(1.0, 1.0, 7).await;
        let x = closed_loop(&ds, n, 20, count).await;
        let p = ds.precision();
        eprintln!(
            "speed 1, n = {n}: {x:.2} req/s (μ = {expected}, {:+.1} %), lateness mean {:.0} µs max {:.0} µs",
            100.0 * (x / expected - 1.0),
            p.mean_late_us,
            p.max_late_us
        );
        ds.shutdown().await;
    }
}

#[test]
fn health_is_integrated_exactly_over_ramps() {
    // The seed's cycle: 1.0 for 7 s, a 5 s ramp to 0.1, 2 s at 0.1, a 5 s ramp up.
    let track = HealthTrack::new(HealthSchedule::Cycle(DipShape::default()));
    let h = Health::for_test(&track, None);
    // ∫₀¹⁹ H = 7 + 5·0.55 + 2·0.1 + 5·0.55 = 12.7, and per further period the same.
    assert!((h.integral(0.0, 19.0) - 12.7).abs() < 1e-9);
    assert!((h.integral(0.0, 38.0) - 25.4).abs() < 1e-9);
    // Into the ramp down: ∫₇⁹ H = 2·(1 + 0.64)/2 = 1.64 (H(9) = 1 − 0.18·2).
    assert!((h.integral(7.0, 9.0) - 1.64).abs() < 1e-9);
    // reach is integral's inverse, across pieces.
    for (t0, need) in [(0.0, 3.0), (6.0, 1.5), (8.0, 2.0), (11.5, 1.0), (3.0, 30.0)] {
        let t1 = h.reach(t0, need).unwrap();
        assert!((h.integral(t0, t1) - need).abs() < 1e-9, "{t0} {need} {t1}");
    }
    // At health 0 forever nothing is reached.
    let zero = HealthTrack::new(HealthSchedule::Constant { level: 0.0 });
    assert!(Health::for_test(&zero, None).reach(0.0, 1.0).is_err());
    assert!(Health::for_test(&zero, Some(0.0)).reach(0.0, 1.0).is_err());
    assert_eq!(Health::for_test(&zero, Some(2.0)).reach(1.0, 1.0), Ok(1.5));
}

type HttpClient = Client<HttpConnector, Full<Bytes>>;

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

async fn call(c: &HttpClient, method: &str, url: String, body: &str) -> (u16, String) {
    let req = hyper::Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let resp = c.request(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_over_http_and_state() {
    let _g = TIMING.lock().await;
    let ds = start(10.0, 1.0, 1).await;
    assert!(ds.url().starts_with("http://127.0.0.1:"));
    let c = client();
    for _ in 0..20 {
        assert_eq!(call(&c, "POST", format!("{}/work", ds.url()), "job-1").await.0, 200);
    }
    let (status, body) = call(&c, "GET", format!("{}/admin/state", ds.url()), "").await;
    assert_eq!(status, 200);
    let s: DownstreamStats = serde_json::from_str(&body).unwrap();
    assert_eq!((s.served, s.errors, s.in_service, s.health), (20, 0, 0, 1.0));
    assert!(s.t_model > 0.0);
    // One request at a time: in service for at most the time that passed, and for about the
    // sum of 20 exponential draws of mean 1/37.5 s: 0.53 s, standard deviation 0.12 s.
    assert!(s.request_seconds > 0.15 && s.request_seconds <= s.t_model, "{s:?}");
    ds.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stall_hangs_requests_until_lifted() {
    let _g = TIMING.lock().await;
    let ds = start(10.0, 1.0, 2).await;
    let c = client();
    let url = ds.url();
    let (status, _) = call(&c, "POST", format!("{url}/admin/faults"), r#"{"stall": true}"#).await;
    assert_eq!(status, 200);
    assert!(ds.faults().stall);
    let reqs: Vec<_> = (0..3)
        .map(|_| {
            let (c, url) = (c.clone(), url.clone());
            tokio::spawn(async move { call(&c, "POST", format!("{url}/work"), "").await.0 })
        })
        .collect();
    // 200 ms wall is 2 s model: some 75 mean service times at n = 3.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let s = ds.stats();
    assert_eq!((s.in_service, s.served), (3, 0));
    assert!(reqs.iter().all(|r| !r.is_finished()));
    ds.set_faults(Faults::default()).unwrap();
    for r in reqs {
        let status = tokio::time::timeout(Duration::from_secs(2), r).await.unwrap().unwrap();
        assert_eq!(status, 200);
    }
    assert_eq!(ds.stats().served, 3);

    // Health overridden to 0 hangs requests the same way.
    ds.set_faults(Faults { health: Some(0.0), ..Faults::default() }).unwrap();
    let sub = ds.submitter();
    let pending = tokio::spawn(async move { sub.submit().await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!pending.is_finished());
    assert_eq!(ds.stats().health, 0.0);
    ds.set_faults(Faults::default()).unwrap();
    let done = tokio::time::timeout(Duration::from_secs(2), pending).await.unwrap().unwrap();
    assert_eq!(done.map(|c| c.error), Some(false));
    ds.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_and_added_latency() {
    let _g = TIMING.lock().await;
    let ds = start(10.0, 1.0, 3).await;
    let c = client();
    let url = ds.url();
    let body = r#"{"error_rate": 1}"#;
    assert_eq!(call(&c, "POST", format!("{url}/admin/faults"), body).await.0, 200);
    for _ in 0..5 {
        assert_eq!(call(&c, "POST", format!("{url}/work"), "").await.0, 500);
    }
    let s = ds.stats();
    assert_eq!((s.served, s.errors), (5, 5));

    ds.set_faults(Faults { added_latency_ms: 60.0, ..Faults::default() }).unwrap();
    let (status, body) = call(&c, "GET", format!("{url}/admin/faults"), "").await;
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Faults>(&body).unwrap().added_latency_ms, 60.0);
    for _ in 0..3 {
        let t0 = Instant::now();
        assert_eq!(call(&c, "POST", format!("{url}/work"), "").await.0, 200);
        assert!(t0.elapsed() >= Duration::from_millis(60), "{:?}", t0.elapsed());
    }
    ds.set_faults(Faults::default()).unwrap();
    let t0 = Instant::now();
    for _ in 0..3 {
        assert_eq!(call(&c, "POST", format!("{url}/work"), "").await.0, 200);
    }
    // Three exponential service times of mean 2.7 ms wall, not three 60 ms delays.
    assert!(t0.elapsed() < Duration::from_millis(120), "{:?}", t0.elapsed());
    assert_eq!(ds.stats().errors, 5);
    ds.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_faults_are_400_naming_the_field() {
    let ds = start(10.0, 1.0, 4).await;
    let c = client();
    let url = format!("{}/admin/faults", ds.url());
    for (body, field) in [
        (r#"{"health": -0.5}"#, "health"),
        (r#"{"health": 1000}"#, "health"),
        (r#"{"added_latency_ms": -1}"#, "added_latency_ms"),
        (r#"{"error_rate": 2}"#, "error_rate"),
        (r#"{"error_rate": "all"}"#, "error_rate"),
        (r#"{"stall": "yes"}"#, "stall"),
        (r#"{"latency": 5}"#, "latency"),
        (r#"{"health": "#, "JSON"),
    ] {
        let (status, msg) = call(&c, "POST", url.clone(), body).await;
        assert_eq!(status, 400, "{body}");
        assert!(msg.contains(field), "{body}: {msg}");
    }
    // Nothing was applied.
    assert_eq!(ds.faults(), Faults::default());
    // The Rust API refuses the same, NaN included.
    let e = ds.set_faults(Faults { health: Some(f64::NAN), ..Faults::default() }).unwrap_err();
    assert_eq!(e.field, "health");
    let e = ds.set_faults(Faults { error_rate: -0.1, ..Faults::default() }).unwrap_err();
    assert_eq!(e.field, "error_rate");
    let e = ds.set_faults(Faults { added_latency_ms: f64::INFINITY, ..Faults::default() }).unwrap_err();
    assert_eq!(e.field, "added_latency_ms");
    ds.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_in_use_is_a_bind_error() {
    let ds = start(10.0, 1.0, 5).await;
    let e = Downstream::start(DownstreamConfig::new(ModelClock::start(10.0)), ds.addr()).await.unwrap_err();
    match &e {
        LiveError::Bind { addr, .. } => assert_eq!(*addr, ds.addr()),
        other => panic!("expected Bind, got {other:?}"),
    }
    assert!(e.to_string().contains(&ds.addr().to_string()), "{e}");
    // A configuration out of range is refused before anything is bound.
    let mut cfg = DownstreamConfig::new(ModelClock::start(10.0));
    cfg.pool.rate = f64::NAN;
    assert!(matches!(Downstream::start(cfg, local()).await, Err(LiveError::Invalid(e)) if e.field == "model.rate"));
    ds.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_waiting_requests_503_and_noop_answers_at_once() {
    let ds = start(10.0, 1.0, 6).await;
    ds.set_faults(Faults { stall: true, ..Faults::default() }).unwrap();
    let c = client();
    let url = ds.url();
    let waiting = {
        let (c, url) = (c.clone(), url.clone());
        tokio::spawn(async move { call(&c, "POST", format!("{url}/work"), "").await.0 })
    };
    while ds.stats().in_service < 1 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    ds.shutdown().await;
    assert_eq!(tokio::time::timeout(Duration::from_secs(3), waiting).await.unwrap().unwrap(), 503);

    // Dropping stops the thread too (the submitter then sees it gone).
    let ds = start(10.0, 1.0, 6).await;
    let sub = ds.submitter();
    drop(ds);
    assert_eq!(sub.submit().await, None);

    let mut cfg = DownstreamConfig::new(ModelClock::start(10.0));
    cfg.noop = true;
    cfg.health = HealthTrack::new(HealthSchedule::Constant { level: 0.0 });
    let ds = Downstream::start(cfg, local()).await.unwrap();
    for _ in 0..10 {
        assert_eq!(call(&c, "POST", format!("{}/work", ds.url()), "").await.0, 200);
    }
    assert_eq!(ds.stats().served, 10);
    ds.shutdown().await;
}

/// The same closed loop over HTTP (hyper-util client, keep-alive): what the loopback
/// round trip costs on top of the scheduler. Run by hand (`--ignored`) for the report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn throughput_over_http_at_speed_10() {
    let _g = TIMING.lock().await;
    for (n, expected) in [(1usize, 37.5), (4, 150.0), (8, 75.0)] {
        let ds = start(10.0, 1.0, 7).await;
        let stop = Arc::new(AtomicBool::new(false));
        let c = client();
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let (c, url, stop) = (c.clone(), format!("{}/work", ds.url()), stop.clone());
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        call(&c, "POST", url.clone(), "").await;
                    }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let a = ds.stats();
        tokio::time::sleep(Duration::from_secs(3)).await;
        let b = ds.stats();
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            t.abort();
        }
        let x = (b.served - a.served) as f64 / (b.t_model - a.t_model);
        eprintln!("over HTTP, n = {n}: {x:.2} req/s (μ = {expected}, {:+.1} %)", 100.0 * (x / expected - 1.0));
        ds.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_queue_then_turn_away_and_hold_the_rate_at_their_count() {
    let _g = TIMING.lock().await;
    let mut cfg = DownstreamConfig::new(ModelClock::start(10.0));
    cfg.workers = Some(Workers { slots: 2, queue: 1 });
    let ds = Downstream::start(cfg, local()).await.unwrap();
    let (c, url) = (client(), ds.url());
    ds.set_faults(Faults { stall: true, ..Faults::default() }).unwrap();
    let reqs: Vec<_> = (0..3)
        .map(|_| {
            let (c, url) = (c.clone(), url.clone());
            tokio::spawn(async move { call(&c, "POST", format!("{url}/work"), "").await.0 })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let s = ds.stats();
    assert_eq!((s.in_service, s.waiting, s.full), (2, 1, 0), "{s:?}");
    // Two in service, one waiting: the fourth is turned away at once.
    let (status, body) = call(&c, "POST", format!("{url}/work"), "").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("full"), "{body}");
    assert_eq!(ds.stats().full, 1);
    ds.set_faults(Faults::default()).unwrap();
    for r in reqs {
        assert_eq!(tokio::time::timeout(Duration::from_secs(2), r).await.unwrap().unwrap(), 200);
    }
    let s = ds.stats();
    assert_eq!((s.served, s.waiting, s.in_service), (3, 0, 0), "{s:?}");
    ds.shutdown().await;

    // 40 outstanding behind the seed's 8 workers clear μ(8, 1) = 75 req/s, not μ(40, 1) = 15.
    let mut cfg = DownstreamConfig::new(ModelClock::start(10.0));
    cfg.workers = Some(Workers::SEED);
    cfg.seed = 5;
    let ds = Downstream::start(cfg, local()).await.unwrap();
    let x = closed_loop(&ds, 40, 300, 3000).await;
    assert!(within(x, 75.0, 0.08), "{x} req/s behind 8 workers, expected 75");
    ds.shutdown().await;
}
