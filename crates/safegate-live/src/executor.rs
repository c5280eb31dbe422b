//! The executor pool: consumers of the backlog that call the downstream, at most as many
//! at once as the controller allows (docs/live.md §Executors).
//!
//! Each executor is one consumer of the stream's group, named `INCARNATION-I` with a fresh
//! incarnation id per process start, so a restarted process never inherits a dead one's
//! pending jobs by name (the reaper gives those back). Each holds a leased slot
//! `0 … P − 1`; an executor whose slot is at or above the published concurrency `k` waits,
//! so at most `k` pull work: the seed's lever (`n ≤ C` serves 150 req/s, `n = 8` only 75).
//! A heartbeat task keeps every consumer's heartbeat and slot alive and runs the reaper.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::backlog::Backlog;
use crate::LiveError;

/// How an executor pool runs.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// Executors in this process.
    pub executors: u32,
    /// Slots across every process: the pool's `P` (slots above the published concurrency
    /// wait).
    pub slots: u32,
    /// The downstream's base URL (`http://127.0.0.1:PORT`); `None`: no call (a no-op job,
    /// for measuring the plumbing alone).
    pub downstream: Option<String>,
    /// Longest wait for the downstream before the attempt counts as failed \[wall\].
    pub timeout: Duration,
    /// Heartbeat time-to-live \[wall\]: a consumer silent this long is dead and its jobs go
    /// back. Beats and reaping run every quarter of it.
    pub heartbeat: Duration,
    /// Longest blocking read \[wall\].
    pub block: Duration,
    /// How often the published concurrency is read \[wall\].
    pub poll: Duration,
    /// This process's incarnation id (part of every consumer name).
    pub incarnation: String,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        Self {
            executors: 8,
            slots: 8,
            downstream: None,
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
    let us = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros());
    format!("x{}-{:x}", std::process::id(), us)
}

/// Counters of one pool, in this process.
#[derive(Debug, Default)]
pub struct PoolStats {
    /// Jobs being served now.
    pub busy: AtomicU32,
    /// Jobs acknowledged as done.
    pub done: AtomicU64,
    /// Jobs acknowledged as failed.
    pub failed: AtomicU64,
    /// Acknowledgements that counted nothing (the job had been given back).
    pub late: AtomicU64,
    /// Redis errors survived (each retried).
    pub redis_errors: AtomicU64,
    /// Times in the system of jobs acknowledged here \[µs, wall\].
    pub sojourn_us: Mutex<Vec<u64>>,
}

/// A running pool; [`Pool::stop`] lets each executor finish its job and leave.
#[derive(Debug)]
pub struct Pool {
    tasks: JoinSet<()>,
    stop: watch::Sender<bool>,
    stats: Arc<PoolStats>,
}

#[derive(Debug, Default)]
struct Member {
    consumer: String,
    slot: Option<u32>,
}

impl Pool {
    /// Start `cfg.executors` executors on `backlog`.
    pub async fn start(backlog: Backlog, cfg: ExecutorConfig) -> Result<Self, LiveError> {
        let (stop, stop_rx) = watch::channel(false);
        let stats = Arc::new(PoolStats::default());
        let members: Arc<Mutex<Vec<Member>>> = Arc::new(Mutex::new(
            (0..cfg.executors).map(|i| Member { consumer: format!("{}-{i}", cfg.incarnation), slot: None }).collect(),
        ));
        let conc = backlog.concurrency().await?;
        let (conc_tx, conc_rx) = watch::channel(conc);
        let mut tasks = JoinSet::new();
        // The published concurrency, polled.
        {
            let b = backlog.clone();
            let mut stop = stop_rx.clone();
            let poll = cfg.poll;
            tasks.spawn(async move {
                let mut tick = tokio::time::interval(poll);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        _ = stop.changed() => break,
                        _ = tick.tick() => {
                            if let Ok(c) = b.concurrency().await {
                                conc_tx.send_if_modified(|v| if *v != c { *v = c; true } else { false });
                            }
                        }
                    }
                }
            });
        }
        // Heartbeats, slot renewals and the reaper.
        {
            let b = backlog.clone();
            let members = members.clone();
            let mut stop = stop_rx.clone();
            let ttl = cfg.heartbeat;
            let stats = stats.clone();
            tasks.spawn(async move {
                let mut tick = tokio::time::interval(ttl / 4);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        _ = stop.changed() => break,
                        _ = tick.tick() => {
                            let list: Vec<(usize, String, Option<u32>)> = members
                                .lock()
                                .map(|m| m.iter().enumerate().map(|(i, m)| (i, m.consumer.clone(), m.slot)).collect())
                                .unwrap_or_default();
                            for (i, consumer, slot) in list {
                                match b.beat(&consumer, slot, ttl).await {
                                    Ok(true) => {}
                                    Ok(false) => {
                                        if let Ok(mut m) = members.lock() {
                                            m[i].slot = None;
                                        }
                                    }
                                    Err(_) => {
                                        stats.redis_errors.fetch_add(1, Ordering::Relaxed);
                                    }
                                }
                            }
                            if b.reap(1000).await.is_err() {
                                stats.redis_errors.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                }
            });
        }
        let http = Client::builder(TokioExecutor::new()).pool_max_idle_per_host(64).build(HttpConnector::new());
        for i in 0..cfg.executors as usize {
            let ctx = Executor {
                b: backlog.clone(),
                cfg: cfg.clone(),
                members: members.clone(),
                index: i,
                stats: stats.clone(),
                http: http.clone(),
            };
            // Beat once before the first read, so the reaper never sees it without one.
            let consumer = format!("{}-{i}", cfg.incarnation);
            backlog.beat(&consumer, None, cfg.heartbeat).await?;
            let stop = stop_rx.clone();
            let conc = conc_rx.clone();
            tasks.spawn(async move { ctx.run(stop, conc).await });
        }
        Ok(Self { tasks, stop, stats })
    }

    /// The pool's counters.
    pub fn stats(&self) -> Arc<PoolStats> {
        self.stats.clone()
    }

    /// Ask every executor to finish its job and leave; wait at most `grace`. Executors
    /// still inside a job after `grace` are dropped: their jobs stay pending and the
    /// reaper gives them back once their heartbeat expires.
    pub async fn stop(mut self, grace: Duration) {
        let _ = self.stop.send(true);
        let deadline = tokio::time::Instant::now() + grace;
        while !self.tasks.is_empty() {
            match tokio::time::timeout_at(deadline, self.tasks.join_next()).await {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => {
                    self.tasks.abort_all();
                    break;
                }
            }
        }
    }
}

