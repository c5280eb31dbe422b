//! The downstream emulator: an HTTP server that serves `POST /work` at the model's
//! contended rate, with fault injection.
//!
//! With `n` requests in service at health `H` each clears work at
//! `H · s · min(1, (C/n)²)` (processor sharing), so jointly `μ(n, H) = H·n·s·min(1, (C/n)²)`:
//! `150·H` req/s at `n = 4`, `75·H` at `n = 8` with the seed's `s = 37.5`, `C = 4`
//! (docs/model.md, "The pool" and "Stochastic mode"). A request's work is drawn from the
//! configured [`ServiceLaw`] (mean 1), health comes from the [`HealthTrack`] at model time
//! `t = clock.now()`, and every rate runs `speed` times faster on the wall clock.
//!
//! The scheduler runs on its own OS thread (see `sched.rs`): tokio's timers have a
//! granularity of 1 ms, which at speed 10 would bias a 2.7 ms service time by tens of
//! per cent. The thread sleeps on `recv_timeout` and yields for the last 150 µs before a
//! due completion, which wakes it a few microseconds late on average; and the model's work
//! clock is integrated exactly between events, so a late wake-up delays the reply but does
//! not change the model.
//!
//! HTTP API:
//!
//! - `POST /work` (body ignored): 200 when the request's work is done (500 when the
//!   `error_rate` fault drew it, 503 when the downstream is shutting down).
//! - `POST /admin/faults` with a JSON [`Faults`] (keys left out take their defaults): 200
//!   with the faults now in force, 400 naming the field when a value is of the wrong type,
//!   unknown or out of range. `GET /admin/faults`: the faults in force.
//! - `GET /admin/state`: a JSON [`DownstreamStats`].

mod faults;
mod sched;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use safegate_core::error::{check, RangeError};
use safegate_sim::{HealthSchedule, HealthTrack, Pool, Retries, ServiceLaw};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

pub use faults::{Faults, MAX_ADDED_LATENCY_MS};
use sched::{Completion, Counters, Msg, Scheduler};

use crate::{LiveError, ModelClock};

/// What the downstream emulates.
#[derive(Debug, Clone)]
pub struct DownstreamConfig {
    /// The pool's constants: `rate` (`s`) and `comfortable` (`C`) set the contended rate.
    pub pool: Pool,
    /// Health `H(t)` over model time (overridden by [`Faults::health`] while that is set).
    pub health: HealthTrack,
    /// The law of one request's work (mean 1).
    pub service: ServiceLaw,
    /// The model clock shared with the rest of the live system.
    pub clock: ModelClock,
    /// Seed of the work draws and of the `error_rate` fault's draws.
    pub seed: u64,
    /// Answer `POST /work` at once, without the scheduler (for plumbing benchmarks).
    pub noop: bool,
    /// The scenario's retry model: a completion fails (500) with its chance `p(H)`, so the
    /// clients' retries re-enter as in docs/model.md §Retries (`Retries::Off`: none).
    pub failures: Retries,
    /// A worker pool in front of the contended service (`None`: every request enters
    /// service at once, so `n` is unbounded).
    pub workers: Option<Workers>,
}

/// A worker pool in front of the contended service, as the seed's executors pulling from a
/// capped backlog: at most `slots` requests in service (`n ≤ slots`, so the joint rate
/// never falls below `μ(slots, H)`), up to `queue` more waiting in arrival order, and a
/// request beyond both answered 503 at once. With the seed's `slots = 8` and `queue = 200`
/// the service clears 75·H req/s however many requests arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workers {
    /// Requests in service at most (`P`).
    pub slots: u32,
    /// Requests waiting at most (`cap`).
    pub queue: u32,
}

impl Workers {
    /// The seed's pool: 8 executors, a backlog of 200.
    pub const SEED: Workers = Workers { slots: 8, queue: 200 };
}

impl DownstreamConfig {
    /// The seed's pool at constant health 1, exponential work, seed 0, on `clock`.
    pub fn new(clock: ModelClock) -> Self {
        Self {
            pool: Pool::default(),
            health: HealthTrack::new(HealthSchedule::Constant { level: 1.0 }),
            service: ServiceLaw::Exponential,
            clock,
            seed: 0,
            noop: false,
            failures: Retries::Off,
            workers: None,
        }
    }

    /// Check the pool's rate and comfortable concurrency, the health track and the service
    /// law; fields are named as in a scenario.
    pub fn check(&self) -> Result<(), RangeError> {
        check::within("model.rate", self.pool.rate, f64::MIN_POSITIVE, 1e9, "(0, 1e9] req/s")?;
        check::within("model.comfortable", self.pool.comfortable, f64::MIN_POSITIVE, 1e6, "(0, 1e6]")?;
        self.health.check()?;
        self.failures.check()?;
        if let Some(w) = self.workers {
            check::within("workers.slots", f64::from(w.slots), 1.0, 1e6, "[1, 1e6]")?;
            check::within("workers.queue", f64::from(w.queue), 0.0, 1e6, "[0, 1e6]")?;
        }
        self.service.check()
    }
}

