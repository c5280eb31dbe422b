//! The overload bench's text: one scenario's table ([`table`]) and a sweep's summary
//! ([`sweep`]), as `safegate bench overload` prints them. Here beside the data they read,
//! not in the binary, which only prints them (the render crate draws the studies' figures
//! and does not depend on the benches' runtime stack).

use std::fmt::Write as _;

use super::report::{Document, Figures, ScenarioReport};
use super::rounds::ScenarioRounds;

/// `writeln!` into a `String`, which cannot fail.
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

/// The sweep in one table: per (knee, base, scenario), the oracle's goodput and every
/// stack's share of it, and the least share of each stack over the sweep. `docs` holds
/// each pair's knee, base time and document.
pub fn sweep(docs: &[(usize, f64, &Document)]) -> String {
    let mut out = String::new();
    let stacks: Vec<String> = docs
        .first()
        .and_then(|(_, _, d)| d.scenarios.first())
        .map(|s| s.runs.iter().filter(|r| r.figures.is_some()).map(|r| r.stack.clone()).collect())
        .unwrap_or_default();
    outln!(out, "## sweep: goodput ÷ the best fixed limit's (the oracle), per knee C and base time");
    let mut head = format!("{:>5} {:>8} {:>9} {:<14} {:>9}", "C", "base ms", "peak/s", "scenario", "oracle/s");
    for s in &stacks {
        head.push_str(&format!(" {s:>16}"));
    }
    outln!(out, "{head}");
    let mut least = vec![f64::INFINITY; stacks.len()];
    for (knee, base, d) in docs {
        for sc in &d.scenarios {
            let oracle = sc
                .oracle
                .as_ref()
                .and_then(|o| sc.runs.iter().find(|r| &r.stack == o))
                .and_then(|r| r.figures.as_ref())
                .map(|f| f.goodput_rps);
            let mut line =
                format!("{knee:>5} {base:>8} {:>9} {:<14} {:>9}", opt(sc.peak_rps, 0), sc.name, opt(oracle, 0));
            for (i, s) in stacks.iter().enumerate() {
                let share = sc
                    .runs
                    .iter()
                    .find(|r| &r.stack == s)
                    .and_then(|r| r.figures.as_ref())
                    .and_then(|f| f.goodput_vs_oracle);
                if let Some(v) = share {
                    least[i] = least[i].min(v);
                }
                line.push_str(&format!(" {:>16}", opt(share, 2)));
            }
            outln!(out, "{line}");
        }
    }
    outln!(out, "{}", least_row(format!("{:<48}", "least over the sweep"), &least, 16));
    out.push('\n');
    out
}

/// A sweep table's last row: `label`, then each column's least (— when it had none).
fn least_row(mut line: String, least: &[f64], width: usize) -> String {
    for l in least {
        line.push_str(&format!(" {:>width$}", opt(l.is_finite().then_some(*l), 2)));
    }
    line
}

pub(crate) fn opt(x: Option<f64>, prec: usize) -> String {
    x.map_or_else(|| "—".to_string(), |v| format!("{v:.prec$}"))
}

/// The reason behind most rejections, `-` when none.
fn main_reason(f: &Figures) -> &'static str {
    f.shed_reasons.iter().max_by_key(|(_, n)| **n).map_or("-", |(r, _)| r)
}

