//! What `safegate run` prints: the table of its runs side by side, and the SVG chart.

use std::fmt::Write as _;

use safegate_sim::{Config, Scenario};

use crate::chart::{self, Line, Panel, Rule};
use safegate_studies::run::{RunReport, Verdict};

fn describe(scenario: &Scenario, cfg: &Config, mode: &str) -> String {
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
        "λ = {} req/s, P = {}, C = {}, s = {}, cap = {}; {health}{noise}; {mode}, {} s at dt {}, seed {}",
        cfg.traffic,
        cfg.pool.executors,
        cfg.pool.comfortable,
        cfg.pool.rate,
        cfg.pool.capacity,
        cfg.duration,
        cfg.dt,
        cfg.seed
    )
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or("never".to_string(), |x| format!("{x:.1} s"))
}

/// The mode as the description line says it: `fluid mode`, `stochastic mode`, ….
pub fn mode_text(scenario: &Scenario) -> String {
    format!("{} mode", scenario.run.mode)
}

/// The table of `reports`; `title` is the command (`safegate run`), `mode` how the runs
/// were played ([`mode_text`], or the live system's own words).
pub fn render_table(
    title: &str,
    mode: &str,
    scenario: &Scenario,
    cfg: &Config,
    origin: &str,
    reports: &[RunReport],
) -> String {
    let mut s = String::new();
    let name = scenario.name.clone().unwrap_or_else(|| origin.to_string());
    let _ = writeln!(s, "{title}: {name}");
    if let Some(d) = &scenario.description {
        let _ = writeln!(s, "  {d}");
    }
    let _ = writeln!(s, "  {}", describe(scenario, cfg, mode));
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
    if reports.iter().any(|r| r.outcome.summary.mean_sojourn.is_some()) {
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

/// The chart of `reports`: queue (with the safe line `line`, θ·cap), health, admit fraction.
pub fn render_chart(
    title: &str,
    mode: &str,
    scenario: &Scenario,
    cfg: &Config,
    line: f64,
    reports: &[RunReport],
) -> String {
    let mut queue = Vec::new();
    let mut admit = Vec::new();
    let mut health = None;
    for (i, r) in reports.iter().enumerate() {
        let Some(series) = &r.outcome.series else { continue };
        let color = chart::PALETTE[i % chart::PALETTE.len()];
        // Beyond two runs, every other one is dashed: runs that nearly coincide (the filter
        // with and without the concurrency cap) stay told apart.
        let dashed = i >= 2 && i % 2 == 1;
        queue.push(Line { name: r.label.clone(), color, x: series.t.clone(), y: series.queue.clone(), dashed });
        admit.push(Line {
            name: r.label.clone(),
            color,
            x: series.t.clone(),
            y: series.admit_fraction.clone(),
            dashed,
        });
        health.get_or_insert_with(|| Line {
            name: "health H(t)".into(),
            color: "#666666",
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
            rules: vec![Rule { y: line, label: format!("θ·cap = {line:.0}") }],
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
    let title = format!("{title}: {}", scenario.name.clone().unwrap_or_else(|| "scenario".into()));
    chart::render(&title, &describe(scenario, cfg, mode), "time [s]", 0.0, cfg.steps() as f64 * cfg.dt, &panels)
}

/// The verdict as one line: `goodput 50.5 req/s, 78 % of the physical limit 65.0 req/s,
/// 387.8 s (97 %) beyond θ·cap = 140`.
pub fn verdict_line(v: &Verdict) -> String {
    format!(
        "goodput {:.1} req/s, {:.0} % of the physical limit {:.1} req/s, {:.1} s ({:.0} %) beyond θ·cap = {:.0}",
        v.goodput,
        100.0 * v.share_of_limit,
        v.physical_limit,
        v.time_beyond,
        100.0 * v.share_beyond,
        v.line
    )
}

/// The verdict lines of `reports` (those that have one), under their heading; empty when
/// none has a verdict.
pub fn verdict_block(reports: &[RunReport]) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    if !reports.iter().any(|r| r.verdict.is_some()) {
        return o;
    }
    o.push_str("verdicts (goodput = cleared / duration; physical limit = what an ideal pool clearing H(t)·C·s from the same backlog would clear):\n");
    let w = reports.iter().map(|r| r.label.chars().count()).max().unwrap_or(0);
    for r in reports {
        if let Some(v) = &r.verdict {
            let _ = writeln!(o, "  {:w$}  {}", r.label, verdict_line(v));
        }
    }
    o
}
