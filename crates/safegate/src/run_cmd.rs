//! `safegate run`: one scenario of the seed's model, summarised, charted, or as JSON.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use safegate_core::boundary::Boundary;
use safegate_core::safety::FilterStats;
use safegate_core::Policy;
use safegate_sim::variants::{arms, variants, Variant, VariantError};
use safegate_sim::{Config, Mode, Outcome, RunOptions, Scenario};
use serde::Serialize;

use crate::progress;
use crate::run_render::{mode_text, render_chart, render_table, ChartTo};
use crate::run_verdict::{verdict, verdict_block, Verdict};

/// The embedded default scenario: the seed's λ = 80 band.
pub(crate) const DEFAULT_SCENARIO: &str = include_str!("../../../scenarios/band-80.toml");
/// The boundary of the third arm: the seed's running case, admission only.
const FILTER_BOUNDARY: &str = include_str!("../../../boundaries/seed-80.toml");
/// The boundary of the fourth arm: the same, with the concurrency cap as a second input.
const POOL_BOUNDARY: &str = include_str!("../../../boundaries/seed-80-pool.toml");

/// Flags of `safegate run`. Every model flag overrides the scenario's value.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub(crate) struct RunArgs {
    /// Scenario file (TOML). Without it: the seed's λ = 80 band in four arms (see `--arms`).
    pub(crate) scenario: Option<PathBuf>,
    /// Base traffic λ [req/s] (traffic.rate).
    #[arg(long, value_name = "REQ_PER_S")]
    pub(crate) traffic: Option<f64>,
    /// Rejection threshold θ, fraction of capacity (gate.threshold).
    #[arg(long)]
    pub(crate) threshold: Option<f64>,
    /// Rejection sensitivity in [0, 1]; 0 turns the gate off (gate.sensitivity).
    #[arg(long)]
    pub(crate) sensitivity: Option<f64>,
    /// Health schedule: constant, cycle, dip or trace (health.kind).
    #[arg(long, value_name = "KIND")]
    pub(crate) health: Option<String>,
    /// Simulated seconds (run.duration).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) duration: Option<f64>,
    /// Fluid step and sampling interval, in seconds (run.dt).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) dt: Option<f64>,
    /// Simulator (run.mode).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(Mode::ALL.map(|m| m.name())))]
    pub(crate) mode: Option<String>,
    /// Seed of every random draw (run.seed).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Executors P (model.executors).
    #[arg(long)]
    pub(crate) executors: Option<u32>,
    /// Comfortable concurrency C (model.comfortable).
    #[arg(long)]
    pub(crate) comfortable: Option<f64>,
    /// Per-executor rate s [req/s] (model.rate).
    #[arg(long)]
    pub(crate) rate: Option<f64>,
    /// Queue capacity, a whole number of requests (model.capacity; `1e8` is accepted as
    /// in scenario files).
    #[arg(long)]
    pub(crate) capacity: Option<f64>,
    /// Fluid busy-executor counting: whole or fluid (model.busy).
    #[arg(long)]
    pub(crate) busy: Option<String>,
    /// Any scenario key, e.g. `--set health.low=0.2 --set retries.kind=constant`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<String>,
    /// Also run the same scenario with the gate off, side by side.
    #[arg(long)]
    pub(crate) baseline: bool,
    /// Four arms side by side: no gate, the seed's gate, the safety filter over it
    /// (boundaries/seed-80.toml) and the filter with the concurrency cap
    /// (boundaries/seed-80-pool.toml). The default without a scenario file or --boundary.
    #[arg(long, conflicts_with_all = ["boundary", "baseline"])]
    pub(crate) arms: bool,
    /// Print JSON: {"scenario", "summary", "series", "baseline"?, "arms"} instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Keep every N-th sample in the JSON series.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub(crate) every: usize,
    /// Where to write the SVG chart [default: safegate-run.svg; with --json, only when given];
    /// `-` writes it to standard output, and the table to standard error.
    #[arg(long, value_name = "PATH")]
    pub(crate) svg: Option<PathBuf>,
    /// Do not write the chart.
    #[arg(long, conflicts_with = "svg")]
    pub(crate) no_svg: bool,
    /// Run under the safety filter of this boundary file (replaces a `[boundary]` table);
    /// the gate becomes its nominal controller, and the gate alone is the baseline.
    #[arg(long, value_name = "FILE")]
    pub(crate) boundary: Option<PathBuf>,
}

/// A float as TOML writes it (`nan`, `inf` and `-inf` included), so `--traffic nan` reaches
/// the range check as a number and is refused as one.
pub(crate) fn toml_float(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{v:?}")
    }
}

