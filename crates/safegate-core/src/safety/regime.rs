//! The dependency's regimes as the filter reads them from its counters: the stall test
//! on completions and its mirror, the surge test on offers, and the stall regime's
//! condition once a stall has been confirmed (docs/math.md §State estimates and §The
//! stall regime).

use super::SafetyFilter;
use crate::filter::{Decision, FilterState};
use crate::policy::{Observation, Policy};

/// A period whose completions fall more than this many Poisson standard deviations below
/// `ŝ·Δt` is a stall: the next decision takes the period's own rate for the service
/// (docs/math.md §State estimates). At 3, a Poisson stream at a steady `ŝ` trips it in
/// about one period in a thousand.
pub const STALL_Z: f64 = 3.0;

/// Whether `done` completions in a period where `ŝ·Δt = expected` were due is a stall:
/// `done < expected − z·√expected` ([`STALL_Z`]), judged only where that bound is above 0
/// (`expected > z²`: fewer expected completions say nothing either way).
///
/// This is a one-sided test of the regime in which completions go on at `ŝ` against one in
/// which they stopped: the essay's regime switching (its Definition 2), decided on one
/// period's count because a stalled dependency fills the queue within a few periods. The
/// rate estimate `ŝ` (an EWMA with time constant `rate_tau`) follows a stall only over
/// `rate_tau`: on PostgreSQL, where a deadlock holds every transaction queued behind its
/// locks until `deadlock_timeout` (1 s), the backlog went from 25 to 200 in 0.2 s while
/// the drift still said the pool cleared 800 jobs/s (BENCHMARKS.md, issue 30).
#[inline]
pub fn stalled(done: f64, expected: f64) -> bool {
    expected > STALL_Z * STALL_Z && done < expected - STALL_Z * expected.sqrt()
}

/// Whether `came` offers in a period where `λ̂·Δt = expected` were due is a surge:
/// `came > expected + z·√max(expected, 1)` ([`STALL_Z`]), the stall test's mirror image on
/// the offers (a stream that starts from nothing surges with its fourth offer in a period).
#[inline]
pub fn surged(came: f64, expected: f64) -> bool {
    came > expected + STALL_Z * expected.max(1.0).sqrt()
}

/// Stalled periods in a row that confirm a stall: the stall regime's condition holds for
/// [`super::SafetyConfig::stall_memory`] after the last one. One stalled period is the Poisson
/// count's 3σ fluke about once in 740 periods at a steady rate; two in a row, about once in
/// 550,000 (once in 7.6 hours of 50-ms periods), while a stalled dependency stays stalled
/// (PostgreSQL's deadlocks, for `deadlock_timeout`: 20 periods).
pub const STALL_CONFIRM: u32 = 2;

impl<N: Policy> SafetyFilter<N> {
    /// The offered rate when the actuator does not give it: `λ̂`, the EWMA of the offers
    /// counter, unless the period that just ended was a **surge** ([`surged`]), whose own
    /// rate then stands for it. The admitted fraction is the filter's admitted rate over
    /// `λ`, and the actuator applies it to the offers that come, so a `λ̂` that lags a surge
    /// lets through more than the filter allowed: a live run's first periods on PostgreSQL
    /// at 1,825 offers/s had `λ̂` at 173/s, the filter's bound of 860/s read as "admit
    /// everything", and the backlog went 57 → 109 → 175 past a line of 140.
    pub(super) fn estimate_offered(&mut self, obs: &Observation) -> f64 {
        let before = self.offered.get().max(0.0);
        let mut lambda = self.offered.update(obs.now, obs.offered).max(0.0);
        if let Some(t0) = self.last_t {
            let step = obs.now - t0;
            let came = obs.offered - self.last_offered;
            // No gap limit here (unlike the stall test and the surprise): a late decision
            // (a timer that missed a period on a busy host) still measures the rate since
            // the last one, and the first periods of a run are where it matters.
            if step > 0.0 && came >= 0.0 && surged(came, before * step) {
                lambda = lambda.max(came / step);
            }
        }
        if crate::finite(obs.offered) {
            self.last_offered = obs.offered;
        }
        lambda
    }

    /// The stall regime's condition (docs/math.md §The stall regime): a dependency seen to
    /// stall within `stall_memory` can stall within the next step, and then nothing
    /// completes while what is admitted arrives. The one-step chance constraints are judged
    /// in that regime too, with no service in the drift (`d̄ = r̂`) and the noise of what
    /// still arrives (`σ_q² = (λ̂ + r̂)·dt`, `σ₀² = r̂·dt`), and the decision takes the
    /// tighter admission: the step is safe at `ε_step` whichever regime it turns out in.
    /// Where no admission is safe in the stall regime the decision is infeasible and the
    /// backup acts.
    pub(super) fn stall_regime(&mut self, d: Decision, q: f64, r_hat: f64, lambda: f64, nominal: f64) -> Decision {
        let Some(sf) = self.stall_filter.as_ref() else { return d };
        if !d.feasible {
            return d;
        }
        let dt = self.cfg.dt;
        let x = FilterState {
            queue: q,
            dt,
            drift: r_hat,
            sigma: ((lambda + r_hat) * dt).sqrt(),
            var0: r_hat * dt,
            prev_admit: self.last_admit_rate,
            prev_drift: self.last_drift,
        };
        let s = sf.decide(&x, nominal, lambda);
        if !s.feasible || s.admit_rate < d.admit_rate {
            self.stats.stall_bound += 1;
            return Decision { nominal: d.nominal, given_up: d.nominal - s.admit_rate, ..s };
        }
        d
    }
}
