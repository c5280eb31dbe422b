//! `safegate fleet`: M gate processes sharing one downstream, coordinated by a price over
//! Redis, with an optional coordinator outage; and `safegate fleet-gate`, one such process.

use std::ops::ControlFlow;
use std::process::{ExitCode, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use safegate_core::fleet::lease::{LossPolicy, Mode};
use safegate_live::coord::{Coordinator, PriceConfig};
use safegate_live::downstream::{Downstream, DownstreamConfig, Workers};
use safegate_live::fleet_gate::{parse_policy, policy_name, run_gate, GateConfig, GateStats, Keeper};
use safegate_live::redis_server::RedisServer;
use safegate_live::ModelClock;
use safegate_studies::fleet::jain;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Flags of `safegate fleet`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub(crate) struct FleetArgs {
    /// Gate processes.
    #[arg(long, default_value_t = 8, conflicts_with = "sim")]
    nodes: u32,
    /// The coordination Redis; without it a private redis-server is started (needed for
    /// `--outage`).
    #[arg(long, value_name = "URL", conflicts_with = "sim")]
    redis: Option<String>,
    /// The fleet's bound: the share of the dependency's capacity the price hands out
    /// \[req/s\]. The dependency is the seed's pool (8 workers, a queue of 200), which
    /// clears 75 req/s at health 1; the default is 80 % of that.
    #[arg(long, default_value_t = 60.0, value_name = "REQ_PER_S", conflicts_with = "sim")]
    capacity: f64,
    /// Total demand over all gates, split equally \[req/s\] (default: twice the capacity).
    #[arg(long, value_name = "REQ_PER_S", conflicts_with = "sim")]
    demand: Option<f64>,
    /// Seconds to run.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS", conflicts_with = "sim")]
    secs: f64,
    /// What each gate does when the price goes silent: freeze, fallback or hybrid.
    #[arg(long, default_value = "hybrid", conflicts_with = "sim")]
    mode: String,
    /// Lease of a grant \[ms\].
    #[arg(long, default_value_t = 1000, value_name = "MS", conflicts_with = "sim")]
    lease_ms: u64,
    /// Refresh interval of each gate \[ms\].
    #[arg(long, default_value_t = 250, value_name = "MS", conflicts_with = "sim")]
    refresh_ms: u64,
    /// The price's gain γ (default: 22.5 / capacity², the loop gain γ = 10⁻³ has at 150
    /// req/s, so the price settles as fast at any bound).
    #[arg(long, conflicts_with = "sim")]
    gamma: Option<f64>,
    /// Stop the private Redis at START seconds for LEN seconds (`START:LEN`).
    #[arg(long, value_name = "START:LEN", conflicts_with = "sim")]
    outage: Option<String>,
    /// Serve Prometheus metrics of every gate at http://ADDR/metrics while running.
    #[arg(long, value_name = "ADDR", conflicts_with = "sim")]
    metrics: Option<std::net::SocketAddr>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Measure in the model instead of running processes: starvation against the price,
    /// the price's delay threshold, the failure detectors' trade-off, and the Stag Hunt's
    /// payoffs and tipping share with verdicts on F13–F15.
    #[arg(long)]
    sim: bool,
    /// With --sim: the local controller a gate falls back to (a registry spec).
    #[arg(long, default_value = "cycle", value_name = "SPEC", requires = "sim", conflicts_with = "scenario")]
    fallback: String,
    /// With --sim: gates in the tipping-share fleet.
    #[arg(long, default_value_t = 9, value_name = "M", requires = "sim", conflicts_with = "scenario")]
    fleet_size: usize,
    /// With --sim: run this fleet file (`[fleet]`, docs/fleet.md) instead of the built-in
    /// measurements, uncoordinated (`--local`) and, if it has a `[fleet.price]`, priced.
    #[arg(long, value_name = "FILE", requires = "sim")]
    scenario: Option<std::path::PathBuf>,
    /// With --scenario: each gate's policy without the price (a registry spec).
    #[arg(long, default_value = "open", value_name = "SPEC", requires = "scenario")]
    local: String,
    /// With --scenario: each priced gate under the safety filter of this boundary file.
    #[arg(long, value_name = "FILE", requires = "scenario")]
    boundary: Option<std::path::PathBuf>,
    /// With --sim: write SVG figures here (the price below and above its delay threshold,
    /// the tipping curves).
    #[arg(long, value_name = "DIR", requires = "sim", conflicts_with = "scenario")]
    figures: Option<std::path::PathBuf>,
}

/// Flags of `safegate fleet-gate` (one gate; started by `safegate fleet`).
#[derive(Debug, Args)]
pub(crate) struct FleetGateArgs {
    #[arg(long)]
    redis: String,
    #[arg(long)]
    id: String,
    #[arg(long)]
    demand: f64,
    #[arg(long)]
    downstream: Option<String>,
    #[arg(long)]
    mode: String,
    #[arg(long)]
    capacity: f64,
    #[arg(long)]
    lease_ms: u64,
    #[arg(long)]
    refresh_ms: u64,
    #[arg(long)]
    gamma: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The fleet's size assumed before the first grant.
    #[arg(long, default_value_t = 1)]
    members: u32,
}

/// One gate's report line (JSON, every 200 ms on the gate's stdout).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Line {
    pub(crate) id: String,
    pub(crate) offered: u64,
    pub(crate) admitted: u64,
    pub(crate) succeeded: u64,
    pub(crate) failed: u64,
    pub(crate) grants: u64,
    pub(crate) silences: u64,
    pub(crate) unpriced: u64,
    pub(crate) limit: f64,
    /// The mode of the gate's latest decision ([`Mode::name`]: `granted`, `learning`,
    /// `frozen`, `held-expired`, `share`, `fallback`, `bootstrap`), or `starting`.
    #[serde(default)]
    pub(crate) mode: String,
}

