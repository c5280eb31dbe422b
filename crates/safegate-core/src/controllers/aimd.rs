//! Netflix's `AIMDLimit`: additive increase, multiplicative decrease on a loss signal.
//!
//! Every window (Netflix concurrency-limits, `AIMDLimit._update`, read for this port):
//!
//! ```text
//! drop or rtt > timeout   → L ← ⌊L · backoff⌋
//! else in_flight·2 ≥ L    → L ← L + 1
//! L ← clamp(L, min, max)
//! ```
//!
//! The loss signal here is the backlog found full during the window (an admitted arrival
//! there is lost) or the window's mean RTT (latency, or service time on executors) above
//! the timeout. On executors service time stays far below the 5 s default, so only a full
//! backlog makes the limit back off: AIMD then holds the queue near the cap, the honest
//! behaviour of a loss-driven limiter in front of a queue that hides the loss.

use crate::error::check;
use super::{check_limits, Actuator, LimitAlgorithm, Setting, WindowSample, Windowed};
use crate::RangeError;

/// Configuration of [`Aimd`]; defaults are Netflix `AIMDLimit.Builder`'s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AimdConfig {
    /// What the limit caps. Default [`Actuator::InFlight`].
    pub actuator: Actuator,
    /// Starting limit. Default 20.
    pub initial_limit: u32,
    /// Lowest limit. Default 20.
    pub min_limit: u32,
    /// Highest limit. Default 200.
    pub max_limit: u32,
    /// Factor applied on a drop, in `[0.5, 1)`. Default 0.9.
    pub backoff: f64,
    /// An RTT above this counts as a drop \[s\]. Default 5 s.
    pub timeout: f64,
    /// Update interval \[s\]. Default 0.05 s (the simulator's tick).
    pub interval: f64,
    /// Completions a window needs (Netflix `WindowedLimit` window size). Default 10.
    pub min_samples: u32,
}

impl Default for AimdConfig {
    fn default() -> Self {
        Self {
            actuator: Actuator::InFlight,
            initial_limit: 20,
            min_limit: 20,
            max_limit: 200,
            backoff: 0.9,
            timeout: 5.0,
            interval: 0.05,
            min_samples: 10,
        }
    }
}

impl AimdConfig {
    /// The defaults adapted to `setting`: updates every `period`; in-flight limits capped at
    /// the capacity; on executors the limit lives in `[1, executors]` and starts at
    /// `executors`.
    pub fn for_setting(actuator: Actuator, setting: &Setting) -> Self {
        let d = Self::default();
        let (min, initial, max) =
            setting.limits(actuator, f64::from(d.min_limit), f64::from(d.initial_limit), f64::from(d.max_limit));
        // Whole limits: `⌊·⌋` of the bounds keeps `min ≤ initial ≤ max`.
        let (min_limit, initial_limit, max_limit) = (min as u32, initial as u32, max as u32);
        Self { actuator, min_limit, initial_limit, max_limit, interval: setting.period, ..d }
    }
}

/// Netflix's AIMD limiter (see the module docs): [`AimdLimit`] run on windows.
///
/// # Examples
///
/// ```
/// use safegate_core::controllers::{Aimd, AimdConfig};
/// use safegate_core::{Observation, Policy};
///
/// let mut a = Aimd::new(AimdConfig::default()).unwrap();
/// assert_eq!(a.limit(), 20);
/// assert_eq!(a.decide(&Observation::new(0.0, 25.0, 200.0)).admit, 0.0);
/// ```
pub type Aimd = Windowed<AimdLimit>;

/// AIMD's update rule and state (Netflix `AIMDLimit`).
#[derive(Debug, Clone)]
pub struct AimdLimit {
    cfg: AimdConfig,
    drops: u64,
}

impl Aimd {
    /// A limiter with `cfg`, range-checked.
    pub fn new(cfg: AimdConfig) -> Result<Self, RangeError> {
        check_limits(cfg.min_limit as f64, cfg.initial_limit as f64, cfg.max_limit as f64)?;
        check::within("backoff", cfg.backoff, 0.5, 1.0 - f64::EPSILON, "[0.5, 1)")?;
        check::positive("timeout", cfg.timeout)?;
        let rule = AimdLimit { drops: 0, cfg };
        Windowed::around(rule, cfg.actuator, f64::from(cfg.initial_limit), cfg.interval, cfg.min_samples)
    }

