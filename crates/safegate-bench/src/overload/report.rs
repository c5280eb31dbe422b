//! The figures of the overload bench and their JSON shape.
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

/// Every scenario's report and the settings, as one JSON document.
#[derive(Debug, Serialize)]
pub struct Document {
    /// The settings every run shared.
    pub settings: serde_json::Value,
    /// Every scenario, in the order run.
    pub scenarios: Vec<ScenarioReport>,
}

/// One scenario: every stack's run side by side.
#[derive(Debug, Serialize)]
pub struct ScenarioReport {
    /// The scenario's name.
    pub name: String,
    /// The backend and its parameters, in words.
    pub backend: String,
    /// The backend's peak throughput at the starting health [req/s] (`None`: `fast`).
    pub peak_rps: Option<f64>,
    /// The best fixed limit (tower-limit-oracle's).
    pub oracle_limit: usize,
    /// The load, in words.
    pub load: String,
    /// The oracle's stack name, when it ran.
    pub oracle: Option<String>,
    /// The peer (acc-*, resilience-*) with the highest goodput, when any ran.
    pub best_anchor: Option<String>,
    /// A PostgreSQL scenario's measured service curve X(n), closed loop, before its runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub curve: Option<Vec<safegate_live::pg::CurvePoint>>,
    /// Every stack's run, in the order run.
    pub runs: Vec<RunReport>,
}

/// One stack in one scenario.
#[derive(Debug, Serialize)]
pub struct RunReport {
    /// The stack's name.
    pub stack: String,
    /// Whether this build has the stack.
    pub built: bool,
    /// Why the run has no figures, when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What the run measured.
    #[serde(flatten)]
    pub figures: Option<Figures>,
}

/// What one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// Requests offered per second of load.
    pub offered_rps: f64,
    /// Good responses (answered within the SLO) per second of load.
    pub goodput_rps: f64,
    /// Goodput over the oracle's in the same scenario.
    pub goodput_vs_oracle: Option<f64>,
    /// Rejected over offered.
    pub shed_share: f64,
    /// Requests offered.
    pub sent: u64,
    /// Successful responses.
    pub ok: u64,
    /// Successful responses within the SLO.
    pub good: u64,
    /// Rejections by a limiter.
    pub rejected: u64,
    /// Rejections by reason (safegate's `limit`, `barrier`, `backup`, `deadline`; tower's
    /// `load-shed`), those seen only.
    pub shed_reasons: BTreeMap<&'static str, u64>,
    /// Requests abandoned at the client timeout.
    pub timeouts: u64,
    /// Failures other than a rejection.
    pub failed: u64,
    /// Median latency of the answered requests \[ms\].
    pub p50_ms: Option<f64>,
    /// 99th-percentile latency of the answered requests \[ms\].
    pub p99_ms: Option<f64>,
    /// Seconds until settled (bursts: in the first burst; health-step: after the step).
    pub settle_s: Option<f64>,
    /// Each burst's figures (the `bursts` scenario).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bursts: Option<Vec<Burst>>,
    /// The halves around the health step (the `health-step` scenario).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<Step>,
    /// Good responses per whole second of the run, by arrival.
    pub goodput_timeline: Vec<u32>,
    /// safegate's stacks: the limit in force every 100 ms of the run, from its start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_timeline: Option<Vec<u32>>,
}

/// One burst of the `bursts` scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Burst {
    /// Requests offered per second of load.
    pub offered_rps: f64,
    /// Good responses (answered within the SLO) per second of load.
    pub goodput_rps: f64,
    /// Over the first burst's goodput.
    pub vs_first: Option<f64>,
    /// Seconds into the burst until settled.
    pub settle_s: Option<f64>,
}

/// The `health-step` scenario's halves.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Seconds into the run of the step.
    pub at_s: f64,
    /// Goodput before the step \[req/s\].
    pub goodput_before_rps: f64,
    /// Goodput after the step \[req/s\].
    pub goodput_after_rps: f64,
    /// Seconds after the step until settled.
    pub settle_after_s: Option<f64>,
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
        limit_timeline: None,
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
