//! A wall-clock throughput measurement of the emulator, for benchmarks: how close the
//! scheduler on its own thread comes to `μ(n, H)` on this machine. Not a test: on a busy
//! machine the scheduler waits for a core and every service ends late, so the result says
//! as much about the machine as about the emulator. The tests hold the model to `μ(n, H)`
//! on a paused tokio clock instead (`tests.rs`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use safegate_sim::{HealthSchedule, HealthTrack};
use serde::Serialize;

use super::{Downstream, DownstreamConfig, DownstreamStats, Precision};
use crate::{LiveError, ModelClock};

/// What [`closed_loop_rate`] measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ClosedLoopRate {
    /// Requests kept outstanding.
    pub n: usize,
    /// Model seconds per wall second.
    pub speed: f64,
    /// Health, constant.
    pub health: f64,
    /// Completions per model second over the window \[req/s\].
    pub throughput: f64,
    /// `μ(n, H)`, what an exact scheduler clears \[req/s\].
    pub expected: f64,
    /// Completions counted.
    pub completions: u64,
    /// How late the scheduler's wake-ups were.
    pub precision: Precision,
}

/// Start a downstream at `speed` on the wall clock with the seed's pool at constant
/// `health`, keep exactly `n` requests outstanding in process (no HTTP), and after `warm`
/// completions count the next `count`: their number over the model time they took.
pub async fn closed_loop_rate(
    speed: f64,
    health: f64,
    n: usize,
    warm: u64,
    count: u64,
) -> Result<ClosedLoopRate, LiveError> {
    let mut cfg = DownstreamConfig::new(ModelClock::start(speed));
    cfg.health = HealthTrack::new(HealthSchedule::Constant { level: health });
    let pool = cfg.pool;
    let ds = Downstream::start(cfg, SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..n.max(1))
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
    let a = wait_for(&ds, base + warm).await;
    let b = wait_for(&ds, a.served + count.max(1)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.abort();
    }
    let precision = ds.precision();
    ds.shutdown().await;
    let k = n.max(1) as f64;
    let c = pool.comfortable;
    Ok(ClosedLoopRate {
        n,
        speed,
        health,
        throughput: (b.served - a.served) as f64 / (b.t_model - a.t_model),
        expected: health * k * pool.rate * (c / k).min(1.0).powi(2),
        completions: b.served - a.served,
        precision,
    })
}

/// Poll until `served` reaches `target`; the stats then.
async fn wait_for(ds: &Downstream, target: u64) -> DownstreamStats {
    loop {
        let s = ds.stats();
        if s.served >= target {
            return s;
        }
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
}
