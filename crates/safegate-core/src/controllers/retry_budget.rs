//! A retry budget around any policy (Finagle's `RetryBudget`, twitter/finagle docs,
//! "Retries": a budget of `percentCanRetry` of recent requests plus `minRetriesPerSec`,
//! deposits expiring after `ttl`; gRPC's retry throttling is the same idea with tokens).
//!
//! Over the last `ttl` seconds the budget holds
//!
//! ```text
//! balance = ratio · fresh + min_per_second · ttl − retries performed
//! ```
//!
//! and while `balance < 1` the wrapper sets `shed_retries = true` (the actuator drops
//! retries instead of letting them re-enter); otherwise it passes the inner action through
//! unchanged. `fresh` is the increase of `offered − retried` (retries that re-enter through
//! the gate are counted in `offered`; with retries that bypass the gate this undercounts
//! fresh requests, making the budget stricter). A retry is *performed* when it happened
//! while the wrapper was not shedding: the state changes only at update instants, so the
//! retries of an interval are all performed or all shed. Defaults are Finagle's: ratio
//! 0.2, 10 retries per second, TTL 10 s.

use crate::error::check;
use std::collections::VecDeque;

use super::{Setting, Ticker};
use crate::policy::{Action, Observation, Policy};
use crate::RangeError;

/// Configuration of [`RetryBudget`]; defaults are Finagle's `RetryBudget()`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryBudgetConfig {
    /// Retries allowed per fresh request (`percentCanRetry`). Default 0.2.
    pub ratio: f64,
    /// Retries allowed per second regardless of traffic (`minRetriesPerSec`). Default 10.
    pub min_per_second: f64,
    /// How long a deposit counts (`ttl`) \[s\]. Default 10 s.
    pub ttl: f64,
    /// Update interval \[s\]. Default 0.05 s.
    pub interval: f64,
}

impl Default for RetryBudgetConfig {
    fn default() -> Self {
        Self { ratio: 0.2, min_per_second: 10.0, ttl: 10.0, interval: 0.05 }
    }
}

impl RetryBudgetConfig {
    /// The defaults, updated every `period`.
    pub fn for_setting(setting: &Setting) -> Self {
        Self { interval: setting.period, ..Self::default() }
    }

    /// Range checks (ratio and floor `≥ 0`, TTL and interval `> 0`).
    pub fn check(&self) -> Result<(), RangeError> {
        check::within("ratio", self.ratio, 0.0, f64::MAX, "[0, ∞)")?;
        check::within("min_per_second", self.min_per_second, 0.0, f64::MAX, "[0, ∞)")?;
        check::positive("ttl", self.ttl)?;
        check::positive("interval", self.interval).map(drop)
    }
}

/// A retry budget wrapped around the policy `P` (see the module docs).
///
/// # Examples
///
/// ```
/// use safegate_core::controllers::{RetryBudget, RetryBudgetConfig};
/// use safegate_core::{Observation, Open, Policy};
///
/// let mut b = RetryBudget::new(RetryBudgetConfig::default(), Open).unwrap();
/// let mut obs = Observation::new(0.0, 0.0, 200.0);
/// assert!(!b.decide(&obs).shed_retries);
/// // 1 s: 100 fresh requests and 200 retries, against 0.2·100 + 10·10 = 120.
/// obs.now = 1.0;
/// obs.offered = 300.0;
/// obs.retried = 200.0;
/// assert!(b.decide(&obs).shed_retries);
/// assert!(b.exhausted());
/// ```
#[derive(Debug, Clone)]
pub struct RetryBudget<P> {
    cfg: RetryBudgetConfig,
    inner: P,
    ticker: Ticker,
    /// Last observed (offered, retried), to difference.
    last: Option<(f64, f64)>,
    /// (time, cumulative fresh, cumulative performed retries) at each update, oldest first.
    history: VecDeque<(f64, f64, f64)>,
    fresh: f64,
    performed: f64,
    exhausted: bool,
}

impl<P: Policy> RetryBudget<P> {
    /// `inner` under a budget with `cfg` (range-checked; on an error `inner` is dropped).
    pub fn new(cfg: RetryBudgetConfig, inner: P) -> Result<Self, RangeError> {
        cfg.check()?;
        Ok(Self::from_checked(cfg, inner))
    }

    /// `inner` under a budget with `cfg`, which the caller has checked.
    fn from_checked(cfg: RetryBudgetConfig, inner: P) -> Self {
        Self {
            ticker: Ticker::new(cfg.interval),
            cfg,
            inner,
            last: None,
            history: VecDeque::new(),
            fresh: 0.0,
            performed: 0.0,
            exhausted: false,
        }
    }

    /// Whether retries are being shed.
    pub fn exhausted(&self) -> bool {
        self.exhausted
    }

    /// The budget's balance at the last update \[retries\].
    pub fn balance(&self) -> f64 {
        let Some(&(_, f1, p1)) = self.history.back() else {
            return self.cfg.min_per_second * self.cfg.ttl;
        };
        let &(_, f0, p0) = self.history.front().expect("non-empty");
        self.cfg.ratio * (f1 - f0) + self.cfg.min_per_second * self.cfg.ttl - (p1 - p0)
    }

    /// The wrapped policy.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The configuration.
    pub fn config(&self) -> &RetryBudgetConfig {
        &self.cfg
    }

