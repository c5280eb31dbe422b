//! F16 and F17: the joint filter over the shipped boundary's envelope.
//!
//! The shipped boundary `boundaries/seed-80.toml` (queue ≤ 0.7·Q, ε = 1 % over 600 s by
//! Bernstein per 50 ms decision, CVaR at η = 0.05 of the overshoot ≤ ρ = 0.05, the
//! reject-all-shed-retries backup with its backup-set constraint) on the seed's pool in the
//! stepped stochastic chain, as `safegate verify` runs it, over a grid of the envelope
//! (traffic 40–120 req/s × lowest dip health 0.1–1.0, the health cycle), the open
//! controller as the nominal one. Four filter arms run on the same trajectories' seeds
//! (common random numbers, so differences are paired):
//! - **joint**: the shipped boundary;
//! - **probability only**: its `[magnitude]` removed (Definition 3 alone);
//! - **tight**: the CVaR bound tightened to η = 0.001, ρ = 0 (Corollary 3's trade made
//!   visible: a tighter magnitude bound must cost throughput if it binds);
//! - **no backup set**: the joint constraints without the backup-set constraint; when no
//!   action satisfies them, the last-resort backup (reject all, shed retries) still acts, so
//!   the trajectories stay where the shipped filter keeps them and the share of decisions
//!   with an empty feasible set is the two-constraint problem's own;
//! - **no backup**: the same constraints, and when no action satisfies them the nominal
//!   action passes unchanged (a filter with no backup has no answer of its own): what
//!   happens without the backup.
//!
//! F16 reads how often the CVaR constraint is the one that binds and the throughput given
//! up against the probability-only arm; F17 reads the share of decisions with an empty
//! feasible set (no backup set) and the exits without any backup.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use safegate_core::boundary::{Boundary, MagnitudeSection};
use safegate_core::safety::{SafetyConfig, SafetyFilter};
use safegate_core::stats::{empirical_cvar, Frequency};
use safegate_core::{Action, Observation, Open, Policy};
use serde::Serialize;

use super::{Criterion, Effort, Evidence, Figure, Outcome, Verdict};
use crate::health::HealthSchedule;
use crate::{Config, RunOptions};

/// The shipped boundary.
const SEED_80: &str = include_str!("../../../../boundaries/seed-80.toml");

/// Share of decisions below which a constraint "rarely or never" binds.
pub const RARELY: f64 = 0.001;

/// The filter arms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FilterArm {
    /// The shipped boundary.
    Joint,
    /// Without `[magnitude]`.
    ProbabilityOnly,
    /// CVaR at η = 0.001 bounded by ρ = 0.
    Tight,
    /// The joint constraints without the backup-set constraint; reject-all when infeasible.
    NoBackupSet,
    /// The joint constraints without the backup-set constraint, the nominal action when
    /// infeasible.
    NoBackup,
}

impl FilterArm {
    /// Every arm, in order.
    pub const ALL: [FilterArm; 5] =
        [FilterArm::Joint, FilterArm::ProbabilityOnly, FilterArm::Tight, FilterArm::NoBackupSet, FilterArm::NoBackup];

    /// Its boundary.
    pub fn boundary(self) -> Boundary {
        let mut b = Boundary::from_toml(SEED_80, &[]).expect("the shipped boundary parses");
        match self {
            FilterArm::Joint => {}
            FilterArm::ProbabilityOnly => b.magnitude = None,
            FilterArm::Tight => {
                b.magnitude = Some(MagnitudeSection { eta: 0.001, rho: 0.0, ..MagnitudeSection::default() })
            }
            FilterArm::NoBackupSet | FilterArm::NoBackup => b.backup.constrain = false,
        }
        b
    }
}

/// The filter with no backup: when no action satisfies every constraint, the nominal
/// controller's action passes unchanged (its `decide` is called again for it, so the nominal
/// must be stateless, as [`Open`] is).
#[derive(Debug)]
struct FailOpen(SafetyFilter<Open>);

impl Policy for FailOpen {
    fn decide(&mut self, obs: &Observation) -> Action {
        let a = self.0.decide(obs);
        match self.0.last_decision() {
            Some(d) if !d.feasible => self.0.nominal_mut().decide(obs),
            _ => a,
        }
    }
    fn name(&self) -> &'static str {
        "fail-open"
    }
}

