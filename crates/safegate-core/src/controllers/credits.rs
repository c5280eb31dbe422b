//! Breakwater's server-driven credits (Cho, Rzayev, Ousterhout, Belay, "Overload Control
//! for µs-scale RPCs with Breakwater", OSDI 2020, §3–4; the constants of its artifact,
//! `configs/bw_config.h`).
//!
//! The server keeps a credit pool `C` (requests it lets into the system) and, every update
//! interval (Breakwater: every network RTT), compares the queueing delay `d` of the oldest
//! waiting request with a target `d_t`:
//!
//! ```text
//! d < d_t:  C ← C + A                                    (additive increase)
//! d ≥ d_t:  C ← min(C · max(1 − β·(d − d_t)/d_t, 0.5), C − 1)   (decrease ∝ the overshoot)
//! C ← clamp(C, min_credits, max_credits)
//! ```
//!
//! Credits not held by requests in the system are issued to clients; a client sends only
//! with a credit. With the one client an actuator is, the issued credits are
//! `overcommit · max(0, C − queue)` (Breakwater overcommits so credits parked at idle clients
//! are not lost; with one client there are none, hence the default 1), and the client's
//! demand over the next interval is `λ · interval`, so the admitted fraction is
//!
//! ```text
//! admit = min(1, overcommit · max(0, C − queue) / (λ · interval))
//! ```
//!
//! held until the next update. `λ` is `offered_rate`, or the offered count's rate over the
//! last interval when the actuator does not know it. The actuator choice does not apply.
//!
//! Defaults: `A` = 1 credit per update (the artifact's `max(sessions · SBW_AI, 1)` for one
//! session), β = 0.02 (`SBW_MD`), floor factor 0.5; the pool lives between the executor
//! count (Breakwater floors it at the core count) and the capacity. The target delay is
//! 0.2 s: about 8 × the pool's contention-free service time `1/s` = 26.7 ms, the ratio the
//! artifact recommends for 10 µs requests (80 µs).

use crate::error::check;
use super::{Setting, Ticker};
use crate::policy::{Action, Observation, Policy};
use crate::RangeError;

/// Configuration of [`Credits`] (defaults in the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CreditsConfig {
    /// Target queueing delay `d_t` \[s\]. Default 0.2 s.
    pub target_delay: f64,
    /// Additive increase per update \[credits\]. Default 1.
    pub additive: f64,
    /// Multiplicative-decrease gain β. Default 0.02.
    pub beta: f64,
    /// Smallest decrease factor. Default 0.5.
    pub min_factor: f64,
    /// Starting pool \[credits\]. Default 8.
    pub initial_credits: f64,
    /// Smallest pool. Default 8 (the executors).
    pub min_credits: f64,
    /// Largest pool. Default 200 (the capacity).
    pub max_credits: f64,
    /// Issued credits per free credit, ≥ 1. Default 1.
    pub overcommit: f64,
    /// Update interval \[s\]. Default 0.05 s.
    pub interval: f64,
}

impl Default for CreditsConfig {
    fn default() -> Self {
        Self {
            target_delay: 0.2,
            additive: 1.0,
            beta: 0.02,
            min_factor: 0.5,
            initial_credits: 8.0,
            min_credits: 8.0,
            max_credits: 200.0,
            overcommit: 1.0,
            interval: 0.05,
        }
    }
}

impl CreditsConfig {
    /// The defaults with the pool between the executor count and the capacity, starting at
    /// the executor count, updated every `period`.
    pub fn for_setting(setting: &Setting) -> Self {
        let max = setting.capacity.max(1.0);
        let min = (setting.executors.max(1) as f64).min(max);
        Self { min_credits: min, initial_credits: min, max_credits: max, interval: setting.period, ..Self::default() }
    }
}

/// Breakwater's credit-based admission (see the module docs).
///
/// # Examples
///
/// ```
/// use safegate_core::controllers::{Credits, CreditsConfig};
/// use safegate_core::{Observation, Policy};
///
/// let mut c = Credits::new(CreditsConfig { initial_credits: 100.0, ..CreditsConfig::default() }).unwrap();
/// let mut obs = Observation::new(0.0, 90.0, 200.0);
/// obs.offered_rate = 100.0; // 5 arrivals per 0.05 s
/// // No queueing delay: 101 credits, 11 free → all 5 expected arrivals admitted.
/// assert_eq!(c.decide(&obs).admit, 1.0);
/// obs.now = 0.05;
/// obs.queue = 99.0;
/// obs.oldest_wait = 0.3; // 50 % over the 0.2 s target: ×0.99 → 99.99 credits, 0.99 free
/// assert!((c.decide(&obs).admit - 0.99 / 5.0).abs() < 1e-9);
/// ```
#[derive(Debug, Clone)]
pub struct Credits {
    cfg: CreditsConfig,
    credits: f64,
    ticker: Ticker,
    last_offered: Option<(f64, f64)>,
    admit: f64,
}

