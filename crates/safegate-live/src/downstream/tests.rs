//! The scheduler's fidelity against `μ(n, H)`, the faults, the HTTP API.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use safegate_sim::{DipShape, HealthSchedule, HealthTrack};

use super::health::Health;
use super::*;
use crate::{LiveError, ModelClock, TimeSource};
use bytes::Bytes;

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

async fn start(speed: f64, health: f64, seed: u64) -> Downstream {
    let mut cfg = DownstreamConfig::new(ModelClock::start(speed));
    cfg.health = HealthTrack::new(HealthSchedule::Constant { level: health });
    cfg.seed = seed;
    Downstream::start(cfg, local()).await.unwrap()
}

/// Model seconds per wall second of the paused-clock tests. Paused time costs no wall time
/// at any speed; a slow one makes the 1-ms granularity of tokio's timers a microsecond of
/// model time, so the scheduler task wakes for a completion within a microsecond of it.
const PAUSED_SPEED: f64 = 1e-3;

/// A downstream on a paused tokio clock (the test runs with `start_paused = true`).
async fn start_paused(health: f64, seed: u64, workers: Option<Workers>) -> Downstream {
    let mut cfg = DownstreamConfig::new(ModelClock::start_on(TimeSource::Tokio, PAUSED_SPEED));
    cfg.health = HealthTrack::new(HealthSchedule::Constant { level: health });
    cfg.seed = seed;
    cfg.workers = workers;
    Downstream::start(cfg, local()).await.unwrap()
}

/// Sleep `model` seconds of the paused clock's model time.
async fn model_sleep(model: f64) {
    tokio::time::sleep(Duration::from_secs_f64(model / PAUSED_SPEED)).await;
}

/// What a closed loop on a paused clock cleared over its window.
#[derive(Debug)]
struct Window {
    /// Completions per model second.
    rate: f64,
    /// Completions.
    served: u64,
    /// Mean number in service (`∫ n dt` over the window / its length).
    mean_in_service: f64,
    /// The state at the window's end.
    end: DownstreamStats,
}

/// Keep exactly `n` requests outstanding in process on a paused clock; after `warm` model
/// seconds, what the next `window` model seconds cleared. Each client sends its next request
/// as soon as its answer arrives, and paused time does not move while a task can run, so
/// the `n` are in service without a gap.
async fn paused_closed_loop(ds: &Downstream, n: usize, warm: f64, window: f64) -> Window {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let sub = ds.submitter();
            tokio::spawn(async move { while sub.submit().await.is_some() {} })
        })
        .collect();
    model_sleep(warm).await;
    let a = ds.stats();
    model_sleep(window).await;
    let b = ds.stats();
    for t in tasks {
        t.abort();
    }
    let span = b.t_model - a.t_model;
    Window {
        rate: (b.served - a.served) as f64 / span,
        served: b.served - a.served,
        mean_in_service: (b.request_seconds - a.request_seconds) / span,
        end: b,
    }
}

/// `measured` within `tol` (relative) of `expected`.
fn within(measured: f64, expected: f64, tol: f64) -> bool {
    (measured / expected - 1.0).abs() <= tol
}

/// Completions over a window of about 3000 expected ones are a sum of exponential service
/// times, so their rate's relative standard error is about 1/√3000 = 1.8 %: 6 % is over
/// three of them. The seeds are fixed and paused time makes the run the same on every
/// machine, so a pass is a pass everywhere and a drift in the model fails every time.
const TOL: f64 = 0.06;

