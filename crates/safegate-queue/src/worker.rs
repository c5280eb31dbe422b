//! The worker: your handler on the jobs of a queue, at the concurrency the controller
//! publishes, with heartbeats, a reaper, retries and a graceful shutdown.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use tokio::sync::Notify;

use crate::keys::GROUP;
use crate::lane::Lane;
use crate::{Queue, QueueError};

/// One delivery of a job to your handler.
#[derive(Debug, Clone)]
pub struct Job<T> {
    /// The job's id in the stream (a retry or a redelivery gets a new one).
    pub id: String,
    /// The payload, decoded.
    pub payload: T,
    /// Which attempt this is: 1 for the first delivery.
    pub attempt: u32,
    /// When it was first enqueued.
    pub enqueued_at: SystemTime,
}

/// A handler's failure: retried after a backoff (the default, and what `?` gives from any
/// error) until the queue's `max_attempts`, then dead-lettered; or fatal, failed at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobError {
    message: String,
    fatal: bool,
}

impl JobError {
    /// A failure worth another attempt.
    pub fn retry(message: impl std::fmt::Display) -> Self {
        Self { message: message.to_string(), fatal: false }
    }

    /// A failure no attempt will fix (a malformed job): failed for good, kept in the dead
    /// letters.
    pub fn fatal(message: impl std::fmt::Display) -> Self {
        Self { message: message.to_string(), fatal: true }
    }

    /// Whether it is fatal.
    pub fn is_fatal(&self) -> bool {
        self.fatal
    }

    /// Its message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for JobError {
    fn from(e: E) -> Self {
        JobError::retry(e)
    }
}

/// What a worker did, from start to shutdown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerReport {
    /// Jobs done.
    pub completed: u64,
    /// Failed attempts put back for a retry.
    pub retried: u64,
    /// Jobs dead-lettered after their last attempt.
    pub dead: u64,
    /// Jobs failed for good.
    pub failed: u64,
    /// Acknowledgements that counted nothing: the job had been given back meanwhile (this
    /// worker was taken for dead) and another delivery of it counts.
    pub late: u64,
    /// Redis errors survived (the lane waited and went on).
    pub errors: u64,
    /// Whether shutdown left jobs unfinished (the drain's time ran out): they are given
    /// back once this worker's heartbeat expires.
    pub abandoned: bool,
}

/// A pool of lanes consuming one queue; each lane runs one job at a time.
#[derive(Debug, Clone)]
pub struct Worker {
    queue: Queue,
    lanes: usize,
    name: String,
    heartbeat: Duration,
    poll: Duration,
    grant_poll: Option<Duration>,
    drain: Duration,
    job_timeout: Option<Duration>,
}

#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) stop: AtomicBool,
    pub(crate) stopped: Notify,
    /// The concurrency published (−1: all lanes).
    pub(crate) conc: AtomicI64,
    /// Fired when `conc` changes: lanes waiting for a slot try again at once.
    pub(crate) conc_changed: Notify,
    /// Each lane's worker slot.
    pub(crate) slots: Mutex<Vec<Option<u32>>>,
    pub(crate) completed: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) dead: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) late: AtomicU64,
    pub(crate) errors: AtomicU64,
}

impl Worker {
    /// A worker on `queue` with 8 lanes, a 5-s heartbeat, a 30-s drain at shutdown, and a
    /// name unique to this process.
    pub fn new(queue: &Queue) -> Self {
        let t = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        Self {
            queue: queue.clone(),
            lanes: 8,
            name: format!("w{}-{:x}", std::process::id(), t & 0xff_ffff),
            heartbeat: Duration::from_secs(5),
            poll: Duration::from_millis(500),
            grant_poll: None,
            drain: Duration::from_secs(30),
            job_timeout: None,
        }
    }

    /// Lanes: jobs this worker runs at once at most (1 to 4096).
    pub fn lanes(mut self, n: usize) -> Self {
        self.lanes = n;
        self
    }

