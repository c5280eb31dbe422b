//! Envoy's adaptive concurrency filter, gradient controller.
//!
//! (Envoy docs, "Adaptive Concurrency" filter and its v3 API reference; the controller in
//! `source/extensions/filters/http/adaptive_concurrency/controller/gradient_controller.cc`,
//! read for this port.) Two alternating phases:
//!
//! - **minRTT window**: the limit is pinned to `min_concurrency` (3) until `request_count`
//!   (50) requests have completed; their RTT becomes `minRTT`, and the limit returns to its
//!   value before the window. A window starts at the beginning, every `min_rtt_interval`
//!   (60 s in the docs' example) after the previous one ended, and whenever the limit has
//!   been set to its minimum for 5 windows in a row (a sign of a stale minRTT).
//! - **sample windows**, every `update_interval` (0.1 s in the docs' example):
//!
//! ```text
//! gradient = clamp((minRTT + buffer·minRTT) / sampleRTT, 0.5, 2)
//! L'       = L · gradient
//! L        ← clamp(⌊L' + √L'⌋, min_limit, max_limit)        (headroom √L', unconfigurable)
//! ```
//!
//! Departures from Envoy, forced by the observation or by determinism: the sample RTT is
//! the window's mean, not a percentile (an [`Observation`] carries sums, not histograms);
//! Envoy discards samples of requests sent before a minRTT window opened, so here the
//! window's count starts once the load has fallen to `min_concurrency` (the earlier
//! requests have mostly left); and the minRTT interval has no jitter.

use crate::error::check;
use super::{Actuator, Counters, Sampler, Setting, Window};
use crate::policy::{Action, Observation, Policy};
use crate::RangeError;

/// Configuration of [`EnvoyGradient`]; defaults from the Envoy docs and API reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnvoyGradientConfig {
    /// What the limit caps. Default [`Actuator::InFlight`].
    pub actuator: Actuator,
    /// Sample window (`concurrency_update_interval`, required in Envoy) \[s\]. Default 0.1 s
    /// (the docs' example).
    pub update_interval: f64,
    /// Time between minRTT windows (`min_rtt_calc_params.interval`) \[s\]. Default 60 s (the
    /// docs' example).
    pub min_rtt_interval: f64,
    /// Requests aggregated into a minRTT (`request_count`). Default 50.
    pub request_count: u32,
    /// Limit during a minRTT window (`min_concurrency`). Default 3.
    pub min_concurrency: u32,
    /// Lowest computed limit (`min_concurrency_limit`; unset in Envoy means
    /// `min_concurrency`). Default 3.
    pub min_limit: u32,
    /// Highest computed limit (`max_concurrency_limit`). Default 1000.
    pub max_limit: u32,
    /// Share of minRTT added before the comparison (`buffer`). Default 0.25.
    pub buffer: f64,
}

impl Default for EnvoyGradientConfig {
    fn default() -> Self {
        Self {
            actuator: Actuator::InFlight,
            update_interval: 0.1,
            min_rtt_interval: 60.0,
            request_count: 50,
            min_concurrency: 3,
            min_limit: 3,
            max_limit: 1000,
            buffer: 0.25,
        }
    }
}

impl EnvoyGradientConfig {
    /// The defaults adapted to `setting`: the update interval is at least `period`; the
    /// limit's maximum is the capacity (in flight) or the pool size (executors), and the
    /// minimum and the minRTT concurrency are at most that.
    pub fn for_setting(actuator: Actuator, setting: &Setting) -> Self {
        let d = Self::default();
        let max = setting.max_limit(actuator, f64::from(d.max_limit)) as u32;
        Self {
            actuator,
            update_interval: d.update_interval.max(setting.period),
            max_limit: max,
            min_limit: d.min_limit.min(max),
            min_concurrency: d.min_concurrency.min(max),
            ..d
        }
    }
}

/// Which phase the controller is in.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Measuring minRTT at `min_concurrency`; `deferred` is the limit to return to; `start`
    /// is where the count began (once the load fell to `min_concurrency`).
    MinRtt { deferred: u32, start: Option<Counters> },
    /// Sample windows; the next minRTT window opens at `next_min_rtt`.
    Sampling { next_min_rtt: f64 },
}

