//! `safegate compare`: every nominal controller, with and without the filter, side by side.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use safegate_core::controllers::PolicySpec;
use safegate_sim::Scenario;
use safegate_studies::compare::{
    compare, run_duration, select_cases, ArmReport, Case, CompareError, CompareReport, CompareRequest,
};

use crate::chart::{self, Line, Panel, Rule, PALETTE};
use crate::policy_arg::PolicyParser;
use crate::progress;

const DEFAULT_BOUNDARY: &str = include_str!("../../../boundaries/seed-80.toml");

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
        None => default_boundary()?,
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

/// The boundary compare enforces by default: the embedded boundaries/seed-80.toml.
pub(crate) fn default_boundary() -> Result<safegate_core::boundary::Boundary> {
    safegate_core::boundary::Boundary::from_toml(DEFAULT_BOUNDARY, &[]).map_err(|e| anyhow!("<embedded seed-80>: {e}"))
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.prec$}"))
}

fn arm_row(s: &mut String, a: &ArmReport) {
    let r = &a.recovery;
    let recovered = if r.dips == 0 {
        "-".to_string()
    } else if r.drained == 0 {
        format!("never ({}/{}<θ)", r.below_boundary, r.dips)
    } else {
        format!("{:.1}s ({}/{}<θ)", r.mean_seconds.unwrap_or(0.0), r.below_boundary, r.dips)
    };
    let e = &a.exit_probability;
    let _ = writeln!(
        s,
        "  {:<22} {:<4} {:>7.1} {:>6.2} {:>10.0} {:>7} {:>7} {:>17} {:>7.1}% {:>6.3} [{:.3},{:.3}] {:>4} {:>7.3} {:>7.1}% {:>8} {:>7}  {}",
        a.policy,
        if a.filtered { "on" } else { "off" },
        a.goodput,
        a.goodput_ratio,
        a.backlog_time,
        opt(a.sojourn_p50, 2),
        opt(a.sojourn_p99, 2),
        recovered,
        a.beyond_boundary * 100.0,
        e.estimate,
        e.ci_low,
        e.ci_high,
        e.trials,
        a.cvar.estimate,
        a.rejected_share * 100.0,
        a.given_up_share.map_or("-".into(), |g| format!("{:.1}%", g * 100.0)),
        a.backup_fraction.map_or("-".into(), |g| format!("{:.1}%", g * 100.0)),
        a.verdict
    );
}

/// The text table `safegate compare` prints.
pub(crate) fn render(r: &CompareReport, secs: f64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "safegate compare: boundary θ = {}, ε = {} over {} s; {} replications per arm{}",
        r.threshold,
        r.epsilon,
        r.horizon,
        r.seeds,
        if r.exit_trials > 0 {
            format!(", exit frequency inside the envelope from {} stepped trials (filtered)", r.exit_trials)
        } else {
            String::new()
        }
    );
    for c in &r.cases {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{} — {} [{}; physical limit {:.1} req/s]",
            c.name,
            c.description,
            if c.inside_envelope { "inside the envelope" } else { "outside the envelope or model" },
            c.physical_limit
        );
        let _ = writeln!(
            s,
            "  {:<22} {:<4} {:>7} {:>6} {:>10} {:>7} {:>7} {:>17} {:>8} {:>20} {:>4} {:>7} {:>8} {:>8} {:>7}  verdict",
            "policy",
            "flt",
            "goodput",
            "/limit",
            "backlog·s",
            "p50 s",
            "p99 s",
            "recovery",
            "beyond θ",
            "exit [99% CI]",
            "n",
            "CVaR",
            "rejected",
            "given up",
            "backup"
        );
        for a in &c.arms {
            arm_row(&mut s, a);
        }
    }
    // Which policies violate ε without the filter and hold it with it, inside the envelope.
    let _ = writeln!(s);
    let _ = writeln!(s, "ε inside the envelope (99 % upper limit ≤ {}):", r.epsilon);
    let mut policies: Vec<&str> = Vec::new();
    for c in &r.cases {
        for a in &c.arms {
            if !policies.contains(&a.policy.as_str()) {
                policies.push(&a.policy);
            }
        }
    }
    for p in policies {
        let verdicts = |filtered: bool| {
            let mut holds = 0;
            let mut violates = 0;
            let mut open = 0;
            for c in r.cases.iter().filter(|c| c.inside_envelope) {
                for a in c.arms.iter().filter(|a| a.policy == p && a.filtered == filtered) {
                    match a.verdict {
                        "holds ε" => holds += 1,
                        "violates ε" => violates += 1,
                        _ => open += 1,
                    }
                }
            }
            format!("holds {holds}, violates {violates}, not established {open}")
        };
        let _ = writeln!(s, "  {:<22} without filter: {:<46} with filter: {}", p, verdicts(false), verdicts(true));
    }
    if !r.probe_collapse.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "the seed's drain table in the model (cycle+pool, fluid, λ = 200, capacity steps to c·150 as a probe begins):"
        );
        let _ = writeln!(
            s,
            "  {:>5} {:>9} {:>9} {:>13} {:>13} {:>9} {:>20}",
            "c", "probe Δq", "drain Δq", "seed: probe", "seed: drain", "drain", "abort: probe+drain"
        );
        for row in &r.probe_collapse {
            let _ = writeln!(
                s,
                "  {:>5.2} {:>+9.1} {:>+9.1} {:>+13.1} {:>+13.1} {:>9} {:>+12.1} (peak {:.1} → {:.1})",
                row.capacity,
                row.probe,
                row.drain,
                row.predicted[0],
                row.predicted[1],
                if row.drain > 0.5 {
                    "adds"
                } else if row.drain < -0.5 {
                    "drains"
                } else {
                    "holds"
                },
                row.probe_drain_abort,
                row.peak[0],
                row.peak[1]
            );
        }
    }
    if !r.curve.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(s, "goodput vs load on the health cycle [req/s] (filter off / on):");
        let _ = write!(s, "  {:<22}", "λ");
        for [l, _] in &r.curve_limit {
            let _ = write!(s, " {:>13}", format!("{l:.0}"));
        }
        let _ = writeln!(s);
        let _ = write!(s, "  {:<22}", "physical limit");
        for [_, g] in &r.curve_limit {
            let _ = write!(s, " {:>13.1}", g);
        }
        let _ = writeln!(s);
        let mut names: Vec<&str> = Vec::new();
        for p in &r.curve {
            if !names.contains(&p.policy.as_str()) {
                names.push(&p.policy);
            }
        }
        for n in names {
            let _ = write!(s, "  {:<22}", n);
            for [l, _] in &r.curve_limit {
                let g = |f: bool| {
                    r.curve
                        .iter()
                        .find(|p| p.policy == n && p.filtered == f && p.traffic == *l)
                        .map_or("-".into(), |p| format!("{:.1}", p.goodput))
                };
                let _ = write!(s, " {:>13}", format!("{}/{}", g(false), g(true)));
            }
            let _ = writeln!(s);
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "{secs:.1} s");
    s
}

