//! The open-loop load generator and what it records.
//!
//! Open loop: a request starts on its schedule whatever the others do (a closed loop, where
//! a client waits for its answer before sending again, lowers the offered load exactly when
//! the backend slows, and hides collapse). The generator wakes at most once per
//! millisecond (tokio's timer resolution) and spawns every request that came due since,
//! as its own task calling its own clone of the stack; each is abandoned at its schedule
//! plus the client timeout (the future dropped, which cancels the backend's work).
//! Latency is measured from the scheduled arrival, not from the spawn, so a generator
//! that falls behind shows up as latency rather than vanishing (no coordinated omission).
//!
//! Counts are atomics and the latency a log-linear histogram, so memory does not grow
//! with the number of requests.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use rand_distr::{Distribution, Exp1};
use rand_xoshiro::Xoshiro256PlusPlus;
use safegate_tower::BoxError;
use tokio::time::Instant;
use tower::{Service, ServiceExt};

use super::backend::Health;
use super::histogram::Histogram;
use super::stacks::Stack;

/// Requests spawned per turn of the as-fast-as-possible generator before it yields.
const MAX_BATCH: u64 = 64;

/// How arrivals are spaced within a segment of constant rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Exponential gaps (a Poisson process), seeded.
    Poisson,
    /// Evenly spaced, `1/rate` apart.
    Even,
}

/// A segment's offered rate.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Rate {
    /// This many requests per second.
    PerSec(f64),
    /// As fast as the generator can, at most `cap` requests in the segment and at most
    /// `outstanding` spawned and not yet finished (without that bound the runtime's task
    /// queue, not any limiter, would hold the excess: tens of thousands of requests
    /// "in flight" that are only waiting for a core).
    Max { cap: u64, outstanding: u64 },
}

/// A stretch of load: requests arriving in `[start, end)` seconds of the run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    pub(crate) start: f64,
    pub(crate) end: f64,
    pub(crate) rate: Rate,
}

/// A run's schedule: its load segments (in order, not overlapping), the health changes,
/// and the seconds the run lasts (the last segment's end).
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) segments: Vec<Segment>,
    /// `(seconds into the run, new health)`.
    pub(crate) health_steps: Vec<(f64, f64)>,
}

impl Plan {
    pub(crate) fn end(&self) -> f64 {
        self.segments.last().map_or(0.0, |s| s.end)
    }
}

/// Where a run reports its progress: the tenths of a second of planned load done over
/// every run so far (called from the run's runtime threads).
pub type Progress = Arc<dyn Fn(u64) + Send + Sync>;

/// The client's side of a run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Client {
    pub(crate) timeout: Duration,
    pub(crate) slo: Duration,
    pub(crate) arrivals: Arrivals,
    pub(crate) seed: u64,
}

/// What the requests of a run did, as they finish.
#[derive(Debug)]
struct Recorder {
    sent: AtomicU64,
    ok: AtomicU64,
    good: AtomicU64,
    rejected: AtomicU64,
    failed: AtomicU64,
    done: AtomicU64,
    /// Good responses by the whole second of their scheduled arrival.
    good_bins: Vec<AtomicU32>,
    /// Good responses by the segment of their arrival.
    good_segments: Vec<AtomicU64>,
    sent_segments: Vec<AtomicU64>,
    reasons: [AtomicU64; SHED_REASONS.len()],
    latency: Histogram,
}

/// A run's figures, read once every request has finished.
#[derive(Debug)]
pub(crate) struct Measured {
    pub(crate) sent: u64,
    pub(crate) ok: u64,
    pub(crate) good: u64,
    pub(crate) rejected: u64,
    pub(crate) failed: u64,
    /// Abandoned at the client timeout (or still unfinished when the run was closed).
    pub(crate) timeouts: u64,
    pub(crate) good_per_second: Vec<u32>,
    pub(crate) good_per_segment: Vec<u64>,
    pub(crate) sent_per_segment: Vec<u64>,
    /// Seconds each segment lasted: as planned, or for an as-fast-as-possible segment
    /// until its cap or its end.
    pub(crate) segment_secs: Vec<f64>,
    /// Rejections by reason, in the order of [`SHED_REASONS`].
    pub(crate) shed_reasons: [u64; SHED_REASONS.len()],
    /// Latency quantiles of the answered requests \[ms\], `None` when none was answered.
    pub(crate) p50_ms: Option<f64>,
    pub(crate) p99_ms: Option<f64>,
}