/// Envoy's gradient controller (see the module docs).
///
/// # Examples
///
/// ```
/// use safegate_core::controllers::{EnvoyGradient, EnvoyGradientConfig};
/// use safegate_core::{Observation, Policy};
///
/// let mut e = EnvoyGradient::new(EnvoyGradientConfig::default()).unwrap();
/// // It starts by measuring minRTT at a concurrency of 3.
/// assert!(e.measuring_min_rtt());
/// assert_eq!(e.decide(&Observation::new(0.0, 2.0, 200.0)).admit, 1.0);
/// assert_eq!(e.decide(&Observation::new(0.0, 3.0, 200.0)).admit, 0.0);
/// ```
#[derive(Debug, Clone)]
pub struct EnvoyGradient {
    cfg: EnvoyGradientConfig,
    limit: u32,
    min_rtt: Option<f64>,
    phase: Phase,
    consecutive_min: u32,
    sampler: Sampler,
    min_rtt_windows: u64,
}

impl EnvoyGradient {
    /// A controller with `cfg`, range-checked.
    pub fn new(cfg: EnvoyGradientConfig) -> Result<Self, RangeError> {
        check::positive("update_interval", cfg.update_interval)?;
        check::positive("min_rtt_interval", cfg.min_rtt_interval)?;
        check::within("request_count", cfg.request_count as f64, 1.0, f64::MAX, "1 or more")?;
        check::within("min_limit", cfg.min_limit as f64, 1.0, f64::MAX, "1 or more")?;
        check::within("max_limit", cfg.max_limit as f64, cfg.min_limit as f64, f64::MAX, "[min_limit, ∞)")?;
        check::within("min_concurrency", cfg.min_concurrency as f64, 1.0, cfg.max_limit as f64, "[1, max_limit]")?;
        check::within("buffer", cfg.buffer, 0.0, f64::MAX, "[0, ∞)")?;
        Ok(Self {
            limit: cfg.min_concurrency,
            min_rtt: None,
            phase: Phase::MinRtt { deferred: cfg.min_concurrency, start: None },
            consecutive_min: 0,
            sampler: Sampler::new(cfg.update_interval),
            min_rtt_windows: 0,
            cfg,
        })
    }

    /// The limit in force.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// The last measured minRTT \[s\].
    pub fn min_rtt(&self) -> Option<f64> {
        self.min_rtt
    }

    /// Whether a minRTT window is open.
    pub fn measuring_min_rtt(&self) -> bool {
        matches!(self.phase, Phase::MinRtt { .. })
    }

    /// minRTT windows completed so far.
    pub fn min_rtt_windows(&self) -> u64 {
        self.min_rtt_windows
    }

    /// The configuration.
    pub fn config(&self) -> &EnvoyGradientConfig {
        &self.cfg
    }

    fn enter_min_rtt(&mut self) {
        self.phase = Phase::MinRtt { deferred: self.limit, start: None };
        self.limit = self.cfg.min_concurrency;
        self.consecutive_min = 0;
    }

    /// Set the limit, counting windows that set it to the floor (Envoy
    /// `updateConcurrencyLimit`).
    fn set_limit(&mut self, new: u32) {
        let floor = self.cfg.min_limit;
        if self.limit == floor && new == floor {
            self.consecutive_min += 1;
        } else {
            self.consecutive_min = 0;
        }
        self.limit = new;
    }

    fn sample(&mut self, w: &Window) {
        let (Some(min_rtt), Some(sample)) = (self.min_rtt, w.signal(self.cfg.actuator)) else {
            return;
        };
        let c = &self.cfg;
        let gradient = (min_rtt * (1.0 + c.buffer) / sample).clamp(0.5, 2.0);
        let l = self.limit as f64 * gradient;
        let new = (l + l.sqrt()).floor().clamp(c.min_limit as f64, c.max_limit as f64) as u32;
        self.set_limit(new);
    }

