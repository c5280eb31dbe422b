//! What `verify` reports.

use safegate_core::filter::bound::HorizonInputs;
use serde::Serialize;

use super::{Frequency, Nominal};

/// An empirical CVaR with its parameters.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Cvar {
    /// CVaR at tail η of the per-trajectory largest overshoot, barrier units.
    pub estimate: f64,
    /// η.
    pub eta: f64,
    /// ρ, if the boundary bounds it.
    pub rho: Option<f64>,
}

/// What one arm (filtered or not) did in one cell.
#[derive(Debug, Clone, Serialize)]
pub struct ArmResult {
    /// Exit frequency over the horizon.
    pub exit_probability: Frequency,
    /// CVaR of the overshoot.
    pub cvar: Cvar,
    /// Largest overshoot seen, barrier units.
    pub worst_overshoot: f64,
    /// Share of filter decisions that were feasible (1 unfiltered).
    pub feasible_fraction: f64,
    /// Share of filter decisions where the backup acted (0 unfiltered).
    pub backup_fraction: f64,
    /// Share of decisions where a constraint bound the nominal action.
    pub intervention_fraction: f64,
    /// Throughput the filter gave up [req/s] (0 unfiltered).
    pub throughput_given_up: f64,
    /// Admitted rate [req/s].
    pub admitted_rate: f64,
    /// Successful completions [req/s].
    pub goodput: f64,
    /// Time-averaged queue depth.
    pub mean_queue: f64,
}

/// One cell of the envelope.
#[derive(Debug, Clone, Serialize)]
pub struct CellResult {
    /// Base traffic λ [req/s].
    pub traffic: f64,
    /// Lowest health of the dips.
    pub health_low: f64,
    /// Under the filter.
    pub filtered: ArmResult,
    /// Without it.
    pub unfiltered: ArmResult,
}

/// Corollary 3 (joint enforcement cost floor), measured on the same seeds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CostFloor {
    /// Throughput given up with the probability constraint alone [req/s].
    pub probability_only: f64,
    /// Throughput given up with the probability and CVaR constraints [req/s].
    pub joint: f64,
    /// Whether `joint ≥ probability_only` (adding a constraint can only raise the cost).
    pub holds: bool,
}

/// The analytic side of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Analytic {
    /// ε of the boundary.
    pub epsilon: f64,
    /// Horizon T \[s\].
    pub horizon: f64,
    /// Decision steps in the horizon.
    pub steps: u64,
    /// Per-step ε of the chance constraint, `ε·dt/T`.
    pub step_epsilon: f64,
    /// The design bound: union over steps, `K·ε_step` (= ε; valid while every state is feasible).
    pub union_bound: f64,
    /// Freedman-type bound (Cosner et al. 2024) from an empty queue with α = 1, the prior
    /// σ_q and δ at the arrivals' 1e-12 quantile: a reference, often vacuous at long horizons.
    pub freedman: f64,
    /// Inputs of the Freedman bound.
    pub freedman_inputs: HorizonInputs,
}

/// What a verification concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Shown to hold: in every cell the filtered exit frequency's 99 % upper limit is at
    /// most ε and (with a CVaR bound) the CVaR is at most ρ.
    Pass,
    /// Shown not to hold: in some cell the exit frequency's 99 % lower limit is above ε, or
    /// the CVaR (over a tail of enough trajectories) is above ρ.
    Fail,
    /// Neither shown: too few trials for the intervals to clear ε (or the CVaR's tail to
    /// hold enough trajectories), and nothing shown to fail. Never a verdict on evidence
    /// that thin.
    Inconclusive,
}

impl Outcome {
    /// `pass`, `fail`, `inconclusive`.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// The boundary's name.
    pub boundary: Option<String>,
    /// The nominal controller.
    pub nominal: Nominal,
    /// Analytic bounds.
    pub analytic: Analytic,
    /// The scenario's own cell (its traffic and dip depth).
    pub scenario: CellResult,
    /// Every cell of the envelope grid.
    pub envelope: Vec<CellResult>,
    /// ε.
    pub epsilon: f64,
    /// Share of feasible decisions over the whole envelope (filtered arm).
    pub feasible_fraction: f64,
    /// Share of backup decisions over the whole envelope (filtered arm).
    pub backup_fraction: f64,
    /// Cells where the filtered arm does not hold ε ([`Verdict::Holds`](super::Verdict::Holds): its 99 % upper
    /// limit is above ε).
    pub violations: Vec<(f64, f64)>,
    /// Cells whose filtered CVaR exceeds ρ (judged only over a tail of at least
    /// [`MIN_TAIL_TRAJECTORIES`](super::MIN_TAIL_TRAJECTORIES) trajectories).
    pub cvar_violations: Vec<(f64, f64)>,
    /// Cells where the unfiltered arm is shown to violate ε ([`Verdict::Violates`](super::Verdict::Violates): its
    /// 99 % lower limit is above ε).
    pub unfiltered_violations: usize,
    /// Corollary 3 measured in the scenario's cell, when the boundary has a CVaR bound: the
    /// throughput given up with the probability constraint alone and with both.
    pub cost_floor: Option<CostFloor>,
    /// Trajectory-steps simulated.
    pub trajectory_steps: u64,
    /// "pass", "fail" or "inconclusive", with the reason.
    pub verdict: String,
    /// The verdict without its reason.
    pub outcome: Outcome,
    /// Whether it passes (`outcome` is [`Outcome::Pass`]).
    pub pass: bool,
}
