//! The fleet's supervisor: gate processes, the emulated downstream, the coordination Redis
//! and the outage; a [`Tick`] every second and a [`FleetReport`] at the end.

use std::ops::ControlFlow;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use safegate_studies::fleet::jain;
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::plan::price_config;
use super::prometheus::render_metrics;
use super::{FleetError, GateCommand, Line, Plan};
use crate::coord::Coordinator;
use crate::downstream::{Downstream, DownstreamConfig, Workers};
use crate::fleet_gate::policy_name;
use crate::redis_server::RedisServer;
use crate::ModelClock;

/// Per-second aggregate of the fleet.
#[derive(Debug, Clone, Serialize)]
pub struct Second {
    /// Wall seconds since the gates started.
    pub t: f64,
    /// Requests admitted over the second, all gates.
    pub admitted: f64,
    /// Requests the downstream answered with success over the second, all gates: the
    /// fleet's goodput (a request admitted near the end of one second may succeed in the
    /// next).
    pub succeeded: f64,
    /// Jain's index of the gates' admitted requests over the second.
    pub jain: f64,
    /// Whether the coordinator was up at the second's end.
    pub coordinator_up: bool,
}

/// What a fleet run reports (`safegate fleet --json`).
#[derive(Debug, Serialize)]
pub struct FleetReport {
    /// Gate processes.
    pub nodes: u32,
    /// What each gate did when the price went silent.
    pub mode: &'static str,
    /// The fleet's bound \[req/s\].
    pub capacity: f64,
    /// Total demand \[req/s\].
    pub demand: f64,
    /// Every second's aggregate.
    pub seconds: Vec<Second>,
    /// Every gate's last line.
    pub gates: Vec<Line>,
    /// The outage's summary, if the run had one.
    pub outage: Option<OutageSummary>,
    /// Refresh interval of each gate \[ms\].
    pub refresh_ms: u64,
}

/// The fleet through the coordinator's outage.
#[derive(Debug, Clone, Serialize)]
pub struct OutageSummary {
    /// When the outage started \[s\].
    pub start: f64,
    /// How long it lasted \[s\].
    pub length: f64,
    /// The most requests admitted in one second of the outage.
    pub worst_second: f64,
    /// Mean admitted rate over the outage \[req/s\].
    pub mean_admitted: f64,
    /// Mean admitted rate over the outage as a share of the bound.
    pub admitted_share_of_bound: f64,
    /// Mean rate of successful requests over the outage \[req/s\].
    pub mean_succeeded: f64,
    /// Mean rate of successful requests over the last quarter of the run, after the
    /// outage \[req/s\]: whether the downstream came back.
    pub succeeded_at_end: f64,
    /// Seconds from the coordinator's return until every gate held a new grant and the
    /// granted shares were fair (Jain ≥ 0.95) and within the bound.
    pub fair_again_after: Option<f64>,
    /// Decisions taken without a fresh price, all gates.
    pub unpriced_decisions: u64,
    /// Whole seconds sampled inside the outage (after its first) that the figures above
    /// average; 0 when the harness fell behind and sampled none (then they are 0 and
    /// no verdict is given).
    pub measured_seconds: usize,
}

/// What [`play`] reports once a second.
#[derive(Debug)]
pub struct Tick<'a> {
    /// The fleet's aggregate over the second.
    pub second: &'a Second,
    /// Every gate's latest line (cumulative counters, limit and mode).
    pub gates: &'a [Line],
    /// Every gate's admitted requests over the second.
    pub admitted: &'a [f64],
}

