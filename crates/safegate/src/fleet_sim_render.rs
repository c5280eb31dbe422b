//! What `safegate fleet --sim` prints: the suite's measurements
//! ([`safegate_studies::fleet::suite`]) as text or JSON, its SVG figures, and a fleet
//! file's runs.

use std::process::ExitCode;

use anyhow::Result;
use safegate_sim::heartbeat::DetectorKind;
use safegate_studies::fleet::stag::{SEED_COSTS, SEED_F_STAR};
use safegate_studies::fleet::suite::{self, price_around_threshold, DelayThreshold, FileRuns, Suite, SuiteError};
use serde_json::json;

/// The suite's figures written into `dir`: their paths.
fn figures(dir: &std::path::Path, suite: &Suite, tau: f64) -> Result<Vec<String>> {
    use anyhow::Context as _;
    crate::out_dir::create("--figures", dir)?;
    let mut written = Vec::new();
    let (runs, p_star) = price_around_threshold(&suite.delay.fleet, tau)?;
    for (name, svg) in safegate_render::fleet::figures(suite, tau, runs, p_star) {
        let path = dir.join(name);
        std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

/// `safegate fleet --sim`: the suite's measurements as text or JSON, and its figures.
pub(crate) fn run(
    fallback: &str,
    fleet_size: usize,
    as_json: bool,
    figure_dir: Option<&std::path::Path>,
) -> Result<ExitCode> {
    let suite = suite::run(fallback, fleet_size).map_err(|e| match e {
        SuiteError::FleetSize(n) => anyhow::anyhow!("--fleet-size {n}: expected 2 to 64"),
        SuiteError::Fallback(f) => {
            anyhow::anyhow!("--fallback {f:?}: not a registry policy (see `safegate compare --help`)")
        }
        other => other.into(),
    })?;
    let written = match (figure_dir, suite.delay.measured) {
        (Some(dir), Some(tau)) => figures(dir, &suite, tau)?,
        _ => Vec::new(),
    };
    let Suite { uncoordinated, coordinated, detectors: rows, exits, payoffs, tipping, verdicts, .. } = &suite;
    let DelayThreshold { fleet: dcfg, gain, loop_gain: a, measured, hayes, euler } = &suite.delay;
    let (a, measured, hayes, euler) = (*a, *measured, *hayes, *euler);
    if as_json {
        let doc = json!({
            "starvation": {
                "uncoordinated": { "split": uncoordinated.gates.iter().map(|g| g.share).collect::<Vec<_>>(), "jain": uncoordinated.jain, "goodput": uncoordinated.goodput },
                "priced": { "split": coordinated.gates.iter().map(|g| g.share).collect::<Vec<_>>(), "jain": coordinated.jain, "goodput": coordinated.goodput },
            },
            "delay_threshold": { "loop_gain": a, "measured": measured, "hayes": hayes, "euler": euler.map(|e| e.real) },
            "detectors": rows.iter().map(|r| json!({
                "detector": match r.detector { DetectorKind::Phi => "phi", DetectorKind::Timeout => "timeout" },
                "threshold": r.threshold, "false_per_hour": r.false_per_hour,
                "detection_mean": r.detection_mean, "detection_p99": r.detection_p99,
            })).collect::<Vec<_>>(),
            "exit_frequency": exits.iter().map(|(name, o)| json!({
                "fleet": name, "goodput": o.goodput, "jain": o.jain,
                "time_above": o.gates.iter().map(|g| g.time_above).collect::<Vec<_>>(),
                "crossings": o.gates.iter().map(|g| g.crossings).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "stag_hunt": { "fallback": fallback, "payoffs": payoffs, "seed_payoffs": SEED_COSTS, "tipping": tipping, "seed_f_star": SEED_F_STAR },
            "verdicts": verdicts,
            "figures": written,
        });
        println!("{}", serde_json::to_string(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("safegate fleet --sim: the fleet's claims measured in the model (docs/fleet.md)\n");
    println!("1. Uncoordinated gates starve each other; the price splits fairly (two gates at 120 req/s, P = 64 / 2)");
    for (name, o) in [("greedy", &uncoordinated), ("price", &coordinated)] {
        println!(
            "   {name:<8} split {:.1} % / {:.1} %   Jain {:.3}   fleet goodput {:.1} req/s",
            100.0 * o.gates[0].share,
            100.0 * o.gates[1].share,
            o.jain,
            o.goodput
        );
    }
    println!("\n2. The price's delay threshold (γ = {}, c = 135, loop gain a = {a:.2}/s, dt = {} s)", gain, dcfg.dt);
    println!(
        "   measured {}   Hayes π/(2a) {hayes:.4} s   with the Euler step {}",
        measured.map_or("none below 2 s".to_string(), |t| format!("{t:.4} s")),
        euler.map_or("-".to_string(), |e| format!("{:.4} s", e.real))
    );
    println!("\n3. Failure detectors: 1 s ± 0.1 s heartbeats, 1 % Pareto pauses (scale 0.5 s, α 1.5), 50 h");
    println!(
        "   {:<10}{:>10}{:>22}{:>20}{:>14}",
        "detector", "threshold", "false suspicions / h", "detection mean [s]", "p99 [s]"
    );
    for r in rows.iter().filter(|r| [1.0, 3.0, 8.0, 12.0, 16.0, 2.0, 5.0, 10.0].contains(&r.threshold)) {
        let name = match r.detector {
            DetectorKind::Phi => "φ",
            DetectorKind::Timeout => "timeout",
        };
        println!(
            "   {name:<10}{:>10}{:>22.2}{:>20.2}{:>14.2}",
            r.threshold, r.false_per_hour, r.detection_mean, r.detection_p99
        );
    }
    println!("\n4. Exit frequency on the seed's health cycle (two gates at 120 req/s, P = 8 each, 400 s): time above θ·cap and upward crossings");
    for (name, o) in exits {
        let above: Vec<String> = o.gates.iter().map(|g| format!("{:.1} %", 100.0 * g.time_above)).collect();
        let cross: Vec<String> = o.gates.iter().map(|g| g.crossings.to_string()).collect();
        let fleet_above = o.gates.iter().map(|g| g.time_above).fold(0.0, f64::max);
        println!(
            "   {name:<26} goodput {:>6.1} req/s  Jain {:.3}  above θ·cap {} (fleet: worst gate {:.1} %)  crossings {}",
            o.goodput,
            o.jain,
            above.join(" / "),
            100.0 * fleet_above,
            cross.join(" / ")
        );
    }
    println!("\n5. Freeze or fall back (to `{fallback}`), measured in the running case: cost = goodput when all freeze / goodput");
    println!("   {:<28}{:>10}{:>8}", "outcome", "measured", "seed");
    for (name, m, s) in [
        ("both freeze", payoffs.both_freeze, SEED_COSTS[0]),
        ("both fall back", payoffs.both_fallback, SEED_COSTS[1]),
        ("lone fallback (defector)", payoffs.lone_fallback, SEED_COSTS[2]),
        ("lone freezer", payoffs.lone_freeze, SEED_COSTS[3]),
    ] {
        println!("   {name:<28}{m:>10.2}{s:>8.2}");
    }
    println!(
        "   Nash: (freeze, freeze) {}, (fall back, fall back) {}; regret: freeze {:.2}, fall back {:.2} (seed: 0.7, 0.1)",
        if payoffs.freeze_is_nash() { "yes" } else { "no" },
        if payoffs.fallback_is_nash() { "yes" } else { "no" },
        payoffs.regret_freeze(),
        payoffs.regret_fallback()
    );
    println!("   tipping share with {fleet_size} gates (f = share of the others falling back):");
    for p in &tipping.points {
        println!("     f {:.3}: freeze {:>6.2}  fall back {:>6.2}", p.f, p.freeze, p.fallback);
    }
    println!(
        "   f* measured {}; the seed's {SEED_F_STAR} (from C_freeze = 1 + f, C_fallback = 1.1 + 0.2f)",
        tipping.f_star.map_or("none (freezing is cheaper at every f)".to_string(), |f| format!("{f:.3}"))
    );
    println!("\nVerdicts (falsified = the criterion's condition is met in the running case):");
    for v in verdicts {
        println!("   {} {:<13} {}", v.id, v.verdict.label(), v.evidence);
    }
    for w in &written {
        println!("figure: {w}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `safegate fleet --sim --scenario FILE`: the file's fleet uncoordinated and, if it has a
/// price, priced (under `boundary`'s filter when given).
pub(crate) fn run_file(
    path: &std::path::Path,
    local: &str,
    boundary: Option<&std::path::Path>,
    as_json: bool,
) -> Result<ExitCode> {
    let origin = path.display().to_string();
    let FileRuns { title, description, runs } = suite::run_file(path, local, boundary).map_err(|e| match e {
        SuiteError::Local { local, error } => anyhow::anyhow!("--local {local}: {error}"),
        SuiteError::Boundary(e) => anyhow::anyhow!("--boundary: {e}"),
        other => other.into(),
    })?;
    if as_json {
        let doc = json!({
            "scenario": origin,
            "runs": runs.iter().map(|(l, o)| json!({ "label": l, "outcome": o })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("safegate fleet --sim: {title}");
    if let Some(d) = &description {
        println!("  {d}");
    }
    for (label, o) in &runs {
        println!(
            "\n{label}: fleet goodput {:.1} req/s, Jain {:.3} (of goodput/λ {:.3})",
            o.goodput, o.jain, o.jain_demand
        );
        println!(
            "   {:<6}{:>10}{:>12}{:>12}{:>9}{:>16}{:>11}",
            "gate", "λ", "admitted", "goodput", "share", "above θ·cap", "crossings"
        );
        for (i, g) in o.gates.iter().enumerate() {
            println!(
                "   {:<6}{:>10.1}{:>12.0}{:>12.1}{:>8.1}%{:>15.1}%{:>11}",
                i,
                g.rate,
                g.admitted,
                g.goodput,
                100.0 * g.share,
                100.0 * g.time_above,
                g.crossings
            );
        }
        if let (Some(p), Some(e)) = (o.price_final, o.price_equilibrium) {
            println!("   price at the end {p:.4} (equilibrium {e:.4})");
        }
    }
    Ok(ExitCode::SUCCESS)
}
