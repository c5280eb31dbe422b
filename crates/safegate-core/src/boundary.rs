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

use crate::error::{check, RangeError};
use crate::filter::constraint::MAX_RHO;
use crate::filter::{Backup, Barrier, Constraint};
use crate::limits::{budget, MAX_RATE, MAX_STEPS};

/// Smallest ε a boundary may state: below it no Monte-Carlo check could ever show it, and
/// the per-step ε (`ε·dt/T`) stays far from floating-point underflow.
pub const MIN_EPSILON: f64 = 1e-12;
use crate::safety::{ConcurrencyInput, SafetyConfig, MAX_PERIOD, MAX_WINDOW, MIN_PERIOD};

/// `[barrier]`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
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
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum CvarModel {
    /// Worst case over all laws with the estimated mean and variance (Corollary 2).
    #[default]
    WorstCase,
    /// Gaussian CVaR.
    Gaussian,
}

/// `[magnitude]`: Corollary 2's CVaR bound.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
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
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct DisturbanceSection {
    /// The model ("bernstein").
    pub model: DisturbanceModel,
    /// Seconds of one-step surprises in the σ estimate (2).
    pub window: f64,
    /// Where σ comes from: `"poisson"` (the Poisson prior as a floor, the seed's open
    /// queue) or `"measured"` (the measured net change per period alone once half the
    /// window is full: a request/response service, docs/math.md §Noise). Unset: the
    /// actuator's own default (the simulator `poisson`, the tower layer `measured`).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub noise: Option<NoiseSource>,
}

impl Default for DisturbanceSection {
    fn default() -> Self {
        Self { model: DisturbanceModel::Bernstein, window: 2.0, noise: None }
    }
}

/// `[disturbance] noise`: see [`Noise`](crate::safety::Noise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum NoiseSource {
    /// The Poisson prior `(λ + ŝ)·dt` is a floor under the measured variance.
    #[default]
    Poisson,
    /// The measured variance alone, once half the σ window is full.
    Measured,
}

impl NoiseSource {
    /// The filter's [`Noise`](crate::safety::Noise) for a σ window of `window` periods.
    pub fn for_window(self, window: usize) -> crate::safety::Noise {
        match self {
            NoiseSource::Poisson => crate::safety::Noise::Poisson,
            NoiseSource::Measured => crate::safety::Noise::Measured { min_periods: (window / 2).max(2) },
        }
    }
}

/// `[expectation]`: the discrete-time CBF condition `E[h⁺] ≥ α·h`, `α = exp(−dt/τ)`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct ExpectationSection {
    /// τ \[s\].
    pub tau: f64,
}

/// `[rate_of_closure]`: Definition 4.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct RateOfClosureSection {
    /// γ₀ ∈ (0, 1]: the share of the margin that may close per step.
    pub gamma0: f64,
    /// γ₁ ∈ (0, 1]: with it, the slew-limited second-order form.
    pub gamma1: Option<f64>,
}

/// `[envelope]`: the operating range the boundary is claimed for.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
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

