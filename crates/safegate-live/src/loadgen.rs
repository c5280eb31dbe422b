//! The load generator: open-loop Poisson arrivals at the scenario's rate, and retries of
//! failed jobs that re-enter as arrivals (docs/live.md §Load and retries).
//!
//! Arrivals are drawn in model time (thinning against the highest rate, so a rate that
//! changes in steps is exact) and offered when the wall clock reaches them through a
//! [`safegate_queue::Producer`] with the generator's own seeded draw for the share (the
//! seed's coin); the generator never waits for an answer before the next arrival (open
//! loop). A failed job comes back from the queue's dead letters; with probability
//! `retry.probability` it is offered again after an exponential backoff, if the retry
//! budget allows.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp1};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;
use tokio::sync::{watch, Semaphore};

use safegate_queue::{Producer, Queue};

use crate::books::RetryCounts;
use crate::ModelClock;

/// What happens to a failed job.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RetryPolicy {
    /// Chance a failed job is offered again.
    pub probability: f64,
    /// Mean backoff before the retry \[model s\] (exponential).
    pub backoff: f64,
    /// Most retries per first attempt, as a running budget (gRPC's retry throttling:
    /// each first attempt adds this many tokens, each retry spends one); `None`: no budget.
    pub budget: Option<f64>,
    /// Retries skip the admission share (the backlog's bound still applies).
    pub around_gate: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { probability: 0.0, backoff: 0.1, budget: None, around_gate: false }
    }
}

/// The offered rate over model time.
pub type RateFn = Arc<dyn Fn(f64) -> f64 + Send + Sync>;

/// A load generator's settings.
#[derive(Clone)]
pub struct LoadConfig {
    /// λ(t) \[req/s, model\].
    pub rate: RateFn,
    /// The highest λ(t) over the run (the thinning envelope).
    pub peak_rate: f64,
    /// Model time at which arrivals stop \[s\].
    pub until: f64,
    /// Seed of the arrival and admission draws.
    pub seed: u64,
    /// Retries of failed jobs.
    pub retry: RetryPolicy,
    /// Offers in flight at once before an arrival counts as unsent.
    pub max_outstanding: usize,
}

impl std::fmt::Debug for LoadConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadConfig")
            .field("peak_rate", &self.peak_rate)
            .field("until", &self.until)
            .field("seed", &self.seed)
            .field("retry", &self.retry)
            .finish()
    }
}

/// The generator's own counters (the admission counters live in Redis).
#[derive(Debug, Default, Serialize)]
pub struct LoadStats {
    /// First attempts generated.
    pub arrivals: AtomicU64,
    /// Retries offered.
    pub retries: AtomicU64,
    /// Failed jobs not retried (the coin, or the budget).
    pub abandoned: AtomicU64,
    /// Of `abandoned`, for want of budget.
    pub over_budget: AtomicU64,
    /// Offers that could not be made: Redis unavailable, or too many in flight.
    pub unsent: AtomicU64,
    /// Offers admitted, as the generator saw the answers.
    pub admitted: AtomicU64,
    /// Of `admitted`, retries.
    pub retries_admitted: AtomicU64,
}

impl LoadStats {
    /// The retries offered and admitted so far.
    pub fn retry_counts(&self) -> RetryCounts {
        RetryCounts {
            offered: self.retries.load(Ordering::Relaxed),
            admitted: self.retries_admitted.load(Ordering::Relaxed),
        }
    }
}

