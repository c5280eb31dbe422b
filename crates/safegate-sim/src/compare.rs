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
use safegate_core::controllers::{
    ControllerKind, Cycle, CycleConfig, PolicyBase, PolicySpec, PolicySpecError, Setting,
};
use safegate_core::safety::{FilterStats, SafetyFilter};
use safegate_core::stats::empirical_cvar;
use safegate_core::Policy;
use serde::Serialize;

use crate::behaviour::{Retries, RetryPath, ServiceLaw};
use crate::config::{Config, Spike};
use crate::health::{DipShape, HealthSchedule, HealthTrack};
use crate::model::Busy;
use crate::record::{Outcome, RunOptions, Series};
use crate::verify::{Cvar, Frequency};
use crate::{run_fluid, run_stepped, run_stochastic};

/// One scenario of the comparison.
#[derive(Debug, Clone)]
pub struct Case {
    /// Short name (`cycle-80`).
    pub name: String,
    /// What it is, in words.
    pub description: String,
    /// The model to run (stochastic mode).
    pub config: Config,
}

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

/// The seed's scenarios, each `duration` seconds long (the stochastic mode).
///
/// λ = 55, 74.5, 76, 80 and 120, each through a single dip and on the repeating health
/// cycle; a step spike of 1.4× the pool's 75 req/s ceiling; heavy-tailed (Pareto 1.5)
/// service at λ = 80 on the cycle; health-dependent retries at λ = 70 through a dip.
pub fn default_cases(duration: f64) -> Vec<Case> {
    let base = Config { duration, ..Config::default() };
    let dip = |lambda: f64| Config {
        traffic: lambda,
        health: HealthTrack::new(HealthSchedule::Dip { shape: DipShape::default(), start: 60.0 }),
        ..base.clone()
    };
    let cycle = |lambda: f64| Config { traffic: lambda, ..base.clone() };
    let mut cases = Vec::new();
    // Every traffic level through one dip and on the repeating cycle.
    for (lambda, note) in [
        (55.0, " (the seed: recovers in 9 s)"),
        (74.5, " (the seed: 386 s to recover)"),
        (76.0, " (the seed: never recovers)"),
        (80.0, ""),
        (120.0, ""),
    ] {
        cases.push(Case {
            name: format!("dip-{lambda}"),
            description: format!("λ = {lambda}, one health dip at t = 60 s{note}"),
            config: dip(lambda),
        });
    }
    for (lambda, note) in [(55.0, ""), (74.5, ""), (76.0, ""), (80.0, " (the seed's running case)"), (120.0, "")] {
        cases.push(Case {
            name: format!("cycle-{lambda}"),
            description: format!("λ = {lambda} on the 19-s health cycle{note}"),
            config: cycle(lambda),
        });
    }
    cases.extend([
        Case {
            name: "spike-105".into(),
            description: "λ = 55, a 30-s step to 105 (1.4× the 75 req/s ceiling) at t = 60 s, full health".into(),
            config: Config {
                traffic: 55.0,
                spike: Some(Spike { start: 60.0, duration: 30.0, rate: 105.0 }),
                health: HealthTrack::new(HealthSchedule::Constant { level: 1.0 }),
                ..base.clone()
            },
        },
        Case {
            name: "heavy-tail-80".into(),
            description: "λ = 80 on the cycle, Pareto(1.5) service times (same mean)".into(),
            config: Config { service: ServiceLaw::Pareto { shape: 1.5 }, ..cycle(80.0) },
        },
        Case {
            name: "retries-70".into(),
            description: "λ = 70, one dip, retries up to 40 % as health falls, through the gate".into(),
            config: Config { retries: Retries::Health { probability: 0.4, path: RetryPath::Gate }, ..dip(70.0) },
        },
    ]);
    cases
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
    /// `goodput` over the case's physical limit.
    pub goodput_ratio: f64,
    /// Backlog-time `Σ q·dt` [request·s] (mean).
    pub backlog_time: f64,
    /// Median sojourn \[s\] (mean over replications of each run's median).
    pub sojourn_p50: Option<f64>,
    /// 99th-percentile sojourn \[s\] (mean over replications).
    pub sojourn_p99: Option<f64>,
    /// Recovery after each dip.
    pub recovery: Recovery,
    /// Fraction of sampled time with the queue beyond the boundary `θ·cap`.
    pub beyond_boundary: f64,
    /// Runs whose queue ever went beyond the boundary, with a 99 % Clopper–Pearson interval.
    pub exit_probability: Frequency,
    /// Empirical CVaR at tail η of the largest excursion beyond the boundary, in barrier
    /// units (a share of the capacity).
    pub cvar: Cvar,
    /// Rejected share of offered requests.
    pub rejected_share: f64,
    /// Throughput the filter gave up, as a share of what the nominal policy proposed
    /// (`None` without the filter).
    pub given_up_share: Option<f64>,
    /// Share of filter decisions with no feasible action (the backup acted).
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

/// The seed's drain table, measured in the model with [`Cycle`].
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

/// The goodput of the ideal pool: the fluid model with exactly `min(q, C)` executors.
pub fn physical_limit(cfg: &Config) -> f64 {
    let mut ideal = cfg.clone();
    ideal.pool.busy = Busy::Fluid;
    ideal.pool.executors = ideal.pool.executors.max(cfg.pool.comfortable.ceil() as u32);
    let cap = cfg.pool.comfortable.round().max(1.0) as u32;
    // Fluid mode ignores the service law; a plain cap at C is the ideal pool.
    struct Ideal(u32);
    impl Policy for Ideal {
        fn decide(&mut self, _: &safegate_core::Observation) -> safegate_core::Action {
            safegate_core::Action { admit: 1.0, concurrency: Some(self.0), shed_retries: false }
        }
        fn name(&self) -> &'static str {
            "ideal-pool"
        }
    }
    let out = run_fluid(&ideal, &mut Ideal(cap), RunOptions::default());
    out.summary.cleared / out.summary.duration
}

