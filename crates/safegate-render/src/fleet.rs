//! The fleet model's text and figures (`safegate fleet --sim`): the suite's measurements
//! as text and JSON, its figures, and a fleet file's runs.

use std::fmt::Write as _;

use safegate_sim::heartbeat::DetectorKind;
use safegate_studies::fleet::stag::{SEED_COSTS, SEED_F_STAR};
use safegate_studies::fleet::suite::{DelayThreshold, FileRuns, PriceRun, Suite};

use crate::chart::{render, Line, Panel, Rule, PALETTE};
use crate::numbers::{fixed, number};
use serde_json::json;

/// The figures of `safegate fleet --sim`, each with its file name (`tau` the measured delay threshold, `runs` and `p_star`:
/// [`safegate_studies::fleet::suite::price_around_threshold`]): the price at 0.8× and 1.2× its measured delay threshold, and the tipping
/// curves.
pub fn figures(suite: &Suite, tau: f64, runs: Vec<PriceRun>, p_star: f64) -> Vec<(&'static str, String)> {
    let (tipping, fallback) = (&suite.tipping, &suite.fallback);
    let mut out = Vec::new();
    let mut lines = Vec::new();
    let mut y_max: f64 = 0.0;
    for (k, run) in runs.into_iter().enumerate() {
        y_max = y_max.max(run.price.iter().cloned().fold(0.0, f64::max));
        lines.push(Line {
            name: format!("delay {} s ({}× the threshold)", fixed(run.delay, 3), number(run.factor)),
            color: PALETTE[k],
            x: run.t,
            y: run.price,
            dashed: false,
        });
    }
    let panel = Panel {
        label: "price p".into(),
        y_min: 0.0,
        y_max: y_max * 1.05,
        lines,
        rules: vec![Rule { y: p_star, label: format!("p* = {p_star:.2}") }],
    };
    let svg = render(
        "the price below and above its delay threshold",
        &format!("threshold {tau:.4} s"),
        "time [s]",
        0.0,
        10.0,
        &[panel],
    );
    out.push(("fleet-price-delay.svg", svg));
    let xs: Vec<f64> = tipping.points.iter().map(|p| p.f).collect();
    let top = tipping.points.iter().map(|p| p.freeze.max(p.fallback)).fold(1.0, f64::max);
    let panel = Panel {
        label: "cost (goodput when all freeze / goodput)".into(),
        y_min: 0.0,
        y_max: top * 1.05,
        lines: vec![
            Line {
                name: "freeze".into(),
                color: PALETTE[1],
                x: xs.clone(),
                y: tipping.points.iter().map(|p| p.freeze).collect(),
                dashed: false,
            },
            Line {
                name: format!("fall back ({fallback})"),
                color: PALETTE[0],
                x: xs.clone(),
                y: tipping.points.iter().map(|p| p.fallback).collect(),
                dashed: false,
            },
            Line {
                name: "seed: freeze 1 + f".into(),
                color: PALETTE[1],
                x: vec![0.0, 1.0],
                y: vec![1.0, 2.0],
                dashed: true,
            },
            Line {
                name: "seed: fall back 1.1 + 0.2f".into(),
                color: PALETTE[0],
                x: vec![0.0, 1.0],
                y: vec![1.1, 1.3],
                dashed: true,
            },
        ],
        rules: vec![],
    };
    let svg = render(
        "freeze or fall back: the tipping share",
        &format!(
            "{} gates; f = share of the others falling back; f* = {}",
            tipping.gates,
            tipping.f_star.map_or("none".into(), |f| format!("{f:.3}"))
        ),
        "f",
        0.0,
        1.0,
        &[panel],
    );
    out.push(("fleet-tipping.svg", svg));
    out
}

/// The JSON document of `safegate fleet --sim --json`: the suite's five measurements (the
/// split with and without the price, the price's delay threshold, the failure detectors'
/// trade-off, the exit frequency of each fleet, the Stag Hunt's payoffs and tipping share
/// beside the seed's), its verdicts, and the figures written (`figures`, their paths).
pub fn suite_json(suite: &Suite, figures: &[String]) -> serde_json::Value {
    let Suite { uncoordinated, coordinated, detectors: rows, exits, payoffs, tipping, verdicts, fallback, .. } = suite;
    let DelayThreshold { loop_gain: a, measured, hayes, euler, .. } = &suite.delay;
    let (a, measured, hayes, euler) = (*a, *measured, *hayes, *euler);
    json!({
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
        "figures": figures,
    })
}

