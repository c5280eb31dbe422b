//! The safety filter as a [`Policy`]: estimators, a nominal controller, the closed-form
//! filter and the backup, in one object any actuator can run.
//!
//! Every decision period `dt` (time passed in, never read) it
//! 1. updates its estimates from the observation's counters: offered rate λ̂, completion
//!    rate ŝ, retry rate r̂ (exponentially weighted), and the windowed mean and variance of
//!    the one-step queue surprise `e = q − (q₋ + dt·(u₋ + d̄₋))`;
//! 2. forms the state: drift `d̄ = r̂ − ŝ + max(0, ē)/dt` (a persistent positive surprise, such
//!    as service falling faster than ŝ follows, is added to the drift), `σ_q² = max(Var e,
//!    (λ̂ + ŝ + r̂)·dt)` and `σ₀² = max(Var e − u₋·dt, (ŝ + r̂)·dt)` (the Poisson variance
//!    of a step is the prior: the seed's "bootstrapping the boundary before any telemetry");
//! 3. asks the nominal controller for its action, and filters its admitted rate;
//! 4. if the filter is infeasible, applies the backup policy.
//!
//! Between decision instants (an actuator may ask at every arrival) it repeats the last
//! action. Counters of interventions, infeasible decisions and throughput given up are kept
//! for reports (`verify`) and metrics.

use crate::estimators::{EwmaRate, WindowedMoments};
use crate::filter::backup::{implicit_safe_depth_constant, BackupPolicy};
use crate::filter::{Barrier, Constraint, ConstraintKind, Decision, Filter, FilterError, FilterState};
use crate::policy::{Action, Observation, Policy};

/// Configuration of a [`SafetyFilter`] (usually built from a boundary file).
#[derive(Debug, Clone)]
pub struct SafetyConfig {
    /// The barrier.
    pub barrier: Barrier,
    /// Constraints to enforce (a `BackupSet` constraint's depth is kept up to date).
    pub constraints: Vec<Constraint>,
    /// Decision period [s].
    pub dt: f64,
    /// Decision periods of surprises in the σ window.
    pub window: usize,
    /// Time constant of the rate estimates [s].
    pub rate_tau: f64,
    /// What to do when no action satisfies every constraint.
    pub backup: BackupPolicy,
    /// Horizon of the backup-implicit safe set [s].
    pub backup_horizon: f64,
}

/// Counters of what the filter did.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct FilterStats {
    /// Decisions taken (one per period).
    pub decisions: u64,
    /// Decisions where a constraint bound the nominal action.
    pub interventions: u64,
    /// Decisions where no action satisfied every constraint (the backup acted).
    pub infeasible: u64,
    /// Decisions where the backup also shed retries or capped concurrency.
    pub backup_escalations: u64,
    /// Σ nominal admitted rate × dt [requests].
    pub nominal_admitted: f64,
    /// Σ throughput given up × dt [requests] (Corollary 3's cost, measured).
    pub given_up: f64,
    /// Interventions by the constraint that bound, in [`ConstraintKind`] order.
    pub bound_by: [u64; 8],
}

impl FilterStats {
    /// Share of decisions that were feasible.
    pub fn feasible_fraction(&self) -> f64 {
        if self.decisions == 0 {
            1.0
        } else {
            1.0 - self.infeasible as f64 / self.decisions as f64
        }
    }

    fn record(&mut self, d: &Decision, dt: f64) {
        self.decisions += 1;
        self.nominal_admitted += d.nominal * dt;
        self.given_up += d.given_up * dt;
        if !d.feasible {
            self.infeasible += 1;
        } else if let Some(k) = d.bound_by {
            self.interventions += 1;
            self.bound_by[kind_index(k)] += 1;
        }
    }
}

fn kind_index(k: ConstraintKind) -> usize {
    match k {
        ConstraintKind::Expectation => 0,
        ConstraintKind::Chance => 1,
        ConstraintKind::PoissonChance => 2,
        ConstraintKind::Bernstein => 3,
        ConstraintKind::Cvar => 4,
        ConstraintKind::RateOfClosure => 5,
        ConstraintKind::SlewRateOfClosure => 6,
        ConstraintKind::BackupSet => 7,
    }
}

