//! What `compare` reports.

use serde::Serialize;

use crate::verify::{Cvar, Frequency};
use safegate_sim::record::Series;

/// `x`, or `null` when it is not finite (a share with no denominator is NaN).
fn finite_or_null<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    if x.is_finite() {
        s.serialize_f64(*x)
    } else {
        s.serialize_none()
    }
}

/// [`finite_or_null`] of an optional share: `null` for `None` and for a NaN alike.
fn some_finite_or_null<S: serde::Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match x {
        Some(v) => finite_or_null(v, s),
        None => s.serialize_none(),
    }
}

/// Per-dip recovery.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Recovery {
    /// Dips followed by a return below the boundary before the next dip ended.
    pub below_boundary: u32,
    /// Dips followed by a drain to the drain level before the next dip ended (or the end).
    pub drained: u32,
    /// Dips counted (over all replications).
    pub dips: u32,
    /// Mean seconds from a dip's end to the drain level, over the dips that drained.
    pub mean_seconds: Option<f64>,
}

/// One arm: a policy, filtered or not, on one case.
#[derive(Debug, Clone, Serialize)]
pub struct ArmReport {
    /// Policy name.
    pub policy: String,
    /// Whether the safety filter was on.
    pub filtered: bool,
    /// Cleared requests per second (mean over replications).
    pub goodput: f64,
    /// `goodput` over the case's physical limit; NaN (`null` in JSON) when the limit is 0.
    #[serde(serialize_with = "finite_or_null")]
    pub goodput_ratio: f64,
    /// Backlog-time `Σ q·dt` [request·s] (mean).
    pub backlog_time: f64,
    /// Median sojourn \[s\] (mean over replications of each run's median).
    pub sojourn_p50: Option<f64>,
    /// 99th-percentile sojourn \[s\] (mean over replications).
    pub sojourn_p99: Option<f64>,
    /// Recovery after each dip.
    pub recovery: Recovery,
    /// Fraction of sampled time with the queue beyond the boundary `θ·cap`; NaN (`null` in
    /// JSON) with no sample.
    #[serde(serialize_with = "finite_or_null")]
    pub beyond_boundary: f64,
    /// Runs whose queue ever went beyond the boundary, with a 99 % Clopper–Pearson interval.
    pub exit_probability: Frequency,
    /// Empirical CVaR at tail η of the largest excursion beyond the boundary, in barrier
    /// units (a share of the capacity).
    pub cvar: Cvar,
    /// Rejected share of offered requests; NaN (`null` in JSON) when nothing was offered,
    /// which a 0 would show as a real 0 %.
    #[serde(serialize_with = "finite_or_null")]
    pub rejected_share: f64,
    /// Throughput the filter gave up, as a share of what the nominal policy proposed
    /// (`None` without the filter; `Some(NaN)` when the policy proposed nothing; `null` in
    /// JSON for both).
    #[serde(serialize_with = "some_finite_or_null")]
    pub given_up_share: Option<f64>,
    /// Share of filter decisions with no feasible action (the backup acted); `None` without
    /// the filter, `Some(NaN)` with no decision (`null` in JSON for both).
    #[serde(serialize_with = "some_finite_or_null")]
    pub backup_fraction: Option<f64>,
    /// Whether the exit frequency holds ε (filtered), violates it (unfiltered, lower limit
    /// above ε), or neither is established at this number of trials.
    pub verdict: &'static str,
}

/// One case's results.
#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    /// Case name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Offered base rate [req/s].
    pub traffic: f64,
    /// Whether the case lies inside the boundary's envelope and model (traffic and lowest
    /// health in range, exponential service): where the filter's ε is claimed.
    pub inside_envelope: bool,
    /// Goodput of the ideal pool [req/s].
    pub physical_limit: f64,
    /// The arms.
    pub arms: Vec<ArmReport>,
    /// Queue traces of the first replication, per arm in `arms` order (if asked).
    #[serde(skip)]
    pub traces: Vec<Series>,
}

/// A point of the goodput-vs-load curve.
#[derive(Debug, Clone, Serialize)]
pub struct CurvePoint {
    /// Policy name.
    pub policy: String,
    /// Filter on.
    pub filtered: bool,
    /// Base traffic [req/s].
    pub traffic: f64,
    /// Goodput [req/s].
    pub goodput: f64,
}

/// The seed's drain table, measured in the model with
/// [`Cycle`](safegate_core::controllers::cycle::Cycle).
#[derive(Debug, Clone, Serialize)]
pub struct ProbeCollapseRow {
    /// Capacity after the collapse, as a fraction of the estimate.
    pub capacity: f64,
    /// Queue added by the probe round, abort off \[requests\].
    pub probe: f64,
    /// Queue added by the drain round, abort off.
    pub drain: f64,
    /// The seed's prediction for the probe and drain rounds: `(1.25 − c)·b̂` and
    /// `(0.75 − c)·b̂` per round.
    pub predicted: [f64; 2],
    /// Queue added over probe and drain rounds with the rate-of-closure abort on.
    pub probe_drain_abort: f64,
    /// Peak queue added within the probe and drain rounds, abort off and on.
    pub peak: [f64; 2],
}

/// Everything `compare` found.
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    /// The boundary's θ.
    pub threshold: f64,
    /// The boundary's ε over its horizon.
    pub epsilon: f64,
    /// The horizon \[s\].
    pub horizon: f64,
    /// Replications per arm.
    pub seeds: u32,
    /// Extra stepped trials per arm inside the envelope.
    pub exit_trials: u32,
    /// Per case.
    pub cases: Vec<CaseReport>,
    /// Goodput vs load.
    pub curve: Vec<CurvePoint>,
    /// The ideal pool's goodput at each curve point.
    pub curve_limit: Vec<[f64; 2]>,
    /// The drain table in the model.
    pub probe_collapse: Vec<ProbeCollapseRow>,
}
