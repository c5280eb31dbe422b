//! The figures of `bench overload`, their JSON shape and the tables.
//!
//! Definitions (docs/bench-overload.md says the same for the reader):
//! - goodput: successful responses answered within the SLO (measured from the scheduled
//!   arrival), per second of load;
//! - shed share: rejected / offered;
//! - settle: the first whole second from which the per-second goodput stays within 10 %
//!   of its mean over the last half of the seconds considered; `None` when the last
//!   second itself is outside (it never settled).

use serde::Serialize;

use std::collections::BTreeMap;

use super::load::{Measured, SHED_REASONS};

/// Tolerance of the settle time: within 10 % of the late mean.
const SETTLE_TOLERANCE: f64 = 0.1;

/// The whole document `--json` prints.
#[derive(Debug, Serialize)]
pub(crate) struct Document {
    pub(crate) settings: serde_json::Value,
    pub(crate) scenarios: Vec<ScenarioReport>,
}

/// One scenario: every stack's run side by side.
#[derive(Debug, Serialize)]
pub(crate) struct ScenarioReport {
    pub(crate) name: String,
    /// The backend and its parameters, in words.
    pub(crate) backend: String,
    /// The backend's peak throughput at the starting health [req/s] (`None`: `fast`).
    pub(crate) peak_rps: Option<f64>,
    /// The best fixed limit (tower-limit-oracle's).
    pub(crate) oracle_limit: usize,
    /// The load, in words.
    pub(crate) load: String,
    /// The oracle's stack name, when it ran.
    pub(crate) oracle: Option<String>,
    /// The peer (acc-*, resilience-*) with the highest goodput, when any ran.
    pub(crate) best_anchor: Option<String>,
    pub(crate) runs: Vec<RunReport>,
}

/// One stack in one scenario.
#[derive(Debug, Serialize)]
pub(crate) struct RunReport {
    pub(crate) stack: String,
    pub(crate) built: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) note: Option<String>,
    #[serde(flatten)]
    pub(crate) figures: Option<Figures>,
}

/// What one run measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Figures {
    pub(crate) offered_rps: f64,
    pub(crate) goodput_rps: f64,
    /// Goodput over the oracle's in the same scenario.
    pub(crate) goodput_vs_oracle: Option<f64>,
    pub(crate) shed_share: f64,
    pub(crate) sent: u64,
    pub(crate) ok: u64,
    pub(crate) good: u64,
    pub(crate) rejected: u64,
    /// Rejections by reason (safegate's `limit`, `barrier`, `backup`, `deadline`; tower's
    /// `load-shed`), those seen only.
    pub(crate) shed_reasons: BTreeMap<&'static str, u64>,
    pub(crate) timeouts: u64,
    pub(crate) failed: u64,
    pub(crate) p50_ms: Option<f64>,
    pub(crate) p99_ms: Option<f64>,
    /// Seconds until settled (bursts: in the first burst; health-step: after the step).
    pub(crate) settle_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bursts: Option<Vec<Burst>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) step: Option<Step>,
    /// Good responses per whole second of the run, by arrival.
    pub(crate) goodput_timeline: Vec<u32>,
}

/// One burst of the `bursts` scenario.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Burst {
    pub(crate) offered_rps: f64,
    pub(crate) goodput_rps: f64,
    /// Over the first burst's goodput.
    pub(crate) vs_first: Option<f64>,
    pub(crate) settle_s: Option<f64>,
}

/// The `health-step` scenario's halves.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Step {
    pub(crate) at_s: f64,
    pub(crate) goodput_before_rps: f64,
    pub(crate) goodput_after_rps: f64,
    /// Seconds after the step until settled.
    pub(crate) settle_after_s: Option<f64>,
}

/// What the scenario asks of a run's figures beyond the common ones.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    Plain,
    /// Every segment is a burst.
    Bursts,
    /// Two segments, the health step between them at `at` seconds.
    Step {
        at: f64,
    },
}

/// The settle time of per-second counts `bins`: the first index from which every bin is
/// within 10 % of the mean of the last half; `None` if the last bin is outside, or none.
pub(crate) fn settle(bins: &[f64]) -> Option<f64> {
    if bins.is_empty() {
        return None;
    }
    let late = &bins[bins.len() / 2..];
    let mean = late.iter().sum::<f64>() / late.len() as f64;
    let within = |g: f64| (g - mean).abs() <= SETTLE_TOLERANCE * mean;
    let mut k = bins.len();
    while k > 0 && within(bins[k - 1]) {
        k -= 1;
    }
    (k < bins.len()).then_some(k as f64)
}

/// The settle time of the whole seconds inside `[from, to)` of a timeline, counted from
/// `from`.
fn settle_within(timeline: &[u32], from: f64, to: f64) -> Option<f64> {
    let (a, b) = (from.ceil() as usize, (to.floor() as usize).min(timeline.len()));
    if a >= b {
        return None;
    }
    let bins: Vec<f64> = timeline[a..b].iter().map(|&g| f64::from(g)).collect();
    settle(&bins).map(|s| s + (a as f64 - from))
}

