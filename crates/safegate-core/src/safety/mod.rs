//! The safety filter as a [`Policy`]: estimators, a nominal controller, the closed-form
//! filter and the backup, in one object any actuator can run.
//!
//! Every decision period `dt` (time passed in, never read) it
//! 1. updates its estimates from the observation's counters: offered rate λ̂, completion
//!    rate ŝ, retry rate r̂ (exponentially weighted), and the windowed mean and variance of
//!    the one-step queue surprise `e = q − (q₋ + dt·(u₋ + d̄₋))`;
//! 2. forms the state: drift `d̄ = r̂ − s_now + max(0, ē)/dt` (a persistent positive surprise,
//!    such as service falling faster than ŝ follows, is added to the drift; `s_now` is ŝ
//!    unless the period that just ended was a stall, [`stalled`], and with the cap as a
//!    second input it is the next period's service at the nominal's cap), `σ_q² = max(Var e,
//!    (λ̂ + ŝ + r̂)·dt)` and `σ₀² = max(Var e − u₋·dt, (ŝ + r̂)·dt)` (the Poisson variance
//!    of a step is the prior: the seed's "bootstrapping the boundary before any telemetry");
//! 3. asks the nominal controller for its action, and filters its admitted rate;
//! 4. if the filter is infeasible, applies the backup policy.
//!
//! Between decision instants (an actuator may ask at every arrival) it repeats the last
//! action. Counters of interventions, infeasible decisions and throughput given up are kept
//! for reports (`verify`) and metrics.

mod cap;
mod config;
mod regime;
mod stats;

pub use config::{ConcurrencyInput, Noise, SafetyConfig, MAX_PERIOD, MAX_WINDOW, MIN_PERIOD};
pub use regime::{stalled, surged, STALL_CONFIRM, STALL_Z};
pub use stats::{BoundBy, FilterStats};

use crate::estimators::{EwmaRate, ServiceCurve, WindowedMoments};
use crate::filter::backup::{implicit_safe_depth_constant, BackupPolicy};
use crate::filter::{ConstraintKind, Decision, Filter, FilterError, FilterState};
use crate::policy::{Action, Observation, Policy};

/// Decisions more than this many periods apart are a gap: the later one's surprise is not
/// pushed (see `decide_now`).
pub const GAP_PERIODS: f64 = 2.0;

/// A nominal controller wrapped by the safety filter.
///
/// # Examples
///
/// ```
/// use safegate_core::filter::{Backup, Barrier, Constraint};
/// use safegate_core::safety::{SafetyConfig, SafetyFilter};
/// use safegate_core::{Observation, Open, Policy};
///
/// let cfg = SafetyConfig {
///     barrier: Barrier::new(0.7, 200.0).unwrap(),
///     constraints: vec![Constraint::bernstein(1e-6, 0.0).unwrap()],
///     dt: 0.05,
///     window: 40,
///     rate_tau: 0.5,
///     backup: Backup::default(),
///     concurrency: None,
///     noise: Default::default(),
///     stall_memory: 600.0,
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
    /// The net change of the queue per period, kept with [`Noise::Measured`] only.
    net: Option<WindowedMoments>,
    next_decision: f64,
    last_t: Option<f64>,
    last_q: f64,
    last_admit_rate: f64,
    /// The offered rate the previous decision took (0: it knew none).
    last_lambda: f64,
    last_drift: f64,
    last_action: Action,
    last_decision: Option<Decision>,
    last_sigma: f64,
    stats: FilterStats,
    curve: Option<ServiceCurve>,
    /// `1/dt`, so a decision needs no division.
    inv_dt: f64,
    /// Busy executors at the previous decision (the curve's learning).
    last_busy: f64,
    /// Completions at the previous decision: the curve's learning and the stall test.
    last_done: f64,
    /// Offers at the previous decision (the surge test; kept when the actuator does not
    /// give the offered rate).
    last_offered: f64,
    /// The busy count averaged over `rate_tau` as `ŝ` is: the count `ŝ` was measured at.
    busy_avg: f64,
    /// The declared shape of the busy count, `shape(n, C)`, averaged as `ŝ` is (with a
    /// knee): the scale of the unlearned bins, `μ̂(n) = ŝ·shape(n)/avg shape`.
    shape_avg: f64,
    /// The boundary's chance constraints alone, judged in the stall regime (no completions
    /// within the step); `None` without one or with `stall_memory` 0.
    stall_filter: Option<Filter>,
    /// Stalled periods in a row, up to the one that just ended.
    stall_run: u32,
    /// When the last stall was confirmed (two stalled periods in a row).
    stall_seen: f64,
}

