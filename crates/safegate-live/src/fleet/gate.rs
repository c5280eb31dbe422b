//! One gate process of a fleet: its gate runs until stopped, and every 200 ms a [`Line`] of
//! its counters goes to its output as JSON, which [`play`](super::play) reads.

use std::future::Future;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use safegate_core::fleet::lease::{LossPolicy, Mode};
use serde::{Deserialize, Serialize};

use super::plan::price_config;
use super::FleetError;
use crate::coord::Coordinator;
use crate::fleet_gate::{run_gate, GateConfig, GateStats, Keeper};

/// One gate's report line (JSON, every 200 ms on the gate's output).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Line {
    /// The gate's id (`g0`, `g1`, …).
    pub id: String,
    /// Arrivals so far.
    pub offered: u64,
    /// Requests admitted so far.
    pub admitted: u64,
    /// Admitted requests the downstream answered with success.
    pub succeeded: u64,
    /// Admitted requests that failed or timed out.
    pub failed: u64,
    /// Refreshes the coordinator answered.
    pub grants: u64,
    /// Refreshes that failed.
    pub silences: u64,
    /// Admission decisions taken without a fresh price.
    pub unpriced: u64,
    /// The admitted rate in force \[req/s\].
    pub limit: f64,
    /// The mode of the gate's latest decision ([`Mode::name`]: `granted`, `learning`,
    /// `frozen`, `held-expired`, `share`, `fallback`, `bootstrap`), or `starting`.
    #[serde(default)]
    pub mode: String,
}

/// A gate's mode before its first decision.
const STARTING: &str = "starting";

/// One gate's settings, as [`play`](super::play) passes them to the gate process.
#[derive(Debug, Clone)]
pub struct GateSettings {
    /// The coordination Redis.
    pub redis: String,
    /// The gate's id in the fleet.
    pub id: String,
    /// Offered rate \[req/s\].
    pub demand: f64,
    /// The downstream's base URL; `None` counts every admitted request as a success.
    pub downstream: Option<String>,
    /// What the gate does when the price goes silent.
    pub mode: LossPolicy,
    /// The fleet's bound \[req/s\].
    pub capacity: f64,
    /// Lease of a grant \[ms\].
    pub lease_ms: u64,
    /// Refresh interval \[ms\].
    pub refresh_ms: u64,
    /// The price's gain γ.
    pub gamma: f64,
    /// Seed of the gate's arrivals.
    pub seed: u64,
    /// The fleet's size assumed before the first grant.
    pub members: u32,
}

/// Runs one gate until `stop` completes, writing a [`Line`] to `out` every 200 ms.
pub async fn gate(
    settings: &GateSettings,
    out: &mut dyn Write,
    stop: impl Future<Output = ()>,
) -> Result<(), FleetError> {
    let s = settings;
    let coord = Coordinator::connect(&s.redis, "fleet", price_config(s.capacity, s.gamma, s.lease_ms)).await?;
    let stats = Arc::new(GateStats::default());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let cfg = GateConfig {
        id: s.id.clone(),
        demand: s.demand,
        weight: 1.0,
        refresh: Duration::from_millis(s.refresh_ms),
        refresh_timeout: Duration::from_millis(s.refresh_ms.min(500)),
        downstream: s.downstream.clone(),
        timeout: Duration::from_secs(5),
        seed: s.seed,
    };
    // Fallback's local limit: the whole dependency, as a lone limiter would set it.
    let lease = s.lease_ms as f64 / 1e3;
    let suspect_after = 3.0 * s.refresh_ms as f64 / 1e3;
    let keeper = Box::new(Keeper::new(s.mode, s.capacity, s.capacity, lease, suspect_after, s.members)?);
    let task = tokio::spawn(run_gate(coord, cfg, keeper, stats.clone(), stop_rx));
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    tokio::pin!(stop);
    let result = loop {
        tokio::select! {
            _ = tick.tick() => {
                let line = line(&s.id, &stats);
                let text = serde_json::to_string(&line).expect("a line serialises");
                match writeln!(out, "{text}").and_then(|()| out.flush()) {
                    Ok(()) => {}
                    // The supervisor stopped reading: it is done with this gate.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => break Ok(()),
                    Err(error) => break Err(FleetError::Io { what: "writing the gate's line", error }),
                }
            }
            () = &mut stop => break Ok(()),
        }
    };
    let _ = stop_tx.send(true);
    let _ = task.await;
    result
}

/// The gate's counters now.
fn line(id: &str, stats: &GateStats) -> Line {
    let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
    Line {
        id: id.to_string(),
        offered: l(&stats.offered),
        admitted: l(&stats.admitted),
        succeeded: l(&stats.succeeded),
        failed: l(&stats.failed),
        grants: l(&stats.grants),
        silences: l(&stats.silences),
        unpriced: l(&stats.unpriced_decisions),
        limit: l(&stats.limit_milli) as f64 / 1e3,
        mode: stats.mode().map_or(STARTING, Mode::name).to_string(),
    }
}
