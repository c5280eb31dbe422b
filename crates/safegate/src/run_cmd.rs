//! `safegate run`: one scenario of the seed's model, summarised, charted, or as JSON.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use safegate_core::safety::{FilterStats, SafetyFilter};
use safegate_core::{Action, Observation, Policy, SeedGate};
use safegate_sim::{Config, Mode, Outcome, RunOptions, Scenario};
use serde::Serialize;

use crate::chart::{self, Line, Panel, Rule};
use crate::progress;

/// The embedded default scenario: the seed's λ = 80 band.
const DEFAULT_SCENARIO: &str = include_str!("../../../scenarios/band-80.toml");

/// Flags of `safegate run`. Every model flag overrides the scenario's value.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Scenario file (TOML). Without it: the seed's λ = 80 band, gate off and on.
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
    /// Queue capacity (model.capacity).
    #[arg(long)]
    pub(crate) capacity: Option<u32>,
    /// Fluid busy-executor counting: whole or fluid (model.busy).
    #[arg(long)]
    pub(crate) busy: Option<String>,
    /// Any scenario key, e.g. `--set health.low=0.2 --set retries.kind=constant`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<String>,
    /// Also run the same scenario with the gate off, side by side (always on without a file).
    #[arg(long)]
    pub(crate) baseline: bool,
    /// Print JSON: {"scenario", "summary", "series", "baseline"?} instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Keep every N-th sample in the JSON series.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub(crate) every: usize,
    /// Where to write the SVG chart [default: safegate-run.svg; with --json, only when given].
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
        num("traffic.rate", self.traffic.map(|v| format!("{v:?}")));
        num("gate.threshold", self.threshold.map(|v| format!("{v:?}")));
        num("gate.sensitivity", self.sensitivity.map(|v| format!("{v:?}")));
        num("health.kind", self.health.as_ref().map(|v| format!("{v:?}")));
        num("run.duration", self.duration.map(|v| format!("{v:?}")));
        num("run.dt", self.dt.map(|v| format!("{v:?}")));
        num("run.mode", self.mode.as_ref().map(|v| format!("{v:?}")));
        num("run.seed", self.seed.map(|v| v.to_string()));
        num("model.executors", self.executors.map(|v| v.to_string()));
        num("model.comfortable", self.comfortable.map(|v| format!("{v:?}")));
        num("model.rate", self.rate.map(|v| format!("{v:?}")));
        num("model.capacity", self.capacity.map(|v| v.to_string()));
        num("model.busy", self.busy.as_ref().map(|v| format!("{v:?}")));
        for kv in &self.set {
            let (k, v) = kv
                .split_once('=')
                .with_context(|| format!("--set {kv:?}: expected KEY=VALUE, e.g. health.shape.low=0.2"))?;
            o.push((k.trim().to_string(), v.trim().to_string()));
        }
        Ok(o)
    }
}

/// One labelled run, as printed and serialised.
#[derive(Debug, Serialize)]
struct RunReport {
    label: String,
    policy: &'static str,
    scenario: Scenario,
    #[serde(flatten)]
    outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    filter: Option<FilterStats>,
}

/// The policies `run` can drive.
#[derive(Debug)]
enum RunPolicy {
    Gate(SeedGate),
    Filtered(Box<SafetyFilter<SeedGate>>),
}