/// A gate's mode before its first decision.
const STARTING: &str = "starting";

/// The price's default gain at a bound of `capacity` \[req/s\]. Kelly's update moves the
/// admitted total by `γ · Σw/p²` per unit of excess, and at the fair price `p* = Σw/c`
/// that is `γ·c²/Σw`: the same loop gain at every bound takes `γ ∝ 1/c²`. 22.5 is
/// `10⁻³ · 150²`, the gain measured in docs/fleet.md §The price over Redis.
pub(crate) fn default_gamma(capacity: f64) -> f64 {
    22.5 / (capacity * capacity)
}

fn price_config(capacity: f64, gamma: f64, lease_ms: u64) -> PriceConfig {
    PriceConfig { capacity, gamma, lease_ms, max_step_ms: 500 }
}

pub(crate) fn gate(args: &FleetGateArgs) -> Result<ExitCode> {
    let mode = parse_policy(&args.mode).map_err(|e| anyhow::anyhow!("--mode: {e}"))?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        let coord =
            Coordinator::connect(&args.redis, "fleet", price_config(args.capacity, args.gamma, args.lease_ms)).await?;
        let stats = Arc::new(GateStats::default());
        let (stop_tx, stop) = tokio::sync::watch::channel(false);
        let cfg = GateConfig {
            id: args.id.clone(),
            demand: args.demand,
            weight: 1.0,
            refresh: Duration::from_millis(args.refresh_ms),
            refresh_timeout: Duration::from_millis(args.refresh_ms.min(500)),
            downstream: args.downstream.clone(),
            timeout: Duration::from_secs(5),
            seed: args.seed,
        };
        // Fallback's local limit: the whole dependency, as a lone limiter would set it.
        let lease = args.lease_ms as f64 / 1e3;
        let suspect_after = 3.0 * args.refresh_ms as f64 / 1e3;
        let keeper = Box::new(Keeper::new(mode, args.capacity, args.capacity, lease, suspect_after, args.members)?);
        let task = tokio::spawn(run_gate(coord, cfg, keeper, stats.clone(), stop));
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    let l = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
                    let line = Line {
                        id: args.id.clone(),
                        offered: l(&stats.offered),
                        admitted: l(&stats.admitted),
                        succeeded: l(&stats.succeeded),
                        failed: l(&stats.failed),
                        grants: l(&stats.grants),
                        silences: l(&stats.silences),
                        unpriced: l(&stats.unpriced_decisions),
                        limit: l(&stats.limit_milli) as f64 / 1e3,
                        mode: stats.mode().map_or(STARTING, Mode::name).to_string(),
                    };
                    println!("{}", serde_json::to_string(&line)?);
                }
                _ = term.recv() => break,
                _ = tokio::signal::ctrl_c() => break,
            }
        }
        let _ = stop_tx.send(true);
        let _ = task.await;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Per-second aggregate of the fleet.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Second {
    /// Wall seconds since the gates started.
    pub(crate) t: f64,
    /// Requests admitted over the second, all gates.
    pub(crate) admitted: f64,
    /// Requests the downstream answered with success over the second, all gates: the
    /// fleet's goodput (a request admitted near the end of one second may succeed in the
    /// next).
    pub(crate) succeeded: f64,
    /// Jain's index of the gates' admitted requests over the second.
    pub(crate) jain: f64,
    pub(crate) coordinator_up: bool,
}

