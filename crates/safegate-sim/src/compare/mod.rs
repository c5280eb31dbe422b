//! Every nominal controller, with and without the safety filter, on the seed's scenarios.
//!
//! For each case (a scenario of the model) and each policy, the stochastic mode runs
//! `seeds` replications with the policy alone and `seeds` with the policy under the
//! [`SafetyFilter`] of a boundary, and reports per arm: goodput (and its share of the
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

use rayon::prelude::*;
use safegate_core::boundary::Boundary;
use safegate_core::controllers::{ControllerKind, PolicyBase, PolicySpec, PolicySpecError, Setting};
use safegate_core::safety::{FilterStats, SafetyFilter};
use safegate_core::stats::empirical_cvar;
use safegate_core::Policy;

use crate::config::Config;
use crate::record::{Outcome, RunOptions, Series};
use crate::verify::{Cvar, Frequency};
use crate::{run_stepped, run_stochastic};

mod cases;
mod drain;
mod report;

use cases::dip_ends;
pub use cases::{default_cases, inside_envelope, physical_limit, Case};
pub use drain::{probe_collapse, ProbeCollapseRow};
pub use report::{ArmReport, CaseReport, CompareReport, CurvePoint, Recovery};

/// The policies run by default, in report order: every base of the registry
/// ([`PolicySpec::all`]'s order), with `+pool` only for `cycle` and `gradient2` (the other
/// limit controllers' `+pool` forms are listed by [`policy_names`] and run on request):
/// `open`, `seed-gate`, `cycle`, `cycle+pool`, `gradient2`, `gradient2+pool`, `vegas`,
/// `aimd`, `envoy-gradient`, `static`, `credits`, `priority-levels`, `sre-throttle`.
pub fn default_policies() -> Vec<PolicySpec> {
    let pooled_by_default = [PolicyBase::Cycle, PolicyBase::Controller(ControllerKind::Gradient2)];
    PolicySpec::all().into_iter().filter(|s| !s.pool() || pooled_by_default.contains(&s.base())).collect()
}

/// Every policy name [`build_policy`] accepts without `+retry-budget` ([`PolicySpec::all`]):
/// `open`, `seed-gate`, `cycle`, `cycle+pool`, every controller, and `+pool` forms of the
/// limit controllers. Any of them also takes a `+retry-budget` suffix.
pub fn policy_names() -> Vec<String> {
    PolicySpec::all().iter().map(PolicySpec::to_string).collect()
}

/// The policy `name` (a [`PolicySpec`]) for a pool like `cfg`'s: `open`, `seed-gate` (θ =
/// 0.7, sensitivity 1), `cycle` (Cyclic Adaptive Regulation, admission only),
/// `cycle+pool` (the same with concurrency capped at the pool's comfortable concurrency
/// C), any of [`safegate_core::controllers::NAMES`] (limit on requests in flight), `<limit
/// controller>+pool` (the limit caps busy executors instead), and a `+retry-budget` suffix
/// on any of them.
pub fn build_policy(name: &str, cfg: &Config) -> Result<Box<dyn Policy + Send>, String> {
    build_spec(&name.parse().map_err(|e: PolicySpecError| e.to_string())?, cfg)
}

/// The policy `spec` for a pool like `cfg`'s (see [`build_policy`]).
pub fn build_spec(spec: &PolicySpec, cfg: &Config) -> Result<Box<dyn Policy + Send>, String> {
    let setting = Setting { capacity: cfg.pool.capacity, executors: cfg.pool.executors, period: cfg.dt };
    let comfortable = cfg.pool.comfortable.round().max(1.0) as u32;
    spec.build(&setting, comfortable).map_err(|e| format!("{spec}: {e}"))
}
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
struct RunResult {
    outcome: Outcome,
    stats: Option<FilterStats>,
}

