//! Client-side adaptive throttling (Beyer et al., *Site Reliability Engineering*, O'Reilly
//! 2016, ch. 21 "Handling Overload", section "Client-Side Throttling").
//!
//! The client counts, over a sliding window (the book: the last two minutes), the
//! `requests` its application attempted and the `accepts` the backend served, and rejects a
//! new request locally with probability
//!
//! ```text
//! p = max(0, (requests − K·accepts) / (requests + 1))          (K = 2 in the book)
//! ```
//!
//! so it sends about `K` times what the backend accepts. Here `requests` is the increase of
//! `offered` (everything offered to the gate, locally rejected or not) and `accepts` the
//! increase of successful completions, `completed − retried`; the action admits `1 − p`,
//! recomputed once per update interval. The actuator choice does not apply.

use crate::error::check;
use std::collections::VecDeque;

use super::{Setting, Ticker};
use crate::policy::{Action, Observation, Policy};
use crate::RangeError;

/// Configuration of [`SreThrottle`]; defaults from the SRE book.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SreThrottleConfig {
    /// Multiplier `K` on accepts, ≥ 1. Default 2.
    pub k: f64,
    /// Sliding window \[s\]. Default 120 s.
    pub window: f64,
    /// Update interval \[s\]. Default 0.05 s.
    pub interval: f64,
}

impl Default for SreThrottleConfig {
    fn default() -> Self {
        Self { k: 2.0, window: 120.0, interval: 0.05 }
    }
}

impl SreThrottleConfig {
    /// The defaults, updated every `period`.
    pub fn for_setting(setting: &Setting) -> Self {
        Self { interval: setting.period, ..Self::default() }
    }
}

/// The SRE book's client-side throttle (see the module docs).
///
/// # Examples
///
/// ```
/// use safegate_core::controllers::{SreThrottle, SreThrottleConfig};
/// use safegate_core::{Observation, Policy};
///
/// let mut t = SreThrottle::new(SreThrottleConfig::default()).unwrap();
/// let mut obs = Observation::new(0.0, 0.0, 200.0);
/// t.decide(&obs);
/// // 1000 requests, 100 accepted: p = (1000 − 200)/1001.
/// obs.now = 10.0;
/// obs.offered = 1000.0;
/// obs.completed = 100.0;
/// assert!((t.decide(&obs).admit - (1.0 - 800.0 / 1001.0)).abs() < 1e-12);
/// ```
#[derive(Debug, Clone)]
pub struct SreThrottle {
    cfg: SreThrottleConfig,
    ticker: Ticker,
    /// (time, cumulative requests, cumulative accepts) at each update, oldest first.
    history: VecDeque<(f64, f64, f64)>,
    reject: f64,
}

impl SreThrottle {
    /// A throttle with `cfg`, range-checked.
    pub fn new(cfg: SreThrottleConfig) -> Result<Self, RangeError> {
        check::within("k", cfg.k, 1.0, f64::MAX, "[1, ∞)")?;
        check::positive("window", cfg.window)?;
        check::positive("interval", cfg.interval)?;
        Ok(Self { cfg, ticker: Ticker::new(cfg.interval), history: VecDeque::new(), reject: 0.0 })
    }

    /// The current local rejection probability `p`.
    pub fn reject_probability(&self) -> f64 {
        self.reject
    }

    /// The configuration.
    pub fn config(&self) -> &SreThrottleConfig {
        &self.cfg
    }

    fn update(&mut self, now: f64, requests: f64, accepts: f64) {
        let broken = self.history.back().is_some_and(|&(t, r, a)| now < t || requests < r || accepts < a);
        if broken {
            self.history.clear();
        }
        self.history.push_back((now, requests, accepts));
        // Keep one snapshot at or before the window's start as the base.
        while self.history.len() > 2 && self.history[1].0 <= now - self.cfg.window {
            self.history.pop_front();
        }
        let &(_, r0, a0) = self.history.front().expect("just pushed");
        let (req, acc) = (requests - r0, accepts - a0);
        let p = (req - self.cfg.k * acc) / (req + 1.0);
        self.reject = if p.is_finite() { p.clamp(0.0, 1.0) } else { 0.0 };
    }
}