/// One trajectory under one arm.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Trial {
    /// Whether the queue crossed the boundary.
    pub exit: bool,
    /// Filter decisions.
    pub decisions: u64,
    /// Decisions with no feasible action.
    pub infeasible: u64,
    /// Feasible decisions where the CVaR constraint bound the action.
    pub cvar_bound: u64,
    /// Throughput given up to the filter \[req/s\].
    pub given_up: f64,
    /// Largest overshoot `max (q/Q − θ)⁺` \[barrier units\].
    pub overshoot: f64,
}

/// One arm in one cell.
#[derive(Debug, Clone, Serialize)]
pub struct ArmCell {
    /// The arm.
    pub arm: FilterArm,
    /// Offered traffic λ \[req/s\].
    pub traffic: f64,
    /// Lowest health of the dips.
    pub health_low: f64,
    /// Its trajectories, in trial order.
    pub trials: Vec<Trial>,
}

/// Every arm over every cell.
#[derive(Debug, Clone, Serialize)]
pub struct FilterRuns {
    /// Horizon of a trajectory \[s\].
    pub horizon: f64,
    /// ε of the boundary.
    pub epsilon: f64,
    /// Runs, arm by arm, cell by cell (cells in the same order for every arm).
    pub cells: Vec<ArmCell>,
}

impl FilterRuns {
    /// The runs of `arm`.
    pub fn arm(&self, arm: FilterArm) -> impl Iterator<Item = &ArmCell> {
        self.cells.iter().filter(move |c| c.arm == arm)
    }

    /// Sum of `f` over every trial of `arm`.
    pub fn sum(&self, arm: FilterArm, f: impl Fn(&Trial) -> u64) -> u64 {
        self.arm(arm).flat_map(|c| &c.trials).map(f).sum()
    }

    /// Paired mean and standard error of `given_up(a) − given_up(b)` over every trial.
    pub fn given_up_diff(&self, a: FilterArm, b: FilterArm) -> (f64, f64) {
        let d: Vec<f64> = self
            .arm(a)
            .zip(self.arm(b))
            .flat_map(|(x, y)| x.trials.iter().zip(&y.trials).map(|(p, q)| p.given_up - q.given_up))
            .collect();
        let n = d.len().max(1) as f64;
        let m = d.iter().sum::<f64>() / n;
        let var = d.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0).max(1.0);
        (m, (var / n).sqrt())
    }

    /// Mean throughput given up under `arm` \[req/s\].
    pub fn given_up(&self, arm: FilterArm) -> f64 {
        let v: Vec<f64> = self.arm(arm).flat_map(|c| c.trials.iter().map(|t| t.given_up)).collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    }

    /// Empirical CVaR at η = 0.05 of the overshoot under `arm`, all cells pooled.
    pub fn cvar(&self, arm: FilterArm) -> f64 {
        let mut v: Vec<f64> = self.arm(arm).flat_map(|c| c.trials.iter().map(|t| t.overshoot)).collect();
        empirical_cvar(&mut v, 0.05)
    }

    /// Exit frequency under `arm`, all cells pooled.
    pub fn exits(&self, arm: FilterArm) -> Frequency {
        let n = self.arm(arm).map(|c| c.trials.len() as u64).sum();
        Frequency::from_counts(self.sum(arm, |t| u64::from(t.exit)), n)
    }
}

fn grid(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    match n {
        0 | 1 => vec![lo],
        _ => (0..n).map(|i| lo + (hi - lo) * i as f64 / (n - 1) as f64).collect(),
    }
}

fn trial_seed(seed: u64, cell: u64, trial: u64) -> u64 {
    let mut z =
        seed ^ 0x00F1_6F17 ^ cell.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ trial.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^ (z >> 31)
}

