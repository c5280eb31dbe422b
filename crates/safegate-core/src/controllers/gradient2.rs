//! Netflix's `Gradient2Limit`: a limit steered by the ratio of a long-term average RTT to the
//! current one.
//!
//! Every window (Netflix concurrency-limits, `Gradient2Limit._update`, read for this port):
//!
//! ```text
//! short    = the window's mean RTT
//! long     = EWMA of short, factor 2/(long_window + 1) after a plain mean of the first 10
//! if long/short > 2:  long ← 0.95·long          (recover quickly after a long overload)
//! if in_flight < L/2: keep L                     (app-limited: no evidence about the limit)
//! gradient = clamp(tolerance · long / short, 0.5, 1)
//! L ← (1 − smoothing)·L + smoothing·(gradient·L + queue_size(L)),  clamped to [min, max]
//! ```
//!
//! With the [`Actuator::Executors`] actuator the RTT is the service time, and the default
//! fixed queue size of 4 could never bring a limit of at most 8 down (`gradient·L + 4 ≥ L`
//! whenever `L ≤ 8`, as `gradient ≥ 0.5`). [`Gradient2Config::for_setting`] therefore uses
//! the library's `Log10RootFunction` as the queue size on executors (1 below a limit of 10):
//! the limit then shrinks once `(1 − gradient)·L > 1`. On the seed's pool, with the long
//! average at the contention-free service time `1/s`, that is above `L = 5` (service time
//! `(n/C)²/s` past `C = 4`: gradient `1.5/2.25 = 0.67` at 6), so the cap settles at 5–6. The
//! square-root growth of Netflix's first `GradientLimit` (also offered, [`QueueSize::SquareRoot`])
//! lets a noisy long average hold the cap at 7–8, where 8 busy executors clear less than the
//! seed's 80 req/s.

use crate::error::check;
use super::{check_limits, log10_root, Actuator, LimitAlgorithm, Setting, WindowSample, Windowed};
use crate::RangeError;

/// How much the limit may grow while latency stays low (Netflix's `queueSize` function).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QueueSize {
    /// A fixed amount (Netflix `Gradient2Limit` default: 4).
    Fixed(f64),
    /// `√L` (Netflix `GradientLimit`'s default `SquareRootFunction`).
    SquareRoot,
    /// `max(1, ⌊log₁₀ L⌋)` (Netflix `Log10RootFunction`, Vegas's step).
    Log10,
}

impl QueueSize {
    fn at(self, limit: f64) -> f64 {
        match self {
            QueueSize::Fixed(q) => q,
            QueueSize::SquareRoot => limit.max(0.0).sqrt(),
            QueueSize::Log10 => log10_root(limit),
        }
    }
}

/// Configuration of [`Gradient2`]; defaults are Netflix `Gradient2Limit.Builder`'s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gradient2Config {
    /// What the limit caps. Default [`Actuator::InFlight`].
    pub actuator: Actuator,
    /// Starting limit. Default 20.
    pub initial_limit: f64,
    /// Lowest limit. Default 20.
    pub min_limit: f64,
    /// Highest limit (`maxConcurrency`). Default 200.
    pub max_limit: f64,
    /// Weight of the new estimate per update, in `(0, 1]`. Default 0.2.
    pub smoothing: f64,
    /// Accepted growth of the RTT over its long-term average before the limit shrinks, ≥ 1.
    /// Default 1.5.
    pub rtt_tolerance: f64,
    /// Growth allowance. Default `Fixed(4)`.
    pub queue_size: QueueSize,
    /// Windows in the long-term RTT average (`longWindow`). Default 600.
    pub long_window: u32,
    /// Windows averaged plainly before the EWMA starts (`ExpAvgMeasurement` warm-up). Default 10.
    pub warmup: u32,
    /// Update interval \[s\]. Default 0.05 s (the simulator's tick).
    pub interval: f64,
    /// Completions a window needs before it counts (Netflix `WindowedLimit` window size).
    /// Default 10.
    pub min_samples: u32,
}

impl Default for Gradient2Config {
    fn default() -> Self {
        Self {
            actuator: Actuator::InFlight,
            initial_limit: 20.0,
            min_limit: 20.0,
            max_limit: 200.0,
            smoothing: 0.2,
            rtt_tolerance: 1.5,
            queue_size: QueueSize::Fixed(4.0),
            long_window: 600,
            warmup: 10,
            interval: 0.05,
            min_samples: 10,
        }
    }
}