#[tokio::test(start_paused = true)]
async fn throughput_matches_mu_n_h_on_a_paused_clock() {
    for (n, expected, window) in [(1usize, 37.5, 80.0), (4, 150.0, 20.0), (8, 75.0, 40.0), (16, 37.5, 80.0)] {
        let ds = start_paused(1.0, 7, None).await;
        let w = paused_closed_loop(&ds, n, 2.0, window).await;
        ds.shutdown().await;
        assert!(within(w.rate, expected, TOL), "n = {n}: {w:?}, μ = {expected}");
        assert!(w.served as f64 >= 0.9 * expected * window, "n = {n}: {w:?}");
        // Exactly n in service all along (Little's L), and at the window's end.
        assert!((w.mean_in_service - n as f64).abs() < 1e-3, "n = {n}: {w:?}");
        assert_eq!((w.end.in_service, w.end.waiting), (n as u32, 0), "n = {n}: {w:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn health_scales_the_rate_schedule_and_override() {
    // Constant health 0.5 in the schedule: μ(4, 0.5) = 75.
    let ds = start_paused(0.5, 11, None).await;
    assert_eq!(ds.stats().health, 0.5);
    let w = paused_closed_loop(&ds, 4, 2.0, 40.0).await;
    ds.shutdown().await;
    assert!(within(w.rate, 75.0, TOL), "{w:?}, μ(4, 0.5) = 75");

    // The override: health 2 doubles μ(4, 1) = 150 to 300.
    let ds = start_paused(1.0, 12, None).await;
    ds.set_faults(Faults { health: Some(2.0), ..Faults::default() }).unwrap();
    assert_eq!(ds.stats().health, 2.0);
    let w = paused_closed_loop(&ds, 4, 1.0, 10.0).await;
    ds.shutdown().await;
    assert!(within(w.rate, 300.0, TOL), "{w:?}, μ(4, 2) = 300");
}

#[tokio::test(start_paused = true)]
async fn the_same_seed_clears_the_same_requests_on_a_paused_clock() {
    let mut served = Vec::new();
    for _ in 0..2 {
        let ds = start_paused(1.0, 3, None).await;
        let w = paused_closed_loop(&ds, 4, 1.0, 5.0).await;
        ds.shutdown().await;
        served.push(w.served);
    }
    assert_eq!(served[0], served[1]);
}

#[test]
fn health_is_integrated_exactly_over_ramps() {
    // The seed's cycle: 1.0 for 7 s, a 5 s ramp to 0.1, 2 s at 0.1, a 5 s ramp up.
    let track = HealthTrack::new(HealthSchedule::Cycle(DipShape::default()));
    let h = Health::new(&track, None);
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
    assert!(Health::new(&zero, None).reach(0.0, 1.0).is_err());
    assert!(Health::new(&zero, Some(0.0)).reach(0.0, 1.0).is_err());
    assert_eq!(Health::new(&zero, Some(2.0)).reach(1.0, 1.0), Ok(1.5));
}

/// Poll the state until `done` holds (at most 10 s of wall time, then the last state).
async fn settle(ds: &Downstream, done: impl Fn(&DownstreamStats) -> bool) -> DownstreamStats {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = ds.stats();
        if done(&s) || Instant::now() > deadline {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
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
    let s = settle(&ds, |s| s.in_service >= 3).await;
    assert_eq!((s.in_service, s.served), (3, 0));
    // Another 2 s of model time (some 75 mean service times at n = 3): still none served.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(ds.stats().served, 0);
    assert!(reqs.iter().all(|r| !r.is_finished()));
    ds.set_faults(Faults::default()).unwrap();
    for r in reqs {
        let status = tokio::time::timeout(Duration::from_secs(10), r).await.unwrap().unwrap();
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
    let done = tokio::time::timeout(Duration::from_secs(10), pending).await.unwrap().unwrap();
    assert_eq!(done.map(|c| c.error), Some(false));
    ds.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_and_added_latency() {
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
    // The completion carries the latency the handler adds; lifted, it carries none.
    let sub = ds.submitter();
    assert_eq!(sub.submit().await.map(|c| c.added_latency), Some(Duration::from_millis(60)));
    ds.set_faults(Faults::default()).unwrap();
    for _ in 0..3 {
        assert_eq!(sub.submit().await.map(|c| (c.added_latency, c.error)), Some((Duration::ZERO, false)));
        assert_eq!(call(&c, "POST", format!("{url}/work"), "").await.0, 200);
    }
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_queue_then_turn_away_and_hold_the_rate_at_their_count() {
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
    let s = settle(&ds, |s| s.in_service + s.waiting >= 3).await;
    assert_eq!((s.in_service, s.waiting, s.full), (2, 1, 0), "{s:?}");
    // Two in service, one waiting: the fourth is turned away at once.
    let (status, body) = call(&c, "POST", format!("{url}/work"), "").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("full"), "{body}");
    assert_eq!(ds.stats().full, 1);
    ds.set_faults(Faults::default()).unwrap();
    for r in reqs {
        assert_eq!(tokio::time::timeout(Duration::from_secs(10), r).await.unwrap().unwrap(), 200);
    }
    let s = ds.stats();
    assert_eq!((s.served, s.waiting, s.in_service), (3, 0, 0), "{s:?}");
    ds.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn forty_outstanding_behind_eight_workers_clear_mu_8_on_a_paused_clock() {
    // 40 outstanding behind the seed's 8 workers clear μ(8, 1) = 75 req/s, not μ(40, 1) = 15.
    let ds = start_paused(1.0, 5, Some(Workers::SEED)).await;
    let w = paused_closed_loop(&ds, 40, 4.0, 40.0).await;
    ds.shutdown().await;
    assert!(within(w.rate, 75.0, TOL), "{w:?} behind 8 workers, expected 75");
    assert!((w.mean_in_service - 8.0).abs() < 1e-3, "{w:?}");
    assert_eq!((w.end.in_service, w.end.waiting, w.end.full), (8, 32, 0), "{w:?}");
}
