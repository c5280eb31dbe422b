//! `safegate pg`: the seed's system on PostgreSQL (docs/postgres.md). `pg curve` measures
//! and fits the database's service curve and writes the scenarios and boundary it implies;
//! `pg arms` plays the seed's arms and a sweep of fixed concurrencies on it, each beside the
//! simulator's prediction.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use safegate_live::pg::PgSpec;
use safegate_live::pg_study::{self, Arm, ArmsOptions, CurveOptions, InputError};
use safegate_live::run::RedisTarget;
use safegate_sim::Scenario;

/// Flags of `safegate pg`.
#[derive(Debug, Args)]
pub(crate) struct PgArgs {
    #[command(subcommand)]
    command: PgCommand,
}

#[derive(Debug, Subcommand)]
enum PgCommand {
    /// Measure X(n) on the database for n = 1 … the pool's size, fit the USL and the
    /// contention law, and write the scenarios (1.5× and 3× the peak) and boundary it implies.
    Curve(CurveArgs),
    /// Play a PostgreSQL scenario arm after arm: gate off, the seed's gate, the filter, the
    /// filter with the concurrency cap, and fixed concurrencies; each beside the model.
    Arms(ArmsArgs),
}

#[derive(Debug, Args)]
struct CurveArgs {
    /// A scenario whose `[postgres]` table is the workload (its defaults without one).
    scenario: Option<PathBuf>,
    /// The database (else the scenario's postgres.url, else SAFEGATE_PG_URL).
    #[arg(long, value_name = "URL")]
    pg_url: Option<String>,
    /// Seconds each level runs in each pass.
    #[arg(long, default_value_t = 3.0, value_name = "SECONDS")]
    secs: f64,
    /// Passes over the levels, alternately ascending and descending; a level's figure is its
    /// mean over them (a database's stalls come in episodes of about a second).
    #[arg(long, default_value_t = 3, value_name = "K")]
    passes: usize,
    /// Write `curve.svg`, `pg-1.5x.toml`, `pg-3x.toml` and `boundary.toml` here.
    #[arg(long, value_name = "DIR", default_value = "safegate-pg")]
    out: PathBuf,
    /// The written scenarios' run.duration \[s\].
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    duration: f64,
    /// The written scenarios' backlog capacity \[jobs\].
    #[arg(long, default_value_t = 200.0, value_name = "JOBS")]
    capacity: f64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct ArmsArgs {
    /// A scenario with a `[postgres]` table (`pg curve` writes them).
    scenario: PathBuf,
    /// The boundary of the filtered arms (`pg curve` writes one).
    #[arg(long, value_name = "FILE")]
    boundary: PathBuf,
    /// The database (else the scenario's postgres.url, else SAFEGATE_PG_URL).
    #[arg(long, value_name = "URL")]
    pg_url: Option<String>,
    /// Fixed concurrencies swept for the oracle [default: the fitted knee C × ½, 1, 1½, 2].
    #[arg(long, value_delimiter = ',', value_name = "L,L,…")]
    fixed: Vec<u32>,
    /// Seconds each arm runs (run.duration).
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// Chance a failed job is offered again by its producer.
    #[arg(long, default_value_t = 1.0, value_name = "P")]
    retry_probability: f64,
    /// A running Redis (else a private redis-server on a free loopback port).
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &PgArgs) -> Result<ExitCode> {
    match &args.command {
        PgCommand::Curve(a) => curve(a),
        PgCommand::Arms(a) => arms(a),
    }
}

/// The workload of `scenario` (its `[postgres]`, else the defaults) on `url` (else the
/// scenario's, else `SAFEGATE_PG_URL`); the error names the scenario.
pub(crate) fn workload(scenario: Option<&Scenario>, url: Option<&str>, origin: &str) -> Result<PgSpec> {
    let section = scenario.and_then(|s| s.postgres.clone()).unwrap_or_default();
    PgSpec::from_section(&section, url).map_err(|e| {
        if e.field == "postgres.url" {
            anyhow::anyhow!(
                "{origin}: no database: give --pg-url URL, postgres.url in the scenario, or SAFEGATE_PG_URL"
            )
        } else {
            anyhow::anyhow!("{origin}: {e}")
        }
    })
}

/// A study's input error as the command line says it: its field as the flag that sets it
/// (`retry_probability` → `--retry-probability`).
fn flagged(e: InputError) -> anyhow::Error {
    anyhow::Error::new(e.rename_field(|field| format!("--{}", field.replace('_', "-"))))
}

fn curve(a: &CurveArgs) -> Result<ExitCode> {
    let scenario = a.scenario.as_deref().map(Scenario::load).transpose()?;
    let origin = a.scenario.as_ref().map_or("--pg-url".into(), |p| p.display().to_string());
    let spec = workload(scenario.as_ref(), a.pg_url.as_deref(), &origin)?;
    let opts = CurveOptions { secs: a.secs, passes: a.passes, duration: a.duration, capacity: a.capacity };
    opts.check(&spec, &origin).map_err(flagged)?;
    crate::out_dir::create("--out", &a.out)?;
    let show = !a.json;
    let rt = crate::runtime::runtime()?;
    let c = rt.block_on(crate::stop::on_signal(
        async {
            Ok(pg_study::measure_curve(&spec, a.secs, a.passes, &mut |pass, p| {
                if show {
                    eprintln!(
                        "  pass {} n = {:>3}: {:>7.1} tx/s, {:>6.1} failed/s",
                        pass + 1,
                        p.n,
                        p.rate,
                        p.failed_rate
                    );
                }
            })
            .await?)
        },
        "the curve's clients were stopped",
    ))?;
    let mut files = vec![("curve.svg".to_string(), safegate_render::pg::curve_chart(&c))];
    files.extend(c.files(a.duration, a.capacity));
    pg_study::write_files(&a.out, &files)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "curve": c, "out": a.out }))?);
    } else {
        print!("{}", safegate_render::pg::curve_table(&c));
        println!("wrote {} (curve.svg, pg-1.5x.toml, pg-3x.toml, boundary.toml)", a.out.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn arms(a: &ArmsArgs) -> Result<ExitCode> {
    let origin = a.scenario.display().to_string();
    let mut overrides = Vec::new();
    if let Some(d) = a.duration {
        overrides.push(("run.duration".to_string(), safegate_studies::run::toml_float(d)));
    }
    let mut scenario = Scenario::load_with(&a.scenario, &overrides)?;
    if scenario.postgres.is_none() {
        anyhow::bail!("{origin}: no [postgres] table: `safegate pg curve` writes PostgreSQL scenarios");
    }
    scenario.boundary = Some(safegate_sim::scenario::load_boundary(&a.boundary)?);
    let cfg = scenario.config(&origin)?;
    let spec = workload(Some(&scenario), a.pg_url.as_deref(), &origin)?;
    let opts = ArmsOptions {
        spec,
        retry_probability: a.retry_probability,
        redis: a.redis.clone().map_or(RedisTarget::Own, RedisTarget::Url),
    };
    opts.check().map_err(flagged)?;
    let arm_list = Arm::plan(&cfg, opts.spec.pool, &a.fixed).map_err(flagged)?;
    if !a.json {
        eprintln!(
            "safegate pg arms: {} arms of {:.0} s each, offered {:.0} jobs/s ({:.0} s of wall time)",
            arm_list.len(),
            cfg.duration,
            cfg.traffic,
            arm_list.len() as f64 * cfg.duration
        );
    }
    let show = !a.json;
    let rt = crate::runtime::runtime()?;
    let results = rt.block_on(crate::stop::on_signal(
        async {
            Ok(pg_study::arms(&scenario, &arm_list, &opts, &mut |r| {
                if show {
                    eprintln!(
                        "  {:<14} {:>7.1} jobs/s live, {:>7.1} in the model",
                        r.label, r.live.goodput, r.model.goodput
                    );
                }
            })
            .await?)
        },
        "the arms and their private Redis were stopped",
    ))?;
    let line = scenario.safe_threshold() * cfg.pool.capacity;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "scenario": origin, "line": line, "arms": results }))?
        );
    } else {
        print!(
            "{}",
            safegate_render::pg::arms_table(
                &results,
                line,
                scenario.boundary.as_ref().map_or(0.01, |b| b.probability.epsilon)
            )
        );
    }
    let lost: i64 = results.iter().map(|r| r.lost).sum();
    Ok(if lost == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
