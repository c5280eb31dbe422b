//! The text table and the SVG figures of a compare report.

use std::fmt::Write as _;

use safegate_sim::Series;
use safegate_studies::compare::{ArmReport, CompareReport};

use crate::chart::{self, Line, Panel, Rule, PALETTE};
use crate::numbers::{fixed, number, percent_tight, ratio};

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |x| fixed(x, prec))
}

/// The goodput over the case's physical limit `limit` (computed here from the two, as the
/// report's `goodput_ratio` is, NaN for a limit of 0): `n/a` when the limit is 0.
pub(crate) fn limit_ratio(goodput: f64, limit: f64) -> String {
    ratio(goodput, limit).map_or("n/a".into(), |r| fixed(r, 2))
}

fn arm_row(s: &mut String, a: &ArmReport, limit: f64) {
    let r = &a.recovery;
    let recovered = if r.dips == 0 {
        "-".to_string()
    } else if r.drained == 0 {
        format!("never ({}/{}<θ)", r.below_boundary, r.dips)
    } else {
        format!("{}s ({}/{}<θ)", fixed(r.mean_seconds.unwrap_or(0.0), 1), r.below_boundary, r.dips)
    };
    let e = &a.exit_probability;
    let _ = writeln!(
        s,
        "  {:<22} {:<4} {:>7} {:>6} {:>10} {:>7} {:>7} {:>17} {:>8} {:>6.3} [{:.3},{:.3}] {:>4} {:>7} {:>8} {:>8} {:>7}  {}",
        a.policy,
        if a.filtered { "on" } else { "off" },
        fixed(a.goodput, 1),
        limit_ratio(a.goodput, limit),
        fixed(a.backlog_time, 0),
        opt(a.sojourn_p50, 2),
        opt(a.sojourn_p99, 2),
        recovered,
        percent_tight(Some(a.beyond_boundary), 1),
        e.estimate,
        e.ci_low,
        e.ci_high,
        e.trials,
        fixed(a.cvar.estimate, 3),
        // NaN is a share with no denominator (nothing offered, nothing proposed, no
        // decision): `percent_tight` prints it `n/a`; `-` is an arm without the filter.
        percent_tight(Some(a.rejected_share), 1),
        a.given_up_share.map_or("-".into(), |g| percent_tight(Some(g), 1)),
        a.backup_fraction.map_or("-".into(), |g| percent_tight(Some(g), 1)),
        a.verdict
    );
}

/// The text table `safegate compare` prints.
pub fn render(r: &CompareReport, secs: f64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "safegate compare: boundary θ = {}, ε = {} over {} s; {} replications per arm{}",
        number(r.threshold),
        number(r.epsilon),
        number(r.horizon),
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
            "{} — {} [{}; physical limit {} req/s]",
            c.name,
            c.description,
            if c.inside_envelope { "inside the envelope" } else { "outside the envelope or model" },
            crate::numbers::nonzero(c.physical_limit, 1)
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
            arm_row(&mut s, a, c.physical_limit);
        }
    }
    // Which policies violate ε without the filter and hold it with it, inside the envelope.
    let _ = writeln!(s);
    let _ = writeln!(s, "ε inside the envelope (99 % upper limit ≤ {}):", number(r.epsilon));
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
            let _ = write!(s, " {:>13}", fixed(*l, 0));
        }
        let _ = writeln!(s);
        let _ = write!(s, "  {:<22}", "physical limit");
        for [_, g] in &r.curve_limit {
            let _ = write!(s, " {:>13}", fixed(*g, 1));
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
                        .map_or("-".into(), |p| fixed(p.goodput, 1))
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
pub const TRACE_SECONDS: f64 = 200.0;

/// One SVG of queue traces per case (panels: without and with the filter) and one of
/// goodput vs load, each with its file name.
pub fn figures(r: &CompareReport) -> Vec<(String, String)> {
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

/// The compare report with each queue trace cut to the seconds its figure draws and to the
/// envelope of about `points` points there; only time and queue are kept, which is all the
/// figures use.
pub fn thin_traces(mut r: CompareReport, points: usize) -> CompareReport {
    for c in &mut r.cases {
        for t in &mut c.traces {
            let n = t.t.partition_point(|&x| x <= TRACE_SECONDS);
            let (x, y): (Vec<f64>, Vec<f64>) =
                chart::decimate_to(&t.t[..n], &t.queue[..n.min(t.queue.len())], points).into_iter().unzip();
            *t = Series { t: x, queue: y, ..Series::default() };
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report's `goodput_ratio` is 0 for a limit of 0; the table says there is none.
    #[test]
    fn no_ratio_to_a_zero_limit() {
        assert_eq!(limit_ratio(0.0, 0.0), "n/a");
        assert_eq!(limit_ratio(1e-320, 1e-320), "n/a");
        assert_eq!(limit_ratio(50.0, 100.0), "0.50");
    }

    /// A share the report has no denominator for is NaN there; the row says `n/a` (not
    /// `0.0%`), and `-` only for an arm without the filter.
    #[test]
    fn a_share_of_nothing_prints_not_applicable() {
        use safegate_studies::compare::Recovery;
        use safegate_studies::verify::{Cvar, Frequency};
        let arm = |filtered: bool, share: f64| ArmReport {
            policy: "open".into(),
            filtered,
            goodput: 0.0,
            goodput_ratio: f64::NAN,
            backlog_time: 0.0,
            sojourn_p50: None,
            sojourn_p99: None,
            recovery: Recovery { below_boundary: 0, drained: 0, dips: 0, mean_seconds: None },
            beyond_boundary: share,
            exit_probability: Frequency::from_counts(0, 1),
            cvar: Cvar { estimate: 0.0, eta: 0.05, rho: None },
            rejected_share: share,
            given_up_share: filtered.then_some(share),
            backup_fraction: filtered.then_some(share),
            verdict: "outside envelope",
        };
        let row = |a: &ArmReport| {
            let mut s = String::new();
            arm_row(&mut s, a, 0.0);
            s.split_whitespace().map(String::from).collect::<Vec<_>>()
        };
        let cells = row(&arm(true, f64::NAN));
        assert_eq!(cells.iter().filter(|c| *c == "n/a").count(), 5, "{cells:?}");
        assert!(!cells.iter().any(|c| c.ends_with('%')), "{cells:?}");
        let cells = row(&arm(false, f64::NAN));
        assert_eq!(cells.iter().filter(|c| *c == "n/a").count(), 3, "{cells:?}");
        // p50, p99 and recovery (no dip), given up and backup (no filter).
        assert_eq!(cells.iter().filter(|c| *c == "-").count(), 5, "{cells:?}");
        let cells = row(&arm(true, 0.0));
        assert_eq!(cells.iter().filter(|c| *c == "0.0%").count(), 4, "{cells:?}");
    }
}
