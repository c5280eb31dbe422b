//! The comparison itself: every case and policy, with and without the filter, in parallel,
//! aggregated into a [`CompareReport`].

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use safegate_sim::config::Config;

use super::aggregate::{trace_metrics, Arm, ArmRuns, CaseFrame, RunResult, Trace};
use super::config::filters;
use safegate_core::controllers::PolicySpec;
use safegate_core::safety::SafetyConfig;

use super::{
    inside_envelope, physical_limit, probe_collapse, Case, CaseReport, CompareConfig, CompareError, CompareReport,
    CurvePoint,
};

/// Most samples of one compared run's series (the trace metrics read it, and the first
/// seed's is kept for the figures): a longer run is recorded every `steps / 20 000`-th
/// sample, so a 10⁶-s case holds 20 000 samples rather than 2·10⁷ (over 2 GB).
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
