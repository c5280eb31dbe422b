//! Every nominal controller, with and without the safety filter, on the seed's scenarios.
//!
//! For each case (a scenario of the model) and each policy, the stochastic mode runs
//! `seeds` replications with the policy alone and `seeds` with the policy under the
//! [`SafetyFilter`](safegate_core::safety::SafetyFilter) of a boundary, and reports per arm: goodput (and its share of the
//! model's physical limit), backlog-time, p50/p99 sojourn, recovery after each dip, the
//! fraction of time beyond the boundary `θ·cap`, the exit frequency over the run with a 99 %
//! Clopper–Pearson interval, the empirical CVaR of the excursion beyond the boundary, the
//! rejected share and the throughput the filter gave up (Corollary 3's cost, measured).
//!
//! The *physical limit* of a case is the goodput of the fluid model with the ideal pool:
//! exactly `min(q, C)` executors pulling (a fractional count), the same buffer, the same
//! health and traffic — what no admission policy on the real pool can beat by more than
//! noise, and what a concurrency actuator can approach.
//!
//! Optionally (`exit_trials > 0`) the exit frequency and CVaR of the cases inside the
//! boundary's envelope are estimated from that many extra trials of the stepped chain (the
//! fast mode `verify` uses), enough to show a 99 % upper limit below ε (≥ 528 trials with
//! no exit for ε = 0.01).

//!
//! The parts: [`cases`] (the seed's scenarios, physical limit, envelope), [`policies`]
//! (policies by name), [`CompareRequest`] (what was asked for, checked into a
//! [`CompareConfig`]), the runs and their aggregation (`aggregate`), [`report`] (what is
//! reported) and [`probe`] (the seed's drain table).

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use safegate_core::boundary::Boundary;
use safegate_core::controllers::PolicySpec;
use safegate_core::safety::SafetyConfig;

mod aggregate;
pub mod cases;
pub mod policies;
pub mod probe;
pub mod report;
mod request;

pub use cases::{default_cases, inside_envelope, physical_limit, select_cases, Case};
pub use policies::{build_policy, build_spec, default_policies, policy_names};
pub use probe::probe_collapse;
pub use report::{ArmReport, CaseReport, CompareReport, CurvePoint, ProbeCollapseRow, Recovery};
pub use request::{run_duration, CompareRequest, DEFAULT_CURVE_TRAFFIC};

use aggregate::{trace_metrics, Arm, ArmRuns, CaseFrame, RunResult, Trace};
use safegate_core::limits::{budget, MAX_EVENTS, MAX_TRAJECTORY_STEPS};
use safegate_sim::config::Config;
use safegate_sim::Mode;

/// What to run.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// The cases.
    pub cases: Vec<Case>,
    /// The policies (see [`build_policy`] and [`default_policies`]).
    pub policies: Vec<PolicySpec>,
    /// Stochastic replications per arm.
    pub seeds: u32,
    /// Extra stepped-chain trials per arm for the exit frequency inside the envelope (0:
    /// use the replications).
    pub exit_trials: u32,
    /// The boundary the filter enforces and the exits are counted against.
    pub boundary: Boundary,
    /// Traffic levels of the goodput-vs-load curve (on the health cycle); empty: none.
    pub curve_traffic: Vec<f64>,
    /// Record queue traces of the first replication (for figures).
    pub traces: bool,
}