    /// The worker's name (its lanes consume as `NAME/i`; 1 to 64 of `A–Z a–z 0–9 _ . -`).
    /// Two live workers must not share one.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How long the worker's heartbeat lives (refreshed every third of it, at least every
    /// 250 ms): a worker
    /// silent for this long is taken for dead and its jobs are given back (0.1 s to 1 h).
    pub fn heartbeat(mut self, ttl: Duration) -> Self {
        self.heartbeat = ttl;
        self
    }

    /// Stop a handler that runs longer than `d` (its task is aborted) and fail the attempt:
    /// it is retried with backoff, and dead-lettered after `max_attempts` like any failure.
    /// Default: no limit (a handler that never returns holds its lane).
    pub fn job_timeout(mut self, d: Duration) -> Self {
        self.job_timeout = Some(d);
        self
    }

    /// How long a lane's read of the stream blocks when no job waits (1 ms to 60 s; default
    /// 500 ms). Shutdown waits at most this long for an idle lane; a shorter block costs a
    /// round trip to Redis per lane each time it runs out.
    pub fn poll(mut self, d: Duration) -> Self {
        self.poll = d;
        self
    }

    /// How often the concurrency the controller publishes is read (1 ms to 60 s; default:
    /// the heartbeat's cadence, a third of it and at most 250 ms). A lane waiting for a
    /// slot tries again as soon as a read sees it change; follow a fast controller (a
    /// period of milliseconds) with a poll of its order.
    pub fn grant_poll(mut self, d: Duration) -> Self {
        self.grant_poll = Some(d);
        self
    }

    /// How long shutdown waits for the jobs in flight to finish.
    pub fn drain(mut self, d: Duration) -> Self {
        self.drain = d;
        self
    }

    fn check(&self) -> Result<(), QueueError> {
        if !(1..=4096).contains(&self.lanes) {
            return Err(QueueError::setting("lanes", self.lanes, "1 to 4096"));
        }
        if crate::keys::check_name(&self.name).is_err() {
            return Err(QueueError::setting("worker name", format!("{:?}", self.name), "1 to 64 of A-Z a-z 0-9 _ . -"));
        }
        if self.job_timeout.is_some_and(|d| d.is_zero()) {
            return Err(QueueError::setting("job timeout", "0 s", "more than 0"));
        }
        if !(Duration::from_millis(100)..=Duration::from_secs(3600)).contains(&self.heartbeat) {
            return Err(QueueError::setting("heartbeat", format!("{:?}", self.heartbeat), "0.1 s to 1 h"));
        }
        let cadence = Duration::from_millis(1)..=Duration::from_secs(60);
        if !cadence.contains(&self.poll) {
            return Err(QueueError::setting("poll", format!("{:?}", self.poll), "1 ms to 60 s"));
        }
        if let Some(g) = self.grant_poll.filter(|g| !cadence.contains(g)) {
            return Err(QueueError::setting("grant poll", format!("{g:?}"), "1 ms to 60 s"));
        }
        Ok(())
    }

