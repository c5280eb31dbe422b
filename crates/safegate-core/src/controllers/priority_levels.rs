//! DAGOR's priority-based admission (Zhou et al., "Overload Control for Scaling WeChat
//! Microservices", SoCC 2018, §4.2–4.3; the constants of the Breakwater artifact's DAGOR
//! port, `configs/dg_config.h`).
//!
//! Every request carries a business priority `b` and a user priority `u` (smaller is more
//! important). DAGOR orders them into one compound admission level, business first:
//!
//! ```text
//! level(b, u) = b · U + u        (B business × U user levels; 0 is the most important)
//! admits(b, u)  ⇔  level(b, u) < admitted
//! ```
//!
//! A window closes after `window` seconds or `window_requests` offered requests, whichever
//! comes first; the server is overloaded when the window's average queueing time (wait
//! before service) exceeds `threshold`, and then
//!
//! ```text
//! overloaded:  admitted ← ⌊admitted · (1 − α)⌋   (at least one level fewer; at least 1)
//! otherwise:   admitted ← ⌈admitted · (1 + β)⌉   (at least one level more; at most B·U)
//! ```
//!
//! DAGOR moves the level so the *admitted requests* change by `α` or `β`, reading a
//! histogram of recent requests per level. The simulator's requests carry no priority, so
//! priorities are taken as uniform over the levels: requests admitted ∝ levels admitted,
//! the level moves by the same fraction, and the action's `admit` is `admitted / (B·U)`.
//! Real requests (a tower layer) ask [`PriorityLevels::admits`]. Without completions in a
//! window the age of the oldest waiting request stands in for the queueing time.
//!
//! Defaults: threshold 20 ms, α = 5 %, β = 1 %, window 1 s or 2000 requests (the paper, and
//! the artifact's `DAGOR_ALPHA = 0.95` factor, `DAGOR_BETA = 0.01`); 128 user levels (the
//! paper's user priorities) and 128 business levels (the paper's business table is
//! service-specific; 128 is our choice). The actuator choice does not apply.

use crate::error::check;
use super::{Counters, Setting};
use crate::policy::{Action, Observation, Policy};
use crate::RangeError;

/// A request's priority: smaller numbers are more important.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Priority {
    /// Business priority, `0..business_levels`.
    pub business: u16,
    /// User priority, `0..user_levels`.
    pub user: u16,
}

/// Configuration of [`PriorityLevels`] (defaults in the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PriorityLevelsConfig {
    /// Business priority levels `B`. Default 128.
    pub business_levels: u16,
    /// User priority levels `U`. Default 128.
    pub user_levels: u16,
    /// Average queueing time above which the server is overloaded \[s\]. Default 0.02 s.
    pub threshold: f64,
    /// Share of admitted requests shed per overloaded window. Default 0.05.
    pub alpha: f64,
    /// Share of admitted requests added per calm window. Default 0.01.
    pub beta: f64,
    /// Longest window \[s\]. Default 1 s.
    pub window: f64,
    /// Offered requests that close a window early. Default 2000.
    pub window_requests: u32,
}

impl Default for PriorityLevelsConfig {
    fn default() -> Self {
        Self {
            business_levels: 128,
            user_levels: 128,
            threshold: 0.02,
            alpha: 0.05,
            beta: 0.01,
            window: 1.0,
            window_requests: 2000,
        }
    }
}

impl PriorityLevelsConfig {
    /// The defaults (the window is at least `period`).
    pub fn for_setting(setting: &Setting) -> Self {
        let d = Self::default();
        Self { window: d.window.max(setting.period), ..d }
    }
}

/// DAGOR's compound priority levels (see the module docs).
///
/// # Examples
///
/// ```
/// use safegate_core::controllers::{Priority, PriorityLevels, PriorityLevelsConfig};
/// use safegate_core::{Observation, Policy};
///
/// let mut d = PriorityLevels::new(PriorityLevelsConfig::default()).unwrap();
/// let vip = Priority { business: 0, user: 0 };
/// let bulk = Priority { business: 127, user: 127 };
/// assert!(d.admits(vip) && d.admits(bulk)); // everything admitted at first
/// d.set_admitted(128 * 64); // half the levels: business 0–63
/// assert!(d.admits(Priority { business: 63, user: 127 }) && !d.admits(Priority { business: 64, user: 0 }));
/// assert_eq!(d.decide(&Observation::new(0.0, 0.0, 200.0)).admit, 0.5);
/// ```
#[derive(Debug, Clone)]
pub struct PriorityLevels {
    cfg: PriorityLevelsConfig,
    levels: u32,
    admitted: u32,
    start: Option<(f64, Counters)>,
    overloaded_windows: u64,
    windows: u64,
}

