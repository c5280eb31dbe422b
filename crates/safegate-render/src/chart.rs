//! Small dependency-free SVG line charts: stacked panels sharing one time axis.

use std::fmt::Write as _;

use crate::markup::escape as esc;

/// One line in a panel.
#[derive(Debug, Clone)]
pub struct Line {
    /// Its name in the legend.
    pub name: String,
    /// Its colour (a CSS colour).
    pub color: &'static str,
    /// Abscissae.
    pub x: Vec<f64>,
    /// Ordinates, one per abscissa.
    pub y: Vec<f64>,
    /// Drawn dashed.
    pub dashed: bool,
}

/// A horizontal reference line with a label.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Its height.
    pub y: f64,
    /// Its label in the legend.
    pub label: String,
}

/// One panel: a y-range, lines and reference rules.
#[derive(Debug, Clone)]
pub struct Panel {
    /// The y-axis label.
    pub label: String,
    /// Bottom of the y-range.
    pub y_min: f64,
    /// Top of the y-range.
    pub y_max: f64,
    /// The lines drawn.
    pub lines: Vec<Line>,
    /// The reference rules drawn.
    pub rules: Vec<Rule>,
}

/// Colours that read on white and for most colour-blind readers (Okabe–Ito).
pub const PALETTE: [&str; 6] = ["#D55E00", "#0072B2", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"];

/// Width of the plot area plus its axis labels; the legends add a column to its right.
const WIDTH: f64 = 900.0;
const PANEL_H: f64 = 170.0;
const SINGLE_PANEL_H: f64 = 300.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 56.0;
const GAP: f64 = 34.0;
const MAX_POINTS: usize = 1600;
/// Dash patterns of a panel's rules, in order (the legend tells them apart).
const RULE_DASHES: [&str; 3] = ["6 4", "2 3", "10 3 2 3"];
/// Space between the plot area and the legend column.
const LEGEND_GAP: f64 = 12.0;

/// Width of a legend box listing `names`.
fn legend_width<'a>(names: impl Iterator<Item = &'a str>) -> f64 {
    34.0 + 6.6 * names.map(|n| n.chars().count()).max().unwrap_or(0) as f64
}

/// Keep the envelope of a long series: per bucket, its first, min and max points.
pub fn decimate(x: &[f64], y: &[f64]) -> Vec<(f64, f64)> {
    decimate_to(x, y, MAX_POINTS)
}

/// [`decimate`] to at most about `max_points` points (at least 3 per bucket's worth).
pub fn decimate_to(x: &[f64], y: &[f64], max_points: usize) -> Vec<(f64, f64)> {
    let n = x.len().min(y.len());
    if n <= max_points.max(3) {
        return x.iter().zip(y).map(|(a, b)| (*a, *b)).collect();
    }
    let buckets = (max_points / 3).max(1);
    let mut out = Vec::with_capacity(max_points + 3);
    for b in 0..buckets {
        let (lo, hi) = (b * n / buckets, ((b + 1) * n / buckets).min(n));
        if lo >= hi {
            continue;
        }
        let (mut imin, mut imax) = (lo, lo);
        for i in lo..hi {
            if y[i] < y[imin] {
                imin = i;
            }
            if y[i] > y[imax] {
                imax = i;
            }
        }
        let mut idx = [lo, imin, imax];
        idx.sort_unstable();
        for i in idx {
            if out.last() != Some(&(x[i], y[i])) {
                out.push((x[i], y[i]));
            }
        }
    }
    out.push((x[n - 1], y[n - 1]));
    out
}

fn nice_step(span: f64, ticks: f64) -> f64 {
    let raw = (span / ticks).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    mag * if f < 1.5 {
        1.0
    } else if f < 3.5 {
        2.0
    } else if f < 7.5 {
        5.0
    } else {
        10.0
    }
}