    /// [`Worker::run`] with a [`tower::Service`](tower_service::Service) as the handler:
    /// each job goes to a clone of `service`, once it is ready, so tower's layers (timeouts,
    /// rate limits, retries of your own, tracing) wrap a job as they wrap a request. Its
    /// error converts into a [`JobError`] (any `std::error::Error` converts as a retry; map
    /// tower's boxed errors with `map_err`).
    ///
    /// ```no_run
    /// # async fn demo(queue: safegate_queue::Queue) -> Result<(), safegate_queue::QueueError> {
    /// use safegate_queue::{Job, JobError, Worker};
    /// let service = tower::service_fn(|job: Job<String>| async move {
    ///     println!("sending {}", job.payload);
    ///     Ok::<(), JobError>(())
    /// });
    /// Worker::new(&queue).run_service(service, async { let _ = tokio::signal::ctrl_c().await; }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn run_service<T, S>(
        self,
        service: S,
        shutdown: impl Future<Output = ()>,
    ) -> Result<WorkerReport, QueueError>
    where
        T: DeserializeOwned + Send + 'static,
        S: tower_service::Service<Job<T>, Response = ()> + Clone + Send + Sync + 'static,
        S::Future: Send + 'static,
        S::Error: Into<JobError> + 'static,
    {
        self.run(
            move |job: Job<T>| {
                let mut svc = service.clone();
                async move {
                    std::future::poll_fn(|cx| svc.poll_ready(cx)).await.map_err(Into::into)?;
                    svc.call(job).await.map_err(Into::into)
                }
            },
            shutdown,
        )
        .await
    }

    /// Run `handler` on the queue's jobs until `shutdown` completes, then stop taking
    /// jobs and wait for those in flight (at most the drain time). Returns what it did.
    ///
    /// Delivery is at least once: a job is acknowledged after its handler returns, and a
    /// worker that dies holding jobs has them given back by another's reaper.
    pub async fn run<T, H, F>(self, handler: H, shutdown: impl Future<Output = ()>) -> Result<WorkerReport, QueueError>
    where
        T: DeserializeOwned + Send + 'static,
        H: Fn(Job<T>) -> F + Send + Sync + 'static,
        F: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        self.check()?;
        let shared = Arc::new(Shared { conc: AtomicI64::new(-1), ..Shared::default() });
        *shared.slots.lock().unwrap_or_else(|p| p.into_inner()) = vec![None; self.lanes];
        // The first beat before any job is taken: a reaper must not take this worker for dead.
        beat(&self.queue, &self.name, &shared, self.heartbeat).await?;
        // And the published concurrency before any lane takes a job.
        shared.conc.store(concurrency(&self.queue).await?, Ordering::Relaxed);
        let upkeep = AbortOnDrop({
            let (q, name, shared, ttl) = (self.queue.clone(), self.name.clone(), shared.clone(), self.heartbeat);
            tokio::spawn(async move { upkeep(q, name, shared, ttl).await })
        });
        let grants = AbortOnDrop({
            let (q, shared) = (self.queue.clone(), shared.clone());
            let every = self.grant_poll.unwrap_or_else(|| beat_every(self.heartbeat));
            tokio::spawn(async move { follow_grant(q, shared, every).await })
        });
        let handler = Arc::new(handler);
        let mut lanes = tokio::task::JoinSet::new();
        for i in 0..self.lanes {
            let reader = self.queue.dedicated().await?;
            let lane = Lane {
                queue: self.queue.clone(),
                consumer: format!("{}/{i}", self.name),
                i,
                shared: shared.clone(),
                timeout: self.job_timeout,
            };
            let (h, poll, ttl) = (handler.clone(), self.poll, self.heartbeat);
            lanes.spawn(async move { lane.run(reader, h, poll, ttl).await });
        }
        // Aborted when `run` returns or is dropped: a worker that is gone stops beating.
        shutdown.await;
        shared.stop.store(true, Ordering::SeqCst);
        shared.stopped.notify_waiters();
        let drained =
            tokio::time::timeout(self.drain + self.poll, async { while lanes.join_next().await.is_some() {} })
                .await
                .is_ok();
        if !drained {
            lanes.abort_all();
        }
        drop(upkeep);
        drop(grants);
        if drained {
            // Nothing is held: the heartbeat goes, and the reaper forgets the lanes.
            let mut c = self.queue.con.clone();
            let _: redis::RedisResult<()> =
                redis::cmd("DEL").arg(format!("{}{}", self.queue.keys.hb_prefix, self.name)).query_async(&mut c).await;
        }
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Ok(WorkerReport {
            completed: n(&shared.completed),
            retried: n(&shared.retried),
            dead: n(&shared.dead),
            failed: n(&shared.failed),
            late: n(&shared.late),
            errors: n(&shared.errors),
            abandoned: !drained,
        })
    }
}