/// A snapshot of the downstream (`GET /admin/state`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DownstreamStats {
    /// Requests in service now (`n`).
    pub in_service: u32,
    /// Requests whose service completed, including those answered 500 (in noop mode: every
    /// request answered).
    pub served: u64,
    /// Requests answered 500 by the `error_rate` fault.
    pub errors: u64,
    /// Model time now \[s\].
    pub t_model: f64,
    /// Health in force now: the fault's override, else the schedule's.
    pub health: f64,
    /// `∫ n dt` over model time since the start \[request-seconds\]: its increase over a
    /// window divided by the window's model time is the mean number in service (Little's
    /// `L`).
    #[serde(default)]
    pub request_seconds: f64,
    /// Requests waiting for a worker now (0 without [`Workers`]).
    #[serde(default)]
    pub waiting: u32,
    /// Requests answered 503 because every worker was busy and the queue full.
    #[serde(default)]
    pub full: u64,
}

/// What the scheduler thread, the handlers and the owner share.
#[derive(Debug)]
struct Shared {
    counters: Arc<Counters>,
    faults: Mutex<Faults>,
    tx: mpsc::Sender<Msg>,
    health: HealthTrack,
    clock: ModelClock,
    noop: bool,
}

impl Shared {
    fn faults_lock(&self) -> MutexGuard<'_, Faults> {
        self.faults.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_faults(&self, f: Faults) -> Result<(), RangeError> {
        f.check()?;
        let mut cur = self.faults_lock();
        *cur = f;
        // Under the lock, so the scheduler sees settings in the order they were made. A
        // stopped scheduler has nothing left to apply them to.
        let _ = self.tx.send(Msg::Faults(f));
        Ok(())
    }

    fn stats(&self) -> DownstreamStats {
        let t = self.clock.now();
        let health = match self.faults_lock().health {
            Some(h) => h,
            None => self.health.value(t),
        };
        let c = &self.counters;
        DownstreamStats {
            in_service: c.in_service.load(std::sync::atomic::Ordering::Relaxed),
            served: c.served.load(std::sync::atomic::Ordering::Relaxed),
            errors: c.errors.load(std::sync::atomic::Ordering::Relaxed),
            t_model: t,
            health,
            request_seconds: c.occupancy(t),
            waiting: c.waiting.load(std::sync::atomic::Ordering::Relaxed),
            full: c.full.load(std::sync::atomic::Ordering::Relaxed),
        }
    }
}

/// Submits requests to the scheduler in process (what `POST /work` does, without HTTP).
#[derive(Debug, Clone)]
pub(crate) struct Submitter {
    tx: mpsc::Sender<Msg>,
}

impl Submitter {
    /// Serve one request: its completion, or `None` when the scheduler has stopped.
    pub(crate) async fn submit(&self) -> Option<Completion> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(Msg::Submit(tx)).ok()?;
        rx.await.ok()
    }
}

/// Wakeup precision of the scheduler thread: how late its timed waits ended.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Precision {
    /// Timed wake-ups for a due completion.
    pub(crate) wakes: u64,
    /// Their mean lateness \[µs\].
    pub(crate) mean_late_us: f64,
    /// The largest \[µs\].
    pub(crate) max_late_us: f64,
}

/// A running downstream emulator: an HTTP server and its scheduler thread. Dropping it
/// stops both (requests still waiting are answered 503); [`Downstream::shutdown`] also
/// waits for the server to finish.
#[derive(Debug)]
pub struct Downstream {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
    server_stop: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
}

