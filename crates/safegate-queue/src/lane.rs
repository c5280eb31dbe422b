//! A worker's lane: one consumer of the stream, one job at a time.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::streams::{StreamReadOptions, StreamReadReply};
use redis::AsyncCommands;
use serde::de::DeserializeOwned;

use crate::conn::Con;
use crate::keys::GROUP;
use crate::worker::Shared;
use crate::{Job, JobError, Queue, QueueError};

pub(crate) struct Lane {
    pub(crate) queue: Queue,
    pub(crate) consumer: String,
    pub(crate) i: usize,
    pub(crate) shared: Arc<Shared>,
    /// A handler running longer is stopped and its attempt failed (retried).
    pub(crate) timeout: Option<Duration>,
}

/// One delivery as read from the stream.
struct Delivery {
    id: String,
    payload: String,
    attempt: u32,
    /// When it entered the stream or first was enqueued (`first`, else `at`) \[µs\].
    at_us: u64,
    /// The entry's `at` field as read, passed back to `sg_ack`.
    entered: Option<String>,
}

/// A handler's outcome, to be recorded.
struct Outcome {
    id: String,
    entered: Option<String>,
    result: Result<(), JobError>,
    service_us: u64,
}

impl Lane {
    fn slot(&self) -> Option<u32> {
        self.shared.slots.lock().unwrap_or_else(|p| p.into_inner())[self.i]
    }

    fn set_slot(&self, s: Option<u32>) {
        self.shared.slots.lock().unwrap_or_else(|p| p.into_inner())[self.i] = s;
    }

    /// Give the lane's slot up (only if it is still this lane's).
    async fn release(&self, slot: u32) {
        self.set_slot(None);
        let key = format!("{}{slot}", self.queue.keys.slot_prefix);
        let mut c = self.queue.con.clone();
        let held: redis::RedisResult<Option<String>> = redis::cmd("GET").arg(&key).query_async(&mut c).await;
        if held.ok().flatten().as_deref() == Some(self.consumer.as_str()) {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(&key).query_async(&mut c).await;
        }
    }

    /// Whether the lane may take a job now: it holds a slot below the published
    /// concurrency (or none is published).
    async fn admitted(&self, ttl: Duration) -> Result<bool, QueueError> {
        let conc = self.shared.conc.load(Ordering::Relaxed);
        let slot = self.slot();
        if conc < 0 {
            if let Some(s) = slot {
                self.release(s).await;
            }
            return Ok(true);
        }
        match slot {
            Some(s) if i64::from(s) < conc => return Ok(true),
            Some(s) => self.release(s).await,
            None => {}
        }
        let q = &self.queue;
        let got: i64 = q
            .fcall("sg_slot", &[&q.keys.jobs], &(&q.keys.slot_prefix, &self.consumer, &conc, &(ttl.as_millis() as u64)))
            .await?;
        let got = u32::try_from(got).ok();
        self.set_slot(got);
        Ok(got.is_some())
    }