/// A task aborted when this is dropped.
pub(crate) struct AbortOnDrop<T>(pub(crate) tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Refresh the worker's heartbeat and every lane's slot (a lost slot is dropped).
async fn beat(q: &Queue, name: &str, shared: &Shared, ttl: Duration) -> Result<(), QueueError> {
    let hb = format!("{}{name}", q.keys.hb_prefix);
    let ttl_ms = ttl.as_millis() as u64;
    let (lanes, held): (usize, Vec<(usize, u32)>) = {
        let s = shared.slots.lock().unwrap_or_else(|p| p.into_inner());
        (s.len(), s.iter().enumerate().filter_map(|(i, s)| s.map(|s| (i, s))).collect())
    };
    // The heartbeat carries the lane count: lanes of an earlier run under this name beyond
    // it are reaped at once (their jobs go back to the stream).
    let _: i64 = q.fcall("sg_beat", &[&hb], &(&name, &ttl_ms, &lanes)).await?;
    for (i, slot) in held {
        let key = format!("{}{slot}", q.keys.slot_prefix);
        let consumer = format!("{name}/{i}");
        let ok: i64 = q.fcall("sg_beat", &[&hb, &key], &(&consumer, &ttl_ms, &lanes)).await?;
        if ok == 0 {
            let mut s = shared.slots.lock().unwrap_or_else(|p| p.into_inner());
            if s[i] == Some(slot) {
                s[i] = None;
            }
        }
    }
    Ok(())
}

/// The workers allowed at once, as published (−1: all, or none published). A grant whose
/// lease ran out keeps its concurrency: without a fresh grant it never rises.
async fn concurrency(q: &Queue) -> Result<i64, QueueError> {
    let mut c = q.con.clone();
    let v: Option<i64> = redis::cmd("HGET")
        .arg(&q.keys.gate)
        .arg("conc")
        .query_async(&mut c)
        .await
        .map_err(q.err("reading the grant"))?;
    Ok(v.unwrap_or(-1))
}

/// How often a worker beats: a third of its heartbeat's life, at most 250 ms.
fn beat_every(ttl: Duration) -> Duration {
    (ttl / 3).min(Duration::from_millis(250))
}

/// Read the published concurrency every `every`; wake the lanes waiting for a slot when it
/// changes.
async fn follow_grant(q: Queue, shared: Arc<Shared>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match concurrency(&q).await {
            Ok(v) => {
                if shared.conc.swap(v, Ordering::Relaxed) != v {
                    shared.conc_changed.notify_waiters();
                }
            }
            Err(_) => {
                shared.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The worker's background duties: heartbeats, due retries into the stream, and reaping
/// the jobs of dead workers (every quarter of the heartbeat's life, at most every second:
/// a dead worker's jobs go back within 1.25 of its heartbeat).
async fn upkeep(q: Queue, name: String, shared: Arc<Shared>, ttl: Duration) {
    let mut tick = tokio::time::interval(beat_every(ttl));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let reap_every = (ttl / 4).min(Duration::from_secs(1));
    let mut reaped = tokio::time::Instant::now();
    let k = &q.keys;
    let promote_keys = [&*k.delayed, &k.jobs, &k.count, &k.dead, &k.config, &k.gate];
    loop {
        tick.tick().await;
        let mut ok = beat(&q, &name, &shared, ttl).await.is_ok();
        for _ in 0..10 {
            match q.fcall::<i64, _>("sg_promote", &promote_keys, &100).await {
                Ok(100) => continue,
                Ok(_) => break,
                Err(_) => {
                    ok = false;
                    break;
                }
            }
        }
        if reaped.elapsed() >= reap_every {
            reaped = tokio::time::Instant::now();
            let keys = [&*q.keys.jobs, &q.keys.count, &q.keys.dead, &q.keys.config];
            ok &= q.fcall::<i64, _>("sg_reap", &keys, &(&q.keys.hb_prefix, &GROUP, &100)).await.is_ok();
        }
        if !ok {
            shared.errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}
