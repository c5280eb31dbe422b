//! The boundary: the reviewable object a reviewer approves once (the seed, "Why a Rulebook
//! Cannot Do This Job" and "Compute Your Own Boundary, a Checklist").
//!
//! A boundary states the barrier (which signal, threshold θ), the probability ε of ever
//! leaving the safe set within a horizon T, the disturbance model that probability is
//! computed under, optionally a CVaR tail η and bound ρ on how far an excursion may go, the
//! backup policy for states where no action satisfies both, and the operating envelope
//! (traffic, health) it is claimed for. [`Boundary::safety_config`] turns it into the filter.
//!
//! The horizon guarantee is built from per-step chance constraints by the union bound:
//! `P(exit within K = T/dt steps) ≤ K·ε_step`, so `ε_step = ε·dt/T`, valid while every visited
//! state is feasible (docs/math.md §Union bound over the horizon); the backup covers the
//! rest, and `safegate verify`
//! measures what actually happens.

use serde::{Deserialize, Serialize};

use crate::filter::{BackupPolicy, Barrier, Constraint};
use crate::safety::SafetyConfig;

/// `[barrier]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BarrierSection {
    /// The signal the barrier reads (only `"queue"`: occupancy of the backlog).
    pub signal: String,
    /// θ, the occupancy the queue must stay at or below (0.7).
    pub threshold: f64,
    /// Q, the queue capacity; defaults to the system's.
    pub capacity: Option<f64>,
}

impl Default for BarrierSection {
    fn default() -> Self {
        Self { signal: "queue".into(), threshold: 0.7, capacity: None }
    }
}

/// `[probability]`: Definition 3's ε over a horizon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProbabilitySection {
    /// ε, the tolerated probability of ever leaving the safe set within the horizon (0.01).
    pub epsilon: f64,
    /// T, the horizon \[s\] (600).
    pub horizon: f64,
    /// α of the per-step chance constraint `P[h⁺ ≥ α·h] ≥ 1 − ε_step` (0: the pure form).
    pub decay: f64,
}

impl Default for ProbabilitySection {
    fn default() -> Self {
        Self { epsilon: 0.01, horizon: 600.0, decay: 0.0 }
    }
}

/// How CVaR is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CvarModel {
    /// Worst case over all laws with the estimated mean and variance (Corollary 2).
    #[default]
    WorstCase,
    /// Gaussian CVaR.
    Gaussian,
}

/// `[magnitude]`: Corollary 2's CVaR bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MagnitudeSection {
    /// η, the tail fraction (0.05).
    pub eta: f64,
    /// ρ, the largest tolerated CVaR of the overshoot `−h` in barrier units (0.1 = 10 % of Q).
    pub rho: f64,
    /// "worst-case" (default) or "gaussian".
    pub model: CvarModel,
}

impl Default for MagnitudeSection {
    fn default() -> Self {
        Self { eta: 0.05, rho: 0.1, model: CvarModel::WorstCase }
    }
}

/// The disturbance model the chance constraint is computed under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum DisturbanceModel {
    /// Bernstein's inequality for unit-jump counts (Poisson arrivals and completions): an
    /// exact tail bound at any ε (default).
    #[default]
    Bernstein,
    /// Gaussian quantile: exact only for Gaussian noise; under-states Poisson tails at small ε.
    Gaussian,
    /// Cantelli: any law with the estimated variance; very conservative at small ε.
    Cantelli,
    /// Poisson admissions with a Gaussian quantile (docs/math.md §Chance constraints).
    Poisson,
}

/// `[disturbance]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DisturbanceSection {
    /// The model ("bernstein").
    pub model: DisturbanceModel,
    /// Seconds of one-step surprises in the σ estimate (2).
    pub window: f64,
}

impl Default for DisturbanceSection {
    fn default() -> Self {
        Self { model: DisturbanceModel::Bernstein, window: 2.0 }
    }
}

/// `[expectation]`: the discrete-time CBF condition `E[h⁺] ≥ α·h`, `α = exp(−dt/τ)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectationSection {
    /// τ \[s\].
    pub tau: f64,
}

/// `[rate_of_closure]`: Definition 4.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateOfClosureSection {
    /// γ₀ ∈ (0, 1]: the share of the margin that may close per step.
    pub gamma0: f64,
    /// γ₁ ∈ (0, 1]: with it, the slew-limited second-order form.
    pub gamma1: Option<f64>,
}

/// Backup policy names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BackupName {
    /// Reject all new work.
    #[default]
    RejectAll,
    /// Reject all; if retries out-run service, also shed retries and cap concurrency.
    RejectAllShedRetries,
}