/// Whether `cfg` is inside `b`'s envelope and model.
pub fn inside_envelope(cfg: &Config, b: &Boundary) -> bool {
    let [t0, t1] = b.envelope.traffic;
    let [h0, h1] = b.envelope.health;
    let peak = cfg.spike.map_or(cfg.traffic, |s| s.rate.max(cfg.traffic));
    let low = lowest_health(cfg);
    cfg.traffic >= t0
        && peak <= t1
        && low >= h0 - 1e-9
        && low <= h1 + 1e-9
        && cfg.service == ServiceLaw::Exponential
        && cfg.health.noise.is_none()
}

fn lowest_health(cfg: &Config) -> f64 {
    let n = (cfg.duration / cfg.dt).ceil() as usize;
    (0..=n).map(|k| cfg.health.value(k as f64 * cfg.dt)).fold(f64::INFINITY, f64::min)
}

/// Ends of the health dips within the run.
fn dip_ends(cfg: &Config) -> Vec<f64> {
    match &cfg.health.schedule {
        HealthSchedule::Cycle(s) => {
            let period = s.period();
            let first = s.hold_high + s.dip_length();
            (0..).map(|k| first + k as f64 * period).take_while(|&t| t < cfg.duration).collect()
        }
        other => other.dip_end().filter(|&t| t < cfg.duration).into_iter().collect(),
    }
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

/// The seed's drain table in the model: the fluid pool capped at C (capacity 150·H), λ =
/// 200 offered, [`Cycle`] converged on the estimate; at t = 80 s, the start of a probe
/// round, health steps down to `c`. Measures what the probe and drain rounds add.
pub fn probe_collapse(fractions: &[f64]) -> Vec<ProbeCollapseRow> {
    let at = 80.0;
    fractions
        .iter()
        .map(|&c| {
            let cfg = Config {
                traffic: 200.0,
                duration: at + 8.0,
                initial_queue: 30.0,
                health: HealthTrack::new(HealthSchedule::Dip {
                    shape: DipShape { high: 1.0, low: c, hold_high: 0.0, ramp_down: 1e-6, hold_low: 1e6, ramp_up: 1.0 },
                    start: at,
                }),
                ..Config::default()
            };
            let run = |gamma: Option<f64>| {
                let mut p = Cycle::new(CycleConfig {
                    abort_gamma: gamma,
                    imm: None,
                    concurrency: Some(4),
                    ..CycleConfig::default()
                })
                .expect("valid");
                let out = run_fluid(&cfg, &mut p, RunOptions { record_every: Some(1), progress: None });
                let s = out.series.expect("recorded");
                let q = |t: f64| s.queue[s.t.partition_point(|&x| x < t - 1e-9).min(s.queue.len() - 1)];
                let (i0, i1) = (s.t.partition_point(|&x| x < at), s.t.partition_point(|&x| x < at + 2.0));
                let peak = s.queue[i0..i1].iter().cloned().fold(0.0, f64::max) - q(at);
                (q(at + 1.0) - q(at), q(at + 2.0) - q(at + 1.0), peak)
            };
            let (probe, drain, peak0) = run(None);
            let (p1, d1, peak1) = run(Some(CycleConfig::default().abort_gamma.expect("on by default")));
            let est = 150.0;
            ProbeCollapseRow {
                capacity: c,
                probe,
                drain,
                predicted: [(1.25 - c) * est, (0.75 - c) * est],
                probe_drain_abort: p1 + d1,
                peak: [peak0, peak1],
            }
        })
        .collect()
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

    #[test]
    fn the_physical_limit_is_the_ideal_pools_goodput() {
        // Constant health 1, λ = 120 < 150: the ideal pool clears everything offered.
        let cfg = Config {
            traffic: 120.0,
            duration: 200.0,
            health: HealthTrack::new(HealthSchedule::Constant { level: 1.0 }),
            ..Config::default()
        };
        assert!((physical_limit(&cfg) - 120.0).abs() < 0.5);
        // λ = 200 > 150: it clears 150 (the peak of the service curve).
        let cfg = Config { traffic: 200.0, ..cfg };
        assert!((physical_limit(&cfg) - 150.0).abs() < 1.0, "{}", physical_limit(&cfg));
    }

    #[test]
    fn the_drain_table_holds_in_the_model() {
        let rows = probe_collapse(&[0.9, 0.6]);
        for r in &rows {
            // Within one 50-ms fluid step of the round's rate.
            let step = 0.05 * 150.0 * (1.25 - r.capacity) + 0.5;
            assert!((r.probe - r.predicted[0]).abs() < step, "{r:?}");
            assert!((r.drain - r.predicted[1]).abs() < step, "{r:?}");
        }
        assert!(rows[0].drain < 0.0 && rows[1].drain > 0.0, "the drain adds below 0.75: {rows:?}");
        assert!(rows[1].probe_drain_abort < 0.5 * (rows[1].probe + rows[1].drain), "{rows:?}");
        assert!(rows[1].peak[1] < rows[1].peak[0]);
    }
}