impl Policy for SreThrottle {
    fn decide(&mut self, obs: &Observation) -> Action {
        if self.ticker.due(obs.now) {
            let accepts = obs.completed - obs.retried;
            if obs.offered.is_finite() && accepts.is_finite() {
                self.update(obs.now, obs.offered, accepts);
            }
        }
        Action::admit(1.0 - self.reject)
    }

    fn name(&self) -> &'static str {
        "sre-throttle"
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::assert_survives_garbage;
    use super::*;

    /// Run `t` for `secs` at `rate` requests/s of which `accept` are accepted.
    fn feed(t: &mut SreThrottle, obs: &mut Observation, secs: f64, rate: f64, accept: f64) -> f64 {
        let steps = (secs / 0.05).round() as usize;
        let mut a = 1.0;
        for _ in 0..steps {
            obs.now += 0.05;
            obs.offered += rate * 0.05;
            obs.completed += accept * 0.05;
            a = t.decide(obs).admit;
        }
        a
    }

    #[test]
    fn a_healthy_backend_is_never_throttled() {
        let mut t = SreThrottle::new(SreThrottleConfig::default()).unwrap();
        let mut o = Observation::new(0.0, 0.0, 200.0);
        assert_eq!(feed(&mut t, &mut o, 60.0, 100.0, 99.0), 1.0);
        // Half accepted is still K = 2 times the accepts: no throttling.
        assert_eq!(feed(&mut t, &mut o, 300.0, 100.0, 50.0), 1.0);
    }

    #[test]
    fn a_failing_backend_is_throttled_to_k_times_the_accepts() {
        let mut t = SreThrottle::new(SreThrottleConfig::default()).unwrap();
        let mut o = Observation::new(0.0, 0.0, 200.0);
        feed(&mut t, &mut o, 130.0, 100.0, 100.0);
        // Accepts fall to 10/s; after a full window p = (100 − 20)/(100 + 1/120) ≈ 0.8.
        let a = feed(&mut t, &mut o, 130.0, 100.0, 10.0);
        assert!((a - 0.2).abs() < 1e-3, "{a}");
        // Mid-window the old accepts still count.
        let mut t = SreThrottle::new(SreThrottleConfig::default()).unwrap();
        let mut o = Observation::new(0.0, 0.0, 200.0);
        feed(&mut t, &mut o, 130.0, 100.0, 100.0);
        assert_eq!(feed(&mut t, &mut o, 30.0, 100.0, 10.0), 1.0);
    }

    #[test]
    fn retries_are_not_accepts() {
        let mut t = SreThrottle::new(SreThrottleConfig::default()).unwrap();
        let mut o = Observation::new(0.0, 0.0, 200.0);
        t.decide(&o);
        o.now = 1.0;
        o.offered = 100.0;
        o.completed = 100.0;
        o.retried = 90.0; // 10 successes
        assert!((t.decide(&o).admit - (1.0 - 80.0 / 101.0)).abs() < 1e-12);
    }

    #[test]
    fn history_stays_bounded() {
        let mut t = SreThrottle::new(SreThrottleConfig::default()).unwrap();
        let mut o = Observation::new(0.0, 0.0, 200.0);
        feed(&mut t, &mut o, 600.0, 10.0, 10.0);
        assert!(t.history.len() <= 2 + (120.0f64 / 0.05) as usize, "{}", t.history.len());
    }

    #[test]
    fn bad_config_is_refused() {
        let d = SreThrottleConfig::default();
        assert_eq!(SreThrottle::new(SreThrottleConfig { k: 0.5, ..d }).unwrap_err().field, "k");
        assert_eq!(SreThrottle::new(SreThrottleConfig { window: 0.0, ..d }).unwrap_err().field, "window");
    }

    #[test]
    fn garbage_never_yields_a_bad_action() {
        assert_survives_garbage(&mut SreThrottle::new(SreThrottleConfig::default()).unwrap());
    }
}
