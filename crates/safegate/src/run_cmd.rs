//! `safegate run`: one scenario of the seed's model, summarised, charted, or as JSON.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use safegate_sim::{Mode, Scenario};
use safegate_studies::run::{
    json_doc, json_stride, toml_float, RunError, Runs, Study, DEFAULT_ORIGIN, DEFAULT_SCENARIO,
};

use crate::progress;
use safegate_render::run::{mode_text, overrides_line, render_chart, render_table, verdict_block};

use crate::chart_to::ChartTo;
use crate::set_arg::parse_sets;

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

/// Whether `args` asks for the four arms: `--arms`, or the embedded scenario with neither
/// `--boundary` nor `--baseline` (which keep their two-run comparisons).
fn wants_arms(args: &RunArgs) -> bool {
    args.arms || (args.scenario.is_none() && args.boundary.is_none() && !args.baseline)
}

pub(crate) fn run(args: &RunArgs) -> Result<ExitCode> {
    let overrides = args.overrides()?;
    let (scenario, origin) = match &args.scenario {
        Some(path) => (Scenario::load_with(path, &overrides)?, path.display().to_string()),
        None => (Scenario::from_toml_with(DEFAULT_SCENARIO, DEFAULT_ORIGIN, &overrides)?, DEFAULT_ORIGIN.to_string()),
    };
    if args.every == 0 {
        anyhow::bail!("--every must be at least 1");
    }
    let chart = ChartTo::from_flags(args.svg.as_deref(), args.no_svg, args.json, "safegate-run.svg")?;
    let mut scenario = scenario;
    if let Some(path) = &args.boundary {
        scenario.boundary = Some(safegate_sim::scenario::load_boundary(path)?);
    }
    // An override nothing in this scenario reads would change nothing: refused, not echoed
    // under "overrides" above a run it did not touch.
    crate::calls::refuse_unread(&scenario, &overrides, Some(scenario.run.mode), &origin)?;
    // A boundary error names the file it came from: --boundary's, or the scenario's table.
    let boundary_origin = args.boundary.as_ref().map_or(origin.clone(), |p| p.display().to_string());
    let runs = if wants_arms(args) {
        Runs::FourArms
    } else {
        Runs::Variants { baseline: args.baseline || args.scenario.is_none() }
    };
    let study = Study::new(scenario, &origin, &boundary_origin, runs).map_err(|e| match e {
        RunError::OwnBoundaries { origin } => anyhow::anyhow!(
            "{origin}: --arms brings its own boundaries (seed-80, seed-80-pool); run a scenario with a [boundary] table without it"
        ),
        other => other.into(),
    })?;

    let steps = study.cfg.steps();
    let stride = if args.json { json_stride(steps, args.every) } else { ((steps / 200_000) as usize).max(1) };
    if args.json && stride > args.every {
        eprintln!(
            "note: the series keeps every {stride}th sample (at most {} points)",
            safegate_sim::limits::MAX_SERIES_POINTS
        );
    }
    let n = study.variants.len() as u64;
    let heavy = steps.saturating_mul(n) >= 4_000_000
        || (study.scenario.run.mode == Mode::Stochastic && study.cfg.duration * study.cfg.traffic >= 2e6);
    let pb = progress::bar(1000 * n, "simulating", heavy);
    let played = study
        .play(stride, &mut |i, f| pb.set_position(1000 * i as u64 + (f * 1000.0) as u64))
        .with_context(|| format!("scenario {origin}"))?;
    pb.finish_and_clear();
    let (scenario, cfg, line, reports) = (played.scenario, played.cfg, played.line, played.reports);

    if let Some(to) = &chart {
        to.write(&render_chart("safegate run", &mode_text(&scenario), &scenario, &cfg, line, &reports))?;
    }

    if args.json {
        let doc = json_doc(reports, chart.as_ref().map(ChartTo::shown));
        println!("{}", serde_json::to_string(&doc)?);
    } else {
        let say = |text: &str| ChartTo::say(chart.as_ref(), text);
        if let Some(line) = overrides_line(&overrides) {
            say(&line);
        }
        say(&render_table("safegate run", &mode_text(&scenario), &scenario, &cfg, &origin, &reports));
        say(&verdict_block(&reports));
        if let Some(ChartTo::File(path)) = &chart {
            say(&format!("chart: {}\n", path.display()));
        }
    }
    Ok(ExitCode::SUCCESS)
}