/// What `safegate fleet --json` prints.
#[derive(Debug, Serialize)]
pub(crate) struct FleetReport {
    nodes: u32,
    mode: &'static str,
    capacity: f64,
    demand: f64,
    seconds: Vec<Second>,
    gates: Vec<Line>,
    outage: Option<OutageSummary>,
    refresh_ms: u64,
}

#[derive(Debug, Clone, Serialize)]
struct OutageSummary {
    start: f64,
    length: f64,
    worst_second: f64,
    mean_admitted: f64,
    /// Mean admitted rate over the outage as a share of the bound.
    admitted_share_of_bound: f64,
    /// Mean rate of successful requests over the outage \[req/s\].
    mean_succeeded: f64,
    /// Mean rate of successful requests over the last quarter of the run, after the
    /// outage \[req/s\]: whether the downstream came back.
    succeeded_at_end: f64,
    /// Seconds from the coordinator's return until every gate held a new grant and the
    /// granted shares were fair (Jain ≥ 0.95) and within the bound.
    fair_again_after: Option<f64>,
    unpriced_decisions: u64,
    /// Whole seconds sampled inside the outage (after its first) that the figures above
    /// average; 0 when the harness fell behind and sampled none (then they are 0 and
    /// no verdict is given).
    measured_seconds: usize,
}

/// Every gate's counters in Prometheus's text format.
fn render_metrics(lines: &[Line]) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    type Metric = (&'static str, &'static str, &'static str, fn(&Line) -> f64);
    let metrics: [Metric; 7] = [
        ("safegate_requests_offered_total", "counter", "Arrivals at the gate.", |l| l.offered as f64),
        ("safegate_requests_admitted_total", "counter", "Requests admitted to the dependency.", |l| l.admitted as f64),
        ("safegate_requests_failed_total", "counter", "Admitted requests that failed or timed out.", |l| {
            l.failed as f64
        }),
        ("safegate_fleet_grants_total", "counter", "Refreshes the coordinator answered.", |l| l.grants as f64),
        ("safegate_fleet_silences_total", "counter", "Refreshes that failed.", |l| l.silences as f64),
        (
            "safegate_fleet_decisions_without_price_total",
            "counter",
            "Admission decisions taken without a fresh price.",
            |l| l.unpriced as f64,
        ),
        ("safegate_limit", "gauge", "The admitted rate in force [req/s].", |l| l.limit),
    ];
    for (name, kind, help, get) in metrics {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for l in lines {
            let _ = writeln!(o, "{name}{{gate=\"{}\"}} {}", l.id, get(l));
        }
    }
    // A state set: 1 for the mode of the gate's latest decision, 0 for the others.
    let name = "safegate_fleet_gate_mode";
    let _ =
        writeln!(o, "# HELP {name} The mode of the gate's latest decision (1) among all modes.\n# TYPE {name} gauge");
    for l in lines {
        for m in Mode::ALL {
            let _ = writeln!(o, "{name}{{gate=\"{}\",mode=\"{}\"}} {}", l.id, m.name(), u8::from(l.mode == m.name()));
        }
    }
    o
}