struct Executor {
    b: Backlog,
    cfg: ExecutorConfig,
    members: Arc<Mutex<Vec<Member>>>,
    index: usize,
    stats: Arc<PoolStats>,
    http: Client<HttpConnector, Empty<Bytes>>,
}

impl Executor {
    fn slot(&self) -> Option<u32> {
        self.members.lock().ok().and_then(|m| m[self.index].slot)
    }

    fn consumer(&self) -> String {
        format!("{}-{}", self.cfg.incarnation, self.index)
    }

    async fn run(self, mut stop: watch::Receiver<bool>, mut conc: watch::Receiver<Option<u32>>) {
        let consumer = self.consumer();
        let mut reader = None;
        let mut acking: Option<tokio::task::JoinHandle<()>> = None;
        let pause = |d: Duration| tokio::time::sleep(d);
        while !*stop.borrow() {
            let Some(slot) = self.slot() else {
                match self.b.take_slot(&consumer, self.cfg.slots, self.cfg.heartbeat).await {
                    Ok(Some(s)) => {
                        if let Ok(mut m) = self.members.lock() {
                            m[self.index].slot = Some(s);
                        }
                    }
                    Ok(None) => pause(Duration::from_millis(20)).await,
                    Err(_) => {
                        self.stats.redis_errors.fetch_add(1, Ordering::Relaxed);
                        pause(Duration::from_millis(50)).await;
                    }
                }
                continue;
            };
            let allowed = conc.borrow().unwrap_or(self.cfg.slots);
            if slot >= allowed {
                tokio::select! {
                    _ = conc.changed() => {}
                    _ = stop.changed() => {}
                    _ = pause(Duration::from_millis(50)) => {}
                }
                continue;
            }
            if reader.is_none() {
                match self.b.reader().await {
                    Ok(r) => reader = Some(r),
                    Err(_) => {
                        self.stats.redis_errors.fetch_add(1, Ordering::Relaxed);
                        pause(Duration::from_millis(50)).await;
                        continue;
                    }
                }
            }
            let Some(r) = reader.as_mut() else { continue };
            let d = match self.b.fetch(r, &consumer, self.cfg.block).await {
                Ok(Some(d)) => d,
                Ok(None) => continue,
                Err(_) => {
                    self.stats.redis_errors.fetch_add(1, Ordering::Relaxed);
                    reader = None;
                    pause(Duration::from_millis(50)).await;
                    continue;
                }
            };
            self.stats.busy.fetch_add(1, Ordering::Relaxed);
            let t0 = Instant::now();
            let ok = self.call(&d.id).await;
            let service = t0.elapsed();
            self.stats.busy.fetch_sub(1, Ordering::Relaxed);
            // The acknowledgement runs beside the next fetch and call (one at a time per
            // executor), so the gap between two jobs at the downstream is one round trip
            // to Redis, not two.
            if let Some(prev) = acking.take() {
                let _ = prev.await;
            }
            let ack = Acker { b: self.b.clone(), stats: self.stats.clone(), stop: stop.clone() };
            acking = Some(tokio::spawn(ack.ack(d.id, ok, service)));
        }
        if let Some(prev) = acking.take() {
            let _ = prev.await;
        }
        let _ = self.b.release(&consumer, self.slot()).await;
    }

    /// One attempt at the downstream: true on a 2xx answer within the timeout.
    async fn call(&self, id: &str) -> bool {
        let Some(base) = &self.cfg.downstream else { return true };
        let uri = format!("{base}/work?job={id}");
        let Ok(req) = hyper::Request::post(uri).body(Empty::<Bytes>::new()) else { return false };
        match tokio::time::timeout(self.cfg.timeout, self.http.request(req)).await {
            Ok(Ok(resp)) => resp.status().is_success(),
            _ => false,
        }
    }
}

/// Acknowledges one job, retrying until Redis takes it (or the pool stops: then the job
/// stays pending and the reaper gives it back).
struct Acker {
    b: Backlog,
    stats: Arc<PoolStats>,
    stop: watch::Receiver<bool>,
}

impl Acker {
    async fn ack(self, id: String, ok: bool, service: Duration) {
        let mut tries = 0u32;
        loop {
            match self.b.ack_timed(&id, ok, service).await {
                Ok(Some(sojourn)) => {
                    let c = if ok { &self.stats.done } else { &self.stats.failed };
                    c.fetch_add(1, Ordering::Relaxed);
                    if let Ok(mut v) = self.stats.sojourn_us.lock() {
                        if v.len() < 5_000_000 {
                            v.push(sojourn.as_micros() as u64);
                        }
                    }
                    return;
                }
                Ok(None) => {
                    self.stats.late.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Err(_) => {
                    self.stats.redis_errors.fetch_add(1, Ordering::Relaxed);
                    tries += 1;
                    if *self.stop.borrow() && tries > 50 {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(20.min(5 * u64::from(tries)))).await;
                }
            }
        }
    }
}