impl PriorityLevels {
    /// A controller with `cfg`, range-checked; everything is admitted at first.
    pub fn new(cfg: PriorityLevelsConfig) -> Result<Self, RangeError> {
        check::within("business_levels", cfg.business_levels as f64, 1.0, f64::MAX, "1 or more")?;
        check::within("user_levels", cfg.user_levels as f64, 1.0, f64::MAX, "1 or more")?;
        check::within("threshold", cfg.threshold, 0.0, f64::MAX, "[0, ∞)")?;
        check::within("alpha", cfg.alpha, 0.0, 1.0, "[0, 1]")?;
        check::within("beta", cfg.beta, 0.0, f64::MAX, "[0, ∞)")?;
        check::positive("window", cfg.window)?;
        check::within("window_requests", cfg.window_requests as f64, 1.0, f64::MAX, "1 or more")?;
        let levels = cfg.business_levels as u32 * cfg.user_levels as u32;
        Ok(Self { cfg, levels, admitted: levels, start: None, overloaded_windows: 0, windows: 0 })
    }

    /// The compound level of `p` (priorities past the last level count as the last).
    pub fn level(&self, p: Priority) -> u32 {
        let b = p.business.min(self.cfg.business_levels - 1) as u32;
        let u = p.user.min(self.cfg.user_levels - 1) as u32;
        b * self.cfg.user_levels as u32 + u
    }

    /// Whether a request of priority `p` is admitted now.
    pub fn admits(&self, p: Priority) -> bool {
        self.level(p) < self.admitted
    }

    /// Levels admitted (the first `admitted` compound levels).
    pub fn admitted(&self) -> u32 {
        self.admitted
    }

    /// Total levels `B·U`.
    pub fn levels(&self) -> u32 {
        self.levels
    }

    /// Share of levels admitted, the simulator's `admit` (uniform priorities).
    pub fn fraction(&self) -> f64 {
        self.admitted as f64 / self.levels as f64
    }

    /// Set the admitted levels (clamped to `[1, B·U]`).
    pub fn set_admitted(&mut self, levels: u32) {
        self.admitted = levels.clamp(1, self.levels);
    }

    /// Windows closed so far, and how many of them were overloaded.
    pub fn windows(&self) -> (u64, u64) {
        (self.windows, self.overloaded_windows)
    }

    /// The configuration.
    pub fn config(&self) -> &PriorityLevelsConfig {
        &self.cfg
    }

    fn adjust(&mut self, overloaded: bool) {
        let a = self.admitted as f64;
        let next = if overloaded {
            self.overloaded_windows += 1;
            ((a * (1.0 - self.cfg.alpha)).floor() as u32).min(self.admitted.saturating_sub(1))
        } else {
            ((a * (1.0 + self.cfg.beta)).ceil().min(u32::MAX as f64) as u32).max(self.admitted.saturating_add(1))
        };
        self.windows += 1;
        self.set_admitted(next);
    }
}

impl Policy for PriorityLevels {
    fn decide(&mut self, obs: &Observation) -> Action {
        let now = obs.now;
        if let (true, Some(c)) = (now.is_finite(), Counters::of(obs)) {
            match self.start {
                Some((t0, c0))
                    if now >= t0 && c.offered >= c0.offered && c.completed >= c0.completed && c.wait >= c0.wait =>
                {
                    let offered = c.offered - c0.offered;
                    if now - t0 >= self.cfg.window - 1e-9 || offered >= self.cfg.window_requests as f64 {
                        let done = c.completed - c0.completed;
                        let queueing = if done > 0.0 {
                            Some((c.wait - c0.wait) / done)
                        } else {
                            (obs.oldest_wait.is_finite() && obs.oldest_wait >= 0.0).then_some(obs.oldest_wait)
                        };
                        if let Some(q) = queueing {
                            self.adjust(q > self.cfg.threshold);
                        }
                        self.start = Some((now, c));
                    }
                }
                // First sight, time running backwards or counters falling: a new window.
                _ => self.start = Some((now, c)),
            }
        }
        Action::admit(self.fraction())
    }