/// What `safegate fleet --sim` prints as text: the suite's five measurements and its
/// verdicts (`fleet_size` gates in the tipping curve).
pub fn suite_text(suite: &Suite, fleet_size: usize) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    let Suite { uncoordinated, coordinated, detectors: rows, exits, payoffs, tipping, verdicts, fallback, .. } = suite;
    let DelayThreshold { fleet: dcfg, gain, loop_gain: a, measured, hayes, euler } = &suite.delay;
    let (a, measured, hayes, euler) = (*a, *measured, *hayes, *euler);
    writeln!(out, "safegate fleet --sim: the fleet's claims measured in the model (docs/fleet.md)\n")?;
    writeln!(
        out,
        "1. Uncoordinated gates starve each other; the price splits fairly (two gates at 120 req/s, P = 64 / 2)"
    )?;
    for (name, o) in [("greedy", &uncoordinated), ("price", &coordinated)] {
        writeln!(
            out,
            "   {name:<8} split {:.1} % / {:.1} %   Jain {:.3}   fleet goodput {:.1} req/s",
            100.0 * o.gates[0].share,
            100.0 * o.gates[1].share,
            o.jain,
            o.goodput
        )?;
    }
    writeln!(
        out,
        "\n2. The price's delay threshold (γ = {}, c = 135, loop gain a = {a:.2}/s, dt = {} s)",
        gain, dcfg.dt
    )?;
    writeln!(
        out,
        "   measured {}   Hayes π/(2a) {hayes:.4} s   with the Euler step {}",
        measured.map_or("none below 2 s".to_string(), |t| format!("{t:.4} s")),
        euler.map_or("-".to_string(), |e| format!("{:.4} s", e.real))
    )?;
    writeln!(out, "\n3. Failure detectors: 1 s ± 0.1 s heartbeats, 1 % Pareto pauses (scale 0.5 s, α 1.5), 50 h")?;
    writeln!(
        out,
        "   {:<10}{:>10}{:>22}{:>20}{:>14}",
        "detector", "threshold", "false suspicions / h", "detection mean [s]", "p99 [s]"
    )?;
    for r in rows.iter().filter(|r| [1.0, 3.0, 8.0, 12.0, 16.0, 2.0, 5.0, 10.0].contains(&r.threshold)) {
        let name = match r.detector {
            DetectorKind::Phi => "φ",
            DetectorKind::Timeout => "timeout",
        };
        writeln!(
            out,
            "   {name:<10}{:>10}{:>22.2}{:>20.2}{:>14.2}",
            r.threshold, r.false_per_hour, r.detection_mean, r.detection_p99
        )?;
    }
    writeln!(out, "\n4. Exit frequency on the seed's health cycle (two gates at 120 req/s, P = 8 each, 400 s): time above θ·cap and upward crossings")?;
    for (name, o) in exits {
        let above: Vec<String> = o.gates.iter().map(|g| format!("{:.1} %", 100.0 * g.time_above)).collect();
        let cross: Vec<String> = o.gates.iter().map(|g| g.crossings.to_string()).collect();
        let fleet_above = o.gates.iter().map(|g| g.time_above).fold(0.0, f64::max);
        writeln!(
            out,
            "   {name:<26} goodput {:>6.1} req/s  Jain {:.3}  above θ·cap {} (fleet: worst gate {:.1} %)  crossings {}",
            o.goodput,
            o.jain,
            above.join(" / "),
            100.0 * fleet_above,
            cross.join(" / ")
        )?;
    }
    writeln!(out, "\n5. Freeze or fall back (to `{fallback}`), measured in the running case: cost = goodput when all freeze / goodput")?;
    writeln!(out, "   {:<28}{:>10}{:>8}", "outcome", "measured", "seed")?;
    for (name, m, s) in [
        ("both freeze", payoffs.both_freeze, SEED_COSTS[0]),
        ("both fall back", payoffs.both_fallback, SEED_COSTS[1]),
        ("lone fallback (defector)", payoffs.lone_fallback, SEED_COSTS[2]),
        ("lone freezer", payoffs.lone_freeze, SEED_COSTS[3]),
    ] {
        writeln!(out, "   {name:<28}{m:>10.2}{s:>8.2}")?;
    }
    writeln!(
            out,
        "   Nash: (freeze, freeze) {}, (fall back, fall back) {}; regret: freeze {:.2}, fall back {:.2} (seed: 0.7, 0.1)",
        if payoffs.freeze_is_nash() { "yes" } else { "no" },
        if payoffs.fallback_is_nash() { "yes" } else { "no" },
        payoffs.regret_freeze(),
        payoffs.regret_fallback()
    )?;
    writeln!(out, "   tipping share with {fleet_size} gates (f = share of the others falling back):")?;
    for p in &tipping.points {
        writeln!(out, "     f {:.3}: freeze {:>6.2}  fall back {:>6.2}", p.f, p.freeze, p.fallback)?;
    }
    writeln!(
        out,
        "   f* measured {}; the seed's {SEED_F_STAR} (from C_freeze = 1 + f, C_fallback = 1.1 + 0.2f)",
        tipping.f_star.map_or("none (freezing is cheaper at every f)".to_string(), |f| format!("{f:.3}"))
    )?;
    writeln!(out, "\nVerdicts (falsified = the criterion's condition is met in the running case):")?;
    for v in verdicts {
        writeln!(out, "   {} {:<13} {}", v.id, v.verdict.label(), v.evidence)?;
    }
    Ok(out)
}

