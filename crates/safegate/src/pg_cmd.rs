//! `safegate pg`: the seed's system on PostgreSQL (docs/postgres.md). `pg curve` measures
//! and fits the database's service curve and writes the scenarios and boundary it implies;
//! `pg arms` plays the seed's arms and a sweep of fixed concurrencies on it, each beside the
//! simulator's prediction.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use safegate_live::pg::PgSpec;
use safegate_live::pg_study::{self, Arm, ArmResult, ArmsOptions, PgCurve};
use safegate_live::run::RedisTarget;
use safegate_render::chart::{Line, Panel, PALETTE};
use safegate_render::numbers::fixed;
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

/// The workload of `scenario` (its `[postgres]`, else the defaults) on `url`.
fn workload(scenario: Option<&Scenario>, url: Option<&str>, origin: &str) -> Result<PgSpec> {
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

fn curve(a: &CurveArgs) -> Result<ExitCode> {
    let scenario = a.scenario.as_deref().map(Scenario::load).transpose()?;
    let origin = a.scenario.as_ref().map_or("--pg-url".into(), |p| p.display().to_string());
    let spec = workload(scenario.as_ref(), a.pg_url.as_deref(), &origin)?;
    if !(a.secs > 0.0 && a.secs <= 600.0) {
        anyhow::bail!("--secs {}: expected (0, 600] seconds", a.secs);
    }
    if !(1..=100).contains(&a.passes) {
        anyhow::bail!("--passes {}: expected 1 to 100", a.passes);
    }
    if !(a.duration > 0.0 && a.duration <= 86_400.0) {
        anyhow::bail!("--duration {}: expected (0, 86400] seconds", a.duration);
    }
    if !(a.capacity >= 1.0 && a.capacity <= 1e6 && a.capacity.fract() == 0.0) {
        anyhow::bail!("--capacity {}: expected a whole number in [1, 1e6] jobs", a.capacity);
    }
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
    let mut files = vec![("curve.svg".to_string(), chart(&c))];
    for m in [1.5, 3.0] {
        files.push((format!("pg-{m}x.toml"), c.scenario_toml(m, a.duration, a.capacity)));
    }
    files.push(("boundary.toml".into(), c.boundary_toml()));
    for (name, text) in &files {
        let path = a.out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "curve": c, "out": a.out }))?);
    } else {
        print!("{}", curve_table(&c));
        println!("wrote {} (curve.svg, pg-1.5x.toml, pg-3x.toml, boundary.toml)", a.out.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The measured curve with each fit and its relative residual, then the fits' parameters.
fn curve_table(c: &PgCurve) -> String {
    let f = &c.fit;
    let mut s = format!(
        "PostgreSQL service curve ({} hot rows, {} ms held, {}, pool {}, {} retries; {} passes of {} s a level)\n\
         {:>4} {:>9} {:>9} {:>8} {:>16} {:>16} {:>16}\n",
        c.spec.rows,
        c.spec.hold_ms,
        c.spec.isolation.name(),
        c.spec.pool,
        c.spec.retries,
        c.passes,
        c.secs,
        "n",
        "X tx/s",
        "failed/s",
        "mean ms",
        "USL (resid)",
        "p=2 (resid)",
        "p free (resid)"
    );
    let cell = |model: f64, x: f64| format!("{:>7.1} ({:>+5.0}%)", model, 100.0 * (x - model) / model);
    for p in &c.levels {
        let n = p.n as f64;
        s += &format!(
            "{:>4} {:>9.1} {:>9.1} {:>8.1} {:>16} {:>16} {:>16}\n",
            p.n,
            p.rate,
            p.failed_rate,
            p.mean_ms,
            cell(f.usl.at(n), p.rate),
            cell(f.contention.at(n), p.rate),
            cell(f.free.at(n), p.rate)
        );
    }
    s += &format!(
        "peak {} tx/s at n = {}\n\
         USL: λ = {}, σ = {}, κ = {} (log rmse {})\n\
         contention law, p = 2: s = {}, knee C = {} (log rmse {})\n\
         contention law, p free: s = {}, C = {}, p = {} (log rmse {})\n",
        fixed(c.peak, 1),
        c.peak_n,
        fixed(f.usl.lambda, 2),
        fixed(f.usl.sigma, 4),
        fixed(f.usl.kappa, 5),
        fixed(f.usl.quality.log_rmse, 3),
        fixed(f.contention.rate, 2),
        fixed(f.contention.comfortable, 2),
        fixed(f.contention.quality.log_rmse, 3),
        fixed(f.free.rate, 2),
        fixed(f.free.comfortable, 2),
        fixed(f.free.exponent, 2),
        fixed(f.free.quality.log_rmse, 3),
    );
    if let Some(t) = &f.tail {
        s += &format!(
            "tail past n = {}: X ∝ n^(1−p) with p = {} [{}, {}] (p = 2 is the seed's 1/n)\n",
            fixed(t.from_n, 1),
            fixed(t.exponent, 2),
            fixed(t.lo, 2),
            fixed(t.hi, 2)
        );
    }
    s
}

/// The curve and its three fits, against n.
fn chart(c: &PgCurve) -> String {
    let ns: Vec<f64> = c.levels.iter().map(|p| p.n as f64).collect();
    let top = c.levels.iter().map(|p| p.rate).fold(0.0, f64::max) * 1.15;
    let grid: Vec<f64> =
        (0..=200).map(|k| 1.0 + k as f64 * (ns.last().copied().unwrap_or(1.0) - 1.0) / 200.0).collect();
    let fit = |name: &str, color, at: &dyn Fn(f64) -> f64| Line {
        name: name.into(),
        color,
        x: grid.clone(),
        y: grid.iter().map(|&n| at(n)).collect(),
        dashed: true,
    };
    let f = &c.fit;
    let panel = Panel {
        label: "committed tx/s".into(),
        y_min: 0.0,
        y_max: top.max(1.0),
        lines: vec![
            Line {
                name: "measured X(n)".into(),
                color: PALETTE[0],
                x: ns.clone(),
                y: c.levels.iter().map(|p| p.rate).collect(),
                dashed: false,
            },
            fit("USL", PALETTE[1], &|n| f.usl.at(n)),
            fit("s·n·min(1,(C/n)²)", PALETTE[2], &|n| f.contention.at(n)),
            fit("p free", PALETTE[3], &|n| f.free.at(n)),
        ],
        rules: vec![],
    };
    let subtitle = format!(
        "{} hot rows, {} ms held, {}, pool {}: knee C = {:.1}, peak {:.0} tx/s",
        c.spec.rows,
        c.spec.hold_ms,
        c.spec.isolation.name(),
        c.spec.pool,
        f.contention.comfortable,
        c.peak
    );
    safegate_render::chart::render(
        "PostgreSQL throughput X(n)",
        &subtitle,
        "clients n",
        1.0,
        ns.last().copied().unwrap_or(1.0),
        &[panel],
    )
}

fn arms(a: &ArmsArgs) -> Result<ExitCode> {
    let origin = a.scenario.display().to_string();
    let mut overrides = Vec::new();
    if let Some(d) = a.duration {
        overrides.push(("run.duration".to_string(), format!("{d:?}")));
    }
    let mut scenario = Scenario::load_with(&a.scenario, &overrides)?;
    if scenario.postgres.is_none() {
        anyhow::bail!("{origin}: no [postgres] table: `safegate pg curve` writes PostgreSQL scenarios");
    }
    scenario.boundary = Some(safegate_sim::scenario::load_boundary(&a.boundary)?);
    let cfg = scenario.config(&origin)?;
    let spec = workload(Some(&scenario), a.pg_url.as_deref(), &origin)?;
    if !(0.0..=1.0).contains(&a.retry_probability) {
        anyhow::bail!("--retry-probability {}: expected [0, 1]", a.retry_probability);
    }
    let knee = cfg.pool.comfortable.round().max(1.0);
    let mut fixed_levels = if a.fixed.is_empty() {
        [0.5, 1.0, 1.5, 2.0].iter().map(|m| (knee * m).round().max(1.0) as u32).collect()
    } else {
        a.fixed.clone()
    };
    fixed_levels.dedup();
    if let Some(bad) = fixed_levels.iter().find(|&&l| l == 0 || l > cfg.pool.executors) {
        anyhow::bail!("--fixed {bad}: expected 1 to the pool's {} executors", cfg.pool.executors);
    }
    let arm_list = Arm::seed_arms(&fixed_levels);
    let opts = ArmsOptions {
        spec,
        retry_probability: a.retry_probability,
        redis: a.redis.clone().map_or(RedisTarget::Own, RedisTarget::Url),
    };
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
        print!("{}", arms_table(&results, line, scenario.boundary.as_ref().map_or(0.01, |b| b.probability.epsilon)));
    }
    let lost: i64 = results.iter().map(|r| r.lost).sum();
    Ok(if lost == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Each arm live and in the model, then the filter-with-cap against the best fixed one.
fn arms_table(results: &[ArmResult], line: f64, epsilon: f64) -> String {
    let mut s = format!(
        "{:<14} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>9} {:>9}\n",
        "arm", "goodput", "model", "backlog", "model", "beyond θ", "model", "failed/s", "p99 s"
    );
    for r in results {
        let (l, m) = (&r.live, &r.model);
        s += &format!(
            "{:<14} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}% {:>9.1}% {:>9.1} {:>9}\n",
            r.label,
            l.goodput,
            m.goodput,
            l.backlog_mean,
            m.backlog_mean,
            100.0 * l.share_beyond,
            100.0 * m.share_beyond,
            l.failed_rate,
            l.sojourn_p99.map_or("n/a".into(), |p| fixed(p, 3))
        );
    }
    let best = results
        .iter()
        .filter(|r| r.label.starts_with("fixed"))
        .max_by(|a, b| a.live.goodput.total_cmp(&b.live.goodput));
    let capped = results.iter().find(|r| r.label == "filter + cap");
    s += &format!("backlog and beyond θ against the line θ·cap = {line:.0} jobs; ε = {epsilon}\n");
    if let (Some(b), Some(c)) = (best, capped) {
        let share = c.live.goodput / b.live.goodput.max(1e-9);
        s += &format!(
            "filter + cap: {:.1} jobs/s = {:.2} of the best fixed concurrency ({}: {:.1}) [target ≥ 0.9: {}]\n",
            c.live.goodput,
            share,
            b.label,
            b.live.goodput,
            if share >= 0.9 { "met" } else { "NOT met" }
        );
    }
    for r in results.iter().filter(|r| r.label.starts_with("filter")) {
        s += &format!(
            "{}: time beyond θ·cap {:.2} % of the run [within ε = {:.0} %: {}]\n",
            r.label,
            100.0 * r.live.share_beyond,
            100.0 * epsilon,
            if r.live.share_beyond <= epsilon { "yes" } else { "NO" }
        );
    }
    s
}
