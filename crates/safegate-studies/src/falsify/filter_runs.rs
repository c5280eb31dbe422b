//! The filter runs behind F16 and F17: the joint filter over the shipped boundary's
//! envelope.
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
//! [`super::feasibility`] reads them: F16 how often the CVaR constraint is the one that binds
//! and the throughput given up against the probability-only arm, F17 the share of decisions
//! with an empty feasible set (no backup set) and the exits without any backup.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use safegate_core::boundary::{Boundary, MagnitudeSection};
use safegate_core::safety::{SafetyConfig, SafetyFilter};
use safegate_core::stats::{empirical_cvar, Frequency};
use safegate_core::{Action, Observation, Open, Policy};
use serde::Serialize;

use super::Effort;
use safegate_sim::health::HealthSchedule;
use safegate_sim::{Config, RunOptions};

/// The shipped boundary.
const SEED_80: &str = include_str!("../../../../boundaries/seed-80.toml");

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
        let s = safegate_sim::stepped::simulate(cfg, &mut p, RunOptions::default()).summary;
        (s, *p.0.stats())
    } else {
        let mut p = filter;
        let s = safegate_sim::stepped::simulate(cfg, &mut p, RunOptions::default()).summary;
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