/// `[backup]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BackupSection {
    /// The policy ("reject-all").
    pub policy: BackupName,
    /// Concurrency cap while escalated (reject-all-shed-retries only).
    pub concurrency: Option<u32>,
    /// Horizon of the backup-implicit safe set \[s\] (10).
    pub horizon: f64,
    /// Add the backup-set constraint `u ≤ (q_I − q)/dt − d̄` (true).
    pub constrain: bool,
}

impl Default for BackupSection {
    fn default() -> Self {
        Self { policy: BackupName::RejectAll, concurrency: None, horizon: 10.0, constrain: true }
    }
}

/// `[envelope]`: the operating range the boundary is claimed for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EnvelopeSection {
    /// Base traffic range [req/s] ([40, 120]).
    pub traffic: [f64; 2],
    /// Lowest health of the dips, range ([0.1, 1.0]).
    pub health: [f64; 2],
}

impl Default for EnvelopeSection {
    fn default() -> Self {
        Self { traffic: [40.0, 120.0], health: [0.1, 1.0] }
    }
}

/// `[concurrency]`: the filter may also move the pool's concurrency cap (a second input).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConcurrencySection {
    /// Executors in the pool, the cap when the nominal controller sets none (8).
    pub executors: u32,
    /// `w` in the filter's objective `(u_nom − u)² + w·(n − n_nom)²` [(req/s)² per
    /// executor²] (1: moving the cap by k executors costs as much as giving up k req/s).
    pub weight: f64,
    /// Samples a service-curve bin needs before it is trusted (40: two seconds at 50 ms).
    pub min_samples: u64,
    /// The contention knee `C` of the declared curve shape `n·min(1, (C/n)²)`, used for
    /// caps not yet learned (none: learned caps only).
    pub knee: Option<f64>,
}

impl Default for ConcurrencySection {
    fn default() -> Self {
        let d = crate::safety::ConcurrencyInput::default();
        Self { executors: d.executors, weight: d.weight, min_samples: d.min_samples, knee: d.knee }
    }
}

/// `[decision]`: how often the filter decides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DecisionSection {
    /// Decision period dt \[s\] (0.05).
    pub period: f64,
    /// Time constant of the rate estimates \[s\] (0.5).
    pub rate_tau: f64,
}

impl Default for DecisionSection {
    fn default() -> Self {
        Self { period: 0.05, rate_tau: 0.5 }
    }
}

/// A boundary file. Sections default to the values shown; `[magnitude]`, `[expectation]`
/// and `[rate_of_closure]` are off unless present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Boundary {
    /// A short name.
    pub name: Option<String>,
    /// What it promises, in words.
    pub description: Option<String>,
    /// `[barrier]`.
    pub barrier: BarrierSection,
    /// `[probability]`.
    pub probability: ProbabilitySection,
    /// `[magnitude]` (optional).
    pub magnitude: Option<MagnitudeSection>,
    /// `[disturbance]`.
    pub disturbance: DisturbanceSection,
    /// `[expectation]` (optional).
    pub expectation: Option<ExpectationSection>,
    /// `[rate_of_closure]` (optional).
    pub rate_of_closure: Option<RateOfClosureSection>,
    /// `[backup]`.
    pub backup: BackupSection,
    /// `[envelope]`.
    pub envelope: EnvelopeSection,
    /// `[concurrency]` (optional): the cap as the filter's second input.
    pub concurrency: Option<ConcurrencySection>,
    /// `[decision]`.
    pub decision: DecisionSection,
}

/// A value of a boundary file out of range.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundaryError {
    /// Dotted path (`probability.epsilon`).
    pub field: String,
    /// The value, as text.
    pub value: String,
    /// The allowed range.
    pub allowed: String,
}

impl std::fmt::Display for BoundaryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {} is out of range: allowed {}", self.field, self.value, self.allowed)
    }
}

impl std::error::Error for BoundaryError {}

fn err(field: &str, value: impl std::fmt::Display, allowed: &str) -> BoundaryError {
    BoundaryError { field: field.into(), value: value.to_string(), allowed: allowed.into() }
}

impl Boundary {
    /// Per-step ε by the union bound over the horizon: `ε·dt/T`.
    pub fn step_epsilon(&self) -> f64 {
        self.probability.epsilon * self.decision.period / self.probability.horizon
    }

    /// Number of decision steps in the horizon.
    pub fn horizon_steps(&self) -> u64 {
        (self.probability.horizon / self.decision.period).round() as u64
    }