/// `[decision]`: how often the filter decides.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
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
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
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
    pub backup: Backup,
    /// `[envelope]`.
    pub envelope: EnvelopeSection,
    /// `[concurrency]` (optional): the cap as the filter's second input.
    pub concurrency: Option<ConcurrencyInput>,
    /// `[decision]`.
    pub decision: DecisionSection,
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

    /// Parse a boundary from TOML text, with `key.path = value` overrides (see
    /// [`crate::config_file::parse`]). Unknown keys and wrong types name their path; values
    /// are range-checked by [`Boundary::validate`].
    #[cfg(feature = "toml")]
    pub fn from_toml(text: &str, overrides: &[(String, String)]) -> Result<Self, crate::error::ParseError> {
        crate::config_file::parse(text, overrides)
    }

    /// Check every value (`capacity` is the system's queue capacity, used when the file has
    /// none). The error names the field by its dotted path.
    pub fn validate(&self, capacity: f64) -> Result<(), RangeError> {
        let b = &self.barrier;
        if b.signal != "queue" {
            return Err(RangeError::new("barrier.signal", format!("{:?}", b.signal), "\"queue\""));
        }
        check::threshold("barrier.threshold", b.threshold)?;
        check::capacity("barrier.capacity", b.capacity.unwrap_or(capacity))?;
        let p = &self.probability;
        check::within("probability.epsilon", p.epsilon, MIN_EPSILON, 1.0 - f64::EPSILON, "[1e-12, 1)")?;
        check::within("probability.horizon", p.horizon, MIN_PERIOD, 1e9, "[1e-4, 1e9] seconds")?;
        check::decay("probability.decay", p.decay)?;
        if let Some(m) = &self.magnitude {
            check::within("magnitude.eta", m.eta, 1e-9, 1.0 - f64::EPSILON, "[1e-9, 1)")?;
            check::within("magnitude.rho", m.rho, 0.0, MAX_RHO, "[0, 1e6] (barrier units: 0.1 = 10 % of capacity)")?;
        }
        let dc = &self.decision;
        check::within(
            "decision.period",
            dc.period,
            MIN_PERIOD,
            MAX_PERIOD.min(p.horizon),
            "[1e-4, min(3600, probability.horizon)] seconds",
        )?;
        check::positive("decision.rate_tau", dc.rate_tau)?;
        budget(
            "probability.horizon",
            p.horizon,
            p.horizon / dc.period,
            MAX_STEPS,
            "probability.horizon / decision.period decision steps",
        )?;
        let d = &self.disturbance;
        check::positive("disturbance.window", d.window)?;
        if d.window / dc.period > MAX_WINDOW as f64 {
            return Err(RangeError::new(
                "disturbance.window",
                d.window,
                format!(
                    "at most {MAX_WINDOW} decision periods (≤ {} s at decision.period = {})",
                    MAX_WINDOW as f64 * dc.period,
                    dc.period
                ),
            ));
        }
        if let Some(e) = &self.expectation {
            check::positive("expectation.tau", e.tau)?;
        }
        if let Some(r) = &self.rate_of_closure {
            check::gain("rate_of_closure.gamma0", r.gamma0)?;
            if let Some(g1) = r.gamma1 {
                check::gain("rate_of_closure.gamma1", g1)?;
            }
        }
        self.backup.check().map_err(|e| e.at("backup"))?;
        let e = &self.envelope;
        if !(e.traffic[0] >= 0.0 && e.traffic[0] <= e.traffic[1] && e.traffic[1] <= MAX_RATE) {
            return Err(RangeError::new(
                "envelope.traffic",
                format!("{:?}", e.traffic),
                "[low, high] with 0 ≤ low ≤ high ≤ 1e7 req/s",
            ));
        }
        if !(e.health[0] >= 0.0 && e.health[0] <= e.health[1] && e.health[1] <= 1.0) {
            return Err(RangeError::new("envelope.health", format!("{:?}", e.health), "[low, high] within [0, 1]"));
        }
        if let Some(c) = &self.concurrency {
            c.check().map_err(|e| e.at("concurrency"))?;
        }
        Ok(())
    }

    /// Validate and build the filter's configuration for a queue of `capacity`.
    pub fn safety_config(&self, capacity: f64) -> Result<SafetyConfig, RangeError> {
        self.validate(capacity)?;
        let q = self.barrier.capacity.unwrap_or(capacity);
        let barrier = Barrier::new(self.barrier.threshold, q).map_err(|e| e.at("barrier"))?;
        let eps = self.step_epsilon();
        let decay = self.probability.decay;
        let dt = self.decision.period;
        let at = |prefix: &'static str| move |e: RangeError| e.at(prefix);
        let mut constraints = vec![match self.disturbance.model {
            DisturbanceModel::Bernstein => Constraint::bernstein(eps, decay),
            DisturbanceModel::Gaussian => Constraint::gaussian(eps, decay),
            DisturbanceModel::Cantelli => Constraint::cantelli(eps, decay),
            DisturbanceModel::Poisson => Constraint::poisson(eps, decay),
        }
        .map_err(at("probability"))?];
        if let Some(m) = &self.magnitude {
            constraints.push(
                match m.model {
                    CvarModel::WorstCase => Constraint::cvar_worst_case(m.eta, m.rho, q),
                    CvarModel::Gaussian => Constraint::cvar_gaussian(m.eta, m.rho, q),
                }
                .map_err(at("magnitude"))?,
            );
        }
        if let Some(e) = &self.expectation {
            constraints.push(Constraint::expectation(e.tau, dt).map_err(at("expectation"))?);
        }
        if let Some(r) = &self.rate_of_closure {
            let c = match r.gamma1 {
                Some(g1) => Constraint::slew_rate_of_closure(r.gamma0, g1),
                None => Constraint::rate_of_closure(r.gamma0),
            };
            constraints.push(c.map_err(at("rate_of_closure"))?);
        }
        if self.backup.constrain {
            constraints.push(Constraint::BackupSet { depth: barrier.boundary() });
        }
        let window = ((self.disturbance.window / dt).round() as usize).max(2);
        let cfg = SafetyConfig {
            barrier,
            constraints,
            dt,
            window,
            rate_tau: self.decision.rate_tau,
            backup: self.backup,
            concurrency: self.concurrency,
            noise: self.disturbance.noise.unwrap_or_default().for_window(window),
            stall_memory: self.probability.horizon,
        };
        cfg.check()?;
        Ok(cfg)
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

    /// A decision period finer than any clock (its step count would not fit in memory) and a
    /// horizon of 2e13 decision steps are refused, naming the input.
    #[test]
    fn sizes_derived_from_a_boundary_fit_a_budget() {
        let mut b = Boundary::default();
        b.decision.period = 1e-12;
        assert_eq!(b.validate(200.0).unwrap_err().field, "decision.period");
        let mut b = Boundary::default();
        b.probability.horizon = 1e12;
        assert_eq!(b.validate(200.0).unwrap_err().field, "probability.horizon");
        b.probability.horizon = 1e9;
        let e = b.validate(200.0).unwrap_err();
        assert_eq!(e.field, "probability.horizon");
        assert!(e.allowed.contains("2e10") && e.allowed.contains("at most 1e8"), "{e}");
        let mut b = Boundary::default();
        b.disturbance.window = 1e9;
        assert_eq!(b.validate(200.0).unwrap_err().field, "disturbance.window");
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
        b.backup.policy = crate::filter::BackupPolicy::RejectAllShedRetries { concurrency: Some(0) };
        assert_eq!(b.validate(200.0).unwrap_err().field, "backup.concurrency");
        let mut b = Boundary::default();
        b.barrier.signal = "latency".into();
        assert!(b.validate(200.0).unwrap_err().to_string().contains("barrier.signal"));
    }
}