/// The figures of a run (`goodput_vs_oracle` is filled in once the scenario's runs are in).
pub(crate) fn figures(m: &Measured, shape: Shape, segments: &[(f64, f64)]) -> Figures {
    let secs: f64 = m.segment_secs.iter().sum();
    let per = |x: u64, s: f64| if s > 0.0 { x as f64 / s } else { 0.0 };
    let seg_good = |k: usize| per(m.good_per_segment[k], m.segment_secs[k]);
    let whole = settle_within(&m.good_per_second, 0.0, m.good_per_second.len() as f64);
    let (settle_s, bursts, step) = match shape {
        Shape::Plain => (whole, None, None),
        Shape::Bursts => {
            let first = seg_good(0);
            let bursts: Vec<Burst> = (0..segments.len())
                .map(|k| Burst {
                    offered_rps: per(m.sent_per_segment[k], m.segment_secs[k]),
                    goodput_rps: seg_good(k),
                    vs_first: (first > 0.0).then(|| seg_good(k) / first),
                    settle_s: settle_within(&m.good_per_second, segments[k].0, segments[k].1),
                })
                .collect();
            (bursts.first().and_then(|b| b.settle_s), Some(bursts), None)
        }
        Shape::Step { at } => {
            let end = segments.last().map_or(at, |s| s.1);
            let after = settle_within(&m.good_per_second, at, end);
            let step = Step {
                at_s: at,
                goodput_before_rps: seg_good(0),
                goodput_after_rps: seg_good(1),
                settle_after_s: after,
            };
            (after, None, Some(step))
        }
    };
    Figures {
        offered_rps: per(m.sent, secs),
        goodput_rps: per(m.good, secs),
        goodput_vs_oracle: None,
        shed_share: if m.sent > 0 { m.rejected as f64 / m.sent as f64 } else { 0.0 },
        sent: m.sent,
        ok: m.ok,
        good: m.good,
        rejected: m.rejected,
        shed_reasons: SHED_REASONS.iter().zip(m.shed_reasons).filter(|(_, n)| *n > 0).map(|(r, n)| (*r, n)).collect(),
        timeouts: m.timeouts,
        failed: m.failed,
        p50_ms: m.p50_ms,
        p99_ms: m.p99_ms,
        settle_s,
        bursts,
        step,
        goodput_timeline: m.good_per_second.clone(),
    }
}

/// Fill in each run's goodput over the oracle's, and name the oracle and the best anchor.
pub(crate) fn compare(s: &mut ScenarioReport, oracle_name: &str, is_peer: impl Fn(&str) -> bool) {
    let good = |r: &RunReport| r.figures.as_ref().map(|f| f.goodput_rps);
    let oracle = s.runs.iter().find(|r| r.stack == oracle_name).and_then(good);
    for r in &mut s.runs {
        if let (Some(f), Some(o)) = (r.figures.as_mut(), oracle) {
            f.goodput_vs_oracle = (o > 0.0).then(|| f.goodput_rps / o);
        }
    }
    s.oracle = oracle.map(|_| oracle_name.to_string());
    s.best_anchor = s
        .runs
        .iter()
        .filter(|r| is_peer(&r.stack))
        .filter_map(|r| good(r).map(|g| (g, &r.stack)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n.clone());
}

fn opt(x: Option<f64>, prec: usize) -> String {
    x.map_or_else(|| "—".to_string(), |v| format!("{v:.prec$}"))
}

/// The reason behind most rejections, `-` when none.
fn main_reason(f: &Figures) -> &'static str {
    f.shed_reasons.iter().max_by_key(|(_, n)| **n).map_or("-", |(r, _)| r)
}

/// One scenario's table.
pub(crate) fn print_table(s: &ScenarioReport) {
    println!("## {}: {}; {}", s.name, s.backend, s.load);
    let extra = match s.runs.iter().find_map(|r| r.figures.as_ref()) {
        Some(f) if f.bursts.is_some() => "  burst goodput/s (÷ first)",
        Some(f) if f.step.is_some() => "  before/s  after/s",
        _ => "",
    };
    println!(
        "{:<24} {:>9} {:>9} {:>7} {:>6} {:<9} {:>8} {:>8} {:>8} {:>7}{extra}",
        "stack", "offered/s", "goodput/s", "÷oracle", "shed%", "shed by", "timeouts", "p50 ms", "p99 ms", "settle"
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
            println!("{:<24} {}", r.stack, r.note.as_deref().unwrap_or("no figures"));
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
        println!(
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
        Some((n, f)) => println!("best fixed limit (oracle): {n} at {}, {:.0} good/s", s.oracle_limit, f.goodput_rps),
        None => println!("best fixed limit (oracle, {}): not run", s.oracle_limit),
    }
    match name_good(&s.best_anchor) {
        Some((n, f)) => println!(
            "best anchor (peers): {n}, {:.0} good/s ({} of the oracle)",
            f.goodput_rps,
            opt(f.goodput_vs_oracle, 2)
        ),
        None => println!("best anchor (peers): none run"),
    }
    println!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settle_is_the_first_second_from_which_goodput_stays_near_the_late_mean() {
        assert_eq!(settle(&[0.0, 50.0, 95.0, 100.0, 105.0, 100.0]), Some(2.0));
        assert_eq!(settle(&[100.0; 6]), Some(0.0));
        // The last second is far from the late mean: never settled.
        assert_eq!(settle(&[100.0, 100.0, 100.0, 100.0, 100.0, 10.0]), None);
        assert_eq!(settle(&[]), None);
        // A segment starting mid-second is counted from its start.
        let timeline = [0, 0, 0, 80, 100, 100, 100, 100];
        assert_eq!(settle_within(&timeline, 2.5, 8.0), Some(1.5));
    }
}