fn color(i: usize) -> (&'static str, bool) {
    // Six colours, then the same six dashed.
    (PALETTE[i % PALETTE.len()], i >= PALETTE.len())
}

/// Seconds of each queue trace the case figures draw, from the start.
pub(crate) const TRACE_SECONDS: f64 = 200.0;

/// One SVG of queue traces per case (panels: without and with the filter) and one of
/// goodput vs load, each with its file name.
pub(crate) fn figures(r: &CompareReport) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for c in &r.cases {
        if c.traces.is_empty() {
            continue;
        }
        // One panel per policy, filter off (dashed) and on (solid), over the first 200 s:
        // thirteen policies in one panel are unreadable.
        let cap = 200.0;
        let x1 = c.traces.iter().filter_map(|t| t.t.last().copied()).fold(0.0, f64::max).min(TRACE_SECONDS);
        let mut panels = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for a in &c.arms {
            if !names.contains(&a.policy.as_str()) {
                names.push(&a.policy);
            }
        }
        for name in names {
            let mut lines = Vec::new();
            for (a, t) in c.arms.iter().zip(&c.traces).filter(|(a, _)| a.policy == name) {
                let n = t.t.partition_point(|&x| x <= x1);
                lines.push(Line {
                    name: format!("filter {}", if a.filtered { "on" } else { "off" }),
                    color: if a.filtered { PALETTE[1] } else { PALETTE[0] },
                    x: t.t[..n].to_vec(),
                    y: t.queue[..n].to_vec(),
                    dashed: !a.filtered,
                });
            }
            panels.push(Panel {
                label: name.to_string(),
                y_min: 0.0,
                y_max: cap,
                lines,
                rules: vec![Rule { y: r.threshold * cap, label: format!("θ·cap = {:.0}", r.threshold * cap) }],
            });
        }
        out.push((
            format!("compare-{}.svg", c.name),
            chart::render(
                &format!("compare: {} (queue depth, first replication)", c.name),
                &c.description,
                "time [s]",
                0.0,
                x1,
                &panels,
            ),
        ));
    }
    if !r.curve.is_empty() {
        let mut panels = Vec::new();
        for filtered in [false, true] {
            let mut names: Vec<&str> = Vec::new();
            for p in &r.curve {
                if !names.contains(&p.policy.as_str()) {
                    names.push(&p.policy);
                }
            }
            let mut lines = vec![Line {
                name: "physical limit".into(),
                color: "#000000",
                x: r.curve_limit.iter().map(|p| p[0]).collect(),
                y: r.curve_limit.iter().map(|p| p[1]).collect(),
                dashed: true,
            }];
            for (i, n) in names.iter().enumerate() {
                let pts: Vec<_> = r.curve.iter().filter(|p| p.policy == *n && p.filtered == filtered).collect();
                let (col, dashed) = color(i);
                lines.push(Line {
                    name: n.to_string(),
                    color: col,
                    x: pts.iter().map(|p| p.traffic).collect(),
                    y: pts.iter().map(|p| p.goodput).collect(),
                    dashed,
                });
            }
            let y_max = r.curve_limit.iter().map(|p| p[1]).fold(0.0, f64::max) * 1.1;
            panels.push(Panel {
                label: format!("goodput [req/s], filter {}", if filtered { "on" } else { "off" }),
                y_min: 0.0,
                y_max,
                lines,
                rules: Vec::new(),
            });
        }
        let x0 = r.curve_limit.first().map_or(0.0, |p| p[0]);
        let x1 = r.curve_limit.last().map_or(1.0, |p| p[0]);
        out.push((
            "compare-goodput-vs-load.svg".into(),
            chart::render(
                "goodput vs load",
                "λ = 80-style health cycle, one replication per point",
                "offered λ [req/s]",
                x0,
                x1,
                &panels,
            ),
        ));
    }
    out
}
