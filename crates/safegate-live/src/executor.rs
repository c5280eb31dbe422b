//! The executor pool: a [`safegate_queue::Worker`] whose handler calls the downstream (the
//! emulator or any HTTP service, or a transaction on PostgreSQL), at most as many at once
//! as the controller allows (docs/live.md §Executors).
//!
//! The pool is one user of the queue library: its lanes are the executors, each a
//! consumer of the stream's group named `INCARNATION/I` with a fresh incarnation per
//! process start (a restarted process never inherits a dead one's pending jobs by name;
//! the reaper gives those back). A lane takes a worker slot below the published
//! concurrency `k` before it reads, so at most `k` pull work across every process: the
//! seed's lever (`n ≤ C` serves 150 req/s, `n = 8` only 75). Heartbeats, the reaper, and
//! recording an outcome beside the next read are the library's.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use safegate_queue::{Job, JobError, Queue, Worker, WorkerReport};
use tokio::sync::oneshot;

use crate::pg::Pg;
use crate::LiveError;

/// What an executor does with a job.
#[derive(Debug, Clone, Default)]
pub enum Backend {
    /// Nothing: a no-op job, for measuring the plumbing alone.
    #[default]
    Noop,
    /// `POST BASE/work?job=ID` on an HTTP downstream (`http://127.0.0.1:PORT`); a 2xx
    /// answer is done.
    Http(String),
    /// One transaction on PostgreSQL ([`Pg::call`], its serialization failures retried
    /// inside it as an application does); done when it commits.
    Postgres(Pg),
}

/// How an executor pool runs.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// Executors in this process (the worker's lanes).
    pub executors: u32,
    /// What a job is.
    pub backend: Backend,
    /// Longest wait for the downstream before the attempt counts as failed \[wall\] (a
    /// PostgreSQL transaction past it is left to finish on its connection).
    pub timeout: Duration,
    /// Heartbeat time-to-live \[wall\]: a consumer silent this long is dead and its jobs go
    /// back (the reaper runs every quarter of it).
    pub heartbeat: Duration,
    /// Longest blocking read \[wall\].
    pub block: Duration,
    /// How often the published concurrency is read \[wall\].
    pub poll: Duration,
    /// This process's incarnation id (the worker's name).
    pub incarnation: String,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        Self {
            executors: 8,
            backend: Backend::Noop,
            timeout: Duration::from_secs(5),
            heartbeat: Duration::from_secs(1),
            block: Duration::from_millis(50),
            poll: Duration::from_millis(5),
            incarnation: new_incarnation(),
        }
    }
}

/// A fresh incarnation id: the process id and the wall clock in microseconds.
pub fn new_incarnation() -> String {
    let us = SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros());
    format!("x{}-{:x}", std::process::id(), us)
}

/// Counters of one pool, in this process.
#[derive(Debug, Default)]
pub struct PoolStats {
    /// Jobs being served now.
    pub busy: AtomicU32,
    /// Times in the system of the jobs served here, from their admission to the end of
    /// their call \[µs, wall\] (at most 5,000,000 kept).
    pub sojourn_us: Mutex<Vec<u64>>,
}

/// A running pool; [`Pool::stop`] lets each executor finish its job and leave.
#[derive(Debug)]
pub struct Pool {
    task: tokio::task::JoinHandle<Result<WorkerReport, safegate_queue::QueueError>>,
    stop: oneshot::Sender<()>,
    stats: Arc<PoolStats>,
}

/// The downstream call of one job.
#[derive(Clone)]
struct Call {
    backend: Arc<Backend>,
    timeout: Duration,
    http: Client<HttpConnector, Empty<Bytes>>,
    stats: Arc<PoolStats>,
}

impl Call {
    /// One attempt at the downstream: done on a 2xx answer within the timeout; anything
    /// else fails the job for good (the load generator decides whether it comes back as a
    /// retry, as the seed's clients do).
    async fn run(self, job: Job<String>) -> Result<(), JobError> {
        self.stats.busy.fetch_add(1, Ordering::Relaxed);
        let outcome = self.call(&job.id).await;
        self.stats.busy.fetch_sub(1, Ordering::Relaxed);
        let sojourn = SystemTime::now().duration_since(job.enqueued_at).unwrap_or_default();
        if let Ok(mut v) = self.stats.sojourn_us.lock() {
            if v.len() < 5_000_000 {
                v.push(sojourn.as_micros() as u64);
            }
        }
        outcome
    }

    async fn call(&self, id: &str) -> Result<(), JobError> {
        let base = match &*self.backend {
            Backend::Noop => return Ok(()),
            Backend::Http(base) => base,
            Backend::Postgres(pg) => {
                return match tokio::time::timeout(self.timeout, pg.clone().call()).await {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(e)) => Err(JobError::fatal(e.to_string())),
                    Err(_) => Err(JobError::fatal(format!("no commit within {:?}", self.timeout))),
                };
            }
        };
        let uri = format!("{base}/work?job={id}");
        let req = hyper::Request::post(uri).body(Empty::<Bytes>::new()).map_err(JobError::fatal)?;
        match tokio::time::timeout(self.timeout, self.http.request(req)).await {
            Ok(Ok(resp)) if resp.status().is_success() => Ok(()),
            Ok(Ok(resp)) => Err(JobError::fatal(format!("the downstream answered {}", resp.status()))),
            Ok(Err(e)) => Err(JobError::fatal(format!("the downstream: {e}"))),
            Err(_) => Err(JobError::fatal(format!("no answer within {:?}", self.timeout))),
        }
    }
}

impl Pool {
    /// Start `cfg.executors` executors on `queue`.
    pub async fn start(queue: Queue, cfg: ExecutorConfig) -> Result<Self, LiveError> {
        let stats = Arc::new(PoolStats::default());
        let http = Client::builder(TokioExecutor::new()).pool_max_idle_per_host(64).build(HttpConnector::new());
        let call = Call { backend: Arc::new(cfg.backend.clone()), timeout: cfg.timeout, http, stats: stats.clone() };
        let (stop, stopped) = oneshot::channel::<()>();
        let worker = Worker::new(&queue)
            .name(cfg.incarnation.clone())
            .lanes(cfg.executors as usize)
            .heartbeat(cfg.heartbeat)
            .poll(cfg.block)
            .grant_poll(cfg.poll)
            // `stop` bounds the drain itself (it aborts the worker past its grace).
            .drain(Duration::from_secs(3600));
        let task = tokio::spawn(worker.run(move |job: Job<String>| call.clone().run(job), async move {
            let _ = stopped.await;
        }));
        Ok(Self { task, stop, stats })
    }

    /// The pool's counters.
    pub fn stats(&self) -> Arc<PoolStats> {
        self.stats.clone()
    }

    /// Ask every executor to finish its job and leave; wait at most `grace`. Executors
    /// still inside a job after `grace` are dropped: their jobs stay pending and the
    /// reaper gives them back once their heartbeat expires. Returns the worker's report
    /// (`None`: dropped, or it failed).
    pub async fn stop(self, grace: Duration) -> Option<WorkerReport> {
        let _ = self.stop.send(());
        let mut task = self.task;
        match tokio::time::timeout(grace, &mut task).await {
            Ok(Ok(Ok(report))) => Some(report),
            Ok(_) => None,
            Err(_) => {
                task.abort();
                None
            }
        }
    }
}