    /// Windows that counted as a drop so far.
    pub fn drops(&self) -> u64 {
        self.algorithm().drops
    }

    /// The configuration.
    pub fn config(&self) -> &AimdConfig {
        &self.algorithm().cfg
    }
}

impl LimitAlgorithm for AimdLimit {
    const NAME: &'static str = "aimd";

    /// On whole limits: `limit` is always one (the initial limit, then this rule's).
    fn update(&mut self, limit: f64, sample: &WindowSample) -> f64 {
        let c = &self.cfg;
        let limit = limit as u32;
        let late = sample.rtt.is_some_and(|r| r > c.timeout);
        let next = if sample.drop || late {
            self.drops += 1;
            (limit as f64 * c.backoff).floor() as u32
        } else if !sample.app_limited(limit as f64) {
            limit.saturating_add(1)
        } else {
            limit
        };
        f64::from(next.clamp(c.min_limit, c.max_limit))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_survives_garbage, Synth};
    use super::*;

    #[test]
    fn no_drops_add_one_per_window() {
        let mut a = Aimd::new(AimdConfig::default()).unwrap();
        let mut s = Synth::new(100.0, 8.0, 200.0);
        s.step(&mut a, 0.05, 0.0); // starts the window
        s.run(&mut a, 10, 0.05, 0.0);
        assert_eq!(a.limit(), 30);
        // Doubling the latency is no drop: AIMD only hears loss.
        s.run(&mut a, 10, 0.10, 0.0);
        assert_eq!(a.limit(), 40);
    }

    #[test]
    fn a_timeout_or_a_full_backlog_backs_off() {
        let mut a = Aimd::new(AimdConfig { initial_limit: 100, ..AimdConfig::default() }).unwrap();
        let mut s = Synth::new(100.0, 8.0, 200.0);
        s.step(&mut a, 0.05, 0.0);
        s.step(&mut a, 6.0, 0.0);
        assert_eq!((a.limit(), a.drops()), (90, 1));
        s.obs.queue = 200.0;
        s.step(&mut a, 0.05, 0.0);
        assert_eq!((a.limit(), a.drops()), (81, 2));
        s.run(&mut a, 100, 0.05, 0.0);
        assert_eq!(a.limit(), 20); // the floor
    }

    #[test]
    fn app_limited_windows_do_not_grow() {
        let mut a = Aimd::new(AimdConfig::default()).unwrap();
        let mut s = Synth::new(9.0, 8.0, 200.0);
        s.run(&mut a, 50, 0.05, 0.0);
        assert_eq!(a.limit(), 20);
    }

    #[test]
    fn executors_cap_within_the_pool() {
        let cfg = AimdConfig::for_setting(Actuator::Executors, &Setting::default());
        let mut a = Aimd::new(cfg).unwrap();
        let mut s = Synth::new(200.0, 8.0, 75.0);
        for _ in 0..200 {
            let act = s.step(&mut a, 2.0, 1.9);
            assert_eq!(act.admit, 1.0);
            assert!((1..=8).contains(&act.concurrency.unwrap()));
        }
        assert_eq!(a.limit(), 1); // a full backlog every window
        s.obs.queue = 10.0;
        s.run(&mut a, 200, 0.03, 0.0);
        assert_eq!(a.limit(), 8);
    }

    #[test]
    fn bad_config_is_refused() {
        let d = AimdConfig::default();
        assert_eq!(Aimd::new(AimdConfig { backoff: 1.0, ..d }).unwrap_err().field, "backoff");
        assert_eq!(Aimd::new(AimdConfig { backoff: 0.4, ..d }).unwrap_err().field, "backoff");
        assert_eq!(Aimd::new(AimdConfig { timeout: f64::NAN, ..d }).unwrap_err().field, "timeout");
        assert_eq!(Aimd::new(AimdConfig { min_limit: 0, ..d }).unwrap_err().field, "min_limit");
    }

    #[test]
    fn garbage_never_yields_a_bad_action() {
        assert_survives_garbage(&mut Aimd::new(AimdConfig::default()).unwrap());
        assert_survives_garbage(
            &mut Aimd::new(AimdConfig::for_setting(Actuator::Executors, &Setting::default())).unwrap(),
        );
    }
}