/// Run `policy` (under the boundary's filter when `filtered`) with the simulator `run`.
fn run_arm(
    cfg: &Config,
    policy: &PolicySpec,
    filtered: bool,
    boundary: &Boundary,
    run: impl FnOnce(&mut dyn Policy) -> Outcome,
) -> RunResult {
    let mut nominal = build_spec(policy, cfg).expect("policies are checked up front");
    if filtered {
        let safety = boundary.safety_config(cfg.pool.capacity).expect("boundary validated up front");
        let mut f = SafetyFilter::new(safety, nominal).expect("validated filter");
        let outcome = run(&mut f);
        RunResult { outcome, stats: Some(*f.stats()) }
    } else {
        RunResult { outcome: run(&mut nominal), stats: None }
    }
}

fn stochastic_arm(cfg: &Config, policy: &PolicySpec, filtered: bool, boundary: &Boundary, record: bool) -> RunResult {
    let opts = RunOptions { record_every: record.then_some(1), progress: None };
    run_arm(cfg, policy, filtered, boundary, |p| run_stochastic(cfg, p, opts))
}

fn stepped_exit(cfg: &Config, policy: &PolicySpec, filtered: bool, boundary: &Boundary) -> f64 {
    run_arm(cfg, policy, filtered, boundary, |p| run_stepped(cfg, p, RunOptions::default())).outcome.summary.queue_max
}

/// Metrics of one run that need its series.
struct Trace {
    max_queue: f64,
    beyond: f64,
    recovery: Recovery,
    recovery_sum: f64,
}

fn trace_metrics(cfg: &Config, s: &Series, boundary_depth: f64) -> Trace {
    let n = s.queue.len().max(1);
    let beyond = s.queue.iter().filter(|&&q| q > boundary_depth).count() as f64 / n as f64;
    let max_queue = s.queue.iter().cloned().fold(0.0, f64::max);
    let ends = dip_ends(cfg);
    let mut rec = Recovery { below_boundary: 0, drained: 0, dips: 0, mean_seconds: None };
    let mut sum = 0.0;
    for (i, &e) in ends.iter().enumerate() {
        let until = ends.get(i + 1).copied().unwrap_or(cfg.duration + 1.0);
        let start = s.t.partition_point(|&t| t < e);
        let stop = s.t.partition_point(|&t| t < until);
        if start >= stop {
            continue;
        }
        rec.dips += 1;
        let window = &s.queue[start..stop];
        if window.iter().any(|&q| q <= boundary_depth) {
            rec.below_boundary += 1;
        }
        if let Some(j) = window.iter().position(|&q| q <= cfg.drain_level) {
            rec.drained += 1;
            sum += s.t[start + j] - e;
        }
    }
    Trace { max_queue, beyond, recovery: rec, recovery_sum: sum }
}