fn fmt_tick(v: f64) -> String {
    if v.abs() >= 1000.0 || v == v.trunc() {
        crate::numbers::fixed(v, 0)
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Render stacked panels over a common x-range `[x0, x1]` as an SVG document.
///
/// Each panel's legend (its lines, then its rules with their dash patterns) stands in a
/// column right of the plot area, so it never covers the data.
pub fn render(title: &str, subtitle: &str, x_label: &str, x0: f64, x1: f64, panels: &[Panel]) -> String {
    let plot_w = WIDTH - LEFT - RIGHT;
    let panel_h = if panels.len() == 1 { SINGLE_PANEL_H } else { PANEL_H };
    let height = TOP + panels.len() as f64 * (panel_h + GAP) + 30.0;
    let legend_w = panels
        .iter()
        .filter(|p| !p.lines.is_empty() || !p.rules.is_empty())
        .map(|p| legend_width(p.lines.iter().map(|l| l.name.as_str()).chain(p.rules.iter().map(|r| r.label.as_str()))))
        .fold(0.0, f64::max);
    let width = if legend_w > 0.0 { WIDTH - RIGHT + LEGEND_GAP + legend_w + 8.0 } else { WIDTH };
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{LEFT}" y="20" font-size="15" font-weight="bold">{}</text>
<text x="{LEFT}" y="38" fill="#555">{}</text>
"##,
        esc(title),
        esc(subtitle)
    );
    let xspan = (x1 - x0).max(f64::MIN_POSITIVE);
    let px = |x: f64| LEFT + (x - x0) / xspan * plot_w;
    for (pi, p) in panels.iter().enumerate() {
        let top = TOP + pi as f64 * (panel_h + GAP);
        let yspan = (p.y_max - p.y_min).max(f64::MIN_POSITIVE);
        let py = |y: f64| top + panel_h - (y.clamp(p.y_min, p.y_max) - p.y_min) / yspan * panel_h;
        let _ = writeln!(
            s,
            r##"<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{panel_h}" fill="none" stroke="#999"/>"##
        );
        let _ = writeln!(
            s,
            r#"<text x="14" y="{}" transform="rotate(-90 14 {})" text-anchor="middle">{}</text>"#,
            top + panel_h / 2.0,
            top + panel_h / 2.0,
            esc(&p.label)
        );
        let ystep = nice_step(yspan, 4.0);
        let mut v = (p.y_min / ystep).ceil() * ystep;
        while v <= p.y_max + 1e-9 {
            let y = py(v);
            let _ = writeln!(
                s,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                LEFT + plot_w,
                LEFT - 6.0,
                y + 4.0,
                fmt_tick(v)
            );
            v += ystep;
        }
        let xstep = nice_step(xspan, 8.0);
        let mut v = (x0 / xstep).ceil() * xstep;
        while v <= x1 + 1e-9 {
            let x = px(v);
            let _ =
                writeln!(s, r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{}" stroke="#f3f3f3"/>"##, top + panel_h);
            if pi + 1 == panels.len() {
                let _ = writeln!(
                    s,
                    r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                    top + panel_h + 16.0,
                    fmt_tick(v)
                );
            }
            v += xstep;
        }
        for (i, r) in p.rules.iter().enumerate() {
            let y = py(r.y);
            let _ = writeln!(
                s,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#444" stroke-dasharray="{}"><title>{}</title></line>"##,
                LEFT + plot_w,
                RULE_DASHES[i % RULE_DASHES.len()],
                esc(&r.label)
            );
        }
        for l in &p.lines {
            let pts = decimate(&l.x, &l.y);
            let mut d = String::with_capacity(pts.len() * 14);
            for (i, (x, y)) in pts.iter().enumerate() {
                let _ = write!(d, "{}{:.1},{:.1}", if i == 0 { "M" } else { " L" }, px(*x), py(*y));
            }
            let dash = if l.dashed { r#" stroke-dasharray="4 3""# } else { "" };
            let _ = writeln!(
                s,
                r#"<path d="{d}" fill="none" stroke="{}" stroke-width="1.4"{dash}><title>{}</title></path>"#,
                l.color,
                esc(&l.name)
            );
        }
        // Legend: a boxed list right of the plot area, lines first, then rules.
        let entries: Vec<(&str, &str, Option<&str>)> = p
            .lines
            .iter()
            .map(|l| (l.name.as_str(), l.color, l.dashed.then_some("4 3")))
            .chain(
                p.rules
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (r.label.as_str(), "#444", Some(RULE_DASHES[i % RULE_DASHES.len()]))),
            )
            .collect();
        if !entries.is_empty() {
            let (bx, by) = (LEFT + plot_w + LEGEND_GAP, top);
            let bw = legend_width(entries.iter().map(|e| e.0));
            let bh = 8.0 + 15.0 * entries.len() as f64;
            let _ = writeln!(
                s,
                r##"<rect x="{bx:.1}" y="{by:.1}" width="{bw:.1}" height="{bh:.1}" fill="white" stroke="#ccc"/>"##
            );
            for (i, (name, color, dash)) in entries.iter().enumerate() {
                let y = by + 12.0 + 15.0 * i as f64;
                let (width, dash) = match dash {
                    Some(d) => (2, format!(r#" stroke-dasharray="{d}""#)),
                    None => (3, String::new()),
                };
                let _ = writeln!(
                    s,
                    r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="{width}"{dash}/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
                    bx + 6.0,
                    y - 4.0,
                    bx + 24.0,
                    y - 4.0,
                    bx + 28.0,
                    y,
                    esc(name)
                );
            }
        }
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        height - 6.0,
        esc(x_label)
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimation_keeps_extremes_and_ends() {
        let x: Vec<f64> = (0..100_000).map(|i| i as f64).collect();
        let mut y = vec![0.0; 100_000];
        y[54_321] = 9.0;
        y[77_777] = -3.0;
        let d = decimate(&x, &y);
        assert!(d.len() <= MAX_POINTS + 3);
        assert!(d.contains(&(54_321.0, 9.0)) && d.contains(&(77_777.0, -3.0)));
        assert_eq!(d.first(), Some(&(0.0, 0.0)));
        assert_eq!(d.last(), Some(&(99_999.0, 0.0)));
    }

    #[test]
    fn renders_valid_looking_svg() {
        let panel = Panel {
            label: "q".into(),
            y_min: 0.0,
            y_max: 200.0,
            lines: vec![Line {
                name: "a<b".into(),
                color: PALETTE[0],
                x: vec![0.0, 1.0],
                y: vec![0.0, 100.0],
                dashed: false,
            }],
            rules: vec![Rule { y: 140.0, label: "θ·cap".into() }],
        };
        let svg = render("t", "s", "x", 0.0, 1.0, &[panel]);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("a&lt;b") && svg.contains("<path d=\"M"));
        // The legend stands right of the plot area: every legend item starts past its edge.
        let plot_right = WIDTH - RIGHT;
        let legend_x: Vec<f64> = svg
            .lines()
            .filter(|l| l.contains("font-size=\"11\""))
            .map(|l| l.split("<text x=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(legend_x.len(), 2, "{svg}");
        assert!(legend_x.iter().all(|x| *x > plot_right), "{legend_x:?}");
        assert!(svg.lines().any(|l| l.contains("font-size=\"11\">θ·cap")), "{svg}");
    }
}