    fn update(&mut self, obs: &Observation) {
        let (now, offered, retried) = (obs.now, obs.offered, obs.retried);
        if !(offered.is_finite() && retried.is_finite()) {
            return;
        }
        let d = self.last.map(|(o0, r0)| (offered - o0, retried - r0));
        self.last = Some((offered, retried));
        match d {
            Some((d_off, d_ret)) if d_off >= 0.0 && d_ret >= 0.0 => {
                self.fresh += (d_off - d_ret).max(0.0);
                if !self.exhausted {
                    self.performed += d_ret;
                }
            }
            Some(_) => self.history.clear(), // counters fell: start over
            None => {}
        }
        if self.history.back().is_some_and(|&(t, _, _)| now < t) {
            self.history.clear();
        }
        self.history.push_back((now, self.fresh, self.performed));
        while self.history.len() > 2 && self.history[1].0 <= now - self.cfg.ttl {
            self.history.pop_front();
        }
        self.exhausted = self.balance() < 1.0;
    }
}

impl<P: Policy> Policy for RetryBudget<P> {
    fn decide(&mut self, obs: &Observation) -> Action {
        let mut action = self.inner.decide(obs);
        if self.ticker.due(obs.now) {
            self.update(obs);
        }
        action.shed_retries |= self.exhausted;
        action
    }

    /// The wrapped policy's name: the budget is a modifier, not a controller.
    fn name(&self) -> &'static str {
        self.inner.name()
    }
}

/// `inner` under a [`RetryBudget`] with the Finagle defaults, updated every
/// [`Setting::period`].
pub fn with_retry_budget(inner: Box<dyn Policy + Send>, setting: &Setting) -> Box<dyn Policy + Send> {
    let cfg = RetryBudgetConfig::for_setting(&setting.sanitized());
    // A sanitized setting always gives a valid budget (tested); the fallback only guards
    // against a future change breaking that, and never drops the controller.
    let cfg = if cfg.check().is_ok() { cfg } else { RetryBudgetConfig::default() };
    Box::new(RetryBudget::from_checked(cfg, inner))
}

#[cfg(test)]
mod tests {
    use super::super::testing::assert_survives_garbage;
    use super::*;
    use crate::{Open, SeedGate};

    /// `secs` of `fresh` fresh requests/s and `retries` retries/s; the last action.
    fn feed<P: Policy>(b: &mut RetryBudget<P>, obs: &mut Observation, secs: f64, fresh: f64, retries: f64) -> Action {
        let mut a = Action::OPEN;
        for _ in 0..(secs / 0.05).round() as usize {
            obs.now += 0.05;
            obs.offered += (fresh + retries) * 0.05;
            obs.retried += retries * 0.05;
            a = b.decide(obs);
        }
        a
    }

    #[test]
    fn retries_within_the_budget_pass() {
        let mut b = RetryBudget::new(RetryBudgetConfig::default(), Open).unwrap();
        let mut o = Observation::new(0.0, 0.0, 200.0);
        // 100 fresh/s allow 20 + 10 = 30 retries/s.
        let a = feed(&mut b, &mut o, 30.0, 100.0, 25.0);
        assert_eq!(a, Action::OPEN);
        assert!(!b.exhausted());
    }

    #[test]
    fn a_retry_storm_is_shed_and_the_budget_refills() {
        let mut b = RetryBudget::new(RetryBudgetConfig::default(), Open).unwrap();
        let mut o = Observation::new(0.0, 0.0, 200.0);
        feed(&mut b, &mut o, 20.0, 100.0, 0.0);
        // 100 retries/s: the 10 s budget (200 + 100) lasts about 3 s.
        let mut shed_at = None;
        for k in 0..100 {
            if feed(&mut b, &mut o, 0.05, 100.0, 100.0).shed_retries && shed_at.is_none() {
                shed_at = Some(k);
            }
        }
        let k = shed_at.expect("the storm exhausts the budget");
        assert!((50..=80).contains(&k), "{k}");
        // Shed retries are not withdrawn: the budget refills as old retries expire.
        feed(&mut b, &mut o, 15.0, 100.0, 100.0);
        let mut toggles = 0;
        let mut was = b.exhausted();
        for _ in 0..400 {
            let now = feed(&mut b, &mut o, 0.05, 100.0, 100.0).shed_retries;
            toggles += usize::from(now != was);
            was = now;
        }
        assert!(toggles >= 2, "the budget should let some retries through again");
        // After the storm it recovers.
        assert!(!feed(&mut b, &mut o, 15.0, 100.0, 0.0).shed_retries);
    }

    #[test]
    fn the_inner_action_passes_through() {
        let mut b = RetryBudget::new(RetryBudgetConfig::default(), SeedGate::new(0.5, 1.0).unwrap()).unwrap();
        let a = b.decide(&Observation::new(0.0, 150.0, 200.0));
        assert!((a.admit - 0.5).abs() < 1e-12);
        assert!(!a.shed_retries);
        assert_eq!(b.name(), "seed-gate");
    }

    #[test]
    fn bad_config_is_refused() {
        let d = RetryBudgetConfig::default();
        assert_eq!(RetryBudget::new(RetryBudgetConfig { ratio: -0.1, ..d }, Open).unwrap_err().field, "ratio");
        assert_eq!(RetryBudget::new(RetryBudgetConfig { ttl: 0.0, ..d }, Open).unwrap_err().field, "ttl");
    }

    #[test]
    fn garbage_never_yields_a_bad_action() {
        let mut b = RetryBudget::new(RetryBudgetConfig::default(), Open).unwrap();
        assert_survives_garbage(&mut b);
        assert!(b.balance().is_finite());
    }
}