impl Downstream {
    /// Check `cfg`, bind `bind` (normally `127.0.0.1:0`), start the scheduler thread and
    /// serve. [`LiveError::Bind`] names the address when it cannot be bound (in use),
    /// [`LiveError::Invalid`] the field of a configuration out of range.
    pub async fn start(cfg: DownstreamConfig, bind: SocketAddr) -> Result<Downstream, LiveError> {
        cfg.check()?;
        let listener = tokio::net::TcpListener::bind(bind).await.map_err(|source| LiveError::Bind {
            addr: bind,
            what: "downstream",
            error: source,
        })?;
        let addr = listener.local_addr().map_err(|source| LiveError::Bind {
            addr: bind,
            what: "downstream",
            error: source,
        })?;

        let counters = Arc::new(Counters::default());
        let (tx, rx) = mpsc::channel();
        let scheduler =
            Scheduler::new(cfg.pool, cfg.health.clone(), cfg.service, cfg.clock, cfg.seed, counters.clone())
                .with_failures(cfg.failures)
                .with_workers(cfg.workers);
        let thread =
            std::thread::Builder::new().name("safegate-downstream".into()).spawn(move || scheduler.run(rx)).map_err(
                |source| LiveError::Io { what: "starting the downstream's scheduler thread".into(), error: source },
            )?;

        let shared = Arc::new(Shared {
            counters,
            faults: Mutex::new(Faults::default()),
            tx,
            health: cfg.health,
            clock: cfg.clock,
            noop: cfg.noop,
        });
        let app = Router::new()
            .route("/work", post(work))
            .route("/admin/faults", get(get_faults).post(post_faults))
            .route("/admin/state", get(get_state))
            .with_state(shared.clone());
        let (server_stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Downstream { addr, shared, thread: Some(thread), server_stop: Some(server_stop), server: Some(server) })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests in service, served and answered 500, model time and health now.
    pub fn stats(&self) -> DownstreamStats {
        self.shared.stats()
    }

    /// Set the faults, in force from now on (requests in service continue under them).
    /// Refused, naming the field, when a value is out of range.
    pub fn set_faults(&self, f: Faults) -> Result<(), RangeError> {
        self.shared.set_faults(f)
    }

    /// The faults in force.
    pub fn faults(&self) -> Faults {
        *self.shared.faults_lock()
    }

    /// In-process submission to the scheduler.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn submitter(&self) -> Submitter {
        Submitter { tx: self.shared.tx.clone() }
    }

    /// How late the scheduler's timed wake-ups were so far.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn precision(&self) -> Precision {
        use std::sync::atomic::Ordering::Relaxed;
        let c = &self.shared.counters;
        let wakes = c.wakes.load(Relaxed);
        let late = c.late_ns.load(Relaxed) as f64;
        Precision {
            wakes,
            mean_late_us: if wakes > 0 { late / wakes as f64 / 1e3 } else { 0.0 },
            max_late_us: c.max_late_ns.load(Relaxed) as f64 / 1e3,
        }
    }

    /// Stop the scheduler (requests waiting are answered 503), then the server, and wait
    /// for both (the server at most 2 s, then it is aborted).
    pub async fn shutdown(mut self) {
        let _ = self.shared.tx.send(Msg::Shutdown);
        if let Some(thread) = self.thread.take() {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
        if let Some(stop) = self.server_stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut server) = self.server.take() {
            if tokio::time::timeout(Duration::from_secs(2), &mut server).await.is_err() {
                server.abort();
            }
        }
    }
}

impl Drop for Downstream {
    fn drop(&mut self) {
        let _ = self.shared.tx.send(Msg::Shutdown);
        if let Some(thread) = self.thread.take() {
            // The thread leaves its loop at the message: the join is short.
            let _ = thread.join();
        }
        if let Some(stop) = self.server_stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            server.abort();
        }
    }
}

type App = State<Arc<Shared>>;

async fn work(State(shared): App, _body: Bytes) -> Response {
    if shared.noop {
        shared.counters.served.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return StatusCode::OK.into_response();
    }
    let done = Submitter { tx: shared.tx.clone() }.submit().await;
    match done {
        None => (StatusCode::SERVICE_UNAVAILABLE, "downstream shutting down").into_response(),
        Some(c) if c.full => {
            (StatusCode::SERVICE_UNAVAILABLE, "downstream full: every worker busy, queue full").into_response()
        }
        Some(c) => {
            if !c.added_latency.is_zero() {
                tokio::time::sleep(c.added_latency).await;
            }
            if c.error {
                (StatusCode::INTERNAL_SERVER_ERROR, "injected error").into_response()
            } else {
                StatusCode::OK.into_response()
            }
        }
    }
}

async fn get_faults(State(shared): App) -> Json<Faults> {
    Json(*shared.faults_lock())
}

async fn post_faults(State(shared): App, body: Bytes) -> Response {
    let f = match Faults::from_json(&body) {
        Ok(f) => f,
        Err(message) => return (StatusCode::BAD_REQUEST, message).into_response(),
    };
    match shared.set_faults(f) {
        Ok(()) => Json(f).into_response(),
        Err(e) => (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    }
}

async fn get_state(State(shared): App) -> Json<DownstreamStats> {
    Json(shared.stats())
}

/// Check that a downstream at `url` (`http://HOST:PORT…`) accepts connections, within 2 s.
pub async fn probe(url: &str) -> Result<(), LiveError> {
    let err = |message: String| LiveError::Downstream { url: url.to_string(), message };
    let rest =
        url.strip_prefix("http://").ok_or_else(|| err("expected http://HOST:PORT (https is not supported)".into()))?;
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() {
        return Err(err("no host in the URL".into()));
    }
    let target = if authority.contains(':') { authority.to_string() } else { format!("{authority}:80") };
    match tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(&target)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(err(format!("cannot connect: {e}"))),
        Err(_) => Err(err("no answer to a connection within 2 s".into())),
    }
}