    /// Check every value (`capacity` is the system's queue capacity, used when the file has
    /// none).
    pub fn validate(&self, capacity: f64) -> Result<(), BoundaryError> {
        let b = &self.barrier;
        if b.signal != "queue" {
            return Err(err("barrier.signal", format!("{:?}", b.signal), "\"queue\""));
        }
        if !(b.threshold > 0.0 && b.threshold < 1.0) {
            return Err(err("barrier.threshold", b.threshold, "(0, 1)"));
        }
        let q = b.capacity.unwrap_or(capacity);
        if !(q > 0.0 && q.is_finite()) {
            return Err(err("barrier.capacity", q, "(0, ∞)"));
        }
        let p = &self.probability;
        if !(p.epsilon > 0.0 && p.epsilon < 1.0) {
            return Err(err("probability.epsilon", p.epsilon, "(0, 1)"));
        }
        if !(p.horizon > 0.0 && p.horizon.is_finite()) {
            return Err(err("probability.horizon", p.horizon, "(0, ∞) seconds"));
        }
        if !(0.0..1.0).contains(&p.decay) {
            return Err(err("probability.decay", p.decay, "[0, 1)"));
        }
        if let Some(m) = &self.magnitude {
            if !(m.eta > 0.0 && m.eta < 1.0) {
                return Err(err("magnitude.eta", m.eta, "(0, 1)"));
            }
            if !(m.rho >= 0.0 && m.rho.is_finite()) {
                return Err(err("magnitude.rho", m.rho, "[0, ∞) (barrier units: 0.1 = 10 % of capacity)"));
            }
        }
        let d = &self.disturbance;
        if !(d.window > 0.0 && d.window.is_finite()) {
            return Err(err("disturbance.window", d.window, "(0, ∞) seconds"));
        }
        if let Some(e) = &self.expectation {
            if !(e.tau > 0.0 && e.tau.is_finite()) {
                return Err(err("expectation.tau", e.tau, "(0, ∞) seconds"));
            }
        }
        if let Some(r) = &self.rate_of_closure {
            if !(r.gamma0 > 0.0 && r.gamma0 <= 1.0) {
                return Err(err("rate_of_closure.gamma0", r.gamma0, "(0, 1]"));
            }
            if let Some(g1) = r.gamma1 {
                if !(g1 > 0.0 && g1 <= 1.0) {
                    return Err(err("rate_of_closure.gamma1", g1, "(0, 1]"));
                }
            }
        }
        let bk = &self.backup;
        if !(bk.horizon >= 0.0 && bk.horizon.is_finite()) {
            return Err(err("backup.horizon", bk.horizon, "[0, ∞) seconds"));
        }
        if bk.concurrency == Some(0) {
            return Err(err("backup.concurrency", 0, "an integer ≥ 1"));
        }
        if bk.concurrency.is_some() && bk.policy != BackupName::RejectAllShedRetries {
            return Err(err(
                "backup.concurrency",
                bk.concurrency.unwrap_or(0),
                "only with policy = \"reject-all-shed-retries\"",
            ));
        }
        let e = &self.envelope;
        if !(e.traffic[0] >= 0.0 && e.traffic[0] <= e.traffic[1] && e.traffic[1].is_finite()) {
            return Err(err("envelope.traffic", format!("{:?}", e.traffic), "[low, high] with 0 ≤ low ≤ high"));
        }
        if !(e.health[0] >= 0.0 && e.health[0] <= e.health[1] && e.health[1] <= 1.0) {
            return Err(err("envelope.health", format!("{:?}", e.health), "[low, high] within [0, 1]"));
        }
        if let Some(c) = &self.concurrency {
            if !(1..=1_000_000).contains(&c.executors) {
                return Err(err("concurrency.executors", c.executors, "an integer in [1, 1000000]"));
            }
            if !(c.weight >= 0.0 && c.weight.is_finite()) {
                return Err(err("concurrency.weight", c.weight, "[0, ∞)"));
            }
            if let Some(k) = c.knee {
                if !(k > 0.0 && k.is_finite()) {
                    return Err(err("concurrency.knee", k, "(0, ∞)"));
                }
            }
            if c.min_samples == 0 {
                return Err(err("concurrency.min_samples", c.min_samples, "1 or more"));
            }
        }
        let dc = &self.decision;
        if !(dc.period > 0.0 && dc.period <= p.horizon) {
            return Err(err("decision.period", dc.period, "(0, probability.horizon]"));
        }
        if !(dc.rate_tau > 0.0 && dc.rate_tau.is_finite()) {
            return Err(err("decision.rate_tau", dc.rate_tau, "(0, ∞) seconds"));
        }
        Ok(())
    }

