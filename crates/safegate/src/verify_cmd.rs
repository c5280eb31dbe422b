//! `safegate verify`: a boundary file checked against the model over its envelope.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use safegate_render::verify::render;
use safegate_sim::Scenario;
use safegate_studies::run::DEFAULT_SCENARIO;
use safegate_studies::verify::VerifyRequest;

/// Flags of `safegate verify`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub(crate) struct VerifyArgs {
    /// The boundary file (TOML).
    #[arg(long, value_name = "FILE")]
    pub(crate) boundary: PathBuf,
    /// The scenario whose pool and health shape are used (default: the seed's λ = 80 band).
    #[arg(long, value_name = "FILE")]
    pub(crate) scenario: Option<PathBuf>,
    /// Trajectories per envelope cell and arm (filtered, unfiltered). Too few to show ε
    /// held or exceeded (or to put 10 trajectories in the CVaR's tail) give the verdict
    /// "inconclusive", never a pass or a fail (exit status 1, as for a fail).
    #[arg(long, default_value_t = 1000)]
    pub(crate) trials: u64,
    /// Grid points over the envelope's traffic range.
    #[arg(long, default_value_t = 5)]
    pub(crate) traffic_points: usize,
    /// Grid points over the envelope's health range.
    #[arg(long, default_value_t = 3)]
    pub(crate) health_points: usize,
    /// Nominal controller under the filter: open or seed-gate.
    #[arg(long, default_value = "open")]
    pub(crate) nominal: String,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: &VerifyArgs) -> Result<ExitCode> {
    let boundary = safegate_sim::scenario::load_boundary(&args.boundary)?;
    let (scenario, origin) = match &args.scenario {
        Some(p) => (Scenario::load(p)?, p.display().to_string()),
        None => (Scenario::from_toml(DEFAULT_SCENARIO, "<embedded band-80>")?, "<embedded band-80>".to_string()),
    };
    let base = scenario.config(&origin)?;
    if base.service != safegate_sim::ServiceLaw::Exponential {
        eprintln!(
            "warning: {origin}: verify runs the stepped chain, whose completions are Poisson (exponential service); the scenario's {:?} service law is not represented",
            base.service
        );
    }
    if args.scenario.is_some() && scenario.run.mode != safegate_sim::Mode::Stepped {
        eprintln!(
            "note: verify always runs the stepped stochastic chain (run.mode = {} in the scenario is not used)",
            scenario.run.mode
        );
    }
    let request = VerifyRequest {
        base,
        gate: scenario.gate.clone(),
        boundary,
        nominal: args.nominal.clone(),
        trials: args.trials,
        traffic_points: args.traffic_points,
        health_points: args.health_points,
        seed: args.seed,
    };
    let (report, secs) = crate::calls::verify_boundary(request, &args.boundary.display().to_string(), !args.json)?;
    if args.json {
        let mut v = serde_json::to_value(&report)?;
        // The headline keys at the top level, as the scenario's cell.
        v["exit_probability"] = serde_json::to_value(report.scenario.filtered.exit_probability)?;
        v["cvar"] = serde_json::to_value(report.scenario.filtered.cvar)?;
        v["unfiltered"] = serde_json::json!({
            "exit_probability": report.scenario.unfiltered.exit_probability,
            "cvar": report.scenario.unfiltered.cvar,
            "feasible_fraction": report.scenario.unfiltered.feasible_fraction,
            "backup_fraction": report.scenario.unfiltered.backup_fraction,
        });
        v["seconds"] = serde_json::Value::from(secs);
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", render(&report, &args.boundary.display().to_string(), secs));
    }
    Ok(if report.pass { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