/// Run the comparison; `progress` is called with the fraction done.
pub fn compare(cc: &CompareConfig, progress: &(dyn Fn(f64) + Sync)) -> Result<CompareReport, String> {
    for p in &cc.policies {
        build_spec(p, &Config::default())?;
    }
    if cc.seeds == 0 {
        return Err("seeds must be at least 1".into());
    }
    let b = &cc.boundary;
    let eps = b.probability.epsilon;
    let eta = b.magnitude.as_ref().map_or(0.05, |m| m.eta);
    let rho = b.magnitude.as_ref().map(|m| m.rho);

    // Jobs: (case, policy, filtered, seed) stochastic runs, plus stepped exit trials.
    #[derive(Clone, Copy)]
    enum Job {
        Run { case: usize, arm: usize, seed: u32 },
        Exit { case: usize, arm: usize, first: u32, count: u32 },
        Curve { point: usize, arm: usize },
    }
    let arms: Vec<(PolicySpec, bool)> = cc.policies.iter().flat_map(|&p| [(p, false), (p, true)]).collect();
    let mut jobs = Vec::new();
    let inside: Vec<bool> = cc.cases.iter().map(|c| inside_envelope(&c.config, b)).collect();
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
    let done = std::sync::atomic::AtomicUsize::new(0);

    enum Out {
        Run { case: usize, arm: usize, seed: u32, run: Box<RunResult>, trace: Trace },
        Exit { case: usize, arm: usize, maxima: Vec<f64> },
        Curve { point: usize, arm: usize, goodput: f64 },
    }
    let outs: Vec<Out> = jobs
        .par_iter()
        .map(|job| {
            let out = match *job {
                Job::Run { case, arm, seed } => {
                    let c = &cc.cases[case];
                    let cfg = Config { seed: 1 + seed as u64 * 7919 + case as u64 * 104_729, ..c.config.clone() };
                    let run = stochastic_arm(&cfg, &arms[arm].0, arms[arm].1, b, true);
                    let boundary_depth = b.barrier.threshold * cfg.pool.capacity;
                    let trace = trace_metrics(&cfg, run.outcome.series.as_ref().expect("recorded"), boundary_depth);
                    Out::Run { case, arm, seed, run: Box::new(run), trace }
                }
                Job::Exit { case, arm, first, count } => {
                    let c = &cc.cases[case];
                    let maxima = (first..first + count)
                        .map(|k| {
                            let cfg = Config { seed: 0x5EED_0000 + k as u64, ..c.config.clone() };
                            stepped_exit(&cfg, &arms[arm].0, arms[arm].1, b)
                        })
                        .collect();
                    Out::Exit { case, arm, maxima }
                }
                Job::Curve { point, arm } => {
                    let cfg = Config { traffic: cc.curve_traffic[point], seed: 77, ..Config::default() };
                    let cfg = Config { duration: cc.cases.first().map_or(600.0, |c| c.config.duration), ..cfg };
                    let run = stochastic_arm(&cfg, &arms[arm].0, arms[arm].1, b, false);
                    Out::Curve { point, arm, goodput: run.outcome.summary.cleared / run.outcome.summary.duration }
                }
            };
            let d = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            progress(d as f64 / total);
            out
        })
        .collect();

    // Assemble.
    let mut cases = Vec::new();
    for (ci, c) in cc.cases.iter().enumerate() {
        let limit = physical_limit(&c.config);
        let boundary_depth = b.barrier.threshold * c.config.pool.capacity;
        let mut reports = Vec::new();
        let mut traces = Vec::new();
        for (ai, (policy, filtered)) in arms.iter().enumerate() {
            let runs: Vec<(&RunResult, &Trace, u32)> = outs
                .iter()
                .filter_map(|o| match o {
                    Out::Run { case, arm, seed, run, trace } if *case == ci && *arm == ai => {
                        Some((&**run, trace, *seed))
                    }
                    _ => None,
                })
                .collect();
            let n = runs.len() as f64;
            let mean = |f: &dyn Fn(&RunResult, &Trace) -> f64| runs.iter().map(|(r, t, _)| f(r, t)).sum::<f64>() / n;
            let mean_opt = |f: &dyn Fn(&RunResult) -> Option<f64>| {
                let v: Vec<f64> = runs.iter().filter_map(|(r, _, _)| f(r)).collect();
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            };
            let goodput = mean(&|r, _| r.outcome.summary.cleared / r.outcome.summary.duration);
            let mut rec = Recovery { below_boundary: 0, drained: 0, dips: 0, mean_seconds: None };
            let mut rec_sum = 0.0;
            for (_, t, _) in &runs {
                rec.below_boundary += t.recovery.below_boundary;
                rec.drained += t.recovery.drained;
                rec.dips += t.recovery.dips;
                rec_sum += t.recovery_sum;
            }
            rec.mean_seconds = (rec.drained > 0).then(|| rec_sum / rec.drained as f64);

            // Exits: the stepped trials when run, else the replications.
            let extra: Vec<f64> = outs
                .iter()
                .filter_map(|o| match o {
                    Out::Exit { case, arm, maxima } if *case == ci && *arm == ai => Some(maxima.clone()),
                    _ => None,
                })
                .flatten()
                .collect();
            let mut maxima: Vec<f64> =
                if extra.is_empty() { runs.iter().map(|(_, t, _)| t.max_queue).collect() } else { extra };
            let exits = maxima.iter().filter(|&&q| q > boundary_depth).count() as u64;
            let exit = Frequency::from_counts(exits, maxima.len() as u64);
            let cap = c.config.pool.capacity;
            for m in maxima.iter_mut() {
                *m = (*m / cap - b.barrier.threshold).max(0.0);
            }
            let cvar = Cvar { estimate: empirical_cvar(&mut maxima, eta), eta, rho };
            let offered = mean(&|r, _| r.outcome.summary.offered);
            let rejected = mean(&|r, _| r.outcome.summary.rejected);
            let stats: Vec<&FilterStats> = runs.iter().filter_map(|(r, _, _)| r.stats.as_ref()).collect();
            let given_up_share = (!stats.is_empty()).then(|| {
                let g: f64 = stats.iter().map(|s| s.given_up).sum();
                let nom: f64 = stats.iter().map(|s| s.nominal_admitted).sum();
                if nom > 0.0 {
                    g / nom
                } else {
                    0.0
                }
            });
            let backup_fraction = (!stats.is_empty()).then(|| {
                let inf: u64 = stats.iter().map(|s| s.infeasible).sum();
                let d: u64 = stats.iter().map(|s| s.decisions).sum();
                inf as f64 / d.max(1) as f64
            });
            let verdict = if !inside[ci] {
                "outside envelope"
            } else if *filtered {
                if exit.ci_high <= eps {
                    "holds ε"
                } else if exit.ci_low > eps {
                    "violates ε"
                } else {
                    "not established"
                }
            } else if exit.ci_low > eps {
                "violates ε"
            } else if exit.ci_high <= eps {
                "holds ε"
            } else {
                "not established"
            };
            reports.push(ArmReport {
                policy: policy.to_string(),
                filtered: *filtered,
                goodput,
                goodput_ratio: if limit > 0.0 { goodput / limit } else { 0.0 },
                backlog_time: mean(&|r, _| r.outcome.summary.backlog_time),
                sojourn_p50: mean_opt(&|r| r.outcome.summary.sojourn_p50),
                sojourn_p99: mean_opt(&|r| r.outcome.summary.sojourn_p99),
                recovery: rec,
                beyond_boundary: mean(&|_, t| t.beyond),
                exit_probability: exit,
                cvar,
                rejected_share: if offered > 0.0 { rejected / offered } else { 0.0 },
                given_up_share,
                backup_fraction,
                verdict,
            });
            if cc.traces {
                let first = runs.iter().find(|(_, _, s)| *s == 0).and_then(|(r, _, _)| r.outcome.series.clone());
                traces.push(first.unwrap_or_default());
            }
        }
        cases.push(CaseReport {
            name: c.name.clone(),
            description: c.description.clone(),
            traffic: c.config.traffic,
            inside_envelope: inside[ci],
            physical_limit: limit,
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
    let duration = cc.cases.first().map_or(600.0, |c| c.config.duration);
    let curve_limit = cc
        .curve_traffic
        .iter()
        .map(|&l| [l, physical_limit(&Config { traffic: l, duration, ..Config::default() })])
        .collect();
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
mod tests {
    use super::*;

    #[test]
    fn every_listed_policy_builds() {
        for n in policy_names() {
            assert!(build_policy(&n, &Config::default()).is_ok(), "{n}");
        }
        assert!(build_policy("credits+pool", &Config::default()).is_err());
        assert!(build_policy("nope", &Config::default()).is_err());
        assert!(build_policy("gradient2+retry-budget", &Config::default()).is_ok());
    }
}