impl Gradient2Config {
    /// The defaults adapted to `setting`: updates every `period`; in-flight limits capped at
    /// the capacity; on executors the limit lives in `[1, executors]`, starts at
    /// `executors`, and grows by `max(1, ⌊log₁₀ L⌋)` (see the module docs).
    pub fn for_setting(actuator: Actuator, setting: &Setting) -> Self {
        let d = Self::default();
        let (min_limit, initial_limit, max_limit) = setting.limits(actuator, d.min_limit, d.initial_limit, d.max_limit);
        let queue_size = match actuator {
            Actuator::InFlight => d.queue_size,
            Actuator::Executors => QueueSize::Log10,
        };
        Self { actuator, min_limit, initial_limit, max_limit, queue_size, interval: setting.period, ..d }
    }
}

/// Netflix's Gradient2 limiter (see the module docs): [`Gradient2Limit`] run on windows.
///
/// # Examples
///
/// ```
/// use safegate_core::controllers::{Gradient2, Gradient2Config};
/// use safegate_core::{Observation, Policy};
///
/// let mut g = Gradient2::new(Gradient2Config::default()).unwrap();
/// assert_eq!(g.limit(), 20);
/// // Arrivals are admitted while fewer than 20 requests are in the system.
/// assert_eq!(g.decide(&Observation::new(0.0, 19.0, 200.0)).admit, 1.0);
/// assert_eq!(g.decide(&Observation::new(0.0, 20.0, 200.0)).admit, 0.0);
/// ```
pub type Gradient2 = Windowed<Gradient2Limit>;

/// Gradient2's update rule and state (Netflix `Gradient2Limit`).
#[derive(Debug, Clone)]
pub struct Gradient2Limit {
    cfg: Gradient2Config,
    long: f64,
    long_count: u32,
    last_short: Option<f64>,
}

impl Gradient2 {
    /// A limiter with `cfg`, range-checked.
    pub fn new(cfg: Gradient2Config) -> Result<Self, RangeError> {
        check_limits(cfg.min_limit, cfg.initial_limit, cfg.max_limit)?;
        check::within("smoothing", cfg.smoothing, f64::MIN_POSITIVE, 1.0, "(0, 1]")?;
        check::within("rtt_tolerance", cfg.rtt_tolerance, 1.0, f64::MAX, "[1, ∞)")?;
        if let QueueSize::Fixed(q) = cfg.queue_size {
            check::within("queue_size", q, 0.0, f64::MAX, "[0, ∞)")?;
        }
        check::within("long_window", cfg.long_window as f64, 1.0, f64::MAX, "1 or more")?;
        let rule = Gradient2Limit { long: 0.0, long_count: 0, last_short: None, cfg };
        Windowed::around(rule, cfg.actuator, cfg.initial_limit, cfg.interval, cfg.min_samples)
    }

    /// The long-term RTT average \[s\] (0 before the first window).
    pub fn long_rtt(&self) -> f64 {
        self.algorithm().long
    }

    /// The last window's RTT \[s\].
    pub fn short_rtt(&self) -> Option<f64> {
        self.algorithm().last_short
    }

    /// The configuration.
    pub fn config(&self) -> &Gradient2Config {
        &self.algorithm().cfg
    }
}

impl LimitAlgorithm for Gradient2Limit {
    const NAME: &'static str = "gradient2";