/// Why a comparison could not run. Everything is checked before the first run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompareError {
    /// A policy name is unknown or cannot be built.
    #[error("{0}")]
    Policy(String),
    /// A case's configuration is out of range.
    #[error("case {case}: {error}")]
    Case {
        /// The case's name.
        case: String,
        /// The field, value and allowed range.
        error: safegate_core::RangeError,
    },
    /// The boundary cannot build a filter for a case (a value out of range).
    #[error("boundary{}: {message}", if case.is_empty() { String::new() } else { format!(" (case {case})") })]
    Boundary {
        /// The case whose capacity it was built for (empty: all).
        case: String,
        /// What is wrong.
        message: String,
    },
    /// Too little to measure.
    #[error("{0}")]
    Empty(String),
    /// A case asked for by name is not one of the seed's ([`select_cases`]).
    #[error("unknown case {name:?}: the default cases are {}", known.join(", "))]
    UnknownCase {
        /// The name as given.
        name: String,
        /// The names of the seed's cases.
        known: Vec<String>,
    },
    /// A setting of the request out of range (the run's `duration`).
    #[error("{0}")]
    Setting(safegate_core::RangeError),
}

impl CompareConfig {
    /// Check everything [`compare`] checks before its first run: every policy builds, at
    /// least one seed, case and policy, every case's model and the boundary's filter for its
    /// pool, and the load curve's points.
    pub fn check(&self) -> Result<(), CompareError> {
        filters(self).map(|_| ())
    }
}

/// The filter of each case (for its capacity) and of the load curve (the default pool),
/// after checking every input.
fn filters(cc: &CompareConfig) -> Result<(Vec<SafetyConfig>, SafetyConfig), CompareError> {
    for p in &cc.policies {
        build_spec(p, &Config::default()).map_err(CompareError::Policy)?;
    }
    if cc.seeds == 0 {
        return Err(CompareError::Empty("seeds must be at least 1".into()));
    }
    if cc.cases.is_empty() {
        return Err(CompareError::Empty("no case to run".into()));
    }
    if cc.policies.is_empty() {
        return Err(CompareError::Empty("no policy to run".into()));
    }
    let b = &cc.boundary;
    let safety_for = |case: &str, capacity: f64| -> Result<SafetyConfig, CompareError> {
        b.safety_config(capacity).map_err(|e| CompareError::Boundary { case: case.to_string(), message: e.to_string() })
    };
    let mut safety = Vec::with_capacity(cc.cases.len());
    for c in &cc.cases {
        c.config.check_for(Mode::Stochastic).map_err(|error| CompareError::Case { case: c.name.clone(), error })?;
        safety.push(safety_for(&c.name, c.config.pool.capacity)?);
    }
    let duration = cc.cases[0].config.duration;
    let curve_config = |traffic: f64| Config { traffic, seed: 77, duration, ..Config::default() };
    for &t in &cc.curve_traffic {
        curve_config(t)
            .check_for(Mode::Stochastic)
            .map_err(|error| CompareError::Case { case: format!("load curve at {t} req/s"), error })?;
    }
    let curve_safety = safety_for("load curve", Config::default().pool.capacity)?;
    // The whole comparison's work: arrivals of every stochastic run, steps of every exit
    // trial (a run is checked on its own above; many of them add up).
    let runs = f64::from(cc.seeds) * 2.0 * cc.policies.len() as f64;
    let arrivals: f64 = cc.cases.iter().map(|c| c.config.traffic.max(1.0) * c.config.duration).sum::<f64>() * runs
        + cc.curve_traffic.iter().map(|t| t.max(1.0) * duration).sum::<f64>() * 2.0 * cc.policies.len() as f64;
    let setting = |error| CompareError::Setting(error);
    budget("seeds", cc.seeds, arrivals, 100.0 * MAX_EVENTS, "expected arrivals over all runs").map_err(setting)?;
    let steps: f64 = cc.cases.iter().map(|c| c.config.steps() as f64).sum();
    let trials = f64::from(cc.exit_trials) * 2.0 * cc.policies.len() as f64;
    budget("exit_trials", cc.exit_trials, trials * steps, MAX_TRAJECTORY_STEPS, "trajectory-steps of the exit trials")
        .map_err(setting)?;
    Ok((safety, curve_safety))
}

