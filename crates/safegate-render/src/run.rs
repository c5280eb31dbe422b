//! What `safegate run` prints: the table of its runs side by side, and the SVG chart.

use std::fmt::Write as _;

use safegate_sim::{Config, Scenario};

use crate::chart::{self, Line, Panel, Rule};
use crate::numbers::{fixed, nonzero, number, percent, percent_of, percent_tight, ratio};
use safegate_studies::run::{RunReport, Verdict};

fn describe(scenario: &Scenario, cfg: &Config, mode: &str) -> String {
    use safegate_sim::scenario::HealthKind;
    let h = &scenario.health;
    let health = match h.kind {
        HealthKind::Constant => format!("constant health {}", number(h.shape.high)),
        HealthKind::Cycle => {
            format!(
                "health cycle ({} s: {} → {})",
                number(cfg.health.schedule_period().unwrap_or(0.0)),
                number(h.shape.high),
                number(h.shape.low)
            )
        }
        HealthKind::Dip => {
            format!("one health dip at {} s ({} → {})", number(h.start), number(h.shape.high), number(h.shape.low))
        }
        HealthKind::Trace => {
            format!("health trace {}", h.file.as_ref().map(|p| p.display().to_string()).unwrap_or_default())
        }
    };
    let noise = if h.noise > 0.0 { format!(", noise {}", number(h.noise)) } else { String::new() };
    format!(
        "λ = {} req/s, P = {}, C = {}, s = {}, cap = {}; {health}{noise}; {mode}, {} s at dt {}, seed {}",
        number(cfg.traffic),
        cfg.pool.executors,
        number(cfg.pool.comfortable),
        number(cfg.pool.rate),
        number(cfg.pool.capacity),
        number(cfg.duration),
        number(cfg.dt),
        cfg.seed
    )
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or("never".to_string(), |x| format!("{} s", fixed(x, 1)))
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
        "  pool ceiling with all {} busy: {} req/s (s·C²/P); peak {} req/s at {n_peak} busy",
        cfg.pool.executors,
        fixed(ceiling, 2),
        fixed(peak, 1)
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
                    (Some(lo), Some(hi)) => format!("{}–{} (t ≥ {} s)", fixed(lo, 1), fixed(hi, 1), number(su.warmup)),
                    _ => format!("- (run shorter than warm-up {} s)", number(su.warmup)),
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
                    format!("no (level {})", number(su.drain_level))
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
                Some(s) => percent_of(s.queue.iter().filter(|q| **q > bq).count() as f64, s.queue.len() as f64, 1),
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
                    "{} / {} of {}",
                    percent_tight(ratio(f.interventions as f64, f.decisions as f64), 1),
                    percent_tight(ratio(f.infeasible as f64, f.decisions as f64), 1),
                    f.decisions
                ),
                None => "-".into(),
            }),
        ));
        rows.push((
            "filter: given up",
            Box::new(|r| r.filter.map_or("-".into(), |f| format!("{} req", fixed(f.given_up, 0)))),
        ));
    }
    if reports.iter().any(|r| r.outcome.summary.mean_sojourn.is_some()) {
        rows.push((
            "mean sojourn",
            Box::new(|r| r.outcome.summary.mean_sojourn.map_or("-".into(), |x| format!("{} s", fixed(x, 3)))),
        ));
        rows.push((
            "sojourn p50 / p99",
            Box::new(|r| match (r.outcome.summary.sojourn_p50, r.outcome.summary.sojourn_p99) {
                (Some(a), Some(b)) => format!("{} / {} s", fixed(a, 3), fixed(b, 3)),
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
            rules: vec![Rule { y: line, label: format!("θ·cap = {}", fixed(line, 0)) }],
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
///
/// The share of the limit is the goodput over the limit, `n/a` when the limit is 0 (or not
/// a finite, normal number): a run that could clear nothing has no share of it, whatever
/// `share_of_limit` carries.
pub fn verdict_line(v: &Verdict) -> String {
    format!(
        "goodput {} req/s, {} of the physical limit {} req/s, {} s ({}) beyond θ·cap = {}",
        fixed(v.goodput, 1),
        percent_of(v.goodput, v.physical_limit, 0),
        nonzero(v.physical_limit, 1),
        fixed(v.time_beyond, 1),
        percent(Some(v.share_beyond), 0),
        fixed(v.line, 0)
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

/// The line `safegate run` prints above its table when flags or `--set` overrode the
/// scenario: each `key = value`, a float value (`-0.0`, `1e-320`, `2.50`) as [`number`]
/// shows it (`0`, `1e-320`, `2.5`), anything else (an integer, a string) as given; `None`
/// without overrides.
pub fn overrides_line(overrides: &[(String, String)]) -> Option<String> {
    if overrides.is_empty() {
        return None;
    }
    let list: Vec<String> = overrides.iter().map(|(k, v)| format!("{k} = {}", echoed(v))).collect();
    Some(format!("overrides (over the scenario below, whose description is the file's): {}\n", list.join(", ")))
}

/// An override's TOML value as the run echoes it: a float as [`number`] shows it, anything
/// else as given.
fn echoed(v: &str) -> String {
    let float = !v.starts_with('"') && v.contains(['.', 'e', 'E', 'n', 'i']);
    match v.trim().replace('_', "").parse::<f64>() {
        Ok(x) if float => number(x),
        _ => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_override_is_echoed_in_a_bounded_width() {
        assert_eq!(echoed("-0.0"), "0");
        assert_eq!(echoed("1e-320"), "1e-320");
        assert_eq!(echoed("80.0"), "80");
        assert_eq!(echoed("inf"), "inf");
        assert_eq!(echoed("18446744073709551615"), "18446744073709551615");
        assert_eq!(echoed("\"cycle\""), "\"cycle\"");
        assert_eq!(echoed("1_000.5"), "1000.5");
        assert_eq!(overrides_line(&[]), None);
        let set = [("traffic.rate".to_string(), "80.0".to_string()), ("health.kind".into(), "\"dip\"".into())];
        assert_eq!(
            overrides_line(&set).as_deref(),
            Some(
                "overrides (over the scenario below, whose description is the file's): traffic.rate = 80, health.kind = \"dip\"\n"
            )
        );
    }

    fn verdict(goodput: f64, physical_limit: f64, share_of_limit: f64) -> Verdict {
        Verdict { goodput, physical_limit, share_of_limit, line: 140.0, time_beyond: 0.0, share_beyond: 0.0 }
    }

    #[test]
    fn a_verdict_reads_as_before() {
        let v = Verdict { time_beyond: 387.8, share_beyond: 0.97, ..verdict(50.5, 65.0, 50.5 / 65.0) };
        assert_eq!(
            verdict_line(&v),
            "goodput 50.5 req/s, 78 % of the physical limit 65.0 req/s, 387.8 s (97 %) beyond θ·cap = 140"
        );
    }

    /// `run --traffic 1e-320` printed "100 % of the physical limit 0.0 req/s": a limit of 0
    /// (or one too small to divide by) has no share, whatever the verdict's field says.
    #[test]
    fn no_share_of_a_zero_limit() {
        for (goodput, limit, share) in
            [(0.0, 0.0, 1.0), (0.0, 0.0, 0.0), (0.0, 0.0, f64::NAN), (1e-320, 1e-320, 1.0), (0.0, f64::NAN, 1.0)]
        {
            let line = verdict_line(&verdict(goodput, limit, share));
            assert!(line.contains(", n/a of the physical limit"), "{line}");
            assert!(!line.contains('%') || line.contains("(0 %)"), "{line}");
        }
        let line = verdict_line(&verdict(1e-320, 1e-320, 1.0));
        assert!(line.contains("physical limit 1e-320 req/s"), "{line}");
        let line = verdict_line(&verdict(0.03, 0.04, 0.75));
        assert!(line.contains("75 % of the physical limit 0.04 req/s"), "{line}");
    }

    #[test]
    fn a_verdict_line_has_a_bounded_width() {
        for x in [1e-320, -0.0, 1e300, f64::MAX] {
            let v = Verdict { line: x, time_beyond: x, ..verdict(x, x, 1.0) };
            let line = verdict_line(&v);
            assert!(line.chars().count() < 200, "{line}");
            assert!(!line.contains("NaN") && !line.contains("inf") && !line.contains("-0"), "{line}");
        }
    }
}
