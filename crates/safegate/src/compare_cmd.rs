//! `safegate compare`: every nominal controller, with and without the filter, side by side.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use safegate_core::controllers::PolicySpec;
use safegate_render::compare::{figures, render};
use safegate_sim::Scenario;
use safegate_studies::compare::{compare, run_duration, select_cases, Case, CompareError, CompareRequest};

use crate::policy_arg::PolicyParser;
use crate::progress;

/// Flags of `safegate compare`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub(crate) struct CompareArgs {
    /// Scenario files to compare on (default: the seed's thirteen cases: λ = 55, 74.5, 76,
    /// 80, 120 through a dip and on the cycle, a 1.4× spike, heavy tails, retries).
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub(crate) scenario: Vec<PathBuf>,
    /// Only these of the default cases, comma-separated (dip-55, dip-74.5, dip-76, dip-80,
    /// dip-120, cycle-55, cycle-74.5, cycle-76, cycle-80, cycle-120, spike-105,
    /// heavy-tail-80, retries-70).
    #[arg(long, value_delimiter = ',', conflicts_with = "scenario")]
    pub(crate) cases: Vec<String>,
    /// Policies, comma-separated; any of them also takes a `+retry-budget` suffix (default:
    /// every base policy, with `+pool` for cycle and gradient2).
    #[arg(long, value_delimiter = ',', value_parser = PolicyParser)]
    pub(crate) policies: Vec<PolicySpec>,
    /// The boundary the filter enforces (default: the embedded boundaries/seed-80.toml).
    #[arg(long, value_name = "FILE")]
    pub(crate) boundary: Option<PathBuf>,
    /// Stochastic replications per policy and filter setting.
    #[arg(long, default_value_t = 4)]
    pub(crate) seeds: u32,
    /// Extra stepped-chain trials per arm for the exit probability inside the envelope
    /// (528 with no exit put the two-sided 99 % upper limit under ε = 0.01).
    #[arg(long, default_value_t = 0)]
    pub(crate) exit_trials: u32,
    /// Seconds per run of the default cases (default: the boundary's horizon).
    #[arg(long)]
    pub(crate) duration: Option<f64>,
    /// Skip the goodput-vs-load curve.
    #[arg(long)]
    pub(crate) no_curve: bool,
    /// Write SVG figures (queue traces per case, goodput vs load) into DIR.
    #[arg(long, value_name = "DIR")]
    pub(crate) figures: Option<PathBuf>,
    /// List the policy names and exit.
    #[arg(long)]
    pub(crate) list: bool,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: &CompareArgs) -> Result<ExitCode> {
    if args.list {
        for spec in PolicySpec::all() {
            println!("{spec}");
        }
        println!("(any of them with +retry-budget)");
        return Ok(ExitCode::SUCCESS);
    }
    let boundary = match &args.boundary {
        Some(p) => safegate_sim::scenario::load_boundary(p)?,
        None => crate::calls::default_boundary()?,
    };
    let duration = run_duration(args.duration, &boundary).map_err(|e| match e {
        CompareError::Setting(e) => anyhow!("--{} {}: expected a positive number of seconds", e.field, e.value),
        other => other.into(),
    })?;
    let cases: Vec<Case> = if args.scenario.is_empty() {
        select_cases(&args.cases, duration).map_err(|e| match e {
            CompareError::UnknownCase { name, known } => {
                anyhow!("--cases {name:?}: the default cases are {}", known.join(", "))
            }
            other => other.into(),
        })?
    } else {
        let mut v = Vec::new();
        for p in &args.scenario {
            let s = Scenario::load(p)?;
            let origin = p.display().to_string();
            let stem = p.file_stem().map_or(origin.clone(), |x| x.to_string_lossy().into());
            v.push(Case::from_scenario(&s, &origin, &stem)?);
            if s.run.mode != safegate_sim::Mode::Stochastic {
                eprintln!("note: {origin}: compare runs the stochastic mode (run.mode = {} is not used)", s.run.mode);
            }
        }
        v
    };
    let request = CompareRequest {
        cases,
        boundary,
        policies: args.policies.clone(),
        seeds: args.seeds,
        exit_trials: args.exit_trials,
        curve: !args.no_curve,
        traces: args.figures.is_some(),
    };
    let cc = request.build().map_err(|e| match e {
        CompareError::Boundary { case, message } => {
            let file = args.boundary.as_ref().map_or("<embedded seed-80>".to_string(), |p| p.display().to_string());
            anyhow!("{file}: boundary for case {case}: {message}")
        }
        other => other.into(),
    })?;
    if let Some(dir) = &args.figures {
        crate::out_dir::create("--figures", dir)?;
    }
    let pb = progress::bar(1000, "comparing", !args.json);
    let started = Instant::now();
    let report = compare(&cc, &|f| pb.set_position((f * 1000.0) as u64))?;
    pb.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    if let Some(dir) = &args.figures {
        for (name, svg) in figures(&report) {
            let path = dir.join(name);
            std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    if args.json {
        let mut v = serde_json::to_value(&report)?;
        v["seconds"] = serde_json::Value::from(secs);
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", render(&report, secs));
        if let Some(dir) = &args.figures {
            println!("figures: {}", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
