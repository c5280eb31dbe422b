//! `safegate verify`: a boundary file checked against the model over its envelope.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, Result};
use clap::Args;
use safegate_sim::Scenario;
use safegate_studies::run::DEFAULT_SCENARIO;
use safegate_studies::verify::{verify, ArmResult, CellResult, VerifyError, VerifyReport, VerifyRequest};

use crate::progress;

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
    /// Trajectories per envelope cell and arm (filtered, unfiltered).
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
    let (report, secs) = check(request, &args.boundary.display().to_string(), !args.json)?;
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

/// Build and run a verification with a progress bar on stderr when `show`: the report and
/// its seconds. `file` names the boundary in errors; the request's fields are the flags.
pub(crate) fn check(request: VerifyRequest, file: &str, show: bool) -> Result<(VerifyReport, f64)> {
    let vc = request.build().map_err(|e| match e {
        VerifyError::Boundary(e) => anyhow!("{file}: {e}"),
        VerifyError::Nominal(name) => anyhow!("--nominal {name:?}: expected open or seed-gate"),
        VerifyError::Setting(e) if e.field == "trials" && e.value == "0" => anyhow!("--trials must be at least 1"),
        // The request's fields are the flags that set them.
        VerifyError::Setting(mut e) => {
            e.field = format!("--{}", e.field.replace('_', "-"));
            e.into()
        }
    })?;
    let pb = progress::bar(1000, "verifying", show);
    let started = Instant::now();
    let report = verify(&vc, &|f| pb.set_position((f * 1000.0) as u64))?;
    pb.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    Ok((report, secs))
}

fn arm_line(s: &mut String, label: &str, a: &ArmResult) {
    let e = &a.exit_probability;
    let _ = writeln!(
        s,
        "  {label:<11} exit {:>7.4} [99% CI {:.4}–{:.4}] ({}/{})  CVaR {:.4}  worst {:.3}  feasible {:>6.2}%  backup {:>6.2}%  given up {:>6.2} req/s  goodput {:>6.2} req/s  mean q {:>6.1}",
        e.estimate,
        e.ci_low,
        e.ci_high,
        e.exits,
        e.trials,
        a.cvar.estimate,
        a.worst_overshoot,
        a.feasible_fraction * 100.0,
        a.backup_fraction * 100.0,
        a.throughput_given_up,
        a.goodput,
        a.mean_queue
    );
}

/// The text `safegate verify` prints.
pub(crate) fn render(r: &VerifyReport, path: &str, secs: f64) -> String {
    let mut s = String::new();
    let a = &r.analytic;
    let _ =
        writeln!(s, "safegate verify: {} ({path}), nominal {:?}", r.boundary.clone().unwrap_or_default(), r.nominal);
    let _ = writeln!(
        s,
        "analytic: ε = {} over {} s = {} decisions; per-step ε {:.3e}; union bound {:.4} (valid while feasible); Freedman from empty (α = 1, δ = {:.3}, σ_h = {:.4}): {:.4}",
        a.epsilon, a.horizon, a.steps, a.step_epsilon, a.union_bound, a.freedman_inputs.delta, a.freedman_inputs.sigma_h, a.freedman
    );
    let _ = writeln!(s);
    let cell = |s: &mut String, c: &CellResult| {
        let _ = writeln!(s, "λ = {:>6.1} req/s, dips to H = {:.2}", c.traffic, c.health_low);
        arm_line(s, "filtered", &c.filtered);
        arm_line(s, "unfiltered", &c.unfiltered);
    };
    let _ = writeln!(s, "the scenario's own cell:");
    cell(&mut s, &r.scenario);
    let _ = writeln!(s);
    let _ = writeln!(s, "envelope ({} cells):", r.envelope.len());
    for c in &r.envelope {
        cell(&mut s, c);
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "feasible {:.2}% of decisions, backup {:.2}% (whole envelope); unfiltered violates ε in {} of {} cells",
        r.feasible_fraction * 100.0,
        r.backup_fraction * 100.0,
        r.unfiltered_violations,
        r.envelope.len() + 1
    );
    if let Some(c) = &r.cost_floor {
        let _ = writeln!(
            s,
            "Corollary 3 (scenario cell, same seeds): throughput given up {:.2} req/s with the probability constraint alone, {:.2} with CVaR too: {}",
            c.probability_only,
            c.joint,
            if c.holds { "the joint cost is never smaller, as it must be" } else { "VIOLATED: the joint filter gave up less" }
        );
    }
    let _ = writeln!(
        s,
        "{:.0} M trajectory-steps in {secs:.1} s ({:.1} M/s)",
        r.trajectory_steps as f64 / 1e6,
        r.trajectory_steps as f64 / secs / 1e6
    );
    let _ = writeln!(s, "verdict: {}", r.verdict);
    s
}
