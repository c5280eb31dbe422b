//! `safegate live`: a scenario played by a real Redis-backed worker pool on loopback.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use safegate_live::loadgen::RetryPolicy;
use safegate_live::run::{
    json_document, model_column, DownstreamTarget, LiveOptions, LivePolicy, LiveReport, LiveRun, Progress, RedisTarget,
};
use safegate_sim::variants::variants;
use safegate_sim::Scenario;
use safegate_studies::run::{toml_float, RunReport, DEFAULT_SCENARIO};

use safegate_render::run::{render_chart, render_table, verdict_block};

use crate::chart_to::ChartTo;
use crate::set_arg::parse_sets;

/// Flags of `safegate live`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub(crate) struct LiveArgs {
    /// Scenario file (TOML). Without it: the seed's λ = 80 band under its gate.
    scenario: Option<PathBuf>,
    /// Model seconds to run (run.duration).
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// Model seconds per wall second: 10 plays the 400-s band in 40 s [default: 10; 1, and
    /// only 1, with a PostgreSQL downstream].
    #[arg(long, value_name = "X")]
    speed: Option<f64>,
    /// A running Redis (`redis://[:PASSWORD@]HOST:PORT/`); without it a private
    /// redis-server is started on a free loopback port and stopped after.
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    /// The queue's name in Redis (its keys are `sg:{NS}:*`).
    #[arg(long, default_value = "safegate", value_name = "NS")]
    namespace: String,
    /// Delete the queue's keys first (with --redis: a queue holding an earlier run's books is
    /// refused otherwise; nothing is deleted without this flag).
    #[arg(long)]
    reset: bool,
    /// A running downstream (`POST URL/work`) instead of the built-in emulator.
    #[arg(long, value_name = "URL", conflicts_with = "pg_url")]
    downstream: Option<String>,
    /// PostgreSQL as the downstream: each job is one transaction on this database, as the
    /// scenario's `[postgres]` table describes (its defaults without one). Also
    /// `postgres.url` in the scenario, or `SAFEGATE_PG_URL`.
    #[arg(long, value_name = "URL")]
    pg_url: Option<String>,
    /// Serve Prometheus metrics at http://ADDR/metrics while running (port 0: a free one).
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR")]
    metrics: SocketAddr,
    /// Do not serve metrics.
    #[arg(long)]
    no_metrics: bool,
    /// Run no executors here: `safegate executor` processes serve the backlog.
    #[arg(long)]
    external_executors: bool,
    /// Base traffic λ [req/s] (traffic.rate).
    #[arg(long, value_name = "REQ_PER_S")]
    traffic: Option<f64>,
    /// Rejection sensitivity in [0, 1]; 0 turns the gate off (gate.sensitivity).
    #[arg(long)]
    sensitivity: Option<f64>,
    /// Seed of every random draw (run.seed).
    #[arg(long)]
    seed: Option<u64>,
    /// Any scenario key, e.g. `--set health.kind="dip"`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Run under the safety filter of this boundary file (replaces a `[boundary]` table).
    #[arg(long, value_name = "FILE")]
    boundary: Option<PathBuf>,
    /// The nominal controller instead of the scenario's gate: a registry spec such as
    /// `cycle+pool` or `vegas+pool` (under the boundary's filter when one is given).
    #[arg(long, value_name = "SPEC", value_parser = crate::policy_arg::PolicyParser)]
    policy: Option<safegate_core::controllers::PolicySpec>,
    /// Chance a failed job is offered again [default: from the scenario's retries, else 0].
    #[arg(long, value_name = "P")]
    retry_probability: Option<f64>,
    /// Mean backoff before a retry, in model seconds.
    #[arg(long, default_value_t = 0.1, value_name = "SECONDS")]
    retry_backoff: f64,
    /// Retry budget: most retries per first attempt (unlimited without it).
    #[arg(long, value_name = "RATIO")]
    retry_budget: Option<f64>,
    /// Longest wait for one downstream call, in model seconds (then the attempt fails).
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    timeout: f64,
    /// Do not run the stochastic simulator on the same scenario beside the live run.
    #[arg(long)]
    no_sim: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Where to write the SVG chart [default: safegate-live.svg; with --json, only when given];
    /// `-` writes it to standard output, and the table to standard error.
    #[arg(long, value_name = "PATH")]
    svg: Option<PathBuf>,
    /// Do not write the chart.
    #[arg(long, conflicts_with = "svg")]
    no_svg: bool,
    /// Write a scrape of `/metrics` every model second, stamped with the model time, to
    /// PATH: telemetry for `safegate boundary check` (docs/boundary-check.md).
    #[arg(long, value_name = "PATH")]
    scrapes: Option<PathBuf>,
}