/// One scenario's table.
pub fn table(s: &ScenarioReport) -> String {
    let mut out = String::new();
    outln!(out, "## {}: {}; {}", s.name, s.backend, s.load);
    if let Some(curve) = &s.curve {
        outln!(out, "service curve X(n), closed loop, no limiter:");
        outln!(out, "{:>6} {:>10} {:>12} {:>10}", "n", "txn/s", "failed/s", "mean ms");
        for p in curve {
            outln!(
                out,
                "{:>6} {:>10.0} {:>12.1} {:>10}",
                p.n,
                p.rate,
                p.failed_rate,
                opt(p.mean_ms.is_finite().then_some(p.mean_ms), 1)
            );
        }
        if let Some(o) = &s.oracle {
            outln!(out, "oracle: {o}, the best of the fixed limits tried under this load");
        }
    }
    let extra = match s.runs.iter().find_map(|r| r.figures.as_ref()) {
        Some(f) if f.bursts.is_some() => "  burst goodput/s (÷ first)",
        Some(f) if f.step.is_some() => "  before/s  after/s",
        _ => "",
    };
    outln!(
        out,
        "{:<24} {:>9} {:>9} {:>7} {:>6} {:<9} {:>8} {:>8} {:>8} {:>7}{extra}",
        "stack",
        "offered/s",
        "goodput/s",
        "÷oracle",
        "shed%",
        "shed by",
        "timeouts",
        "p50 ms",
        "p99 ms",
        "settle"
    );
    for r in &s.runs {
        let mark = if s.oracle.as_deref() == Some(&r.stack) {
            " [oracle]"
        } else if s.best_anchor.as_deref() == Some(&r.stack) {
            " [anchor]"
        } else {
            ""
        };
        let Some(f) = &r.figures else {
            outln!(out, "{:<24} {}", r.stack, r.note.as_deref().unwrap_or("no figures"));
            continue;
        };
        let mut tail = String::new();
        if let Some(b) = &f.bursts {
            let parts: Vec<String> = b
                .iter()
                .map(|b| match b.vs_first {
                    Some(v) => format!("{:.0} ({v:.2})", b.goodput_rps),
                    None => format!("{:.0}", b.goodput_rps),
                })
                .collect();
            tail = format!("  {}", parts.join(" / "));
        }
        if let Some(st) = &f.step {
            tail = format!("  {:>8.0} {:>8.0}", st.goodput_before_rps, st.goodput_after_rps);
        }
        outln!(
            out,
            "{:<24} {:>9.0} {:>9.0} {:>7} {:>6.1} {:<9} {:>8} {:>8} {:>8} {:>7}{tail}{mark}",
            r.stack,
            f.offered_rps,
            f.goodput_rps,
            opt(f.goodput_vs_oracle, 2),
            100.0 * f.shed_share,
            main_reason(f),
            f.timeouts,
            opt(f.p50_ms, 1),
            opt(f.p99_ms, 1),
            opt(f.settle_s, 0),
        );
    }
    let name_good = |n: &Option<String>| {
        n.as_ref().and_then(|n| {
            s.runs.iter().find(|r| &r.stack == n).and_then(|r| r.figures.as_ref()).map(|f| (n.clone(), f))
        })
    };
    match name_good(&s.oracle) {
        Some((n, f)) => {
            outln!(out, "best fixed limit (oracle): {n} at {}, {:.0} good/s", s.oracle_limit, f.goodput_rps)
        }
        None => outln!(out, "best fixed limit (oracle, {}): not run", s.oracle_limit),
    }
    match name_good(&s.best_anchor) {
        Some((n, f)) => outln!(
            out,
            "best anchor (peers): {n}, {:.0} good/s ({} of the oracle)",
            f.goodput_rps,
            opt(f.goodput_vs_oracle, 2)
        ),
        None => outln!(out, "best anchor (peers): none run"),
    }
    out.push('\n');
    out
}