/// A fleet run's settings: what `safegate fleet` and `safegate serve`'s fleet view start.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) nodes: u32,
    /// The coordination Redis; `None` starts a private redis-server (needed for an outage).
    pub(crate) redis: Option<String>,
    pub(crate) capacity: f64,
    pub(crate) demand: f64,
    pub(crate) secs: f64,
    pub(crate) mode: LossPolicy,
    pub(crate) lease_ms: u64,
    pub(crate) refresh_ms: u64,
    pub(crate) gamma: f64,
    /// Stop the private Redis at `.0` seconds for `.1` seconds.
    pub(crate) outage: Option<(f64, f64)>,
    pub(crate) metrics: Option<std::net::SocketAddr>,
}

/// Shortest coordinator outage \[s\] a run's summary can measure.
pub(crate) const MIN_OUTAGE_SECS: f64 = 2.0;

impl Plan {
    /// Every setting in range; an error starts with the setting's name (`nodes 0: …`).
    /// Every value in range; the error starts with the key as the API names it
    /// (`lease_ms`), which [`flag`] turns into the command line's (`--lease-ms`).
    pub(crate) fn check(&self) -> Result<(), String> {
        use safegate_core::error::number;
        if !(1..=64).contains(&self.nodes) {
            return Err(format!("nodes {}: expected 1 to 64", self.nodes));
        }
        if !(self.capacity > 0.0 && self.capacity <= 1e5) {
            return Err(format!("capacity {}: expected (0, 100000] req/s", number(self.capacity)));
        }
        if !(self.secs > 0.0 && self.secs <= 3600.0) {
            return Err(format!("secs {}: expected (0, 3600]", number(self.secs)));
        }
        if !(0.0..=1e6).contains(&self.demand) {
            return Err(format!("demand {}: expected [0, 1e6] req/s", number(self.demand)));
        }
        price_config(self.capacity, self.gamma, self.lease_ms).check().map_err(|e| e.to_string())?;
        if !(10..=60_000).contains(&self.refresh_ms) {
            return Err(format!("refresh_ms {}: expected 10 to 60000", self.refresh_ms));
        }
        if let Some((a, b)) = self.outage {
            // The summary skips the outage's first second (leases granted before still
            // hold) and needs a whole second after it, and one after the return: a shorter
            // window gave its verdict on no sample at all.
            if !(a >= 0.0 && b >= MIN_OUTAGE_SECS && a + b + 1.0 <= self.secs) {
                let (a, b, secs) = (number(a), number(b), number(self.secs));
                return Err(format!(
                    "outage {a}:{b}: expected 0 ≤ START, LEN ≥ {MIN_OUTAGE_SECS} (the first second is skipped, the summary needs one more), START + LEN ≤ secs {secs} − 1 (a second after the return)"
                ));
            }
            if self.redis.is_some() {
                return Err("outage: it stops the private Redis, so it cannot be combined with --redis".into());
            }
        }
        Ok(())
    }
}

/// A [`Plan::check`] error as the command line says it: its leading key as a flag
/// (`lease_ms = 0 …` → `--lease-ms = 0 …`).
fn flag(e: &str) -> String {
    let key = e.find([' ', ':']).unwrap_or(e.len());
    format!("--{}{}", e[..key].replace('_', "-"), &e[key..])
}

/// `START:LEN` in seconds.
pub(crate) fn parse_outage(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = s.split_once(':').ok_or_else(|| format!("outage {s:?}: expected START:LEN in seconds"))?;
    let num = |v: &str, what: &str| {
        v.trim().parse::<f64>().map_err(|_| format!("outage {s:?}: {what} {v:?} is not a number"))
    };
    Ok((num(a, "START")?, num(b, "LEN")?))
}

/// What `play` reports once a second.
#[derive(Debug)]
pub(crate) struct Tick<'a> {
    /// The fleet's aggregate over the second.
    pub(crate) second: &'a Second,
    /// Every gate's latest line (cumulative counters, limit and mode).
    pub(crate) gates: &'a [Line],
    /// Every gate's admitted requests over the second.
    pub(crate) admitted: &'a [f64],
}