/// A nominal controller wrapped by the safety filter.
///
/// # Examples
///
/// ```
/// use safegate_core::filter::{BackupPolicy, Barrier, Constraint};
/// use safegate_core::safety::{SafetyConfig, SafetyFilter};
/// use safegate_core::{Observation, Open, Policy};
///
/// let cfg = SafetyConfig {
///     barrier: Barrier::new(0.7, 200.0).unwrap(),
///     constraints: vec![Constraint::bernstein(1e-6, 0.0).unwrap()],
///     dt: 0.05,
///     window: 40,
///     rate_tau: 0.5,
///     backup: BackupPolicy::RejectAll,
///     backup_horizon: 10.0,
/// };
/// let mut f = SafetyFilter::new(cfg, Open).unwrap();
/// let mut obs = Observation::new(0.0, 20.0, 200.0);
/// obs.offered_rate = 80.0;
/// assert_eq!(f.decide(&obs).admit, 1.0); // far from θ·Q = 140: the nominal passes
/// obs.now = 0.05;
/// obs.queue = 139.0;
/// assert!(f.decide(&obs).admit < 0.5); // next to it: mostly rejected
/// ```
#[derive(Debug, Clone)]
pub struct SafetyFilter<N> {
    cfg: SafetyConfig,
    filter: Filter,
    nominal: N,
    offered: EwmaRate,
    completed: EwmaRate,
    retried: EwmaRate,
    surprise: WindowedMoments,
    next_decision: f64,
    last_t: Option<f64>,
    last_q: f64,
    last_admit_rate: f64,
    last_drift: f64,
    last_action: Action,
    last_decision: Option<Decision>,
    stats: FilterStats,
}

impl<N: Policy> SafetyFilter<N> {
    /// Wrap `nominal` in the filter described by `cfg`.
    pub fn new(cfg: SafetyConfig, nominal: N) -> Result<Self, FilterError> {
        let filter = Filter::new(cfg.barrier, &cfg.constraints)?.with_period(cfg.dt);
        let tau = cfg.rate_tau;
        Ok(Self {
            surprise: WindowedMoments::new(cfg.window),
            filter,
            nominal,
            offered: EwmaRate::new(tau, 0.0),
            completed: EwmaRate::new(tau, 0.0),
            retried: EwmaRate::new(tau, 0.0),
            next_decision: f64::NEG_INFINITY,
            last_t: None,
            last_q: 0.0,
            last_admit_rate: 0.0,
            last_drift: 0.0,
            last_action: Action::OPEN,
            last_decision: None,
            stats: FilterStats::default(),
            cfg,
        })
    }

    /// What the filter has done so far.
    pub fn stats(&self) -> &FilterStats {
        &self.stats
    }

    /// The last decision's record.
    pub fn last_decision(&self) -> Option<&Decision> {
        self.last_decision.as_ref()
    }

    /// The wrapped nominal controller.
    pub fn nominal(&self) -> &N {
        &self.nominal
    }

    /// The filter.
    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    fn decide_now(&mut self, obs: &Observation) -> Action {
        let dt = self.cfg.dt;
        let q = if obs.queue.is_finite() { obs.queue.max(0.0) } else { self.cfg.barrier.boundary() };
        let s_hat = self.completed.update(obs.now, obs.completed).max(0.0);
        // The offered and retry rates are estimated only when the actuator does not know
        // them / when retries happen: the common case costs nothing.
        let lambda = if obs.offered_rate > 0.0 && obs.offered_rate.is_finite() {
            obs.offered_rate
        } else {
            self.offered.update(obs.now, obs.offered).max(0.0)
        };
        let r_hat = if obs.retried > 0.0 || self.retried.get() != 0.0 {
            self.retried.update(obs.now, obs.retried).max(0.0)
        } else {
            0.0
        };

        if let Some(t0) = self.last_t {
            let step = obs.now - t0;
            if step > 0.0 {
                let predicted = self.last_q + step * (self.last_admit_rate + self.last_drift);
                self.surprise.push(q - predicted);
            }
        }
        // Expected completions and retries; a positive mean surprise is drift we missed.
        let bias = self.surprise.mean().max(0.0) / dt;
        let drift = r_hat - s_hat + bias;
        let var = self.surprise.variance();
        let prior = (lambda + s_hat + r_hat) * dt;
        let sigma = var.max(prior).sqrt();
        let var0 = (var - self.last_admit_rate * dt).max((s_hat + r_hat) * dt);

        let horizon = self.cfg.backup_horizon;
        let backup_drift = match self.cfg.backup {
            BackupPolicy::RejectAll => r_hat - s_hat,
            BackupPolicy::RejectAllShedRetries { .. } => -s_hat,
        };
        self.filter.set_backup_depth(implicit_safe_depth_constant(backup_drift, self.cfg.barrier.boundary(), horizon));

        let state = FilterState {
            queue: q,
            dt,
            drift,
            sigma,
            var0,
            prev_admit: self.last_admit_rate,
            prev_drift: self.last_drift,
        };
        let nominal_action = self.nominal.decide(obs);
        let nominal_admit = if nominal_action.admit.is_nan() { 0.0 } else { nominal_action.admit.clamp(0.0, 1.0) };
        let d = self.filter.decide(&state, nominal_admit * lambda, lambda);
        self.stats.record(&d, dt);

        let mut action = Action {
            admit: if lambda > 0.0 {
                (d.admit_rate / lambda).clamp(0.0, 1.0)
            } else {
                nominal_admit.min(if d.feasible { 1.0 } else { 0.0 })
            },
            concurrency: nominal_action.concurrency,
            shed_retries: nominal_action.shed_retries,
        };
        if !d.feasible {
            action.admit = 0.0;
            if let BackupPolicy::RejectAllShedRetries { concurrency } = self.cfg.backup {
                if r_hat >= s_hat {
                    action.shed_retries = true;
                    if concurrency.is_some() {
                        action.concurrency = concurrency;
                    }
                    self.stats.backup_escalations += 1;
                }
            }
        }
        self.last_t = Some(obs.now);
        self.last_q = q;
        self.last_admit_rate = d.admit_rate;
        self.last_drift = drift;
        self.last_decision = Some(d);
        self.last_action = action;
        action
    }
}