fn one(cfg: &Config, safety: &SafetyConfig, arm: FilterArm, boundary: f64, theta: f64, capacity: f64) -> Trial {
    let filter = SafetyFilter::new(safety.clone(), Open).expect("a validated boundary builds its filter");
    let (summary, st) = if arm == FilterArm::NoBackup {
        let mut p = FailOpen(filter);
        let s = crate::stepped::simulate(cfg, &mut p, RunOptions::default()).summary;
        (s, *p.0.stats())
    } else {
        let mut p = filter;
        let s = crate::stepped::simulate(cfg, &mut p, RunOptions::default()).summary;
        (s, *p.stats())
    };
    Trial {
        exit: summary.queue_max > boundary,
        decisions: st.decisions,
        infeasible: st.infeasible,
        cvar_bound: st.bound_by.cvar,
        given_up: st.given_up / cfg.duration,
        overshoot: (summary.queue_max / capacity - theta).max(0.0),
    }
}

/// Run every arm over the envelope grid; `progress` is told the fraction done.
pub fn measure(effort: &Effort, progress: &(dyn Fn(f64) + Sync)) -> FilterRuns {
    let shipped = FilterArm::Joint.boundary();
    let mut base = Config::default();
    let capacity = shipped.barrier.capacity.unwrap_or(base.pool.capacity);
    base.dt = shipped.decision.period;
    base.duration = shipped.probability.horizon;
    base.initial_queue = 0.0;
    let theta = shipped.barrier.threshold;
    let boundary = theta * capacity;
    let env = &shipped.envelope;
    let mut cells = Vec::new();
    for t in grid(env.traffic[0], env.traffic[1], effort.traffic_points) {
        for h in grid(env.health[0], env.health[1], effort.health_points) {
            cells.push((t, h));
        }
    }
    let trials = effort.filter_trials.max(1);
    let total = (cells.len() * FilterArm::ALL.len()) as f64 * trials as f64;
    let done = AtomicU64::new(0);
    let mut out = Vec::new();
    for arm in FilterArm::ALL {
        let safety = arm.boundary().safety_config(capacity).expect("the shipped boundary's variants are valid");
        for (i, &(traffic, low)) in cells.iter().enumerate() {
            let mut cfg = base.clone();
            cfg.traffic = traffic;
            if let HealthSchedule::Cycle(s) | HealthSchedule::Dip { shape: s, .. } = &mut cfg.health.schedule {
                s.low = low.min(s.high);
            }
            let runs: Vec<Trial> = (0..trials)
                .into_par_iter()
                .map(|k| {
                    let c = Config { seed: trial_seed(effort.seed, i as u64, k), ..cfg.clone() };
                    let t = one(&c, &safety, arm, boundary, theta, capacity);
                    let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if d % 16 == 0 {
                        progress(d as f64 / total);
                    }
                    t
                })
                .collect();
            out.push(ArmCell { arm, traffic, health_low: low, trials: runs });
        }
    }
    progress(1.0);
    FilterRuns { horizon: base.duration, epsilon: shipped.probability.epsilon, cells: out }
}

/// F16's verdict from the runs.
pub fn judge_f16(r: &FilterRuns) -> (Verdict, String) {
    let share = |arm| r.sum(arm, |t| t.cvar_bound) as f64 / r.sum(arm, |t| t.decisions).max(1) as f64;
    let (joint, tight) = (share(FilterArm::Joint), share(FilterArm::Tight));
    let (dj, sj) = r.given_up_diff(FilterArm::Joint, FilterArm::ProbabilityOnly);
    let (dt, st) = r.given_up_diff(FilterArm::Tight, FilterArm::ProbabilityOnly);
    let measurable = |d: f64, se: f64| d > 0.0 && d > 3.0 * se;
    if measurable(dj, sj) || measurable(dt, st) {
        (
            Verdict::Holds,
            format!(
                "the CVaR constraint binds in {:.3} % of decisions at the shipped ρ and {:.2} % when tightened, and tightening it gives up {dt:+.3} ± {st:.3} req/s more than the probability bound alone (paired, {:.1} standard errors): the condition (both bounds free to tighten) is not met",
                joint * 100.0,
                tight * 100.0,
                dt / st.max(1e-300)
            ),
        )
    } else if joint < RARELY && tight < RARELY {
        (
            Verdict::Falsified,
            format!(
                "the CVaR constraint binds in {:.3} % (shipped) and {:.3} % (tightened) of decisions and costs no measurable throughput: the condition (it rarely or never binds) is met",
                joint * 100.0,
                tight * 100.0
            ),
        )
    } else {
        (
            Verdict::Inconclusive,
            format!(
                "the CVaR constraint binds ({:.3} % shipped, {:.2} % tightened) but its throughput cost ({dt:+.3} ± {st:.3} req/s) is within 3 paired standard errors of zero",
                joint * 100.0,
                tight * 100.0
            ),
        )
    }
}

