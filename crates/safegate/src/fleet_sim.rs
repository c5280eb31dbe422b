//! `safegate fleet --sim`: the fleet's claims measured in the model (docs/fleet.md).

use std::process::ExitCode;

use anyhow::{bail, Result};
use safegate_sim::heartbeat::{sweep, DetectorKind, HeartbeatProcess, Pauses, Sweep};
use safegate_sim::{DipShape, HealthSchedule, HealthTrack};
use safegate_studies::fleet::price::{equilibrium, euler_threshold, hayes_threshold};
use safegate_studies::fleet::stag::{self, StagConfig, SEED_COSTS, SEED_F_STAR};
use safegate_studies::fleet::{
    run_fleet, threshold, FleetConfig, FleetRecord, GatePolicy, OscillationTest, PriceConfig,
};
use serde_json::json;

fn two(p0: u32, p1: u32) -> FleetConfig {
    FleetConfig::two_gates([p0, p1])
}

fn running_case(m: usize, fallback: &str) -> StagConfig {
    StagConfig::running_case(m, fallback, 80.0)
}

/// The figures: the price at 0.8× and 1.2× its measured delay threshold, and the tipping
/// curves.
fn figures(
    dir: &std::path::Path,
    dcfg: &FleetConfig,
    tau: f64,
    tipping: &stag::Tipping,
    fallback: &str,
) -> Result<Vec<String>> {
    use anyhow::Context as _;
    use safegate_render::chart::{render, Line, Panel, Rule, PALETTE};
    crate::out_dir::create("--figures", dir)?;
    let mut written = Vec::new();
    let mut lines = Vec::new();
    let mut y_max: f64 = 0.0;
    let mut p_star = 0.0;
    for (k, factor) in [0.8, 1.2].into_iter().enumerate() {
        let cfg = safegate_studies::fleet::sweep::with_delay(dcfg, factor * tau);
        let cfg = FleetConfig { duration: 10.0, ..cfg };
        let mut p: Vec<GatePolicy> = cfg.gates.iter().map(|_| GatePolicy::Priced).collect();
        let out = run_fleet(&cfg, &mut p, FleetRecord { every: Some(10) })?;
        p_star = out.price_equilibrium.unwrap_or(p_star);
        let series = out.series.context("the recorded series")?;
        y_max = y_max.max(series.price.iter().cloned().fold(0.0, f64::max));
        lines.push(Line {
            name: format!("delay {:.3} s ({factor}× the threshold)", factor * tau),
            color: PALETTE[k],
            x: series.t.clone(),
            y: series.price.clone(),
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
    let path = dir.join("fleet-price-delay.svg");
    std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
    written.push(path.display().to_string());
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
    let path = dir.join("fleet-tipping.svg");
    std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
    written.push(path.display().to_string());
    Ok(written)
}

pub(crate) fn run(
    fallback: &str,
    fleet_size: usize,
    as_json: bool,
    figure_dir: Option<&std::path::Path>,
) -> Result<ExitCode> {
    if !(2..=64).contains(&fleet_size) {
        bail!("--fleet-size {fleet_size}: expected 2 to 64");
    }
    if fallback.trim().parse::<safegate_core::controllers::PolicySpec>().is_err() {
        bail!("--fallback {fallback:?}: not a registry policy (see `safegate compare --help`)");
    }
    // 1. Uncoordinated gates against the price.
    let cfg = two(64, 2);
    let mut greedy: Vec<GatePolicy> =
        (0..2).map(|i| GatePolicy::named("open", &cfg, i)).collect::<Result<_, _>>().map_err(anyhow::Error::msg)?;
    let uncoordinated = run_fleet(&cfg, &mut greedy, FleetRecord::default())?;
    let mut pcfg = cfg.clone();
    pcfg.price = Some(PriceConfig::default());
    let mut priced: Vec<GatePolicy> = (0..2).map(|_| GatePolicy::Priced).collect();
    let coordinated = run_fleet(&pcfg, &mut priced, FleetRecord::default())?;
    // 2. The delay threshold: measured against Hayes's π/(2a) and the Euler step's.
    // Equal delays: the single-delay equation Hayes's criterion is exact for.
    let mut dcfg = FleetConfig { dt: 0.001, duration: 60.0, ..two(8, 8) };
    for g in &mut dcfg.gates {
        g.delay = 0.05;
    }
    let price = PriceConfig { capacity: Some(135.0), ..PriceConfig::default() };
    dcfg.price = Some(price);
    let eq = equilibrium(&dcfg.gates, 135.0, price.gain);
    let a = eq.loop_gain();
    let measured = threshold(&dcfg, 2.0, &OscillationTest::default())?;
    let hayes = hayes_threshold(a);
    let euler = euler_threshold(a, dcfg.dt);
    // 3. The detectors' trade-off, heavy-tailed pauses.
    let process = HeartbeatProcess {
        interval: 1.0,
        jitter_sd: 0.1,
        pauses: Pauses::Pareto { probability: 0.01, scale: 0.5, shape: 1.5 },
    };
    let rows = sweep(&Sweep::standard(process, 50.0, 2026))?;
    // 5. Exit frequency on the seed's health cycle: uncoordinated seed gates, the bare
    // price, and the price under each gate's own filter (the shipped boundaries).
    let ccfg = FleetConfig {
        health: HealthTrack::new(HealthSchedule::Cycle(DipShape::default())),
        price: Some(PriceConfig::default()),
        ..two(8, 8)
    };
    let mut exits = Vec::new();
    {
        let mut plain = ccfg.clone();
        plain.price = None;
        let mut p: Vec<GatePolicy> = (0..2)
            .map(|i| GatePolicy::named("seed-gate", &plain, i))
            .collect::<Result<_, _>>()
            .map_err(anyhow::Error::msg)?;
        exits.push(("seed gates, no price", run_fleet(&plain, &mut p, FleetRecord::default())?));
        let mut p: Vec<GatePolicy> = (0..2).map(|_| GatePolicy::Priced).collect();
        exits.push(("price alone", run_fleet(&ccfg, &mut p, FleetRecord::default())?));
        for (name, text) in [
            ("price under seed-80", include_str!("../../../boundaries/seed-80.toml")),
            ("price under seed-80-pool", include_str!("../../../boundaries/seed-80-pool.toml")),
        ] {
            let b = safegate_core::boundary::Boundary::from_toml(text, &[])
                .map_err(|e| anyhow::anyhow!("{name}: {}", e.0))?;
            let mut p: Vec<GatePolicy> = (0..2)
                .map(|i| GatePolicy::filtered(&b, &ccfg, i))
                .collect::<Result<_, _>>()
                .map_err(anyhow::Error::msg)?;
            exits.push((name, run_fleet(&ccfg, &mut p, FleetRecord::default())?));
        }
    }
    // 4. The Stag Hunt, measured.
    let payoffs = stag::two_player(&running_case(2, fallback))?;
    let tipping = stag::tipping(&running_case(fleet_size, fallback))?;
    let verdicts = stag::verdicts(&payoffs, &tipping);
    let written = match (figure_dir, measured) {
        (Some(dir), Some(tau)) => figures(dir, &dcfg, tau, &tipping, fallback)?,
        _ => Vec::new(),
    };

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
    println!(
        "\n2. The price's delay threshold (γ = {}, c = 135, loop gain a = {a:.2}/s, dt = {} s)",
        price.gain, dcfg.dt
    );
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
    for (name, o) in &exits {
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
    for v in &verdicts {
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
    use safegate_studies::fleet::FleetScenario;
    let origin = path.display().to_string();
    let sc = FleetScenario::load(path)?;
    let cfg = sc.config(&origin)?;
    let b = match boundary {
        Some(p) => Some(safegate_sim::scenario::load_boundary(p)?),
        None => None,
    };
    let mut runs = Vec::new();
    let mut plain = cfg.clone();
    plain.price = None;
    let mut p: Vec<GatePolicy> = (0..plain.gates.len())
        .map(|i| GatePolicy::named(local, &plain, i))
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("--local {local}: {e}"))?;
    runs.push((format!("uncoordinated ({local})"), run_fleet(&plain, &mut p, FleetRecord::default())?));
    if cfg.price.is_some() {
        let (label, mut p): (String, Vec<GatePolicy>) = match &b {
            Some(b) => (
                format!("price under {}", b.name.as_deref().unwrap_or("the boundary")),
                (0..cfg.gates.len())
                    .map(|i| GatePolicy::filtered(b, &cfg, i))
                    .collect::<Result<_, _>>()
                    .map_err(|e| anyhow::anyhow!("--boundary: {e}"))?,
            ),
            None => ("price".to_string(), cfg.gates.iter().map(|_| GatePolicy::Priced).collect()),
        };
        runs.push((label, run_fleet(&cfg, &mut p, FleetRecord::default())?));
    }
    if as_json {
        let doc = json!({
            "scenario": origin,
            "runs": runs.iter().map(|(l, o)| json!({ "label": l, "outcome": o })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("safegate fleet --sim: {}", sc.name.as_deref().unwrap_or(&origin));
    if let Some(d) = &sc.description {
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