impl<N: Policy> SafetyFilter<N> {
    /// Wrap `nominal` in the filter described by `cfg`; a value out of range
    /// ([`SafetyConfig::check`], [`crate::filter::Constraint::check`]) is refused.
    pub fn new(cfg: SafetyConfig, nominal: N) -> Result<Self, FilterError> {
        cfg.check()?;
        let filter = Filter::new(cfg.barrier, &cfg.constraints)?.with_period(cfg.dt);
        let chance: Vec<_> = cfg
            .constraints
            .iter()
            .filter(|c| {
                matches!(c.kind(), ConstraintKind::Chance | ConstraintKind::PoissonChance | ConstraintKind::Bernstein)
            })
            .cloned()
            .collect();
        let stall_filter = if chance.is_empty() || cfg.stall_memory == 0.0 {
            None
        } else {
            Some(Filter::new(cfg.barrier, &chance)?.with_period(cfg.dt))
        };
        let tau = cfg.rate_tau;
        Ok(Self {
            surprise: WindowedMoments::new(cfg.window),
            net: matches!(cfg.noise, Noise::Measured { .. }).then(|| WindowedMoments::new(cfg.window)),
            filter,
            nominal,
            offered: EwmaRate::new(tau, 0.0),
            completed: EwmaRate::new(tau, 0.0),
            retried: EwmaRate::new(tau, 0.0),
            next_decision: f64::NEG_INFINITY,
            last_t: None,
            last_q: 0.0,
            last_admit_rate: 0.0,
            last_lambda: 0.0,
            last_drift: 0.0,
            last_action: Action::OPEN,
            last_decision: None,
            last_sigma: f64::NAN,
            stats: FilterStats::default(),
            curve: cfg.concurrency.and_then(|c| {
                ServiceCurve::new(c.executors.max(1) as usize, c.alpha).ok().map(|s| s.with_min_samples(c.min_samples))
            }),
            last_busy: f64::NAN,
            last_done: f64::NAN,
            last_offered: f64::NAN,
            busy_avg: f64::NAN,
            shape_avg: f64::NAN,
            stall_filter,
            stall_run: 0,
            stall_seen: f64::NEG_INFINITY,
            inv_dt: 1.0 / cfg.dt,
            cfg,
        })
    }

    /// The pool's declared knee, when the cap is a second input and declares one.
    fn knee(&self) -> Option<f64> {
        self.cfg.concurrency.and_then(|ci| ci.knee)
    }

    /// What the filter has done so far.
    pub fn stats(&self) -> &FilterStats {
        &self.stats
    }

    /// The last decision's record.
    pub fn last_decision(&self) -> Option<&Decision> {
        self.last_decision.as_ref()
    }

    /// The one-step noise `σ_q` \[requests\] of the last decision (NaN before the first).
    pub fn last_sigma(&self) -> f64 {
        self.last_sigma
    }

    /// The wrapped nominal controller.
    pub fn nominal(&self) -> &N {
        &self.nominal
    }

    /// The wrapped nominal controller, mutably (an actuator that runs the nominal itself
    /// hands the filter its proposal through a nominal that returns it).
    pub fn nominal_mut(&mut self) -> &mut N {
        &mut self.nominal
    }

    /// The filter.
    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// The learned service curve (when the concurrency cap is a second input).
    pub fn service_curve(&self) -> Option<&ServiceCurve> {
        self.curve.as_ref()
    }