pub(crate) fn run(args: &FleetArgs) -> Result<ExitCode> {
    if args.sim {
        if let Some(path) = &args.scenario {
            return crate::fleet_sim::run_file(path, &args.local, args.boundary.as_deref(), args.json);
        }
        return crate::fleet_sim::run(&args.fallback, args.fleet_size, args.json, args.figures.as_deref());
    }
    let mode = parse_policy(&args.mode).map_err(|e| anyhow::anyhow!("--mode: {e}"))?;
    let plan = Plan {
        nodes: args.nodes,
        redis: args.redis.clone(),
        capacity: args.capacity,
        demand: args.demand.unwrap_or(2.0 * args.capacity),
        secs: args.secs,
        mode,
        lease_ms: args.lease_ms,
        refresh_ms: args.refresh_ms,
        gamma: args.gamma.unwrap_or(default_gamma(args.capacity)),
        outage: args.outage.as_deref().map(parse_outage).transpose().map_err(|e| anyhow::anyhow!("--{e}"))?,
        metrics: args.metrics,
    };
    plan.check().map_err(|e| anyhow::anyhow!("{}", flag(&e)))?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let json = args.json;
    let mut status = crate::progress::StatusLine::new();
    let mut on_second = |tick: &Tick<'_>| {
        if !json {
            let s = tick.second;
            let line = format!(
                "t {:>5.0} s  admitted {:>7.1}/s (bound {:.0})  Jain {:.3}  coordinator {}",
                s.t,
                s.admitted,
                plan.capacity,
                s.jain,
                if s.coordinator_up { "up" } else { "DOWN" }
            );
            status.show(&line, s.t / plan.secs);
        }
        ControlFlow::Continue(())
    };
    let report = rt.block_on(crate::stop::on_signal(
        play(&plan, &mut on_second),
        "the gates and the private Redis were stopped",
    ))?;
    if json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        status.finish();
        print_report(&report, args.secs);
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs the fleet: `plan.nodes` `safegate fleet-gate` processes (this executable), the
/// emulated downstream, the coordination Redis (a private one unless `plan.redis`), the
/// outage if any; calls `on_second` once a second and returns the report. The run ends
/// early when `on_second` answers [`ControlFlow::Break`] (a viewer that went away).
pub(crate) async fn play(plan: &Plan, on_second: &mut dyn FnMut(&Tick<'_>) -> ControlFlow<()>) -> Result<FleetReport> {
    plan.check().map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut server = match &plan.redis {
        Some(_) => None,
        None => Some(RedisServer::start(false)?),
    };
    let url = plan.redis.clone().or_else(|| server.as_ref().map(|s| s.url())).context("a Redis URL")?;
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
        let mut child = tokio::process::Command::new(std::env::current_exe()?)
            .arg("fleet-gate")
            .args(["--redis", &url, "--id", &format!("g{i}"), "--demand", &per_gate.to_string()])
            .args(["--downstream", &ds.url(), "--mode", policy_name(plan.mode)])
            .args(["--capacity", &plan.capacity.to_string(), "--lease-ms", &plan.lease_ms.to_string()])
            .args(["--refresh-ms", &plan.refresh_ms.to_string(), "--gamma", &plan.gamma.to_string()])
            .args(["--seed", &(i + 1).to_string(), "--members", &plan.nodes.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting a fleet-gate process")?;
        let out = child.stdout.take().context("the gate's stdout")?;
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
    let metrics = match plan.metrics {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| anyhow::anyhow!("cannot listen on {addr} (the metrics endpoint): {e}"))?;
            eprintln!("metrics: http://{}/metrics", listener.local_addr()?);
            let state = shared.clone();
            let app = axum::Router::new().route(
                "/metrics",
                axum::routing::get(move || {
                    let lines = state.lock().map(|l| l.clone()).unwrap_or_default();
                    async move { render_metrics(&lines) }
                }),
            );
            Some(tokio::spawn(async move {
                let _ = axum::serve(listener, app).await;
            }))
        }
        None => None,
    };
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
        if let Some(pid) = c.id() {
            let _ = std::process::Command::new("kill").arg("-TERM").arg(pid.to_string()).status();
        }
    }
    for c in &mut children {
        let _ = tokio::time::timeout(Duration::from_secs(3), c.wait()).await;
        let _ = c.kill().await;
    }
    ds.shutdown().await;
    if let Some(m) = metrics {
        m.abort();
    }
    drop(server);
    let outage = plan.outage.map(|(a, b)| {
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
    });
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

fn print_report(r: &FleetReport, secs: f64) {
    println!(
        "safegate fleet: {} gates ({}), demand {:.0} req/s against a bound of {:.0} req/s",
        r.nodes, r.mode, r.demand, r.capacity
    );
    println!(
        "{:<6}{:>14}{:>14}{:>10}{:>10}{:>10}  mode at the end",
        "gate", "admitted/s", "succeeded/s", "grants", "silences", "unpriced"
    );
    for g in &r.gates {
        println!(
            "{:<6}{:>14.1}{:>14.1}{:>10}{:>10}{:>10}  {}",
            g.id,
            g.admitted as f64 / secs,
            g.succeeded as f64 / secs,
            g.grants,
            g.silences,
            g.unpriced,
            g.mode
        );
    }
    let up: Vec<&Second> = r.seconds.iter().filter(|s| s.coordinator_up && s.t > 2.0).collect();
    if !up.is_empty() {
        let mean = up.iter().map(|s| s.admitted).sum::<f64>() / up.len() as f64;
        let ok = up.iter().map(|s| s.succeeded).sum::<f64>() / up.len() as f64;
        let j = up.iter().map(|s| s.jain).sum::<f64>() / up.len() as f64;
        println!(
            "coordinator up: admitted {mean:.1} req/s ({:.0} % of the bound), succeeded {ok:.1} req/s, mean Jain {j:.3}",
            100.0 * mean / r.capacity
        );
    }
    if let Some(o) = r.outage.as_ref().filter(|o| o.measured_seconds == 0) {
        println!(
            "coordinator down {:.0}–{:.0} s: not measured (no whole second was sampled inside it; the gates or the machine fell behind)",
            o.start,
            o.start + o.length
        );
    } else if let Some(o) = &r.outage {
        println!(
            "coordinator down {:.0}–{:.0} s: admitted worst second {:.1} req/s ({:.0} % of the bound), mean {:.1} ({:.0} %); succeeded {:.1} req/s; decisions without a fresh price {}; fair again {}",
            o.start,
            o.start + o.length,
            o.worst_second,
            100.0 * o.worst_second / r.capacity,
            o.mean_admitted,
            100.0 * o.admitted_share_of_bound,
            o.mean_succeeded,
            o.unpriced_decisions,
            o.fair_again_after.map_or("never".to_string(), |t| format!("{:.2} s ({:.1} refresh intervals) after it returned", t, t * 1e3 / r.refresh_ms as f64))
        );
        println!("after the outage: succeeded {:.1} req/s over the run's last quarter", o.succeeded_at_end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_count_decisions_without_a_price_per_gate() {
        let l = Line { id: "g3".into(), unpriced: 17, limit: 18.75, mode: "share".into(), ..Line::default() };
        let m = render_metrics(&[l]);
        assert!(m.contains("safegate_fleet_gate_mode{gate=\"g3\",mode=\"share\"} 1"), "{m}");
        assert!(m.contains("safegate_fleet_gate_mode{gate=\"g3\",mode=\"granted\"} 0"), "{m}");
        assert!(m.contains("safegate_fleet_decisions_without_price_total{gate=\"g3\"} 17"), "{m}");
        assert!(m.contains("safegate_limit{gate=\"g3\"} 18.75"), "{m}");
        assert!((jain(&[1.0, 1.0]) - 1.0).abs() < 1e-12 && jain(&[0.0, 0.0]) == 1.0);
    }
}