/// F17's verdict from the runs.
pub fn judge_f17(r: &FilterRuns) -> (Verdict, String) {
    let decisions = r.sum(FilterArm::NoBackupSet, |t| t.decisions);
    let infeasible = r.sum(FilterArm::NoBackupSet, |t| t.infeasible);
    let open = r.sum(FilterArm::NoBackup, |t| t.infeasible);
    if decisions == 0 {
        return (Verdict::Inconclusive, "no decisions were made".into());
    }
    let (with, without) = (r.exits(FilterArm::Joint), r.exits(FilterArm::NoBackup));
    if infeasible == 0 && open == 0 {
        (
            Verdict::Falsified,
            format!("all {decisions} decisions of the two-constraint problem had a feasible action, with and without a backup: the condition (always feasible across the envelope) is met"),
        )
    } else {
        (
            Verdict::Holds,
            format!(
                "{:.2} % of the two-constraint problem's decisions ({infeasible} of {decisions}) have no action meeting both constraints; with no backup at all, trajectories leave the safe set in {} of {} (with the shipped backup: {} of {}): the condition (always feasible without a backup) is not met",
                infeasible as f64 / decisions as f64 * 100.0,
                without.exits,
                without.trials,
                with.exits,
                with.trials
            ),
        )
    }
}

fn setup_line(r: &FilterRuns, effort: &Effort) -> String {
    let cells = r.arm(FilterArm::Joint).count();
    format!(
        "shipped seed-80 boundary in the stepped chain, {} s trajectories, {cells} envelope cells (λ 40–120 × dips to 0.1–1.0), {} trajectories per cell and arm, same seeds across arms",
        r.horizon, effort.filter_trials
    )
}