impl Policy for RunPolicy {
    fn decide(&mut self, obs: &Observation) -> Action {
        match self {
            RunPolicy::Gate(g) => g.decide(obs),
            RunPolicy::Filtered(f) => f.decide(obs),
        }
    }
    fn name(&self) -> &'static str {
        match self {
            RunPolicy::Gate(g) => g.name(),
            RunPolicy::Filtered(f) => f.name(),
        }
    }
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
    let mut scenario = scenario;
    if let Some(path) = &args.boundary {
        scenario.boundary = Some(safegate_sim::scenario::load_boundary(path)?);
    }
    let cfg = scenario.config(&origin)?;
    let gate = scenario.gate()?;

    let mut variants: Vec<(String, Scenario, RunPolicy)> = Vec::new();
    let gate_label = if gate.sensitivity() > 0.0 {
        format!("gate on (θ {}, sens {})", gate.threshold(), gate.sensitivity())
    } else {
        "gate off".to_string()
    };
    if let Some(b) = &scenario.boundary {
        let safety = b.safety_config(cfg.pool.capacity).map_err(|e| anyhow::anyhow!("{origin}: boundary: {e}"))?;
        variants.push((gate_label.clone(), scenario.clone(), RunPolicy::Gate(gate)));
        let name = b.name.clone().unwrap_or_else(|| "boundary".into());
        let filter = SafetyFilter::new(safety, gate).map_err(|e| anyhow::anyhow!("{e}"))?;
        variants.push((format!("filtered ({name})"), scenario.clone(), RunPolicy::Filtered(Box::new(filter))));
    } else {
        let want_baseline = (args.baseline || args.scenario.is_none()) && gate.sensitivity() > 0.0;
        if want_baseline {
            let mut off = scenario.clone();
            off.gate.sensitivity = 0.0;
            variants.push(("gate off".to_string(), off, RunPolicy::Gate(SeedGate::new(gate.threshold(), 0.0)?)));
        }
        variants.push((gate_label, scenario.clone(), RunPolicy::Gate(gate)));
    }

    let steps = cfg.steps();
    let stride = if args.json { args.every } else { ((steps / 200_000) as usize).max(1) };
    let heavy = steps.saturating_mul(variants.len() as u64) >= 4_000_000
        || (scenario.run.mode == Mode::Stochastic && cfg.duration * cfg.traffic >= 2e6);
    let pb = progress::bar(1000 * variants.len() as u64, "simulating", heavy);
    let mut reports = Vec::new();
    for (i, (label, sc, mut policy)) in variants.into_iter().enumerate() {
        let base = 1000 * i as u64;
        let mut cb = |f: f64| pb.set_position(base + (f * 1000.0) as u64);
        let outcome = safegate_sim::run(
            sc.run.mode,
            &cfg,
            &mut policy,
            RunOptions { record_every: Some(stride), progress: Some(&mut cb) },
        )
        .with_context(|| format!("scenario {origin}"))?;
        let filter = match &policy {
            RunPolicy::Filtered(f) => Some(*f.stats()),
            RunPolicy::Gate(_) => None,
        };
        reports.push(RunReport { label, policy: policy.name(), scenario: sc, outcome, filter });
    }
    pb.finish_and_clear();

    // The chart goes to --svg, or by default to safegate-run.svg when a table is printed
    // (a --json run writes no file it was not asked for).
    let chart = match (&args.svg, args.no_svg || args.json) {
        (Some(p), _) => Some(p.clone()),
        (None, false) => Some(PathBuf::from("safegate-run.svg")),
        (None, true) => None,
    };
    if let Some(path) = &chart {
        let svg = render_chart(&scenario, &cfg, &reports);
        std::fs::write(path, svg).with_context(|| format!("writing the chart to {}", path.display()))?;
    }

    if args.json {
        let primary = reports.pop().expect("at least one run");
        let baseline = reports.pop();
        let doc = serde_json::json!({
            "scenario": primary.scenario,
            "policy": primary.policy,
            "label": primary.label,
            "summary": primary.outcome.summary,
            "series": primary.outcome.series,
            "baseline": baseline,
            "chart": chart.as_ref().map(|p| p.display().to_string()),
        });
        println!("{}", serde_json::to_string(&doc)?);
    } else {
        if !overrides.is_empty() {
            let list: Vec<String> = overrides.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            println!("overrides (the description above them is the file's): {}", list.join(", "));
        }
        print!("{}", render_table(&scenario, &cfg, &origin, &reports));
        if let Some(path) = &chart {
            println!("chart: {}", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn describe(scenario: &Scenario, cfg: &Config) -> String {
    use safegate_sim::scenario::HealthKind;
    let h = &scenario.health;
    let health = match h.kind {
        HealthKind::Constant => format!("constant health {}", h.shape.high),
        HealthKind::Cycle => {
            format!(
                "health cycle ({} s: {} → {})",
                cfg.health.schedule_period().unwrap_or(0.0),
                h.shape.high,
                h.shape.low
            )
        }
        HealthKind::Dip => format!("one health dip at {} s ({} → {})", h.start, h.shape.high, h.shape.low),
        HealthKind::Trace => {
            format!("health trace {}", h.file.as_ref().map(|p| p.display().to_string()).unwrap_or_default())
        }
    };
    let noise = if h.noise > 0.0 { format!(", noise {}", h.noise) } else { String::new() };
    format!(
        "λ = {} req/s, P = {}, C = {}, s = {}, cap = {}; {health}{noise}; {} mode, {} s at dt {}, seed {}",
        cfg.traffic,
        cfg.pool.executors,
        cfg.pool.comfortable,
        cfg.pool.rate,
        cfg.pool.capacity,
        scenario.run.mode,
        cfg.duration,
        cfg.dt,
        cfg.seed
    )
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or("never".to_string(), |x| format!("{x:.1} s"))
}

fn render_table(scenario: &Scenario, cfg: &Config, origin: &str, reports: &[RunReport]) -> String {
    let mut s = String::new();
    let name = scenario.name.clone().unwrap_or_else(|| origin.to_string());
    let _ = writeln!(s, "safegate run: {name}");
    if let Some(d) = &scenario.description {
        let _ = writeln!(s, "  {d}");
    }
    let _ = writeln!(s, "  {}", describe(scenario, cfg));
    let ceiling = cfg.pool.saturated_ceiling();
    let (n_peak, peak) = cfg.pool.peak_rate();
    let _ = writeln!(
        s,
        "  pool ceiling with all {} busy: {ceiling:.2} req/s (s·C²/P); peak {peak:.1} req/s at {n_peak} busy",
        cfg.pool.executors
    );
    if cfg.retries.enabled() {
        let _ = writeln!(s, "  retries on: {}", cfg.retries);
    } else {
        let _ = writeln!(s, "  retries off");
    }
    let _ = writeln!(s);

    type Row = (&'static str, Box<dyn Fn(&RunReport) -> String>);
    let rows: Vec<Row> = vec![
        ("queue min", Box::new(|r| format!("{:.1}", r.outcome.summary.queue_min))),
        ("queue mean", Box::new(|r| format!("{:.1}", r.outcome.summary.queue_mean))),
        ("queue max", Box::new(|r| format!("{:.1}", r.outcome.summary.queue_max))),
        ("queue final", Box::new(|r| format!("{:.1}", r.outcome.summary.queue_final))),
        (
            "queue range, settled",
            Box::new(|r| {
                let su = &r.outcome.summary;
                match (su.settled_min, su.settled_max) {
                    (Some(lo), Some(hi)) => format!("{lo:.1}–{hi:.1} (t ≥ {} s)", su.warmup),
                    _ => format!("- (run shorter than warm-up {} s)", su.warmup),
                }
            }),
        ),
        ("backlog-time Σq·dt", Box::new(|r| format!("{:.0} req·s", r.outcome.summary.backlog_time))),
        ("offered", Box::new(|r| format!("{:.0}", r.outcome.summary.offered))),
        ("admitted", Box::new(|r| format!("{:.0}", r.outcome.summary.admitted))),
        ("rejected", Box::new(|r| format!("{:.0}", r.outcome.summary.rejected))),
        ("dropped (full)", Box::new(|r| format!("{:.0}", r.outcome.summary.dropped))),
        ("cleared", Box::new(|r| format!("{:.0}", r.outcome.summary.cleared))),
        ("retried", Box::new(|r| format!("{:.0}", r.outcome.summary.retried))),
        (
            "drained (q ≤ level)",
            Box::new(|r| {
                let su = &r.outcome.summary;
                if su.drained {
                    format!("yes, from {}", fmt_opt(su.drained_at))
                } else {
                    format!("no (level {})", su.drain_level)
                }
            }),
        ),
    ];
    let mut rows = rows;
    let boundary_q = scenario.boundary.as_ref().map(|b| b.barrier.threshold * cfg.pool.capacity);
    if let Some(bq) = boundary_q {
        rows.push((
            "time above θ·Q (filter)",
            Box::new(move |r| match &r.outcome.series {
                Some(s) => format!(
                    "{:.1} %",
                    100.0 * s.queue.iter().filter(|q| **q > bq).count() as f64 / s.queue.len().max(1) as f64
                ),
                None => "-".into(),
            }),
        ));
    }
    if cfg.health.schedule.dip_end().is_some() {
        rows.push(("recovery after dip", Box::new(|r| fmt_opt(r.outcome.summary.recovery_after_dip))));
    }
    if reports.iter().any(|r| r.filter.is_some()) {
        rows.push((
            "filter: bound / backup",
            Box::new(|r| match &r.filter {
                Some(f) => format!(
                    "{:.1}% / {:.1}% of {}",
                    100.0 * f.interventions as f64 / f.decisions.max(1) as f64,
                    100.0 * f.infeasible as f64 / f.decisions.max(1) as f64,
                    f.decisions
                ),
                None => "-".into(),
            }),
        ));
        rows.push((
            "filter: given up",
            Box::new(|r| r.filter.map_or("-".into(), |f| format!("{:.0} req", f.given_up))),
        ));
    }
    if scenario.run.mode == Mode::Stochastic {
        rows.push((
            "mean sojourn",
            Box::new(|r| r.outcome.summary.mean_sojourn.map_or("-".into(), |x| format!("{:.3} s", x))),
        ));
        rows.push((
            "sojourn p50 / p99",
            Box::new(|r| match (r.outcome.summary.sojourn_p50, r.outcome.summary.sojourn_p99) {
                (Some(a), Some(b)) => format!("{a:.3} / {b:.3} s"),
                _ => "-".into(),
            }),
        ));
    }
    let w0 = rows.iter().map(|(n, _)| n.chars().count()).max().unwrap_or(0) + 2;
    let cells: Vec<Vec<String>> = rows.iter().map(|(_, f)| reports.iter().map(f).collect()).collect();
    let widths: Vec<usize> = (0..reports.len())
        .map(|j| {
            cells.iter().map(|c| c[j].chars().count()).chain([reports[j].label.chars().count()]).max().unwrap_or(0) + 3
        })
        .collect();
    let _ = write!(s, "{:w0$}", "");
    for (j, r) in reports.iter().enumerate() {
        let _ = write!(s, "{:>w$}", r.label, w = widths[j]);
    }
    let _ = writeln!(s);
    for (i, (name, _)) in rows.iter().enumerate() {
        let _ = write!(s, "{:w0$}", name);
        for (j, c) in cells[i].iter().enumerate() {
            let _ = write!(s, "{:>w$}", c, w = widths[j]);
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s);
    s
}

fn render_chart(scenario: &Scenario, cfg: &Config, reports: &[RunReport]) -> String {
    let mut queue = Vec::new();
    let mut admit = Vec::new();
    let mut health = None;
    for (i, r) in reports.iter().enumerate() {
        let Some(series) = &r.outcome.series else { continue };
        let color = chart::PALETTE[i % chart::PALETTE.len()];
        queue.push(Line { name: r.label.clone(), color, x: series.t.clone(), y: series.queue.clone(), dashed: false });
        admit.push(Line {
            name: r.label.clone(),
            color,
            x: series.t.clone(),
            y: series.admit_fraction.clone(),
            dashed: false,
        });
        health.get_or_insert_with(|| Line {
            name: "health H(t)".into(),
            color: chart::PALETTE[2],
            x: series.t.clone(),
            y: series.health.clone(),
            dashed: false,
        });
    }
    let cap = cfg.pool.capacity;
    let h_max = health.as_ref().map_or(1.0, |l| l.y.iter().cloned().fold(1.0, f64::max));
    let panels = vec![
        Panel {
            label: "queue depth q".into(),
            y_min: 0.0,
            y_max: cap,
            lines: queue,
            rules: vec![Rule {
                y: scenario.gate.threshold * cap,
                label: format!("θ·cap = {:.0}", scenario.gate.threshold * cap),
            }],
        },
        Panel {
            label: "health H".into(),
            y_min: 0.0,
            y_max: h_max,
            lines: health.into_iter().collect(),
            rules: vec![],
        },
        Panel { label: "admit fraction".into(), y_min: 0.0, y_max: 1.0, lines: admit, rules: vec![] },
    ];
    let title = format!("safegate run: {}", scenario.name.clone().unwrap_or_else(|| "scenario".into()));
    chart::render(&title, &describe(scenario, cfg), "time [s]", 0.0, cfg.steps() as f64 * cfg.dt, &panels)
}