impl LiveArgs {
    fn overrides(&self) -> Result<Vec<(String, String)>> {
        let mut o: Vec<(String, String)> = Vec::new();
        if let Some(v) = self.duration {
            o.push(("run.duration".into(), toml_float(v)));
        }
        if let Some(v) = self.traffic {
            o.push(("traffic.rate".into(), toml_float(v)));
        }
        if let Some(v) = self.sensitivity {
            o.push(("gate.sensitivity".into(), toml_float(v)));
        }
        if let Some(v) = self.seed {
            o.push(("run.seed".into(), v.to_string()));
        }
        o.extend(parse_sets(&self.set)?);
        Ok(o)
    }
}

pub(crate) fn run(args: &LiveArgs) -> Result<ExitCode> {
    let overrides = args.overrides()?;
    let (mut scenario, origin) = match &args.scenario {
        Some(path) => (Scenario::load_with(path, &overrides)?, path.display().to_string()),
        None => (
            Scenario::from_toml_with(DEFAULT_SCENARIO, "<embedded band-80>", &overrides)?,
            "<embedded band-80>".to_string(),
        ),
    };
    if let Some(path) = &args.boundary {
        scenario.boundary = Some(safegate_sim::scenario::load_boundary(path)?);
    }
    // As `safegate run`: an override nothing reads is refused (any mode: the live
    // downstream uses the service law whatever the scenario's mode).
    // --pg-url alone is a `[postgres]` table of defaults: the health and the service law are
    // then the database's, not the scenario's (an override of them is refused as unread).
    if args.pg_url.is_some() && scenario.postgres.is_none() {
        scenario.postgres = Some(Default::default());
    }
    if let (Some(_), Some(url)) = (&scenario.postgres, &args.downstream) {
        anyhow::bail!(
            "--downstream {url}: the scenario's [postgres] table makes PostgreSQL the downstream; use one or the other"
        );
    }
    crate::calls::refuse_unread(&scenario, &overrides, None, &origin)?;
    let mut cfg = scenario.config(&origin)?;
    if scenario.postgres.is_some() {
        // The database serves at its own health: the model column and the live report's
        // health series run at a constant 1, not the scenario's schedule.
        cfg.health = safegate_sim::health::HealthTrack::new(safegate_sim::HealthSchedule::Constant { level: 1.0 });
    }
    // The downstream: a database when the scenario has a `[postgres]` table or --pg-url is
    // given; then model time is wall time (speed 1).
    let pg = match (&scenario.postgres, &args.pg_url) {
        (None, None) => None,
        _ => Some(crate::pg_cmd::workload(Some(&scenario), args.pg_url.as_deref(), &origin)?),
    };
    let on_postgres = pg.is_some();
    let speed = args.speed.unwrap_or(if on_postgres { 1.0 } else { 10.0 });
    let variant = variants(&scenario, false)
        .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?
        .pop()
        .context("the scenario gave no policy")?;
    let make = || -> Result<(String, LivePolicy)> {
        Ok(match &args.policy {
            None => (variant.label.clone(), variant.policy.clone().into()),
            Some(spec) => {
                let p = LivePolicy::from_spec(spec, &cfg, scenario.boundary.as_ref())
                    .map_err(|e| anyhow::anyhow!("--policy {spec}: {e}"))?;
                let label = match &scenario.boundary {
                    Some(b) => format!("{spec} under {}", b.name.as_deref().unwrap_or("the boundary")),
                    None => spec.to_string(),
                };
                (label, p)
            }
        })
    };
    let (label, policy) = make()?;
    // The same scenario and policy in the stochastic simulator, for the side-by-side
    // column (milliseconds beside a live run's seconds).
    // The verdicts' safe line (and the live metrics' barrier margin).
    let line = variant.scenario.safe_threshold() * cfg.pool.capacity;
    // Where the chart goes, checked before anything runs (`--svg -` with `--json` is refused).
    let chart = ChartTo::from_flags(args.svg.as_deref(), args.no_svg, args.json, "safegate-live.svg")?;
    // The files written after the run: a path that cannot be a file is refused now, not
    // after a 40-s run.
    let files = [
        (
            "--svg",
            chart.as_ref().and_then(|c| match c {
                ChartTo::File(p) => Some(p.as_path()),
                ChartTo::Stdout => None,
            }),
        ),
        ("--scrapes", args.scrapes.as_deref()),
    ];
    for (flag, path) in files {
        if let Some(path) = path {
            crate::out_dir::check_file(flag, path)?;
        }
    }
    // A load the generator cannot offer is refused before the model column is simulated
    // (`--speed` itself is checked with the other options below).
    if (0.01..=safegate_live::run::MAX_SPEED).contains(&speed) {
        safegate_live::run::check_offer_rate(&cfg, speed).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    }
    let sim = if args.no_sim {
        None
    } else {
        let (_, p) = make()?;
        Some(model_column(&label, &variant.scenario, &cfg, p, line).with_context(|| format!("scenario {origin}"))?)
    };
    // Checked even when no retry is on, so a bad value is not silently ignored.
    if !(args.retry_backoff.is_finite() && (0.0..=1e4).contains(&args.retry_backoff)) {
        anyhow::bail!("--retry-backoff {} is out of range: allowed [0, 1e4] model seconds", args.retry_backoff);
    }
    let retry = match (args.retry_probability, args.retry_budget) {
        (None, None) => None,
        (p, b) => Some(RetryPolicy {
            probability: p.unwrap_or(1.0),
            backoff: args.retry_backoff,
            budget: b,
            around_gate: false,
        }),
    };
    let opts = LiveOptions {
        speed,
        redis: args.redis.clone().map_or(RedisTarget::Own, RedisTarget::Url),
        namespace: args.namespace.clone(),
        reset: args.reset,
        metrics: (!args.no_metrics).then_some(args.metrics),
        downstream: match (pg, &args.downstream) {
            (Some(spec), _) => DownstreamTarget::Postgres(spec),
            (None, Some(url)) => DownstreamTarget::Url(url.clone()),
            (None, None) => DownstreamTarget::Emulated,
        },
        retry,
        timeout: args.timeout,
        heartbeat: Duration::from_secs(1),
        executors: !args.external_executors,
        scrape_every: args.scrapes.is_some().then_some(1.0),
    };
    opts.check().map_err(|e| {
        let flag = format!("--{}", e.field.replace('.', "-"));
        anyhow::anyhow!("{}", e.to_string().replacen(&e.field, &flag, 1))
    })?;
    let live_run = LiveRun { cfg: cfg.clone(), opts, line };
    let rt = crate::runtime::runtime()?;
    if let (Some(url), true) = (&args.redis, args.reset) {
        eprintln!(
            "note: the run starts by deleting the queue {:?} on {} (--reset)",
            args.namespace,
            safegate_live::redis_conn::redact(url)
        );
    }
    if !args.json {
        eprintln!(
            "safegate live: {} under {} at {}× ({:.0} s of wall time)",
            scenario.name.as_deref().unwrap_or(&origin),
            label,
            speed,
            cfg.duration / speed
        );
    }
    let mut status = crate::progress::StatusLine::new();
    // The metrics' address, once it is bound (a free port by default).
    let mut metrics_shown = args.json;
    // With the executors elsewhere, how they join: shown at once (even with --json, on
    // stderr), since the run's clock is already going.
    let mut join_shown = false;
    let mut on_progress = |p: &Progress| {
        if let (false, Some(join)) = (join_shown, &p.join) {
            status.note(&format!("no executor runs here: start them with\n  {join}"));
            join_shown = true;
        }
        if let (false, Some(addr)) = (metrics_shown, p.metrics) {
            status.note(&format!("metrics: http://{addr}/metrics"));
            metrics_shown = true;
        }
        status.show(&p.line(), p.t / p.duration)
    };
    let run = async { Ok(safegate_live::run::run(&live_run, policy, &mut on_progress).await?) };
    let report: LiveReport = rt.block_on(crate::stop::on_signal(run, "the run and its private Redis were stopped"))?;
    status.finish();
    for w in report.warnings() {
        eprintln!("warning: {w}");
    }
    let live_column = report.column(&label, &variant.scenario, &cfg, line);
    let on = if on_postgres {
        "live on Redis, jobs on PostgreSQL, in wall time".to_string()
    } else {
        format!("live on Redis at {}× speed", report.speed)
    };
    let mode = if args.no_sim { on } else { format!("{on}, beside the stochastic model") };
    let columns: Vec<RunReport> = sim.into_iter().chain([live_column]).collect();
    if let Some(to) = &chart {
        to.write(&render_chart("safegate live", &mode, &scenario, &cfg, line, &columns))?;
    }
    let say = |text: &str| ChartTo::say(chart.as_ref(), text);
    if let (Some(path), Some(text)) = (&args.scrapes, &report.scrapes) {
        std::fs::write(path, text).with_context(|| format!("writing the scrapes to {}", path.display()))?;
        if !args.json {
            say(&format!("scrapes: {} (check them: safegate boundary check {})\n", path.display(), path.display()));
        }
    }
    if args.json {
        let (live, model) = columns.split_last().expect("the live column");
        let doc = json_document(&report, model.first(), live, chart.as_ref().map(ChartTo::shown));
        println!("{}", serde_json::to_string(&doc)?);
    } else {
        say(&render_table("safegate live", &mode, &scenario, &cfg, &origin, &columns));
        say(&verdict_block(&columns));
        say(&report.accounting_table());
        if let Some(ChartTo::File(path)) = &chart {
            say(&format!("chart: {}\n", path.display()));
        }
    }
    if report.lost != 0 {
        eprintln!(
            "error: {} admitted jobs are unaccounted for (admitted − completed − failed − in backlog)",
            report.lost
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