    fn decide_now(&mut self, obs: &Observation) -> Action {
        self.learn_curve(obs);
        let dt = self.cfg.dt;
        let q = if crate::finite(obs.queue) { obs.queue.max(0.0) } else { self.cfg.barrier.boundary() };
        let s_before = self.completed.get().max(0.0);
        let s_hat = self.completed.update(obs.now, obs.completed).max(0.0);
        // The offered and retry rates are estimated only when the actuator does not know
        // them / when retries happen: the common case costs nothing.
        let lambda = if (obs.offered_rate > 0.0) & (obs.offered_rate <= f64::MAX) {
            obs.offered_rate
        } else {
            self.estimate_offered(obs)
        };
        let r_hat = if obs.retried > 0.0 || self.retried.get() != 0.0 {
            self.retried.update(obs.now, obs.retried).max(0.0)
        } else {
            0.0
        };

        // The service rate of the next period: `ŝ`, unless the period that just ended was a
        // stall (see [`stalled`]), whose own rate then stands for it.
        let mut s_now = s_hat;
        if let Some(t0) = self.last_t {
            let step = obs.now - t0;
            if step > 0.0 && step <= GAP_PERIODS * dt {
                let done = obs.completed - self.last_done;
                if done >= 0.0 && stalled(done, s_before * step) {
                    s_now = done / step;
                    self.stats.stalls += 1;
                    self.stall_run += 1;
                    if self.stall_run == STALL_CONFIRM {
                        self.stats.stall_episodes += 1;
                    }
                    if self.stall_run >= STALL_CONFIRM {
                        self.stall_seen = obs.now;
                    }
                } else {
                    self.stall_run = 0;
                }
                let w = 1.0 - (-step / self.cfg.rate_tau).exp();
                if crate::finite(obs.in_service) {
                    self.busy_avg += w * (obs.in_service.max(0.0) - self.busy_avg);
                    if let Some(c) = self.knee() {
                        self.shape_avg += w * (config::shape(obs.in_service.max(0.0), c) - self.shape_avg);
                    }
                }
            }
            // The prediction is one period's: after a gap of more than two periods without a
            // decision (an actuator that decides only when requests come, as the tower layer
            // does, after an idle spell) the linear prediction over the gap has nothing to
            // do with the noise (the queue emptied long before), and its surprise would sit
            // in the window for a whole window, inflating σ until no admission is safe.
            //
            // Nor after a decision that knew no offered rate (the first, when the actuator
            // does not give it): its admitted fraction was applied to offers whose rate it
            // did not know, so its `u₋ = 0` predicts nothing (the first period of a live run
            // at 1,800 offers/s left a surprise of +46 that held σ up, and the filter
            // infeasible at an empty queue, for the window's 2 s).
            if step > 0.0 && step <= GAP_PERIODS * dt && self.last_lambda > 0.0 {
                let predicted = self.last_q + step * (self.last_admit_rate + self.last_drift);
                self.surprise.push(q - predicted);
                if let Some(net) = self.net.as_mut() {
                    net.push(q - self.last_q);
                }
            }
        }
        // Garbage (NaN) included: the next period's count is then NaN too, which neither the
        // stall test nor the curve takes.
        self.last_done = obs.completed;
        if !crate::finite(self.busy_avg) && crate::finite(obs.in_service) {
            self.busy_avg = obs.in_service.max(0.0);
            if let Some(c) = self.knee() {
                self.shape_avg = config::shape(obs.in_service.max(0.0), c);
            }
        }
        // With the cap as a second input and a knee declared, a busy count past the knee
        // clears at most what the curve says it does: `ŝ` follows over `rate_tau`, and a
        // pool whose busy count has just risen past the knee (a nominal with no cap over a
        // growing backlog) clears less at once (on PostgreSQL: 31, 50, 65 busy within
        // 0.15 s while `ŝ` still held the 820 jobs/s of the periods at a few busy; docs/math.md
        // §The concurrency cap). Below the knee a small busy count is a light load, not a
        // slow pool, and `ŝ` stands.
        if let (Some(ci), Some(c)) = (self.cfg.concurrency, self.knee()) {
            if obs.in_service > c && obs.in_service <= ci.executors as f64 {
                let busy = obs.in_service.round() as u32;
                if let Some(mu) = self.predict_service(busy, f64::INFINITY, s_hat, obs.health, &ci) {
                    s_now = s_now.min(mu);
                }
            }
        }
        // Expected completions and retries; a positive mean surprise is drift we missed.
        let bias = self.surprise.mean().max(0.0) * self.inv_dt;
        let drift = r_hat - s_now + bias;
        let var = self.surprise.variance();
        // docs/math.md §Noise. Measured: the variance of the net change per period (about
        // its own mean, so neither the drift nor the rate estimates' lag enters it) once
        // the window holds enough; the Poisson and Bernstein forms add the admissions'
        // own `u·dt` back to `σ₀²`.
        let measured = match (self.cfg.noise, &self.net) {
            (Noise::Measured { min_periods }, Some(net)) if net.len() >= min_periods => Some(net.variance()),
            _ => None,
        };
        let (sigma, var0) = match measured {
            Some(v) => (v.sqrt(), (v - self.last_admit_rate * dt).max(0.0)),
            None => {
                let prior = (lambda + s_hat + r_hat) * dt;
                (var.max(prior).sqrt(), (var - self.last_admit_rate * dt).max((s_hat + r_hat) * dt))
            }
        };

        let horizon = self.cfg.backup.horizon;
        let backup_drift = match self.cfg.backup.policy {
            BackupPolicy::RejectAll => r_hat - s_hat,
            BackupPolicy::RejectAllShedRetries { .. } => -s_hat,
        };
        self.filter.set_backup_depth(implicit_safe_depth_constant(backup_drift, self.cfg.barrier.boundary(), horizon));

        let nominal_action = self.nominal.decide(obs);
        let nominal_admit = if nominal_action.admit.is_nan() { 0.0 } else { nominal_action.admit.clamp(0.0, 1.0) };
        // With the cap as a second input, the nominal's cap is part of its proposal and is
        // judged by what it does to the next period's service: lifting a cap over a
        // backlog lets it all start at once, which past the knee clears less, not more
        // (on PostgreSQL, 60 waiting jobs let onto 64 executors by a nominal without a cap
        // stalled the pool and crossed the line).
        let n_nom =
            self.cfg.concurrency.map(|ci| nominal_action.concurrency.map_or(ci.executors, |c| c.min(ci.executors)));
        let s_nom = match (self.cfg.concurrency, n_nom) {
            (Some(ci), Some(n)) => {
                self.next_service(n, q, obs.in_service, s_now, s_hat, obs.health, &ci).unwrap_or(s_now)
            }
            _ => s_now,
        };
        let mut drift = drift + s_now - s_nom;
        let state = FilterState {
            queue: q,
            dt,
            drift,
            sigma,
            var0,
            prev_admit: self.last_admit_rate,
            prev_drift: self.last_drift,
        };
        let mut d = self.filter.decide(&state, nominal_admit * lambda, lambda);
        let mut cap = nominal_action.concurrency;
        if let (Some(ci), Some(n_nom)) = (self.cfg.concurrency, n_nom) {
            if d.bound_by.is_some() || !d.feasible {
                if let Some((d1, n, drift_n)) = self.best_cap(
                    &state,
                    obs.in_service,
                    s_now,
                    s_nom,
                    s_hat,
                    obs.health,
                    nominal_admit * lambda,
                    lambda,
                    n_nom,
                    d,
                    &ci,
                ) {
                    d = d1;
                    cap = Some(n);
                    drift = drift_n;
                    self.stats.cap_changes += 1;
                }
            }
        }
        if self.stall_filter.is_some() && obs.now - self.stall_seen <= self.cfg.stall_memory {
            d = self.stall_regime(d, q, r_hat, lambda, nominal_admit * lambda);
        }
        self.stats.record(&d, dt);

        let mut action = Action {
            admit: if lambda > 0.0 {
                (d.admit_rate / lambda).clamp(0.0, 1.0)
            } else {
                nominal_admit.min(if d.feasible { 1.0 } else { 0.0 })
            },
            concurrency: cap,
            shed_retries: nominal_action.shed_retries,
        };
        if !d.feasible {
            action.admit = 0.0;
            // With the cap as a second input, the backup also caps where the pool is
            // predicted to clear fastest.
            if let Some(n) = self.fastest_cap(q, s_hat, obs.health) {
                action.concurrency = Some(n);
            }
            if let BackupPolicy::RejectAllShedRetries { concurrency } = self.cfg.backup.policy {
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
        self.last_lambda = lambda;
        self.last_drift = drift;
        self.last_decision = Some(d);
        self.last_sigma = sigma;
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
            self.next_decision = if crate::finite(self.next_decision) && obs.now < self.next_decision + self.cfg.dt {
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
mod tests;