impl Credits {
    /// A controller with `cfg`, range-checked.
    pub fn new(cfg: CreditsConfig) -> Result<Self, RangeError> {
        check::positive("target_delay", cfg.target_delay)?;
        check::within("additive", cfg.additive, 0.0, f64::MAX, "[0, ∞)")?;
        check::within("beta", cfg.beta, 0.0, f64::MAX, "[0, ∞)")?;
        check::within("min_factor", cfg.min_factor, 0.0, 1.0, "[0, 1]")?;
        check::within("min_credits", cfg.min_credits, 0.0, f64::MAX, "[0, ∞)")?;
        check::within(
            "max_credits",
            cfg.max_credits,
            cfg.min_credits.max(f64::MIN_POSITIVE),
            f64::MAX,
            "[max(min_credits, >0), ∞)",
        )?;
        check::within(
            "initial_credits",
            cfg.initial_credits,
            cfg.min_credits,
            cfg.max_credits,
            "[min_credits, max_credits]",
        )?;
        check::within("overcommit", cfg.overcommit, 1.0, f64::MAX, "[1, ∞)")?;
        check::positive("interval", cfg.interval)?;
        Ok(Self {
            credits: cfg.initial_credits,
            ticker: Ticker::new(cfg.interval),
            last_offered: None,
            admit: 1.0,
            cfg,
        })
    }

    /// The credit pool `C`.
    pub fn credits(&self) -> f64 {
        self.credits
    }

    /// The configuration.
    pub fn config(&self) -> &CreditsConfig {
        &self.cfg
    }

    /// The pool after one update at queueing delay `delay` (Breakwater's rule).
    fn next_pool(&self, delay: f64) -> f64 {
        let c = &self.cfg;
        let pool = if delay < c.target_delay {
            self.credits + c.additive
        } else {
            let factor = (1.0 - c.beta * (delay - c.target_delay) / c.target_delay).max(c.min_factor);
            (self.credits * factor).min(self.credits - 1.0)
        };
        pool.clamp(c.min_credits, c.max_credits)
    }

    /// Expected arrivals over the next interval.
    fn demand(&mut self, obs: &Observation) -> Option<f64> {
        let measured = match self.last_offered {
            Some((t0, n0)) if obs.now > t0 && obs.offered >= n0 => Some((obs.offered - n0) / (obs.now - t0)),
            _ => None,
        };
        if obs.now.is_finite() && obs.offered.is_finite() {
            self.last_offered = Some((obs.now, obs.offered));
        }
        let rate =
            if obs.offered_rate > 0.0 && obs.offered_rate.is_finite() { Some(obs.offered_rate) } else { measured };
        rate.map(|r| r * self.cfg.interval).filter(|d| d.is_finite())
    }
}

impl Policy for Credits {
    fn decide(&mut self, obs: &Observation) -> Action {
        if !self.ticker.due(obs.now) {
            return Action::admit(self.admit);
        }
        // An unreadable delay is treated as the target missed by half (a decrease); an
        // unreadable queue as a full one (no credits to issue).
        let delay = if obs.oldest_wait.is_finite() && obs.oldest_wait >= 0.0 {
            obs.oldest_wait
        } else {
            1.5 * self.cfg.target_delay
        };
        self.credits = self.next_pool(delay);
        let queue = if obs.queue.is_finite() { obs.queue.max(0.0) } else { f64::INFINITY };
        let issued = self.cfg.overcommit * (self.credits - queue).max(0.0);
        self.admit = match self.demand(obs) {
            Some(d) if d > 0.0 => (issued / d).min(1.0),
            _ => {
                if issued >= 1.0 {
                    1.0
                } else {
                    0.0
                }
            }
        };
        Action::admit(self.admit)
    }

    fn name(&self) -> &'static str {
        "credits"
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::assert_survives_garbage;
    use super::*;

