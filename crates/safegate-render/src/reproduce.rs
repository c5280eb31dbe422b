//! The table of reproduced results and an experiment's figure as SVG.

use std::fmt::Write as _;

use safegate_studies::experiments::{Figure, Row, Verdict};

use crate::chart::{self, Line, Panel, Rule};

/// The table `safegate reproduce` prints, with the rows' notes under it.
pub fn render_table(rows: &[(&'static str, &Row)]) -> String {
    let headers = ["id", "claim", "seed", "ours", "tolerance", "verdict"];
    let verdict = |r: &Row| match r.verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "FAIL",
        Verdict::Info => "info",
    };
    let mut notes = Vec::new();
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|(_, r)| {
            let mut id = r.id.clone();
            if let Some(n) = &r.note {
                notes.push((r.id.clone(), n.clone()));
                id = format!("{id} [{}]", notes.len());
            }
            [id, r.claim.clone(), r.seed.clone(), r.ours.clone(), r.tolerance.clone(), verdict(r).to_string()]
        })
        .collect();
    let width = |i: usize| cells.iter().map(|c| c[i].chars().count()).chain([headers[i].len()]).max().unwrap_or(0);
    let w: Vec<usize> = (0..6).map(width).collect();
    let mut s = String::new();
    let line = |s: &mut String, c: &[String]| {
        let parts: Vec<String> =
            c.iter().enumerate().map(|(i, x)| format!("{x}{}", " ".repeat(w[i] - x.chars().count()))).collect();
        let _ = writeln!(s, "| {} |", parts.join(" | "));
    };
    line(&mut s, &headers.map(String::from));
    let _ = writeln!(s, "|{}|", w.iter().map(|n| "-".repeat(n + 2)).collect::<Vec<_>>().join("|"));
    for c in &cells {
        line(&mut s, c);
    }
    if !notes.is_empty() {
        let _ = writeln!(s);
        for (i, (id, n)) in notes.iter().enumerate() {
            let _ = writeln!(s, "[{}] {id}: {n}", i + 1);
        }
    }
    let _ = writeln!(s);
    s
}

/// An experiment's figure as an SVG chart, subtitled `safegate reproduce`.
pub fn render_figure(f: &Figure) -> String {
    render_figure_as(f, "safegate reproduce")
}

/// An experiment's figure as an SVG chart, `subtitle` under its title.
pub fn render_figure_as(f: &Figure, subtitle: &str) -> String {
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for l in &f.lines {
        for (&x, &y) in l.x.iter().zip(&l.y) {
            if x.is_finite() && y.is_finite() {
                x0 = x0.min(x);
                x1 = x1.max(x);
                y0 = y0.min(y);
                y1 = y1.max(y);
            }
        }
    }
    for (y, _) in &f.rules {
        y0 = y0.min(*y);
        y1 = y1.max(*y);
    }
    if x0 >= x1 || x0.is_nan() || x1.is_nan() {
        (x0, x1) = (0.0, 1.0);
    }
    if y0 >= y1 || y0.is_nan() || y1.is_nan() {
        (y0, y1) = (y0.min(0.0), y0.max(0.0) + 1.0);
    }
    let pad = 0.05 * (y1 - y0);
    let y_min = if y0 >= 0.0 && y0 - pad < 0.0 { 0.0 } else { y0 - pad };
    let lines = f
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| Line {
            name: l.name.clone(),
            color: chart::PALETTE[i % chart::PALETTE.len()],
            x: l.x.clone(),
            y: l.y.clone(),
            dashed: false,
        })
        .collect();
    let rules = f.rules.iter().map(|(y, label)| Rule { y: *y, label: label.clone() }).collect();
    let panel = Panel { label: f.y_label.clone(), y_min, y_max: y1 + pad, lines, rules };
    chart::render(&f.title, subtitle, &f.x_label, x0, x1, &[panel])
}