/// Runs the fleet: `plan.nodes` gate processes started by `gate`, the emulated downstream,
/// the coordination Redis (a private one unless `plan.redis`), the outage if any; serves
/// every gate's counters at `/metrics` on `metrics` if given; calls `on_second` once a
/// second and returns the report. The run ends early when `on_second` answers
/// [`ControlFlow::Break`] (a viewer that went away). Dropping the future stops everything
/// it started.
pub async fn play(
    plan: &Plan,
    gate: &GateCommand,
    metrics: Option<tokio::net::TcpListener>,
    on_second: &mut dyn FnMut(&Tick<'_>) -> ControlFlow<()>,
) -> Result<FleetReport, FleetError> {
    plan.check().map_err(FleetError::Plan)?;
    let mut server = match &plan.redis {
        Some(_) => None,
        None => Some(RedisServer::start(false)?),
    };
    let url =
        plan.redis.clone().or_else(|| server.as_ref().map(|s| s.url())).ok_or(FleetError::Missing("a Redis URL"))?;
    // Fail fast on an unreachable coordinator, before any process starts.
    Coordinator::connect(&url, "fleet", price_config(plan.capacity, plan.gamma, plan.lease_ms)).await?;
    let ds = Downstream::start(
        // The seed's pool: 8 workers in front of the contended service, a queue of 200.
        DownstreamConfig { seed: 3, workers: Some(Workers::SEED), ..DownstreamConfig::new(ModelClock::start(1.0)) },
        ([127, 0, 0, 1], 0).into(),
    )
    .await?;
    let per_gate = plan.demand / f64::from(plan.nodes);
    let mut children = Vec::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Line>();
    for i in 0..plan.nodes {
        let mut child = tokio::process::Command::new(&gate.program)
            .args(&gate.args)
            .args(["--redis", &url, "--id", &format!("g{i}"), "--demand", &per_gate.to_string()])
            .args(["--downstream", &ds.url(), "--mode", policy_name(plan.mode)])
            .args(["--capacity", &plan.capacity.to_string(), "--lease-ms", &plan.lease_ms.to_string()])
            .args(["--refresh-ms", &plan.refresh_ms.to_string(), "--gamma", &plan.gamma.to_string()])
            .args(["--seed", &(i + 1).to_string(), "--members", &plan.nodes.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| FleetError::Io { what: "starting a fleet-gate process", error })?;
        let out = child.stdout.take().ok_or(FleetError::Missing("the gate's stdout"))?;
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(out).lines();
            while let Ok(Some(l)) = lines.next_line().await {
                if let Ok(line) = serde_json::from_str::<Line>(&l) {
                    let _ = tx.send(line);
                }
            }
        });
        children.push(child);
    }
    let n = plan.nodes as usize;
    let mut latest: Vec<Line> = (0..n).map(|i| Line { id: format!("g{i}"), ..Line::default() }).collect();
    let shared = Arc::new(std::sync::Mutex::new(latest.clone()));
    let metrics = metrics.map(|listener| {
        let state = shared.clone();
        let app = axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let lines = state.lock().map(|l| l.clone()).unwrap_or_default();
                async move { render_metrics(&lines) }
            }),
        );
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        })
    });
    let started = Instant::now();
    let mut seconds = Vec::new();
    let mut prev: Vec<u64> = vec![0; n];
    let mut prev_ok = 0u64;
    let mut next_sample = started + Duration::from_secs(1);
    let mut up = true;
    // After the coordinator returns: each gate's grant count then, and when every gate
    // had a new grant and the granted shares were fair and within the bound again.
    let mut returned: Option<(f64, Vec<u64>)> = None;
    let mut fair_again: Option<f64> = None;
    while started.elapsed().as_secs_f64() < plan.secs {
        tokio::select! {
            Some(l) = rx.recv() => {
                if let Some(i) = l.id.strip_prefix('g').and_then(|s| s.parse::<usize>().ok()).filter(|&i| i < n) {
                    latest[i] = l;
                    if let Ok(mut s) = shared.lock() {
                        s.clone_from(&latest);
                    }
                }
                if let (Some((t_back, grants)), None) = (&returned, fair_again) {
                    let limits: Vec<f64> = latest.iter().map(|l| l.limit).collect();
                    let renewed = latest.iter().zip(grants).all(|(l, g)| l.grants > *g);
                    if renewed && jain(&limits) >= 0.95 && limits.iter().sum::<f64>() <= 1.05 * plan.capacity {
                        fair_again = Some(started.elapsed().as_secs_f64() - t_back);
                    }
                }
            }
            _ = tokio::time::sleep_until(next_sample.into()) => {
                next_sample += Duration::from_secs(1);
                let t = started.elapsed().as_secs_f64();
                let per: Vec<f64> = latest.iter().zip(&prev).map(|(l, p)| l.admitted.saturating_sub(*p) as f64).collect();
                prev = latest.iter().map(|l| l.admitted).collect();
                let ok: u64 = latest.iter().map(|l| l.succeeded).sum();
                let succeeded = ok.saturating_sub(prev_ok) as f64;
                prev_ok = ok;
                seconds.push(Second { t, admitted: per.iter().sum(), succeeded, jain: jain(&per), coordinator_up: up });
                let tick = Tick { second: seconds.last().expect("just pushed"), gates: &latest, admitted: &per };
                if on_second(&tick).is_break() {
                    break;
                }
                if let (Some((a, b)), Some(s)) = (plan.outage, server.as_mut()) {
                    if up && t >= a && t < a + b {
                        s.stop();
                        up = false;
                    } else if !up && t >= a + b {
                        s.start_again()?;
                        up = true;
                        returned = Some((started.elapsed().as_secs_f64(), latest.iter().map(|l| l.grants).collect()));
                    }
                }
            }
        }
    }
    for c in &mut children {
        let _ = c.start_kill();
    }
    for c in &mut children {
        let _ = tokio::time::timeout(Duration::from_secs(3), c.wait()).await;
    }
    ds.shutdown().await;
    if let Some(m) = metrics {
        m.abort();
    }
    drop(server);
    let outage = plan.outage.map(|(a, b)| outage_summary(plan, &seconds, &latest, (a, b), fair_again));
    Ok(FleetReport {
        nodes: plan.nodes,
        mode: policy_name(plan.mode),
        capacity: plan.capacity,
        demand: plan.demand,
        seconds,
        gates: latest,
        outage,
        refresh_ms: plan.refresh_ms,
    })
}

/// The outage `(a, b)` (start and length) summarised from the run's `seconds` and the
/// gates' last lines.
fn outage_summary(
    plan: &Plan,
    seconds: &[Second],
    latest: &[Line],
    (a, b): (f64, f64),
    fair_again: Option<f64>,
) -> OutageSummary {
    let during: Vec<&Second> = seconds.iter().filter(|s| s.t > a + 1.0 && s.t <= a + b).collect();
    let worst = during.iter().map(|s| s.admitted).fold(0.0, f64::max);
    let mean = during.iter().map(|s| s.admitted).sum::<f64>() / during.len().max(1) as f64;
    let mean_succeeded = during.iter().map(|s| s.succeeded).sum::<f64>() / during.len().max(1) as f64;
    let end: Vec<&Second> = seconds.iter().filter(|s| s.t > (a + b).max(0.75 * plan.secs)).collect();
    let succeeded_at_end = end.iter().map(|s| s.succeeded).sum::<f64>() / end.len().max(1) as f64;
    OutageSummary {
        mean_succeeded,
        succeeded_at_end,
        start: a,
        length: b,
        worst_second: worst,
        mean_admitted: mean,
        admitted_share_of_bound: mean / plan.capacity,
        fair_again_after: fair_again,
        unpriced_decisions: latest.iter().map(|l| l.unpriced).sum(),
        measured_seconds: during.len(),
    }
}