    fn update(&mut self, limit: f64, sample: &WindowSample) -> f64 {
        let Some(short) = sample.rtt else { return limit };
        let c = &self.cfg;
        self.last_short = Some(short);
        // ExpAvgMeasurement: a plain mean over the warm-up, then an EWMA.
        if self.long_count < c.warmup {
            self.long_count += 1;
            self.long += (short - self.long) / self.long_count as f64;
        } else {
            let f = 2.0 / (c.long_window as f64 + 1.0);
            self.long = self.long * (1.0 - f) + short * f;
        }
        let long = self.long;
        if long / short > 2.0 {
            self.long *= 0.95;
        }
        if sample.app_limited(limit) {
            return limit;
        }
        let queue = c.queue_size.at(limit);
        let gradient = (c.rtt_tolerance * long / short).clamp(0.5, 1.0);
        let target = limit * gradient + queue;
        let next = limit * (1.0 - c.smoothing) + target * c.smoothing;
        if next.is_finite() {
            next.clamp(c.min_limit, c.max_limit)
        } else {
            limit
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_survives_garbage, Synth};
    use super::*;
    use crate::{Observation, Policy};

    fn executors() -> Gradient2 {
        Gradient2::new(Gradient2Config::for_setting(Actuator::Executors, &Setting::default())).unwrap()
    }

    #[test]
    fn flat_latency_grows_the_limit_to_its_max() {
        let mut g = Gradient2::new(Gradient2Config::default()).unwrap();
        // 200 req/s, 10 per tick: a window every tick; in flight 100 ≥ L/2.
        let mut s = Synth::new(100.0, 8.0, 200.0);
        s.run(&mut g, 20, 0.05, 0.0);
        let early = g.estimate();
        assert!(early > 20.0, "{early}");
        s.run(&mut g, 2000, 0.05, 0.0);
        assert_eq!(g.limit(), 200);
    }

    #[test]
    fn doubled_latency_shrinks_the_limit() {
        let mut g = Gradient2::new(Gradient2Config { initial_limit: 100.0, ..Gradient2Config::default() }).unwrap();
        let mut s = Synth::new(100.0, 8.0, 200.0);
        s.run(&mut g, 30, 0.05, 0.0);
        let before = g.estimate();
        s.run(&mut g, 20, 0.10, 0.0);
        let after = g.estimate();
        // gradient = 1.5·long/short ≈ 0.75 (long barely moves), queue 4: L shrinks.
        assert!(after < before - 10.0, "{before} → {after}");
        assert!(after >= 20.0);
    }

    #[test]
    fn app_limited_windows_leave_the_limit_alone() {
        let mut g = Gradient2::new(Gradient2Config::default()).unwrap();
        let mut s = Synth::new(5.0, 5.0, 200.0); // 5 in flight < 20/2
        s.run(&mut g, 100, 0.05, 0.0);
        assert_eq!(g.estimate(), 20.0);
        s.run(&mut g, 100, 0.5, 0.0);
        assert_eq!(g.estimate(), 20.0);
    }

    #[test]
    fn executors_back_off_to_the_service_curve_peak() {
        // The seed's pool: service time rises as (n/4)² past n = 4 busy executors. First a
        // calm spell teaches the long average the contention-free service time; then a
        // backlog keeps every allowed executor busy, at the service time the cap implies.
        let mut g = executors();
        assert_eq!(g.decide(&Observation::new(0.0, 0.0, 200.0)).concurrency, Some(8));
        let base = 1.0 / 37.5;
        let mut s = Synth::new(150.0, 8.0, 75.0);
        s.run(&mut g, 200, base + 1.0, 1.0);
        assert_eq!(g.limit(), 8);
        let mut caps = Vec::new();
        for _ in 0..100 {
            let n = g.limit() as f64;
            s.obs.in_service = n;
            let a = s.step(&mut g, base * (n / 4.0).powi(2).max(1.0) + 1.0, 1.0);
            assert_eq!(a.admit, 1.0);
            caps.push(a.concurrency.unwrap());
        }
        // Within 5 s the cap is below 8 busy executors' 75 req/s ceiling, and stays there.
        let tail = &caps[50..];
        assert!(tail.iter().all(|&c| (4..=7).contains(&c)), "{caps:?}");
    }

    #[test]
    fn bounds_are_respected() {
        let mut g = Gradient2::new(Gradient2Config {
            min_limit: 30.0,
            initial_limit: 40.0,
            max_limit: 50.0,
            ..Default::default()
        })
        .unwrap();
        let mut s = Synth::new(100.0, 8.0, 200.0);
        s.run(&mut g, 500, 0.05, 0.0);
        assert_eq!(g.limit(), 50);
        for k in 0..500 {
            s.step(&mut g, 0.05 * 4f64.powi(k / 50), 0.0);
        }
        assert_eq!(g.limit(), 30);
    }

    #[test]
    fn bad_config_is_refused() {
        let d = Gradient2Config::default();
        assert_eq!(Gradient2::new(Gradient2Config { rtt_tolerance: 0.9, ..d }).unwrap_err().field, "rtt_tolerance");
        assert_eq!(Gradient2::new(Gradient2Config { smoothing: 0.0, ..d }).unwrap_err().field, "smoothing");
        assert_eq!(Gradient2::new(Gradient2Config { min_limit: 0.0, ..d }).unwrap_err().field, "min_limit");
        assert_eq!(Gradient2::new(Gradient2Config { initial_limit: 500.0, ..d }).unwrap_err().field, "initial_limit");
        assert!(Gradient2::new(Gradient2Config { queue_size: QueueSize::Fixed(f64::NAN), ..d }).is_err());
        assert!(Gradient2::new(Gradient2Config { interval: 0.0, ..d }).is_err());
    }

    #[test]
    fn garbage_never_yields_a_bad_action() {
        assert_survives_garbage(&mut Gradient2::new(Gradient2Config::default()).unwrap());
        let mut g = executors();
        assert_survives_garbage(&mut g);
        assert!(g.estimate().is_finite());
    }
}
