//! The text and the figures of the boundary checklist run on telemetry.

use std::fmt::Write as _;

use safegate_studies::telemetry::{CheckReport, Format, Telemetry};

use crate::chart::{render as chart, Line, Panel, Rule, PALETTE};
use crate::numbers::{fixed, number, percent, percent_of};

fn pct(x: f64) -> String {
    percent(Some(x), 2)
}

/// The text `safegate boundary check` prints: each step of the checklist, the failure
/// modes found, the draft (if one was written) and the figures.
pub fn render(
    source: &str,
    format: Format,
    r: &CheckReport,
    secs: f64,
    draft: Option<&str>,
    figures: &[String],
) -> String {
    let mut o = String::new();
    let m = &r.margin;
    let _ = writeln!(
        o,
        "safegate boundary check: {source} ({}, {} rows over {} s, columns {}; read and checked in {secs:.2} s)\n",
        match format {
            Format::Csv => "CSV",
            Format::Prometheus => "Prometheus scrapes",
        },
        r.rows,
        fixed(m.duration, 0),
        r.columns.join(", ")
    );
    let _ = writeln!(
        o,
        "1. Barrier: h = θ·Q − {} with θ = {}, Q = {} (line at {})",
        m.signal,
        number(m.threshold),
        number(m.capacity),
        fixed(m.line, 1)
    );
    let _ = writeln!(
        o,
        "   margin now {} ({} of Q), smallest {}, mean {}; outside the safe set {} of the time",
        fixed(m.current, 1),
        percent_of(m.current, m.capacity, 1),
        fixed(m.min, 1),
        fixed(m.mean, 1),
        pct(m.share_outside)
    );
    let e = &r.exits;
    let _ = writeln!(
        o,
        "2. Exit frequency over {}-s horizons against ε = {}: {}",
        number(e.horizon),
        number(e.epsilon),
        e.verdict.label()
    );
    let _ = writeln!(o, "   {}", e.reason);
    let _ = writeln!(o, "   {} excursions per hour", fixed(e.excursions_per_hour, 1));
    let x = &r.excursions;
    let _ = writeln!(
        o,
        "3. Excursion severity: {} excursions, mean {} s, longest {} s, worst peak {} of Q past the line; tail {}",
        x.count,
        fixed(x.mean_duration, 1),
        fixed(x.max_duration, 1),
        fixed(x.worst, 3),
        x.tail.class.name()
    );
    let _ = writeln!(o, "   {}", x.tail.reason);
    if let (Some(h), Some((lo, hi))) = (x.tail.hill, x.tail.alpha_interval) {
        let _ = writeln!(
            o,
            "   Hill α̂ = {} (95 %: {}–{}) from the top {} of {} peaks",
            fixed(h.alpha, 2),
            fixed(lo, 2),
            fixed(hi, 2),
            h.k,
            x.tail.n
        );
    }
    let s = &r.severity;
    let _ = writeln!(o, "4. η = {}, suggested ρ = {} (of Q)", number(s.eta), number(s.rho));
    let _ = writeln!(o, "   {}", s.reason);
    let f = &r.feasibility;
    let health =
        |h: Option<[f64; 2]>| h.map_or("—".to_string(), |h| format!("{}–{}", fixed(h[0], 2), fixed(h[1], 2)));
    let _ = writeln!(
        o,
        "5. Feasibility across the envelope seen (traffic {}–{} req/s, health {}):",
        fixed(f.traffic[0], 0),
        fixed(f.traffic[1], 0),
        health(f.health)
    );
    let _ = writeln!(o, "   {}", f.reason);
    if f.checked && !f.cells.is_empty() {
        let _ = writeln!(o, "   | traffic [req/s] | health | samples | no action for ε | no action for ε and ρ |");
        let _ = writeln!(o, "   |---|---|---|---|---|");
        for c in &f.cells {
            let _ = writeln!(
                o,
                "   | {}–{} | {} | {} | {} | {} |",
                fixed(c.traffic[0], 0),
                fixed(c.traffic[1], 0),
                health(c.health),
                c.samples,
                pct(c.infeasible_probability),
                pct(c.infeasible_joint)
            );
        }
    }
    let _ = writeln!(o, "\nFailure modes users report:");
    for fi in &r.findings {
        let mark = if fi.flagged {
            "FLAG"
        } else if fi.checked {
            "ok  "
        } else {
            "--  "
        };
        let _ = writeln!(o, "  {mark} {:<15} {}", fi.kind.name(), fi.evidence);
    }
    match draft {
        Some(p) => {
            let _ = writeln!(
                o,
                "\nDraft boundary written to {p}: edit ε, ρ and the envelope, then `safegate verify --boundary {p}`."
            );
        }
        None => {
            let _ = writeln!(o, "\nNo draft written (--no-draft).");
        }
    }
    for fig in figures {
        let _ = writeln!(o, "Figure: {fig}");
    }
    o
}