    fn step(&mut self, obs: &Observation) {
        let now = obs.now;
        if !now.is_finite() {
            return;
        }
        match self.phase {
            Phase::MinRtt { deferred, start } => {
                let Some(c) = Counters::of(obs) else { return };
                let Some(c0) = start else {
                    let drained =
                        self.cfg.actuator.in_flight(obs).is_some_and(|v| v <= self.cfg.min_concurrency as f64);
                    if drained {
                        self.phase = Phase::MinRtt { deferred, start: Some(c) };
                    }
                    return;
                };
                let done = c.completed - c0.completed;
                if !(done >= 0.0 && c.latency >= c0.latency && c.wait >= c0.wait) {
                    // Counters went backwards: count again from here.
                    self.phase = Phase::MinRtt { deferred, start: Some(c) };
                    return;
                }
                if done < self.cfg.request_count as f64 {
                    return;
                }
                let w = Window {
                    elapsed: 0.0,
                    delta: Counters {
                        completed: done,
                        latency: c.latency - c0.latency,
                        wait: c.wait - c0.wait,
                        ..Counters::default()
                    },
                };
                match w.signal(self.cfg.actuator) {
                    Some(rtt) => {
                        self.min_rtt = Some(rtt);
                        self.min_rtt_windows += 1;
                        self.limit = deferred;
                        self.consecutive_min = 0;
                        self.phase = Phase::Sampling { next_min_rtt: now + self.cfg.min_rtt_interval };
                        self.sampler.restart(obs);
                    }
                    // No usable RTT (all zero): measure again.
                    None => self.phase = Phase::MinRtt { deferred, start: Some(c) },
                }
            }
            Phase::Sampling { next_min_rtt } => {
                if now >= next_min_rtt || now < next_min_rtt - 2.0 * self.cfg.min_rtt_interval {
                    self.enter_min_rtt();
                    return;
                }
                if let Some(w) = self.sampler.poll(obs, 1.0) {
                    self.sample(&w);
                    if self.consecutive_min >= 5 {
                        self.enter_min_rtt();
                    }
                }
            }
        }
    }
}

impl Policy for EnvoyGradient {
    fn decide(&mut self, obs: &Observation) -> Action {
        self.step(obs);
        self.cfg.actuator.action(self.limit, obs)
    }