    fn name(&self) -> &'static str {
        "priority-levels"
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_survives_garbage, Synth};
    use super::*;

    #[test]
    fn levels_order_business_before_user() {
        let d = PriorityLevels::new(PriorityLevelsConfig { business_levels: 4, user_levels: 3, ..Default::default() })
            .unwrap();
        assert_eq!(d.levels(), 12);
        assert_eq!(d.level(Priority { business: 0, user: 0 }), 0);
        assert_eq!(d.level(Priority { business: 1, user: 0 }), 3);
        assert_eq!(d.level(Priority { business: 3, user: 2 }), 11);
        assert_eq!(d.level(Priority { business: 99, user: 99 }), 11); // clamped
        let mut d = d;
        d.set_admitted(4);
        assert!(d.admits(Priority { business: 1, user: 0 }));
        assert!(!d.admits(Priority { business: 1, user: 1 }));
        d.set_admitted(0);
        assert_eq!(d.admitted(), 1); // the most important level is always served
    }

    #[test]
    fn long_waits_shed_alpha_per_window_and_short_ones_add_beta() {
        let mut d = PriorityLevels::new(PriorityLevelsConfig::default()).unwrap();
        let mut s = Synth::new(50.0, 8.0, 100.0);
        s.step(&mut d, 0.1, 0.05); // opens the window
        s.run(&mut d, 20, 0.1, 0.05); // 1 s at 50 ms mean wait > 20 ms
        assert_eq!(d.windows(), (1, 1));
        assert_eq!(d.admitted(), (16384.0f64 * 0.95).floor() as u32);
        for _ in 0..9 {
            s.run(&mut d, 20, 0.1, 0.05);
        }
        let low = d.admitted();
        assert!((d.fraction() - 0.95f64.powi(10)).abs() < 1e-3, "{}", d.fraction());
        assert!((s.step(&mut d, 0.1, 0.05).admit - d.fraction()).abs() < 1e-12);
        s.run(&mut d, 19, 0.03, 0.01); // the window with one busy tick: mean wait 12 ms < 20 ms
        s.run(&mut d, 20, 0.03, 0.01);
        assert!(d.admitted() > low);
        assert!((d.admitted() as f64 / low as f64 - 1.01 * 1.01).abs() < 1e-3);
    }

    #[test]
    fn many_requests_close_a_window_early() {
        let mut d = PriorityLevels::new(PriorityLevelsConfig::default()).unwrap();
        let mut s = Synth::new(50.0, 8.0, 10_000.0); // 500 per tick
        s.step(&mut d, 0.1, 0.05);
        s.run(&mut d, 4, 0.1, 0.05); // 2000 requests in 0.2 s
        assert_eq!(d.windows(), (1, 1));
    }

    #[test]
    fn without_completions_the_oldest_wait_decides() {
        let mut d = PriorityLevels::new(PriorityLevelsConfig::default()).unwrap();
        let mut o = Observation::new(0.0, 50.0, 200.0);
        d.decide(&o);
        o.now = 1.0;
        o.oldest_wait = 0.5;
        d.decide(&o);
        assert_eq!(d.windows(), (1, 1));
        o.now = 2.0;
        o.oldest_wait = 0.0;
        d.decide(&o);
        assert_eq!(d.windows(), (2, 1));
    }

    #[test]
    fn bounds_are_respected() {
        let cfg = PriorityLevelsConfig { business_levels: 2, user_levels: 2, ..Default::default() };
        let mut d = PriorityLevels::new(cfg).unwrap();
        let mut s = Synth::new(50.0, 8.0, 100.0);
        s.run(&mut d, 400, 0.1, 0.05);
        assert_eq!(d.admitted(), 1);
        assert_eq!(d.fraction(), 0.25);
        s.run(&mut d, 400, 0.01, 0.0);
        assert_eq!(d.admitted(), 4);
    }

    #[test]
    fn bad_config_is_refused() {
        let d = PriorityLevelsConfig::default();
        assert_eq!(PriorityLevels::new(PriorityLevelsConfig { user_levels: 0, ..d }).unwrap_err().field, "user_levels");
        assert_eq!(PriorityLevels::new(PriorityLevelsConfig { alpha: 1.5, ..d }).unwrap_err().field, "alpha");
        assert_eq!(PriorityLevels::new(PriorityLevelsConfig { window: 0.0, ..d }).unwrap_err().field, "window");
        assert_eq!(
            PriorityLevels::new(PriorityLevelsConfig { threshold: f64::NAN, ..d }).unwrap_err().field,
            "threshold"
        );
    }

    #[test]
    fn garbage_never_yields_a_bad_action() {
        assert_survives_garbage(&mut PriorityLevels::new(PriorityLevelsConfig::default()).unwrap());
    }
}
