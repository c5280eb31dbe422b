//! One arm's runs, and what they add up to.

use safegate_core::boundary::Boundary;
use safegate_core::safety::{FilterStats, SafetyConfig, SafetyFilter};
use safegate_core::stats::empirical_cvar;
use safegate_core::Policy;

use super::cases::dip_ends;
use super::policies::build_spec;
use super::report::{ArmReport, Recovery};
use super::CompareError;
use crate::verify::{Cvar, Frequency};
use safegate_core::controllers::PolicySpec;
use safegate_sim::config::Config;
use safegate_sim::record::{Outcome, RunOptions, Series};

/// One run of an arm, and the filter's counters when it ran.
pub(super) struct RunResult {
    pub(super) outcome: Outcome,
    pub(super) stats: Option<FilterStats>,
}

/// An arm: a policy by name, under `safety` (the boundary's filter for the case) or alone.
#[derive(Clone, Copy)]
pub(super) struct Arm<'a> {
    pub(super) policy: &'a PolicySpec,
    pub(super) safety: Option<&'a SafetyConfig>,
}

impl Arm<'_> {
    /// Run the arm with the simulator `run` (a checked configuration's `simulate`).
    fn run(&self, cfg: &Config, run: impl FnOnce(&mut dyn Policy) -> Outcome) -> Result<RunResult, CompareError> {
        let mut nominal = build_spec(self.policy, cfg).map_err(CompareError::Policy)?;
        Ok(match self.safety {
            Some(safety) => {
                let mut f = SafetyFilter::new(safety.clone(), nominal)
                    .map_err(|e| CompareError::Boundary { case: String::new(), message: e.to_string() })?;
                let outcome = run(&mut f);
                RunResult { outcome, stats: Some(*f.stats()) }
            }
            None => RunResult { outcome: run(&mut nominal), stats: None },
        })
    }

    /// A stochastic run, its series recorded every `record`-th sample when given.
    pub(super) fn stochastic(&self, cfg: &Config, record: Option<usize>) -> Result<RunResult, CompareError> {
        let opts = RunOptions { record_every: record, progress: None };
        self.run(cfg, |p| safegate_sim::stochastic::simulate(cfg, p, opts))
    }

    /// The largest queue of one stepped-chain trial.
    pub(super) fn stepped_max(&self, cfg: &Config) -> Result<f64, CompareError> {
        Ok(self.run(cfg, |p| safegate_sim::stepped::simulate(cfg, p, RunOptions::default()))?.outcome.summary.queue_max)
    }
}

/// Metrics of one run that need its series.
pub(super) struct Trace {
    pub(super) max_queue: f64,
    beyond: f64,
    recovery: Recovery,
    recovery_sum: f64,
}

pub(super) fn trace_metrics(cfg: &Config, s: &Series, boundary_depth: f64) -> Trace {
    let beyond = share(s.queue.iter().filter(|&&q| q > boundary_depth).count() as f64, s.queue.len() as f64);
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

/// What an arm's runs of one case add up to.
pub(super) struct ArmRuns<'a> {
    /// The replications: run, trace metrics.
    pub(super) runs: Vec<(&'a RunResult, &'a Trace)>,
    /// Largest queues of the extra stepped trials (empty: use the replications').
    pub(super) exit_maxima: Vec<f64>,
}

/// The case's numbers an arm report is measured against.
pub(super) struct CaseFrame<'a> {
    pub(super) boundary: &'a Boundary,
    pub(super) capacity: f64,
    pub(super) physical_limit: f64,
    pub(super) inside_envelope: bool,
}