impl RunArgs {
    fn overrides(&self) -> Result<Vec<(String, String)>> {
        let mut o: Vec<(String, String)> = Vec::new();
        let mut num = |key: &str, v: Option<String>| {
            if let Some(v) = v {
                o.push((key.to_string(), v));
            }
        };
        num("traffic.rate", self.traffic.map(toml_float));
        num("gate.threshold", self.threshold.map(toml_float));
        num("gate.sensitivity", self.sensitivity.map(toml_float));
        num("health.kind", self.health.as_ref().map(|v| format!("{v:?}")));
        num("run.duration", self.duration.map(toml_float));
        num("run.dt", self.dt.map(toml_float));
        num("run.mode", self.mode.as_ref().map(|v| format!("{v:?}")));
        num("run.seed", self.seed.map(|v| v.to_string()));
        num("model.executors", self.executors.map(|v| v.to_string()));
        num("model.comfortable", self.comfortable.map(toml_float));
        num("model.rate", self.rate.map(toml_float));
        num("model.capacity", self.capacity.map(toml_float));
        num("model.busy", self.busy.as_ref().map(|v| format!("{v:?}")));
        o.extend(parse_sets(&self.set)?);
        Ok(o)
    }
}

/// `--set KEY=VALUE` flags as `(key, value)` overrides, spaces around each trimmed.
pub(crate) fn parse_sets(sets: &[String]) -> Result<Vec<(String, String)>> {
    sets.iter()
        .map(|kv| {
            let (k, v) = kv
                .split_once('=')
                .with_context(|| format!("--set {kv:?}: expected KEY=VALUE, e.g. health.shape.low=0.2"))?;
            Ok((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// One labelled run, as printed and serialised.
#[derive(Debug, Serialize)]
pub(crate) struct RunReport {
    pub(crate) label: String,
    pub(crate) policy: &'static str,
    pub(crate) scenario: Scenario,
    #[serde(flatten)]
    pub(crate) outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) filter: Option<FilterStats>,
    /// Goodput, share of the physical limit and time beyond θ·cap (`None` without a series).
    pub(crate) verdict: Option<Verdict>,
}

/// Whether `args` asks for the four arms: `--arms`, or the embedded scenario with neither
/// `--boundary` nor `--baseline` (which keep their two-run comparisons).
fn wants_arms(args: &RunArgs) -> bool {
    args.arms || (args.scenario.is_none() && args.boundary.is_none() && !args.baseline)
}

/// The four arms of [`arms`] on `scenario`, with the embedded seed-80 boundaries.
fn four_arms(scenario: &Scenario, origin: &str) -> Result<Vec<Variant>> {
    if scenario.boundary.is_some() {
        anyhow::bail!(
            "{origin}: --arms brings its own boundaries (seed-80, seed-80-pool); run a scenario with a [boundary] table without it"
        );
    }
    let parse = |text: &str, name: &str| {
        Boundary::from_toml(text, &[]).map_err(|e| anyhow::anyhow!("embedded boundaries/{name}.toml: {}", e.0))
    };
    let (filter, pool) = (parse(FILTER_BOUNDARY, "seed-80")?, parse(POOL_BOUNDARY, "seed-80-pool")?);
    arms(scenario, &filter, &pool).map_err(|e| anyhow::anyhow!("{origin}: {e}"))
}

pub(crate) fn run(args: &RunArgs) -> Result<ExitCode> {
    let overrides = args.overrides()?;
    let (scenario, origin) = match &args.scenario {
        Some(path) => (Scenario::load_with(path, &overrides)?, path.display().to_string()),
        None => (
            Scenario::from_toml_with(DEFAULT_SCENARIO, "<embedded band-80>", &overrides)?,
            "<embedded band-80>".to_string(),
        ),
    };
    if args.every == 0 {
        anyhow::bail!("--every must be at least 1");
    }
    let chart = ChartTo::from_flags(args.svg.as_deref(), args.no_svg, args.json, "safegate-run.svg")?;
    let mut scenario = scenario;
    if let Some(path) = &args.boundary {
        scenario.boundary = Some(safegate_sim::scenario::load_boundary(path)?);
    }
    let cfg = scenario.config(&origin)?;
    // A boundary error names the file it came from: --boundary's, or the scenario's table.
    let boundary_origin = args.boundary.as_ref().map_or(origin.clone(), |p| p.display().to_string());
    let variants = if wants_arms(args) {
        four_arms(&scenario, &origin)?
    } else {
        variants(&scenario, args.baseline || args.scenario.is_none()).map_err(|e| match e {
            VariantError::Boundary(_) => anyhow::anyhow!("{boundary_origin}: {e}"),
            other => other.into(),
        })?
    };
    // The safe line of the verdicts: the first boundary's θ, else the gate's.
    let theta = variants
        .iter()
        .find_map(|v| v.scenario.boundary.as_ref().map(|b| b.barrier.threshold))
        .unwrap_or(scenario.gate.threshold);
    let line = theta * cfg.pool.capacity;

    let steps = cfg.steps();
    let stride = if args.json { json_stride(steps, args.every) } else { ((steps / 200_000) as usize).max(1) };
    if args.json && stride > args.every {
        eprintln!(
            "note: the series keeps every {stride}th sample (at most {} points)",
            safegate_sim::limits::MAX_SERIES_POINTS
        );
    }
    let heavy = steps.saturating_mul(variants.len() as u64) >= 4_000_000
        || (scenario.run.mode == Mode::Stochastic && cfg.duration * cfg.traffic >= 2e6);
    let pb = progress::bar(1000 * variants.len() as u64, "simulating", heavy);
    let reports =
        run_variants(&cfg, variants, stride, line, &mut |i, f| pb.set_position(1000 * i as u64 + (f * 1000.0) as u64))
            .with_context(|| format!("scenario {origin}"))?;
    pb.finish_and_clear();

    if let Some(to) = &chart {
        to.write(&render_chart("safegate run", &mode_text(&scenario), &scenario, &cfg, line, &reports))?;
    }

    if args.json {
        let doc = json_doc(reports, chart.as_ref().map(ChartTo::shown));
        println!("{}", serde_json::to_string(&doc)?);
    } else {
        let say = |text: &str| ChartTo::say(chart.as_ref(), text);
        if !overrides.is_empty() {
            let list: Vec<String> = overrides.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            say(&format!(
                "overrides (over the scenario below, whose description is the file's): {}\n",
                list.join(", ")
            ));
        }
        say(&render_table("safegate run", &mode_text(&scenario), &scenario, &cfg, &origin, &reports));
        say(&verdict_block(&reports));
        if let Some(ChartTo::File(path)) = &chart {
            say(&format!("chart: {}\n", path.display()));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The sampling stride of a `--json` series: every `every`-th of `steps` samples, thinned
/// further so that at most [`MAX_SERIES_POINTS`](safegate_sim::limits::MAX_SERIES_POINTS)
/// are kept (a 1e6-s run printed 1.9 GB).
pub(crate) fn json_stride(steps: u64, every: usize) -> usize {
    let fit = steps.div_ceil(safegate_sim::limits::MAX_SERIES_POINTS as u64) as usize;
    every.max(fit)
}

/// Runs each variant of a scenario on `cfg`, recording every `stride`-th sample, each with
/// its verdict against the safe line `line` (θ·cap); `progress` hears the variant's index
/// and its fraction done.
pub(crate) fn run_variants(
    cfg: &Config,
    variants: Vec<Variant>,
    stride: usize,
    line: f64,
    progress: &mut dyn FnMut(usize, f64),
) -> Result<Vec<RunReport>> {
    let mut reports = Vec::new();
    for (i, Variant { label, scenario: sc, mut policy }) in variants.into_iter().enumerate() {
        let mut cb = |f: f64| progress(i, f);
        let outcome = safegate_sim::run(
            sc.run.mode,
            cfg,
            &mut policy,
            RunOptions { record_every: Some(stride), progress: Some(&mut cb) },
        )?;
        let filter = policy.filter_stats();
        let verdict = verdict(cfg, &outcome, line);
        reports.push(RunReport { label, policy: policy.name(), scenario: sc, outcome, filter, verdict });
    }
    Ok(reports)
}

/// The document `safegate run --json` prints: every run under `arms` with its verdict; the
/// last run is the primary, the first (when there are more) its baseline.
pub(crate) fn json_doc(mut reports: Vec<RunReport>, chart: Option<String>) -> serde_json::Value {
    let arms: Vec<serde_json::Value> = reports
        .iter()
        .map(|r| {
            serde_json::json!({
                "label": r.label,
                "policy": r.policy,
                "summary": r.outcome.summary,
                "filter": r.filter,
                "verdict": r.verdict,
            })
        })
        .collect();
    let primary = reports.pop().expect("at least one run");
    let baseline = (!reports.is_empty()).then(|| reports.swap_remove(0));
    serde_json::json!({
        "scenario": primary.scenario,
        "policy": primary.policy,
        "label": primary.label,
        "summary": primary.outcome.summary,
        "series": primary.outcome.series,
        "baseline": baseline,
        "arms": arms,
        "chart": chart,
    })
}