    fn name(&self) -> &'static str {
        "envoy-gradient"
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_survives_garbage, Synth};
    use super::*;

    /// A controller past its first minRTT window (minRTT = `rtt`), at limit `limit`.
    fn measured(cfg: EnvoyGradientConfig, s: &mut Synth, rtt: f64) -> EnvoyGradient {
        let mut e = EnvoyGradient::new(cfg).unwrap();
        let q = s.obs.queue;
        s.obs.queue = 2.0;
        s.obs.in_service = 2.0;
        // 50 completions at ≤ 3 in flight close the window.
        for _ in 0..40 {
            if !e.measuring_min_rtt() {
                break;
            }
            s.step(&mut e, rtt, 0.0);
        }
        assert!(!e.measuring_min_rtt());
        assert!((e.min_rtt().unwrap() - rtt).abs() < 1e-12);
        s.obs.queue = q;
        e
    }

    #[test]
    fn flat_latency_grows_the_limit() {
        let mut s = Synth::new(100.0, 8.0, 50.0);
        let mut e = measured(EnvoyGradientConfig::default(), &mut s, 0.04);
        assert_eq!(e.limit(), 3);
        s.run(&mut e, 4, 0.04, 0.0); // two sample windows at the minRTT: ×1.25 + √
        assert!(e.limit() > 5, "{}", e.limit());
        s.run(&mut e, 40, 0.04, 0.0);
        assert!(e.limit() > 100, "{}", e.limit());
    }

    #[test]
    fn doubled_latency_shrinks_the_limit() {
        let mut s = Synth::new(100.0, 8.0, 50.0);
        let mut e = measured(EnvoyGradientConfig::default(), &mut s, 0.04);
        s.run(&mut e, 20, 0.04, 0.0);
        let before = e.limit();
        s.run(&mut e, 2, 0.09, 0.0); // gradient 0.05/0.09: L ← ⌊L' + √L'⌋, L' = 5/9·L
        let l = before as f64 * 5.0 / 9.0;
        assert!(e.limit() < before);
        assert!((e.limit() as f64 - (l + l.sqrt()).floor()).abs() <= 1.0, "{before} → {}", e.limit());
    }

    #[test]
    fn min_rtt_is_remeasured_on_schedule_and_pins_the_limit() {
        let mut s = Synth::new(100.0, 8.0, 50.0);
        let mut e = measured(EnvoyGradientConfig::default(), &mut s, 0.04);
        s.run(&mut e, 100, 0.04, 0.0);
        let high = e.limit();
        assert!(high > 3);
        // Run to the 60 s mark: the window opens, the limit drops to 3 …
        let t0 = s.obs.now;
        while s.obs.now < t0 + 60.0 && !e.measuring_min_rtt() {
            s.step(&mut e, 0.04, 0.0);
        }
        assert!(e.measuring_min_rtt());
        assert_eq!(e.limit(), 3);
        assert_eq!(Actuator::InFlight.action(e.limit(), &Observation::new(0.0, 3.0, 200.0)).admit, 0.0);
        // … and the count waits for the load to drain to 3.
        s.run(&mut e, 100, 0.02, 0.0);
        assert!(e.measuring_min_rtt());
        s.obs.queue = 3.0;
        s.run(&mut e, 30, 0.02, 0.0);
        assert!(!e.measuring_min_rtt());
        assert!((e.min_rtt().unwrap() - 0.02).abs() < 1e-12);
        assert_eq!(e.min_rtt_windows(), 2);
    }

    #[test]
    fn five_windows_at_the_floor_trigger_a_new_min_rtt() {
        let mut s = Synth::new(100.0, 8.0, 50.0);
        let mut e = measured(EnvoyGradientConfig::default(), &mut s, 0.04);
        // Latency 10× minRTT: gradient 0.5, ⌊1.5 + √1.5⌋ = 2 → the floor 3, five times.
        for _ in 0..12 {
            s.run(&mut e, 2, 0.4, 0.0);
        }
        assert!(e.measuring_min_rtt());
    }

    #[test]
    fn executors_cap_busy_executors_within_the_pool() {
        let cfg = EnvoyGradientConfig::for_setting(Actuator::Executors, &Setting::default());
        assert_eq!((cfg.max_limit, cfg.min_concurrency, cfg.update_interval), (8, 3, 0.1));
        let mut e = EnvoyGradient::new(cfg).unwrap();
        let base = 1.0 / 37.5;
        let mut s = Synth::new(150.0, 3.0, 75.0);
        // minRTT at 3 busy (no contention); then a backlog at the cap, service time (n/4)².
        let mut caps = Vec::new();
        for _ in 0..400 {
            let n = e.limit() as f64;
            s.obs.in_service = n;
            let a = s.step(&mut e, base * (n / 4.0).powi(2).max(1.0) + 1.0, 1.0);
            assert_eq!(a.admit, 1.0);
            caps.push(a.concurrency.unwrap());
        }
        assert!((e.min_rtt().unwrap() - base).abs() < 1e-9);
        // gradient 1.25 at ≤ 4 lets it climb; at 6, 1.25/2.25: ⌊3.33 + 1.83⌋ = 5; at 5, 0.8: 6.
        assert!(caps[200..].iter().all(|&c| (5..=6).contains(&c)), "{caps:?}");
    }

    #[test]
    fn bad_config_is_refused() {
        let d = EnvoyGradientConfig::default();
        assert_eq!(EnvoyGradient::new(EnvoyGradientConfig { buffer: -0.1, ..d }).unwrap_err().field, "buffer");
        assert_eq!(
            EnvoyGradient::new(EnvoyGradientConfig { request_count: 0, ..d }).unwrap_err().field,
            "request_count"
        );
        assert_eq!(EnvoyGradient::new(EnvoyGradientConfig { max_limit: 2, ..d }).unwrap_err().field, "max_limit");
        assert_eq!(
            EnvoyGradient::new(EnvoyGradientConfig { update_interval: 0.0, ..d }).unwrap_err().field,
            "update_interval"
        );
    }

    #[test]
    fn garbage_never_yields_a_bad_action() {
        assert_survives_garbage(&mut EnvoyGradient::new(EnvoyGradientConfig::default()).unwrap());
        let cfg = EnvoyGradientConfig::for_setting(Actuator::Executors, &Setting::default());
        assert_survives_garbage(&mut EnvoyGradient::new(cfg).unwrap());
    }
}
