//! `safegate fleet`: M gate processes sharing one downstream, coordinated by a price over
//! Redis, with an optional coordinator outage; and `safegate fleet-gate`, one such process.

use std::ops::ControlFlow;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use safegate_live::fleet::{default_gamma, parse_outage, play, GateCommand, GateSettings, Plan, Tick};
use safegate_live::fleet_gate::parse_policy;

use crate::runtime::runtime;

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

pub(crate) fn gate(args: &FleetGateArgs) -> Result<ExitCode> {
    let mode = parse_policy(&args.mode).map_err(|e| anyhow::anyhow!("--mode: {e}"))?;
    let settings = GateSettings {
        redis: args.redis.clone(),
        id: args.id.clone(),
        demand: args.demand,
        downstream: args.downstream.clone(),
        mode,
        capacity: args.capacity,
        lease_ms: args.lease_ms,
        refresh_ms: args.refresh_ms,
        gamma: args.gamma,
        seed: args.seed,
        members: args.members,
    };
    runtime()?.block_on(async {
        let stop = crate::stop::signal()?;
        let stop = async {
            stop.await;
        };
        anyhow::Ok(safegate_live::fleet::gate(&settings, &mut std::io::stdout(), stop).await?)
    })?;
    Ok(ExitCode::SUCCESS)
}

/// A [`Plan::check`] error as the command line says it: its leading key as a flag
/// (`lease_ms = 0 …` → `--lease-ms = 0 …`).
fn flag(e: &str) -> String {
    let key = e.find([' ', ':']).unwrap_or(e.len());
    format!("--{}{}", e[..key].replace('_', "-"), &e[key..])
}

pub(crate) fn run(args: &FleetArgs) -> Result<ExitCode> {
    if args.sim {
        if let Some(path) = &args.scenario {
            return crate::fleet_sim_render::run_file(path, &args.local, args.boundary.as_deref(), args.json);
        }
        return crate::fleet_sim_render::run(&args.fallback, args.fleet_size, args.json, args.figures.as_deref());
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
    };
    plan.check().map_err(|e| anyhow::anyhow!("{}", flag(&e)))?;
    let gate = GateCommand { program: std::env::current_exe()?, args: vec!["fleet-gate".into()] };
    let rt = runtime()?;
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
    let report = rt.block_on(async {
        let metrics = match args.metrics {
            Some(addr) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|e| anyhow::anyhow!("cannot listen on {addr} (the metrics endpoint): {e}"))?;
                eprintln!("metrics: http://{}/metrics", listener.local_addr()?);
                Some(listener)
            }
            None => None,
        };
        let fleet = async { Ok(play(&plan, &gate, metrics, &mut on_second).await?) };
        crate::stop::on_signal(fleet, "the gates and the private Redis were stopped").await
    })?;
    if json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        status.finish();
        print!("{}", safegate_render::fleet_run::live_text(&report, args.secs));
    }
    Ok(ExitCode::SUCCESS)
}