    fn obs(t: f64, q: f64, delay: f64) -> Observation {
        let mut o = Observation::new(t, q, 200.0);
        o.offered_rate = 80.0;
        o.oldest_wait = delay;
        o
    }

    #[test]
    fn low_delay_adds_a_credit_per_update() {
        let mut c = Credits::new(CreditsConfig::default()).unwrap();
        for k in 0..20 {
            c.decide(&obs(k as f64 * 0.05, 0.0, 0.01));
            c.decide(&obs(k as f64 * 0.05 + 0.01, 0.0, 0.01)); // between updates: no change
        }
        assert_eq!(c.credits(), 28.0);
    }

    #[test]
    fn the_decrease_is_proportional_to_the_overshoot() {
        let cfg = CreditsConfig { initial_credits: 100.0, ..CreditsConfig::default() };
        let mut a = Credits::new(cfg).unwrap();
        a.decide(&obs(0.0, 150.0, 0.4)); // 2× target: ×(1 − 0.02)
        assert!((a.credits() - 98.0).abs() < 1e-9);
        let mut b = Credits::new(cfg).unwrap();
        b.decide(&obs(0.0, 150.0, 2.2)); // 11× target: ×0.8
        assert!((b.credits() - 80.0).abs() < 1e-9);
        let mut c = Credits::new(cfg).unwrap();
        c.decide(&obs(0.0, 150.0, 100.0)); // floor factor 0.5
        assert!((c.credits() - 50.0).abs() < 1e-9);
        let mut d = Credits::new(CreditsConfig { initial_credits: 10.0, ..cfg }).unwrap();
        d.decide(&obs(0.0, 150.0, 0.2)); // at target: ×1, but at least one credit less
        assert_eq!(d.credits(), 9.0);
    }

    #[test]
    fn admit_is_free_credits_over_demand() {
        let mut c = Credits::new(CreditsConfig { initial_credits: 39.0, ..CreditsConfig::default() }).unwrap();
        // 40 credits, 38 in the system: 2 free for 80·0.05 = 4 expected arrivals.
        assert!((c.decide(&obs(0.0, 38.0, 0.0)).admit - 0.5).abs() < 1e-12);
        // Held between updates even as the queue moves.
        assert!((c.decide(&obs(0.02, 0.0, 0.0)).admit - 0.5).abs() < 1e-12);
        // Queue above the pool: nothing to issue.
        assert_eq!(c.decide(&obs(0.05, 120.0, 0.0)).admit, 0.0);
        // Unknown rate: measured from the offered count (4 per 0.05 s = 80/s).
        let mut c = Credits::new(CreditsConfig { initial_credits: 39.0, ..CreditsConfig::default() }).unwrap();
        let mut o = Observation::new(0.0, 38.0, 200.0);
        c.decide(&o);
        o.now = 0.05;
        o.offered = 4.0;
        o.queue = 40.0; // 41 credits, 1 free, 4 expected
        assert!((c.decide(&o).admit - 0.25).abs() < 1e-12);
    }

    #[test]
    fn bounds_are_respected() {
        let mut c = Credits::new(CreditsConfig::default()).unwrap();
        for k in 0..1000 {
            c.decide(&obs(k as f64 * 0.05, 0.0, 0.0));
        }
        assert_eq!(c.credits(), 200.0);
        for k in 1000..2000 {
            c.decide(&obs(k as f64 * 0.05, 200.0, 5.0));
        }
        assert_eq!(c.credits(), 8.0);
    }

    #[test]
    fn bad_config_is_refused() {
        let d = CreditsConfig::default();
        assert_eq!(Credits::new(CreditsConfig { target_delay: 0.0, ..d }).unwrap_err().field, "target_delay");
        assert_eq!(Credits::new(CreditsConfig { overcommit: 0.5, ..d }).unwrap_err().field, "overcommit");
        assert_eq!(Credits::new(CreditsConfig { initial_credits: 1.0, ..d }).unwrap_err().field, "initial_credits");
        assert_eq!(Credits::new(CreditsConfig { min_factor: f64::NAN, ..d }).unwrap_err().field, "min_factor");
    }

    #[test]
    fn garbage_never_yields_a_bad_action() {
        let mut c = Credits::new(CreditsConfig::default()).unwrap();
        assert_survives_garbage(&mut c);
        assert!(c.credits().is_finite());
    }
}