/// Run the generator on `queue` until `cfg.until` (model time) or `stop`, counting into
/// `stats` (shared with the controller, which reads the retries). Jobs are JSON strings.
pub async fn run(
    queue: Queue,
    clock: ModelClock,
    cfg: LoadConfig,
    stats: Arc<LoadStats>,
    mut stop: watch::Receiver<bool>,
) -> Arc<LoadStats> {
    let producer: Producer<String> = queue.producer();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0x5eed_10ad);
    let inflight = Arc::new(Semaphore::new(cfg.max_outstanding.max(1)));
    let peak = if cfg.peak_rate.is_finite() && cfg.peak_rate > 0.0 { cfg.peak_rate } else { 0.0 };
    let gap = |rng: &mut Xoshiro256PlusPlus| -> f64 {
        if peak > 0.0 {
            let e: f64 = Exp1.sample(rng);
            e / peak
        } else {
            f64::INFINITY
        }
    };
    let mut next = gap(&mut rng);
    let mut retries: BinaryHeap<Reverse<(u64, String)>> = BinaryHeap::new();
    let mut tokens = 10.0f64;
    let mut serial = 0u64;
    let mut last_failed_poll = tokio::time::Instant::now();
    let offer = |job: String, retry: bool, u: f64, stats: &Arc<LoadStats>, inflight: &Arc<Semaphore>| {
        let Ok(permit) = inflight.clone().try_acquire_owned() else {
            stats.unsent.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let p = producer.clone();
        let stats = stats.clone();
        tokio::spawn(async move {
            match p.enqueue_json_drawn(&job, u).await {
                Ok(a) if a.is_admitted() => {
                    stats.admitted.fetch_add(1, Ordering::Relaxed);
                    if retry {
                        stats.retries_admitted.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Ok(_) => {}
                Err(_) => {
                    stats.unsent.fetch_add(1, Ordering::Relaxed);
                }
            }
            drop(permit);
        });
    };
    loop {
        if *stop.borrow() {
            break;
        }
        let now = clock.now();
        if now >= cfg.until {
            break;
        }
        // Arrivals due. A generator that has fallen behind (a rate beyond what it can offer)
        // yields every 64 arrivals, so the controller and the progress reports on the same
        // runtime still run; without it one poll made every arrival of the run at once.
        let mut made = 0u32;
        while next <= now && next < cfg.until {
            made += 1;
            if made.is_multiple_of(64) {
                tokio::task::yield_now().await;
            }
            let keep = (cfg.rate)(next) / peak;
            if keep >= 1.0 || rng.random::<f64>() < keep {
                serial += 1;
                stats.arrivals.fetch_add(1, Ordering::Relaxed);
                if let Some(b) = cfg.retry.budget {
                    tokens = (tokens + b).min(10.0 + 100.0 * b);
                }
                let u: f64 = rng.random();
                offer(format!("\"a{serial}\""), false, u, &stats, &inflight);
            }
            next += gap(&mut rng);
        }
        // Retries due.
        let now_us = (now * 1e6) as u64;
        while retries.peek().is_some_and(|r| r.0 .0 <= now_us) {
            let Some(Reverse((_, job))) = retries.pop() else { break };
            stats.retries.fetch_add(1, Ordering::Relaxed);
            let u: f64 = if cfg.retry.around_gate { 0.0 } else { rng.random() };
            offer(job, true, u, &stats, &inflight);
        }
        // Failed jobs, every 10 ms.
        if cfg.retry.probability > 0.0 && last_failed_poll.elapsed() >= Duration::from_millis(10) {
            last_failed_poll = tokio::time::Instant::now();
            if let Ok(letters) = queue.take_dead_letters(256).await {
                for job in letters.into_iter().map(|d| d.payload) {
                    if rng.random::<f64>() >= cfg.retry.probability {
                        stats.abandoned.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    if cfg.retry.budget.is_some() {
                        if tokens < 1.0 {
                            stats.abandoned.fetch_add(1, Ordering::Relaxed);
                            stats.over_budget.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        tokens -= 1.0;
                    }
                    let e: f64 = Exp1.sample(&mut rng);
                    let at = clock.now() + cfg.retry.backoff.max(0.0) * e;
                    retries.push(Reverse(((at * 1e6) as u64, job)));
                }
            }
        }
        // Sleep to the next event (at most 10 ms, for the failed list and `stop`).
        let mut wake = next.min(cfg.until);
        if let Some(r) = retries.peek() {
            wake = wake.min(r.0 .0 as f64 / 1e6);
        }
        let wait = clock.wall(wake - clock.now()).min(Duration::from_millis(10));
        if !wait.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.changed() => {}
            }
        } else {
            tokio::task::yield_now().await;
        }
    }
    // Let the offers in flight finish (bounded).
    let _ =
        tokio::time::timeout(Duration::from_secs(5), inflight.acquire_many(cfg.max_outstanding.max(1) as u32)).await;
    stats
}