/// Both criteria from the runs.
pub fn criteria(r: &FilterRuns, effort: &Effort) -> Vec<Criterion> {
    let share = |arm, f: fn(&Trial) -> u64| r.sum(arm, f) as f64 / r.sum(arm, |t| t.decisions).max(1) as f64;
    let (v16, why16) = judge_f16(r);
    let (v17, why17) = judge_f17(r);
    let (dj, sj) = r.given_up_diff(FilterArm::Joint, FilterArm::ProbabilityOnly);
    let (dt, st) = r.given_up_diff(FilterArm::Tight, FilterArm::ProbabilityOnly);
    let f16 = Criterion {
        id: "F16".into(),
        claim: "over the running case's envelope the CVaR constraint rarely or never binds against the probability constraint, so tightening one costs the other nothing measurable".into(),
        experiment: setup_line(r, effort),
        evidence: vec![
            Evidence::new("extra given up, tightened − probability only", dt, format!("req/s (paired se {st:.4})")),
            Evidence::new("decisions bound by CVaR, shipped ρ = 0.05", share(FilterArm::Joint, |t| t.cvar_bound), "share"),
            Evidence::new("decisions bound by CVaR, tightened (η = 0.001, ρ = 0)", share(FilterArm::Tight, |t| t.cvar_bound), "share"),
            Evidence::new("throughput given up, probability only", r.given_up(FilterArm::ProbabilityOnly), "req/s"),
            Evidence::new("throughput given up, shipped joint", r.given_up(FilterArm::Joint), "req/s"),
            Evidence::new("throughput given up, tightened joint", r.given_up(FilterArm::Tight), "req/s"),
            Evidence::new("extra given up, shipped − probability only", dj, format!("req/s (paired se {sj:.4})")),
            Evidence::new("CVaR_0.05 of the overshoot, probability only", r.cvar(FilterArm::ProbabilityOnly), "barrier units"),
            Evidence::new("CVaR_0.05 of the overshoot, tightened", r.cvar(FilterArm::Tight), "barrier units"),
        ],
        verdict: v16,
        reason: why16,
    };
    let with = r.exits(FilterArm::Joint);
    let without = r.exits(FilterArm::NoBackup);
    let worst = r
        .arm(FilterArm::NoBackupSet)
        .map(|c| {
            let d: u64 = c.trials.iter().map(|t| t.decisions).sum();
            let i: u64 = c.trials.iter().map(|t| t.infeasible).sum();
            (i as f64 / d.max(1) as f64, c.traffic, c.health_low)
        })
        .fold((0.0, f64::NAN, f64::NAN), |a, b| if b.0 > a.0 { b } else { a });
    let any = |arm| {
        let cells: Vec<&ArmCell> = r.arm(arm).collect();
        let n: usize = cells.iter().map(|c| c.trials.len()).sum();
        cells.iter().flat_map(|c| &c.trials).filter(|t| t.infeasible > 0).count() as f64 / n.max(1) as f64
    };
    let f17 = Criterion {
        id: "F17".into(),
        claim: "the per-step problem enforcing both the probability and the CVaR constraint always has a feasible action across the envelope, with no backup policy".into(),
        experiment: setup_line(r, effort),
        evidence: vec![
            Evidence::new("decisions with no feasible action, two constraints (no backup set)", share(FilterArm::NoBackupSet, |t| t.infeasible), "share"),
            Evidence::new("trajectories with at least one such decision", any(FilterArm::NoBackupSet), "share"),
            Evidence::new(
                "worst cell's infeasible share, two constraints",
                worst.0,
                format!("share (λ = {:.0}, dips to {:.2})", worst.1, worst.2),
            ),
            Evidence::new("decisions with no feasible action, shipped (with the backup-set constraint)", share(FilterArm::Joint, |t| t.infeasible), "share"),
            Evidence::new("decisions with no feasible action, no backup (nominal passes)", share(FilterArm::NoBackup, |t| t.infeasible), "share"),
            Evidence::new(
                "trajectories leaving the safe set, no backup",
                without.estimate,
                format!("share, {} of {} (99 % CI {:.4}–{:.4}; ε = {})", without.exits, without.trials, without.ci_low, without.ci_high, r.epsilon),
            ),
            Evidence::new(
                "trajectories leaving the safe set, with the backup",
                with.estimate,
                format!("share, {} of {} (99 % CI {:.4}–{:.4})", with.exits, with.trials, with.ci_low, with.ci_high),
            ),
        ],
        verdict: v17,
        reason: why17,
    };
    vec![f16, f17]
}

/// F16 alone.
pub fn f16(effort: &Effort) -> Criterion {
    criteria(&measure(effort, &|_| {}), effort).remove(0)
}

/// F17 alone.
pub fn f17(effort: &Effort) -> Criterion {
    criteria(&measure(effort, &|_| {}), effort).remove(1)
}

/// Both, with a figure of the throughput given up per traffic level.
pub(super) fn run(effort: &Effort, progress: &(dyn Fn(f64) + Sync)) -> Outcome {
    let r = measure(effort, progress);
    let mut fig = Figure::new(
        "f16-given-up",
        "F16: throughput given up to the filter, by traffic (deepest dip)",
        "offered traffic λ [req/s]",
        "given up [req/s]",
    );
    let low = r.cells.iter().map(|c| c.health_low).fold(f64::INFINITY, f64::min);
    for (arm, name) in [
        (FilterArm::ProbabilityOnly, "probability only"),
        (FilterArm::Joint, "joint, shipped ρ"),
        (FilterArm::Tight, "joint, tightened"),
    ] {
        let cells: Vec<&ArmCell> = r.arm(arm).filter(|c| c.health_low == low).collect();
        fig = fig.line(
            name,
            cells.iter().map(|c| c.traffic).collect(),
            cells
                .iter()
                .map(|c| c.trials.iter().map(|t| t.given_up).sum::<f64>() / c.trials.len().max(1) as f64)
                .collect(),
        );
    }
    Outcome { criteria: criteria(&r, effort), figures: vec![fig] }
}