/// The figures, each with its file name: the signal against its line, and the Hill plot of
/// the excursion peaks (when there are two points to draw).
pub fn figures(tel: &Telemetry, r: &CheckReport) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let m = &r.margin;
    let (t0, t1) = (tel.t[0], tel.t[tel.len() - 1]);
    let y_max = tel.x.iter().copied().fold(m.capacity, f64::max) * 1.05;
    let mut panels = vec![Panel {
        label: m.signal.into(),
        y_min: 0.0,
        y_max,
        lines: vec![Line {
            name: m.signal.into(),
            color: PALETTE[1],
            x: tel.t.clone(),
            y: tel.x.clone(),
            dashed: false,
        }],
        rules: vec![
            Rule { y: m.line, label: format!("θ·Q = {}", fixed(m.line, 0)) },
            Rule { y: m.capacity, label: format!("Q = {}", fixed(m.capacity, 0)) },
        ],
    }];
    if let Some(l) = &tel.limit {
        let hi = l.iter().copied().fold(0.0, f64::max) * 1.1;
        panels.push(Panel {
            label: "limit".into(),
            y_min: 0.0,
            y_max: hi.max(1.0),
            lines: vec![Line {
                name: "limit".into(),
                color: PALETTE[0],
                x: tel.t.clone(),
                y: l.clone(),
                dashed: false,
            }],
            rules: Vec::new(),
        });
    }
    if let Some(l) = &tel.latency {
        let mut s = l.clone();
        s.sort_unstable_by(f64::total_cmp);
        let hi = s[((s.len() - 1) as f64 * 0.99) as usize] * 1.2;
        panels.push(Panel {
            label: "latency [s]".into(),
            y_min: 0.0,
            y_max: hi.max(1e-6),
            lines: vec![Line {
                name: "latency".into(),
                color: PALETTE[2],
                x: tel.t.clone(),
                y: l.clone(),
                dashed: false,
            }],
            rules: Vec::new(),
        });
    }
    let svg = chart(
        "The barrier signal against its line",
        &format!("{} rows; outside the safe set {} of the time", r.rows, pct(m.share_outside)),
        "time [s]",
        t0,
        t1,
        &panels,
    );
    out.push(("boundary-signal.svg", svg));
    let plot = &r.excursions.tail.hill_plot;
    if plot.len() >= 2 {
        let (ks, alphas): (Vec<f64>, Vec<f64>) = plot.iter().map(|(k, a)| (*k as f64, *a)).unzip();
        let hi = alphas.iter().copied().fold(0.0, f64::max) * 1.2;
        let rules = r
            .excursions
            .tail
            .hill
            .map(|h| vec![Rule { y: h.alpha, label: format!("α̂ = {} at k = {}", fixed(h.alpha, 2), h.k) }])
            .unwrap_or_default();
        let svg = chart(
            "Hill plot of the excursion peaks",
            &format!("tail {}: {}", r.excursions.tail.class.name(), r.excursions.tail.reason),
            "k (order statistics used)",
            ks[0],
            ks[ks.len() - 1],
            &[Panel {
                label: "α̂(k)".into(),
                y_min: 0.0,
                y_max: hi.max(1.0),
                lines: vec![Line { name: "Hill estimate".into(), color: PALETTE[3], x: ks, y: alphas, dashed: false }],
                rules,
            }],
        );
        out.push(("boundary-hill.svg", svg));
    }
    out
}