/// Rounds summed up: per scenario, each round's oracle and every stack's share of it, the
/// median and least share, and the rounds a stack was ahead of every peer. A sweep (more
/// than one knee or base time) gets one line per (knee, base, scenario) with the medians.
pub fn rounds(summary: &[ScenarioRounds]) -> String {
    let mut out = String::new();
    let pairs = summary.iter().map(|s| (s.knee, s.base_ms.to_bits())).collect::<std::collections::BTreeSet<_>>();
    if pairs.len() > 1 {
        // Every stack of any line, in the order first seen.
        let mut stacks: Vec<&str> = Vec::new();
        for r in summary.iter().flat_map(|s| &s.stacks) {
            if !stacks.contains(&r.stack.as_str()) {
                stacks.push(&r.stack);
            }
        }
        let w = width(&stacks);
        outln!(out, "## rounds: median over the rounds of goodput ÷ that round's oracle, per knee C and base time");
        let mut head = format!("{:>5} {:>8} {:<14} {:>6} {:>9}", "C", "base ms", "scenario", "rounds", "oracle/s");
        for s in &stacks {
            head.push_str(&format!(" {s:>w$}"));
        }
        outln!(out, "{head}");
        let mut least = vec![f64::INFINITY; stacks.len()];
        for s in summary {
            let oracle = (!s.oracle_rps.is_empty()).then(|| super::rounds::median(&s.oracle_rps));
            let mut line = format!(
                "{:>5} {:>8} {:<14} {:>6} {:>9}",
                s.knee,
                s.base_ms,
                s.scenario,
                s.counted_rounds.len(),
                opt(oracle, 0)
            );
            for (i, name) in stacks.iter().enumerate() {
                let m = s.stacks.iter().find(|r| r.stack == *name).map(|r| r.median);
                if let Some(m) = m {
                    least[i] = least[i].min(m);
                }
                line.push_str(&format!(" {:>w$}", opt(m, 2)));
            }
            outln!(out, "{line}");
        }
        outln!(out, "{}", least_row(format!("{:<46}", "least median over the sweep"), &least, w));
        if summary.iter().any(|s| s.counted_rounds.is_empty()) {
            outln!(
                out,
                "(a line with 0 rounds had no oracle with goodput in any round: add tower-limit-oracle to --stacks)"
            );
        }
        out.push('\n');
        return out;
    }
    for s in summary {
        let n = s.counted_rounds.len();
        if n == 0 {
            outln!(
                out,
                "## {}: no oracle with goodput in any of {} rounds, so no share to sum up (add tower-limit-oracle to --stacks)\n",
                s.scenario,
                s.rounds_run
            );
            continue;
        }
        let of = if n < s.rounds_run { format!(" (of those run: {})", s.rounds_run) } else { String::new() };
        let plural = if n == 1 { "" } else { "s" };
        outln!(
            out,
            "## {} over {n} round{plural}{of}: goodput ÷ that round's oracle (the best fixed limit)",
            s.scenario
        );
        let names: Vec<&str> = s.stacks.iter().map(|r| r.stack.as_str()).collect();
        let w = width(&names);
        let mut head = format!("{:<22} {:>14}", "round", "oracle");
        for r in &s.stacks {
            head.push_str(&format!(" {:>w$}", r.stack));
        }
        outln!(out, "{head}");
        for (k, round) in s.counted_rounds.iter().enumerate() {
            let mut line =
                format!("{:<22} {:>14}", round, format!("{:.0}/s at {}", s.oracle_rps[k], s.oracle_limits[k]));
            for r in &s.stacks {
                line.push_str(&format!(" {:>w$}", opt(r.vs_oracle.get(k).copied().flatten(), 2)));
            }
            outln!(out, "{line}");
        }
        let oracle = super::rounds::median(&s.oracle_rps);
        let mut line = format!("{:<22} {:>14}", "median", format!("{oracle:.0}/s"));
        for r in &s.stacks {
            line.push_str(&format!(" {:>w$.2}", r.median));
        }
        outln!(out, "{line}");
        let mut line = format!("{:<22} {:>14}", "least", "");
        for r in &s.stacks {
            line.push_str(&format!(" {:>w$.2}", r.least));
        }
        outln!(out, "{line}");
        if s.stacks.iter().any(|r| r.ahead_of_peers.is_some()) {
            let mut line = format!("{:<22} {:>14}", "ahead of every peer", "");
            for r in &s.stacks {
                let cell = r.ahead_of_peers.map_or_else(|| "—".to_string(), |a| format!("{a} of {}", r.peer_rounds));
                line.push_str(&format!(" {cell:>w$}"));
            }
            outln!(out, "{line}");
        }
        out.push('\n');
    }
    out
}

/// A column wide enough for every name (at least 16).
fn width(names: &[&str]) -> usize {
    names.iter().map(|n| n.chars().count()).max().unwrap_or(0).max(16)
}