/// The labels of [`shed_reason`], in the order of [`Measured::shed_reasons`]: safegate's
/// reasons (`Reason::ALL`), then tower's `LoadShed`.
pub(crate) const SHED_REASONS: [&str; 5] = ["limit", "barrier", "backup", "deadline", "load-shed"];

/// Whether `e` is a limiter's rejection, and why: the index in [`SHED_REASONS`] of
/// safegate's `Overloaded` reason, or of tower's `LoadShed` over a limiter that was not
/// ready; `None` for a failure.
fn shed_reason(e: &BoxError) -> Option<usize> {
    if let Some(o) = e.downcast_ref::<safegate_tower::Overloaded>() {
        return SHED_REASONS.iter().position(|r| *r == o.reason.as_str());
    }
    e.is::<tower::load_shed::error::Overloaded>().then_some(SHED_REASONS.len() - 1)
}

/// Start one request scheduled at `at` (`offset` seconds into the run, in `segment`).
fn launch(stack: &Stack, rec: &Arc<Recorder>, client: &Client, at: Instant, offset: f64, segment: usize) {
    let mut svc = stack.clone();
    let rec = rec.clone();
    let (timeout, slo) = (client.timeout, client.slo);
    rec.sent.fetch_add(1, Ordering::Relaxed);
    rec.sent_segments[segment].fetch_add(1, Ordering::Relaxed);
    let second = offset.max(0.0) as usize;
    tokio::spawn(async move {
        let r = tokio::time::timeout_at(at + timeout, async {
            svc.ready().await?;
            svc.call(()).await
        })
        .await;
        let latency = Instant::now().saturating_duration_since(at);
        match r {
            // Timed out: counted at the end, as sent less answered, shed and failed.
            Err(_) => {}
            Ok(Ok(())) => {
                rec.ok.fetch_add(1, Ordering::Relaxed);
                rec.latency.record(latency);
                if latency <= slo {
                    rec.good.fetch_add(1, Ordering::Relaxed);
                    rec.good_segments[segment].fetch_add(1, Ordering::Relaxed);
                    if let Some(b) = rec.good_bins.get(second) {
                        b.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Ok(Err(e)) => match shed_reason(&e) {
                Some(why) => {
                    rec.rejected.fetch_add(1, Ordering::Relaxed);
                    rec.reasons[why].fetch_add(1, Ordering::Relaxed);
                }
                None => {
                    rec.failed.fetch_add(1, Ordering::Relaxed);
                }
            },
        }
        rec.done.fetch_add(1, Ordering::Release);
    });
}

/// Run `plan` against `stack` (whose backend has `health`); `progress` advances by one
/// unit per tenth of a second of the plan, from `progress_base`. Must run inside the
/// run's tokio runtime.
pub(crate) async fn drive(
    stack: Stack,
    plan: Plan,
    client: Client,
    health: Health,
    progress: Progress,
    progress_base: u64,
) -> Measured {
    let seconds = plan.end().ceil() as usize;
    let nseg = plan.segments.len();
    let rec = Arc::new(Recorder {
        sent: AtomicU64::new(0),
        ok: AtomicU64::new(0),
        good: AtomicU64::new(0),
        rejected: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        done: AtomicU64::new(0),
        good_bins: (0..seconds).map(|_| AtomicU32::new(0)).collect(),
        good_segments: (0..nseg).map(|_| AtomicU64::new(0)).collect(),
        sent_segments: (0..nseg).map(|_| AtomicU64::new(0)).collect(),
        reasons: Default::default(),
        latency: Histogram::new(),
    });
    let start = Instant::now();
    for &(at, h) in &plan.health_steps {
        let health = health.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(start + Duration::from_secs_f64(at)).await;
            health.set(h);
        });
    }
    let tick = |p: &Progress| p(progress_base + (start.elapsed().as_secs_f64() * 10.0) as u64);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(client.seed);
    let mut segment_secs = Vec::with_capacity(nseg);
    for (k, seg) in plan.segments.iter().enumerate() {
        match seg.rate {
            Rate::PerSec(rate) => {
                let mut gap = || match client.arrivals {
                    Arrivals::Poisson => {
                        let e: f64 = Exp1.sample(&mut rng);
                        e / rate
                    }
                    Arrivals::Even => 1.0 / rate,
                };
                let mut t = seg.start + gap();
                while t < seg.end {
                    let due = start + Duration::from_secs_f64(t);
                    if Instant::now() < due {
                        tokio::time::sleep_until(due).await;
                    }
                    // Everything due by now, in one batch.
                    let now = start.elapsed().as_secs_f64();
                    while t < seg.end && t <= now {
                        launch(&stack, &rec, &client, start + Duration::from_secs_f64(t), t, k);
                        t += gap();
                    }
                    tick(&progress);
                }
                // Idle to the segment's end (the gap between bursts).
                tokio::time::sleep_until(start + Duration::from_secs_f64(seg.end)).await;
                segment_secs.push(seg.end - seg.start);
            }
            Rate::Max { cap, outstanding: most } => {
                tokio::time::sleep_until(start + Duration::from_secs_f64(seg.start)).await;
                let seg_start = Instant::now();
                let end = start + Duration::from_secs_f64(seg.end);
                let mut sent = 0u64;
                while sent < cap && Instant::now() < end {
                    let outstanding = rec.sent.load(Ordering::Relaxed) - rec.done.load(Ordering::Acquire);
                    let batch = MAX_BATCH.min(cap - sent).min(most.saturating_sub(outstanding));
                    let now = Instant::now();
                    let offset = (now - start).as_secs_f64();
                    for _ in 0..batch {
                        launch(&stack, &rec, &client, now, offset, k);
                    }
                    sent += batch;
                    tick(&progress);
                    tokio::task::yield_now().await;
                }
                segment_secs.push(seg_start.elapsed().as_secs_f64());
            }
        }
    }
    // Every request ends by its schedule plus the timeout; wait for them (with a margin
    // for a loaded machine), then count any still running as timed out.
    let close = Instant::now() + client.timeout + Duration::from_secs(2);
    while rec.done.load(Ordering::Acquire) < rec.sent.load(Ordering::Relaxed) && Instant::now() < close {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let load = |a: &AtomicU64| a.load(Ordering::Acquire);
    let (sent, ok, rejected, failed) = (load(&rec.sent), load(&rec.ok), load(&rec.rejected), load(&rec.failed));
    Measured {
        sent,
        ok,
        good: load(&rec.good),
        rejected,
        failed,
        // Anything not answered, shed or failed: abandoned at the timeout, or (on a machine
        // too loaded to close the run on time) still running.
        timeouts: sent.saturating_sub(ok + rejected + failed),
        // A last partial second is left out: its count would read as a drop.
        good_per_second: rec
            .good_bins
            .iter()
            .take(plan.end().floor() as usize)
            .map(|b| b.load(Ordering::Relaxed))
            .collect(),
        good_per_segment: rec.good_segments.iter().map(load).collect(),
        sent_per_segment: rec.sent_segments.iter().map(load).collect(),
        segment_secs,
        shed_reasons: rec.reasons.each_ref().map(load),
        p50_ms: rec.latency.quantile_ms(0.5),
        p99_ms: rec.latency.quantile_ms(0.99),
    }
}