/// Most samples of one compared run's series (the trace metrics read it, and the first
/// seed's is kept for the figures): a longer run is recorded every `steps / 20 000`-th
/// sample, so a 10⁶-s case holds 20 000 samples rather than 2·10⁷ (it aborted at 2 GB).
/// The seed's 400 s at 50 ms is 8 000 samples: recorded whole.
pub const MAX_TRACE_SAMPLES: u64 = 20_000;

/// Run the comparison; `progress` is called with the fraction done. Every policy, case and
/// the boundary are checked first ([`CompareConfig::check`]): a bad input is an error, never
/// a panic mid-run.
pub fn compare(cc: &CompareConfig, progress: &(dyn Fn(f64) + Sync)) -> Result<CompareReport, CompareError> {
    let (safety, curve_safety) = filters(cc)?;
    let b = &cc.boundary;
    let eps = b.probability.epsilon;
    let duration = cc.cases[0].config.duration;
    let curve_config = |traffic: f64| Config { traffic, seed: 77, duration, ..Config::default() };

    // Jobs: (case, policy, filtered, seed) stochastic runs, plus stepped exit trials.
    #[derive(Clone, Copy)]
    enum Job {
        Run { case: usize, arm: usize, seed: u32 },
        Exit { case: usize, arm: usize, first: u32, count: u32 },
        Curve { point: usize, arm: usize },
    }
    let arms: Vec<(PolicySpec, bool)> = cc.policies.iter().flat_map(|&p| [(p, false), (p, true)]).collect();
    fn arm<'a>(arms: &'a [(PolicySpec, bool)], ai: usize, safety: &'a SafetyConfig) -> Arm<'a> {
        Arm { policy: &arms[ai].0, safety: arms[ai].1.then_some(safety) }
    }
    let arm_in = |ai: usize, safety| arm(&arms, ai, safety);
    let mut jobs = Vec::new();
    // Every case passed its checks in `filters`.
    let case_err = |c: &Case| {
        let case = c.name.clone();
        move |error| CompareError::Case { case, error }
    };
    let inside: Vec<bool> =
        cc.cases.iter().map(|c| inside_envelope(&c.config, b).map_err(case_err(c))).collect::<Result<_, _>>()?;
    for (ci, _) in cc.cases.iter().enumerate() {
        for (ai, (_, filtered)) in arms.iter().enumerate() {
            for seed in 0..cc.seeds {
                jobs.push(Job::Run { case: ci, arm: ai, seed });
            }
            if cc.exit_trials > 0 && inside[ci] {
                // Unfiltered arms exit almost surely: a few trials show it.
                let n = if *filtered { cc.exit_trials } else { cc.exit_trials.min(50) };
                let chunk = 25;
                let mut first = 0;
                while first < n {
                    jobs.push(Job::Exit { case: ci, arm: ai, first, count: chunk.min(n - first) });
                    first += chunk;
                }
            }
        }
    }
    for point in 0..cc.curve_traffic.len() {
        for ai in 0..arms.len() {
            jobs.push(Job::Curve { point, arm: ai });
        }
    }
    let total = jobs.len() as f64;
    let done = AtomicUsize::new(0);

    enum Out {
        Run { case: usize, arm: usize, seed: u32, run: Box<RunResult>, trace: Trace },
        Exit { case: usize, arm: usize, maxima: Vec<f64> },
        Curve { point: usize, arm: usize, goodput: f64 },
    }
    let outs: Vec<Out> = jobs
        .par_iter()
        .map(|job| -> Result<Out, CompareError> {
            let out = match *job {
                Job::Run { case, arm, seed } => {
                    let c = &cc.cases[case];
                    let cfg = Config { seed: 1 + seed as u64 * 7919 + case as u64 * 104_729, ..c.config.clone() };
                    let stride = cfg.steps().div_ceil(MAX_TRACE_SAMPLES).max(1) as usize;
                    let mut run = arm_in(arm, &safety[case]).stochastic(&cfg, Some(stride))?;
                    let boundary_depth = b.barrier.threshold * cfg.pool.capacity;
                    let series =
                        run.outcome.series.as_ref().ok_or_else(|| CompareError::Empty("no series recorded".into()))?;
                    let trace = trace_metrics(&cfg, series, boundary_depth);
                    // Only the first seed's series is drawn; the others are not kept.
                    if seed != 0 || !cc.traces {
                        run.outcome.series = None;
                    }
                    Out::Run { case, arm, seed, run: Box::new(run), trace }
                }
                Job::Exit { case, arm, first, count } => {
                    let c = &cc.cases[case];
                    let maxima = (first..first + count)
                        .map(|k| {
                            let cfg = Config { seed: 0x5EED_0000 + k as u64, ..c.config.clone() };
                            arm_in(arm, &safety[case]).stepped_max(&cfg)
                        })
                        .collect::<Result<_, _>>()?;
                    Out::Exit { case, arm, maxima }
                }
                Job::Curve { point, arm } => {
                    let cfg = curve_config(cc.curve_traffic[point]);
                    let run = arm_in(arm, &curve_safety).stochastic(&cfg, None)?;
                    Out::Curve { point, arm, goodput: run.outcome.summary.cleared / run.outcome.summary.duration }
                }
            };
            let d = done.fetch_add(1, Ordering::Relaxed) + 1;
            progress(d as f64 / total);
            Ok(out)
        })
        .collect::<Result<_, _>>()?;

    // Assemble.
    let mut cases = Vec::new();
    for (ci, c) in cc.cases.iter().enumerate() {
        let frame = CaseFrame {
            boundary: b,
            capacity: c.config.pool.capacity,
            physical_limit: physical_limit(&c.config).map_err(case_err(c))?,
            inside_envelope: inside[ci],
        };
        let mut reports = Vec::new();
        let mut traces = Vec::new();
        for (ai, (policy, filtered)) in arms.iter().enumerate() {
            let mut runs = Vec::new();
            let mut first_series = None;
            let mut exit_maxima = Vec::new();
            for o in &outs {
                match o {
                    Out::Run { case, arm, seed, run, trace } if *case == ci && *arm == ai => {
                        runs.push((&**run, trace));
                        if *seed == 0 {
                            first_series = run.outcome.series.clone();
                        }
                    }
                    Out::Exit { case, arm, maxima } if *case == ci && *arm == ai => {
                        exit_maxima.extend_from_slice(maxima)
                    }
                    _ => {}
                }
            }
            reports.push(ArmRuns { runs, exit_maxima }.report(&policy.to_string(), *filtered, &frame));
            if cc.traces {
                traces.push(first_series.unwrap_or_default());
            }
        }
        cases.push(CaseReport {
            name: c.name.clone(),
            description: c.description.clone(),
            traffic: c.config.traffic,
            inside_envelope: inside[ci],
            physical_limit: frame.physical_limit,
            arms: reports,
            traces,
        });
    }
    let mut curve = Vec::new();
    for o in &outs {
        if let Out::Curve { point, arm, goodput } = o {
            curve.push(CurvePoint {
                policy: arms[*arm].0.to_string(),
                filtered: arms[*arm].1,
                traffic: cc.curve_traffic[*point],
                goodput: *goodput,
            });
        }
    }
    let curve_limit = cc
        .curve_traffic
        .iter()
        .map(|&l| {
            let limit = physical_limit(&curve_config(l))
                .map_err(|error| CompareError::Case { case: format!("load curve at {l} req/s"), error })?;
            Ok([l, limit])
        })
        .collect::<Result<_, CompareError>>()?;
    Ok(CompareReport {
        threshold: b.barrier.threshold,
        epsilon: eps,
        horizon: b.probability.horizon,
        seeds: cc.seeds,
        exit_trials: cc.exit_trials,
        cases,
        curve,
        curve_limit,
        probe_collapse: probe_collapse(&[0.9, 0.75, 0.6, 0.5]),
    })
}

#[cfg(test)]
mod tests;