impl<N: Policy> Policy for SafetyFilter<N> {
    #[inline]
    fn decide(&mut self, obs: &Observation) -> Action {
        if obs.now.is_nan() {
            return Action { admit: 0.0, ..self.last_action };
        }
        if obs.now + 1e-9 >= self.next_decision {
            self.next_decision = if self.next_decision.is_finite() && obs.now < self.next_decision + self.cfg.dt {
                self.next_decision + self.cfg.dt
            } else {
                obs.now + self.cfg.dt
            };
            return self.decide_now(obs);
        }
        self.last_action
    }

    fn name(&self) -> &'static str {
        "filtered"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Open;

    fn cfg(constraints: Vec<Constraint>) -> SafetyConfig {
        SafetyConfig {
            barrier: Barrier::new(0.7, 200.0).unwrap(),
            constraints,
            dt: 0.05,
            window: 40,
            rate_tau: 0.5,
            backup: BackupPolicy::RejectAllShedRetries { concurrency: Some(4) },
            backup_horizon: 10.0,
        }
    }

    fn obs(now: f64, q: f64) -> Observation {
        let mut o = Observation::new(now, q, 200.0);
        o.offered_rate = 80.0;
        o
    }

    #[test]
    fn decides_once_per_period_and_repeats_between() {
        let mut f = SafetyFilter::new(cfg(vec![Constraint::bernstein(1e-6, 0.0).unwrap()]), Open).unwrap();
        f.decide(&obs(0.0, 10.0));
        f.decide(&obs(0.01, 139.0));
        f.decide(&obs(0.02, 139.0));
        assert_eq!(f.stats().decisions, 1);
        f.decide(&obs(0.05, 139.0));
        assert_eq!(f.stats().decisions, 2);
    }

    #[test]
    fn nan_and_garbage_observations_give_a_safe_action() {
        let mut f = SafetyFilter::new(cfg(vec![Constraint::bernstein(1e-6, 0.0).unwrap()]), Open).unwrap();
        for (i, q) in [f64::NAN, f64::INFINITY, -5.0, 1e300].into_iter().enumerate() {
            let mut o = obs(i as f64 * 0.05, q);
            o.completed = f64::NAN;
            let a = f.decide(&o);
            assert!((0.0..=1.0).contains(&a.admit), "{q}: {a:?}");
        }
    }

    #[test]
    fn retries_outrunning_service_escalate_the_backup() {
        let mut f = SafetyFilter::new(cfg(vec![Constraint::bernstein(1e-6, 0.0).unwrap()]), Open).unwrap();
        let mut a = Action::OPEN;
        for k in 0..100 {
            let t = k as f64 * 0.05;
            let mut o = obs(t, 139.5);
            o.completed = 10.0 * t;
            o.retried = 12.0 * t; // clients retrying timed-out work: retries beat service
            a = f.decide(&o);
        }
        assert_eq!(a.admit, 0.0);
        assert!(a.shed_retries && a.concurrency == Some(4), "{a:?}");
        assert!(f.stats().infeasible > 0 && f.stats().backup_escalations > 0);
    }
}