/// What `safegate fleet --sim --scenario FILE` prints as text: each run of the file's fleet.
pub fn file_runs_text(runs: &FileRuns) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    let FileRuns { title, description, runs } = runs;
    writeln!(out, "safegate fleet --sim: {title}")?;
    if let Some(d) = &description {
        writeln!(out, "  {d}")?;
    }
    for (label, o) in runs {
        writeln!(
            out,
            "\n{label}: fleet goodput {:.1} req/s, Jain {:.3} (of goodput/λ {:.3})",
            o.goodput, o.jain, o.jain_demand
        )?;
        writeln!(
            out,
            "   {:<6}{:>10}{:>12}{:>12}{:>9}{:>16}{:>11}",
            "gate", "λ", "admitted", "goodput", "share", "above θ·cap", "crossings"
        )?;
        for (i, g) in o.gates.iter().enumerate() {
            writeln!(
                out,
                "   {:<6}{:>10.1}{:>12.0}{:>12.1}{:>8.1}%{:>15.1}%{:>11}",
                i,
                g.rate,
                g.admitted,
                g.goodput,
                100.0 * g.share,
                100.0 * g.time_above,
                g.crossings
            )?;
        }
        if let (Some(p), Some(e)) = (o.price_final, o.price_equilibrium) {
            writeln!(out, "   price at the end {p:.4} (equilibrium {e:.4})")?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document holds each measurement of the suite it was given, and the figures.
    #[test]
    fn the_suite_document_holds_every_measurement() {
        let suite = safegate_studies::fleet::suite::run("cycle", 3).unwrap();
        let v = suite_json(&suite, &["a.svg".to_string()]);
        assert_eq!(v["starvation"]["priced"]["split"].as_array().map(Vec::len), Some(suite.coordinated.gates.len()));
        assert_eq!(v["detectors"].as_array().map(Vec::len), Some(suite.detectors.len()));
        assert_eq!(v["exit_frequency"].as_array().map(Vec::len), Some(suite.exits.len()));
        assert_eq!(v["stag_hunt"]["fallback"], "cycle");
        assert_eq!(v["delay_threshold"]["loop_gain"].as_f64(), Some(suite.delay.loop_gain));
        assert_eq!(v["verdicts"].as_array().map(Vec::len), Some(suite.verdicts.len()));
        assert_eq!(v["figures"], json!(["a.svg"]));
    }
}