impl ArmRuns<'_> {
    /// The arm's report.
    pub(super) fn report(self, policy: &str, filtered: bool, frame: &CaseFrame<'_>) -> ArmReport {
        let b = frame.boundary;
        let eps = b.probability.epsilon;
        let eta = b.magnitude.as_ref().map_or(0.05, |m| m.eta);
        let rho = b.magnitude.as_ref().map(|m| m.rho);
        let boundary_depth = b.barrier.threshold * frame.capacity;
        let runs = &self.runs;
        let n = runs.len() as f64;
        let mean = |f: &dyn Fn(&RunResult, &Trace) -> f64| runs.iter().map(|(r, t)| f(r, t)).sum::<f64>() / n;
        let mean_opt = |f: &dyn Fn(&RunResult) -> Option<f64>| {
            let v: Vec<f64> = runs.iter().filter_map(|(r, _)| f(r)).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let goodput = mean(&|r, _| r.outcome.summary.cleared / r.outcome.summary.duration);
        let mut rec = Recovery { below_boundary: 0, drained: 0, dips: 0, mean_seconds: None };
        let mut rec_sum = 0.0;
        for (_, t) in runs {
            rec.below_boundary += t.recovery.below_boundary;
            rec.drained += t.recovery.drained;
            rec.dips += t.recovery.dips;
            rec_sum += t.recovery_sum;
        }
        rec.mean_seconds = (rec.drained > 0).then(|| rec_sum / rec.drained as f64);

        // Exits: the stepped trials when run, else the replications.
        let mut maxima: Vec<f64> = if self.exit_maxima.is_empty() {
            runs.iter().map(|(_, t)| t.max_queue).collect()
        } else {
            self.exit_maxima
        };
        let exits = maxima.iter().filter(|&&q| q > boundary_depth).count() as u64;
        let exit = Frequency::from_counts(exits, maxima.len() as u64);
        for m in maxima.iter_mut() {
            *m = (*m / frame.capacity - b.barrier.threshold).max(0.0);
        }
        let cvar = Cvar { estimate: empirical_cvar(&mut maxima, eta), eta, rho };
        let offered = mean(&|r, _| r.outcome.summary.offered);
        let rejected = mean(&|r, _| r.outcome.summary.rejected);
        let stats: Vec<&FilterStats> = runs.iter().filter_map(|(r, _)| r.stats.as_ref()).collect();
        let given_up_share = (!stats.is_empty()).then(|| {
            let g: f64 = stats.iter().map(|s| s.given_up).sum();
            let nom: f64 = stats.iter().map(|s| s.nominal_admitted).sum();
            share(g, nom)
        });
        let backup_fraction = (!stats.is_empty()).then(|| {
            let inf: u64 = stats.iter().map(|s| s.infeasible).sum();
            let d: u64 = stats.iter().map(|s| s.decisions).sum();
            share(inf as f64, d as f64)
        });
        // One verdict, the same as verify's, for filtered and unfiltered arms alike.
        let verdict = if frame.inside_envelope { exit.verdict(eps).label() } else { "outside envelope" };
        let limit = frame.physical_limit;
        ArmReport {
            policy: policy.to_string(),
            filtered,
            goodput,
            goodput_ratio: share(goodput, limit),
            backlog_time: mean(&|r, _| r.outcome.summary.backlog_time),
            sojourn_p50: mean_opt(&|r| r.outcome.summary.sojourn_p50),
            sojourn_p99: mean_opt(&|r| r.outcome.summary.sojourn_p99),
            recovery: rec,
            beyond_boundary: mean(&|_, t| t.beyond),
            exit_probability: exit,
            cvar,
            rejected_share: share(rejected, offered),
            given_up_share,
            backup_fraction,
            verdict,
        }
    }
}

/// `part / whole`, or NaN (`null` in JSON, `n/a` in a table) when that is no share: `whole`
/// is 0, negative or not finite, or the quotient is not finite. A 0 here would read as a
/// real 0 %, as `Verdict::share_of_limit` says of a limit of 0.
pub(super) fn share(part: f64, whole: f64) -> f64 {
    let r = part / whole;
    if whole > 0.0 && whole.is_finite() && r.is_finite() {
        r
    } else {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run offered nothing, under a filter that decided nothing, on a case whose physical
    /// limit is 0: every share has no denominator and says so (NaN, `null` in JSON), not
    /// 0.0, which a table cannot tell from a real 0 %.
    #[test]
    fn a_share_of_nothing_is_nan_and_null_not_zero() {
        let cfg = Config { traffic: 0.0, duration: 10.0, ..Config::default() };
        let opts = RunOptions { record_every: Some(1), progress: None };
        let outcome = safegate_sim::stochastic::simulate(&cfg, &mut safegate_core::Open, opts);
        assert_eq!(outcome.summary.offered, 0.0);
        let boundary = Boundary::default();
        let depth = boundary.barrier.threshold * cfg.pool.capacity;
        let trace = trace_metrics(&cfg, outcome.series.as_ref().unwrap(), depth);
        let run = RunResult { outcome, stats: Some(FilterStats::default()) };
        let frame =
            CaseFrame { boundary: &boundary, capacity: cfg.pool.capacity, physical_limit: 0.0, inside_envelope: false };
        let a = ArmRuns { runs: vec![(&run, &trace)], exit_maxima: Vec::new() }.report("open", true, &frame);
        assert!(a.rejected_share.is_nan(), "{}", a.rejected_share);
        assert!(a.goodput_ratio.is_nan(), "{}", a.goodput_ratio);
        assert!(a.given_up_share.is_some_and(f64::is_nan), "{:?}", a.given_up_share);
        assert!(a.backup_fraction.is_some_and(f64::is_nan), "{:?}", a.backup_fraction);
        let json = serde_json::to_value(&a).unwrap();
        for key in ["rejected_share", "goodput_ratio", "given_up_share", "backup_fraction"] {
            assert!(json[key].is_null(), "{key}: {}", json[key]);
        }
        // A real 0 % stays 0.
        assert_eq!(share(0.0, 5.0), 0.0);
        assert_eq!(json["beyond_boundary"], 0.0);
        for whole in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(share(1.0, whole).is_nan(), "{whole}");
        }
        assert!(trace_metrics(&cfg, &Series::default(), depth).beyond.is_nan());
    }
}