    pub(crate) async fn run<T, H, F>(self, mut reader: Con, handler: Arc<H>, poll: Duration, ttl: Duration)
    where
        T: DeserializeOwned + Send + 'static,
        H: Fn(Job<T>) -> F + Send + Sync + 'static,
        F: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        // At start (a worker restarted under the same name within its heartbeat's life) and
        // after an error, the lane may hold jobs whose outcome was never recorded: it reads
        // its own pending entries first (`XREADGROUP … 0`) and runs them again (at least
        // once), until none.
        let mut own = true;
        // The last job's outcome is recorded beside the next read and the next handler (in
        // this task, no spawn), so two jobs are one round trip to Redis apart, not two; at
        // most one outcome is outstanding, and its job stays pending until it is recorded.
        let mut unrecorded: Option<Outcome> = None;
        while !self.shared.stop.load(Ordering::SeqCst) {
            let next = async {
                if !self.admitted(ttl).await? {
                    // No slot free: wait until the published concurrency changes, a little
                    // (a slot freed elsewhere), or shutdown.
                    let changed = self.shared.conc_changed.notified();
                    let stopped = self.shared.stopped.notified();
                    let _ = tokio::time::timeout(Duration::from_millis(50), async {
                        tokio::select! {
                            _ = changed => {}
                            _ = stopped => {}
                        }
                    })
                    .await;
                    return Ok::<_, QueueError>(None);
                }
                match self.fetch(&mut reader, poll, own).await? {
                    Some(d) => Ok(Some(self.handle(d, &*handler).await)),
                    None => {
                        own = false;
                        Ok(None)
                    }
                }
            };
            let record = async {
                match unrecorded.take() {
                    Some(o) => self.record(o).await,
                    None => Ok(()),
                }
            };
            let (recorded, next) = tokio::join!(record, next);
            let failed = recorded.is_err();
            match next {
                Ok(o) => unrecorded = o,
                Err(_) => {
                    own = true;
                    self.shared.errors.fetch_add(1, Ordering::Relaxed);
                    let _ = tokio::time::timeout(Duration::from_millis(200), self.shared.stopped.notified()).await;
                    if let Ok(r) = self.queue.dedicated().await {
                        reader = r;
                    }
                }
            }
            if failed {
                // Only at shutdown (recording retries until then): the job stays pending.
                break;
            }
        }
        if let Some(o) = unrecorded.take() {
            let _ = self.record(o).await;
        }
        if let Some(s) = self.slot() {
            self.release(s).await;
        }
    }

    /// The next new job (waiting at most `poll`), or with `own` this lane's oldest pending
    /// one (at once).
    async fn fetch(&self, reader: &mut Con, poll: Duration, own: bool) -> Result<Option<Delivery>, QueueError> {
        let mut opts = StreamReadOptions::default().group(GROUP, &self.consumer).count(1);
        if !own {
            opts = opts.block(poll.as_millis().max(1) as usize);
        }
        let q = &self.queue;
        let id = if own { "0" } else { ">" };
        let reply: redis::RedisResult<Option<StreamReadReply>> =
            reader.xread_options(&[&q.keys.jobs], &[id], &opts).await;
        let reply = match reply {
            Ok(r) => r,
            Err(e) if e.code() == Some("NOGROUP") => {
                q.ensure_group().await?;
                return Ok(None);
            }
            Err(e) => return Err(q.err("reading the stream")(e)),
        };
        let Some(entry) = reply.and_then(|r| r.keys.into_iter().next()).and_then(|k| k.ids.into_iter().next()) else {
            return Ok(None);
        };
        let get = |f: &str| entry.map.get(f).and_then(|v| redis::from_redis_value_ref::<String>(v).ok());
        if get("job").is_none() {
            // A pending entry deleted meanwhile: nothing to run.
            return Ok(None);
        }
        Ok(Some(Delivery {
            payload: get("job").unwrap_or_default(),
            attempt: get("n").and_then(|n| n.parse::<u32>().ok()).unwrap_or(0).saturating_add(1),
            at_us: get("first").or_else(|| get("at")).and_then(|a| a.parse().ok()).unwrap_or(0),
            entered: get("at"),
            id: entry.id,
        }))
    }

    /// Run the handler on a delivery (its panics caught, within the job timeout).
    async fn handle<T, H, F>(&self, d: Delivery, handler: &H) -> Outcome
    where
        T: DeserializeOwned + Send + 'static,
        H: Fn(Job<T>) -> F,
        F: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        let start = std::time::Instant::now();
        let result = match serde_json::from_str::<T>(&d.payload) {
            Err(e) => Err(JobError::fatal(format!("the payload does not decode: {e}"))),
            Ok(payload) => {
                let job = Job {
                    id: d.id.clone(),
                    payload,
                    attempt: d.attempt,
                    enqueued_at: UNIX_EPOCH + Duration::from_micros(d.at_us),
                };
                // Run in the lane's task, its panics caught: a handler that panics fails its
                // attempt, not the lane; dropped with the lane (a worker dropped or out of
                // drain time leaves no handler behind) or at the timeout. (A task per job
                // cost a spawn and a wake-up per job for the same guarantees.)
                let limit = self.timeout.unwrap_or(Duration::MAX);
                let called = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(job)));
                let run = async move {
                    match called {
                        Ok(fut) => tokio::time::timeout(limit, CatchUnwind(Box::pin(fut))).await,
                        Err(panic) => Ok(Err(panic)),
                    }
                };
                match run.await {
                    Ok(Ok(r)) => r,
                    Ok(Err(panic)) => Err(JobError::retry(format!("the handler panicked: {}", panic_message(&*panic)))),
                    Err(_) => Err(JobError::retry(format!("the handler ran past the job timeout of {limit:?}"))),
                }
            }
        };
        Outcome { id: d.id, entered: d.entered, result, service_us: start.elapsed().as_micros() as u64 }
    }

    /// Record an outcome (`sg_ack` or `sg_fail`) and count it.
    async fn record(&self, o: Outcome) -> Result<(), QueueError> {
        let q = &self.queue;
        let s = &self.shared;
        match o.result {
            Ok(()) => {
                let keys = [&*q.keys.jobs, &q.keys.count];
                let entered = o.entered.as_deref().unwrap_or("");
                let args = (&o.id, GROUP, o.service_us, entered);
                let n: i64 = self.retrying(|| q.fcall("sg_ack", &keys, &args)).await?;
                if n == 0 { &s.late } else { &s.completed }.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                let keys = [&*q.keys.jobs, &q.keys.count, &q.keys.delayed, &q.keys.dead, &q.keys.config, &q.keys.gate];
                let fatal = if e.is_fatal() { "1" } else { "0" };
                let u = jitter(&o.id);
                let args = (&o.id, GROUP, e.message(), fatal, o.service_us, u);
                let n: i64 = self.retrying(|| q.fcall("sg_fail", &keys, &args)).await?;
                match n {
                    1 => &s.retried,
                    2 => &s.dead,
                    3 => &s.failed,
                    _ => &s.late,
                }
                .fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Record a job's outcome, trying again every 200 ms through a Redis outage (a restart,
    /// a server over its memory limit) without running the handler again, until it is
    /// recorded or the worker stops; a job whose outcome was never recorded stays pending
    /// under this lane, and is run again (at least once) by the next run of this worker or
    /// given back by a reaper once its heartbeat has expired.
    async fn retrying<Fut>(&self, call: impl Fn() -> Fut) -> Result<i64, QueueError>
    where
        Fut: Future<Output = Result<i64, QueueError>>,
    {
        loop {
            match call().await {
                Ok(n) => return Ok(n),
                Err(e) if self.shared.stop.load(Ordering::SeqCst) => return Err(e),
                Err(_) => {
                    self.shared.errors.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }
}

/// A draw in \[0, 1) for a retry's jitter, from the job's id and the clock (no RNG needed).
fn jitter(id: &str) -> f64 {
    let t = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos() as u64);
    let mut h = t ^ 0x9e37_79b9_7f4a_7c15;
    for b in id.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// A future whose panic is its output's `Err` (the payload).
struct CatchUnwind<F>(std::pin::Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn std::any::Any + Send>>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        let fut = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(std::task::Poll::Ready(v)) => std::task::Poll::Ready(Ok(v)),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(panic) => std::task::Poll::Ready(Err(panic)),
        }
    }
}

/// A panic's message, when it has one.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}