    /// Validate and build the filter's configuration for a queue of `capacity`.
    pub fn safety_config(&self, capacity: f64) -> Result<SafetyConfig, BoundaryError> {
        self.validate(capacity)?;
        let q = self.barrier.capacity.unwrap_or(capacity);
        let barrier =
            Barrier::new(self.barrier.threshold, q).map_err(|e| err("barrier.threshold", e.value, e.allowed))?;
        let eps = self.step_epsilon();
        let decay = self.probability.decay;
        let dt = self.decision.period;
        let conv = |e: crate::ConfigError| err(&format!("probability.{}", e.field), e.value, e.allowed);
        let mut constraints = vec![match self.disturbance.model {
            DisturbanceModel::Bernstein => Constraint::bernstein(eps, decay).map_err(conv)?,
            DisturbanceModel::Gaussian => Constraint::gaussian(eps, decay).map_err(conv)?,
            DisturbanceModel::Cantelli => Constraint::cantelli(eps, decay).map_err(conv)?,
            DisturbanceModel::Poisson => Constraint::poisson(eps, decay).map_err(conv)?,
        }];
        if let Some(m) = &self.magnitude {
            let conv = |e: crate::ConfigError| err(&format!("magnitude.{}", e.field), e.value, e.allowed);
            constraints.push(match m.model {
                CvarModel::WorstCase => Constraint::cvar_worst_case(m.eta, m.rho, q).map_err(conv)?,
                CvarModel::Gaussian => Constraint::cvar_gaussian(m.eta, m.rho, q).map_err(conv)?,
            });
        }
        if let Some(e) = &self.expectation {
            constraints
                .push(Constraint::expectation(e.tau, dt).map_err(|x| err("expectation.tau", x.value, x.allowed))?);
        }
        if let Some(r) = &self.rate_of_closure {
            let c = match r.gamma1 {
                Some(g1) => Constraint::slew_rate_of_closure(r.gamma0, g1),
                None => Constraint::rate_of_closure(r.gamma0),
            };
            constraints.push(c.map_err(|x| err(&format!("rate_of_closure.{}", x.field), x.value, x.allowed))?);
        }
        if self.backup.constrain {
            constraints.push(Constraint::BackupSet { depth: barrier.boundary() });
        }
        let backup = match self.backup.policy {
            BackupName::RejectAll => BackupPolicy::RejectAll,
            BackupName::RejectAllShedRetries => {
                BackupPolicy::RejectAllShedRetries { concurrency: self.backup.concurrency }
            }
        };
        Ok(SafetyConfig {
            barrier,
            constraints,
            dt,
            window: ((self.disturbance.window / dt).round() as usize).max(2),
            rate_tau: self.decision.rate_tau,
            backup,
            backup_horizon: self.backup.horizon,
            concurrency: self.concurrency.as_ref().map(|c| crate::safety::ConcurrencyInput {
                executors: c.executors,
                weight: c.weight,
                min_samples: c.min_samples,
                knee: c.knee,
                ..crate::safety::ConcurrencyInput::default()
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_build_a_filter() {
        let b = Boundary::default();
        let c = b.safety_config(200.0).unwrap();
        assert_eq!(c.barrier.boundary(), 140.0);
        assert_eq!(c.constraints.len(), 2); // Bernstein + backup set
        assert!((b.step_epsilon() - 0.01 * 0.05 / 600.0).abs() < 1e-18);
        assert_eq!(b.horizon_steps(), 12_000);
    }

    #[test]
    fn every_section_adds_its_constraint() {
        let b = Boundary {
            magnitude: Some(MagnitudeSection::default()),
            expectation: Some(ExpectationSection { tau: 5.0 }),
            rate_of_closure: Some(RateOfClosureSection { gamma0: 0.2, gamma1: Some(0.5) }),
            ..Boundary::default()
        };
        assert_eq!(b.safety_config(200.0).unwrap().constraints.len(), 5);
    }

    #[test]
    fn bad_values_name_the_field() {
        let mut b = Boundary::default();
        b.probability.epsilon = 1.5;
        assert_eq!(b.validate(200.0).unwrap_err().field, "probability.epsilon");
        let mut b = Boundary::default();
        b.envelope.health = [0.5, 0.2];
        assert_eq!(b.validate(200.0).unwrap_err().field, "envelope.health");
        let mut b = Boundary::default();
        b.backup.concurrency = Some(4);
        assert_eq!(b.validate(200.0).unwrap_err().field, "backup.concurrency");
        let mut b = Boundary::default();
        b.barrier.signal = "latency".into();
        assert!(b.validate(200.0).unwrap_err().to_string().contains("barrier.signal"));
    }
}
