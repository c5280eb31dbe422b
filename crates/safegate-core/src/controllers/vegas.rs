//! Netflix's `VegasLimit`: TCP Vegas's queue estimate applied to a concurrency limit.
//!
//! Every window (Netflix concurrency-limits, `VegasLimit._update` and
//! `updateEstimatedLimit`, read for this port; Brakmo & Peterson, "TCP Vegas", 1995):
//!
//! ```text
//! every probe_multiplier·L windows:  rtt₀ ← rtt   (re-probe the no-load RTT; skip the update)
//! if rtt < rtt₀:                      rtt₀ ← rtt   (skip the update)
//! queue = ⌈L · (1 − rtt₀/rtt)⌉                    (requests queued beyond the pipe)
//! lg = max(1, ⌊log₁₀ ⌊L⌋⌋)   (⌊√L⌋ from 1000 on: Netflix Log10RootFunction)
//! drop              → L − lg
//! in_flight·2 < L   → keep L                      (app-limited)
//! queue ≤ lg        → L + β·lg                    (aggressive growth, no queueing)
//! queue < α·lg      → L + lg
//! queue > β·lg      → L − lg
//! otherwise         → keep L
//! L ← (1 − smoothing)·L + smoothing·clamp(L', min, max)
//! ```
//!
//! Netflix's α = 3 and β = 6 (multiples of `lg L`) are made for limits of tens to hundreds;
//! on a pool of 8 executors a queue estimate of 6 at `L = 8` (service time 4× the no-load one)
//! sits inside `[3, 6]` and Vegas never backs off, so [`VegasConfig::for_setting`] uses TCP
//! Vegas's classic α = 2, β = 4 on executors (the values `VegasLimit`'s doc comment quotes).
//!
//! Netflix jitters the probe period by a random factor in `[0.5, 1)`; here it is 1
//! (deterministic). A "drop" is the backlog found full during the window (an admitted
//! arrival there is lost), our stand-in for Netflix's `didDrop`.

use crate::error::check;
use super::{check_limits, log10_root, Actuator, LimitAlgorithm, Setting, WindowSample, Windowed};
use crate::RangeError;

/// Configuration of [`Vegas`]; defaults are Netflix `VegasLimit.Builder`'s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VegasConfig {
    /// What the limit caps. Default [`Actuator::InFlight`].
    pub actuator: Actuator,
    /// Starting limit. Default 20.
    pub initial_limit: f64,
    /// Lowest limit (Netflix clamps at 1). Default 1.
    pub min_limit: f64,
    /// Highest limit (`maxConcurrency`). Default 1000.
    pub max_limit: f64,
    /// Weight of the new limit per update, in `(0, 1]`. Default 1 (no smoothing).
    pub smoothing: f64,
    /// Queue estimate below which the limit grows, in multiples of `lg L`. Default 3.
    pub alpha: f64,
    /// Queue estimate above which the limit shrinks, in multiples of `lg L` (also the growth
    /// step when nothing queues). Default 6.
    pub beta: f64,
    /// Re-probe the no-load RTT every `probe_multiplier · L` windows. Default 30.
    pub probe_multiplier: u32,
    /// Update interval \[s\]. Default 0.05 s (the simulator's tick).
    pub interval: f64,
    /// Completions a window needs (Netflix `WindowedLimit` window size). Default 10.
    pub min_samples: u32,
}

impl Default for VegasConfig {
    fn default() -> Self {
        Self {
            actuator: Actuator::InFlight,
            initial_limit: 20.0,
            min_limit: 1.0,
            max_limit: 1000.0,
            smoothing: 1.0,
            alpha: 3.0,
            beta: 6.0,
            probe_multiplier: 30,
            interval: 0.05,
            min_samples: 10,
        }
    }
}

impl VegasConfig {
    /// The defaults adapted to `setting`: updates every `period`; in-flight limits capped at
    /// the capacity; on executors the limit lives in `[1, executors]` and starts at
    /// `executors`, with α = 2 and β = 4 (see the module docs).
    pub fn for_setting(actuator: Actuator, setting: &Setting) -> Self {
        let d = Self::default();
        let (min_limit, initial_limit, max_limit) = setting.limits(actuator, d.min_limit, d.initial_limit, d.max_limit);
        let (alpha, beta) = match actuator {
            Actuator::InFlight => (d.alpha, d.beta),
            Actuator::Executors => (2.0, 4.0),
        };
        Self { actuator, min_limit, initial_limit, max_limit, alpha, beta, interval: setting.period, ..d }
    }
}

/// Netflix's Vegas limiter (see the module docs): [`VegasLimit`] run on windows.
///
/// # Examples
///
/// ```
/// use safegate_core::controllers::{Actuator, Vegas, VegasConfig};
/// use safegate_core::{Observation, Policy};
///
/// let cfg = VegasConfig { actuator: Actuator::Executors, initial_limit: 6.0, ..VegasConfig::default() };
/// let mut v = Vegas::new(cfg).unwrap();
/// assert_eq!(v.decide(&Observation::new(0.0, 50.0, 200.0)).concurrency, Some(6));
/// ```
pub type Vegas = Windowed<VegasLimit>;

/// Vegas's update rule and state (Netflix `VegasLimit`).
#[derive(Debug, Clone)]
pub struct VegasLimit {
    cfg: VegasConfig,
    rtt_noload: Option<f64>,
    probe_count: u64,
}

impl Vegas {
    /// A limiter with `cfg`, range-checked.
    pub fn new(cfg: VegasConfig) -> Result<Self, RangeError> {
        check_limits(cfg.min_limit, cfg.initial_limit, cfg.max_limit)?;
        check::within("smoothing", cfg.smoothing, f64::MIN_POSITIVE, 1.0, "(0, 1]")?;
        check::within("alpha", cfg.alpha, 1.0, f64::MAX, "[1, ∞)")?;
        check::within("beta", cfg.beta, cfg.alpha, f64::MAX, "[alpha, ∞)")?;
        check::within("probe_multiplier", cfg.probe_multiplier as f64, 1.0, f64::MAX, "1 or more")?;
        let rule = VegasLimit { rtt_noload: None, probe_count: 0, cfg };
        Windowed::around(rule, cfg.actuator, cfg.initial_limit, cfg.interval, cfg.min_samples)
    }

    /// The no-load RTT estimate \[s\].
    pub fn rtt_noload(&self) -> Option<f64> {
        self.algorithm().rtt_noload
    }

    /// The configuration.
    pub fn config(&self) -> &VegasConfig {
        &self.algorithm().cfg
    }
}

impl LimitAlgorithm for VegasLimit {
    const NAME: &'static str = "vegas";

    fn update(&mut self, limit: f64, sample: &WindowSample) -> f64 {
        let Some(rtt) = sample.rtt else { return limit };
        let c = &self.cfg;
        self.probe_count += 1;
        if (c.probe_multiplier as f64) * limit <= self.probe_count as f64 {
            self.probe_count = 0;
            self.rtt_noload = Some(rtt);
            return limit;
        }
        let noload = match self.rtt_noload {
            Some(r) if rtt >= r => r,
            _ => {
                self.rtt_noload = Some(rtt);
                return limit;
            }
        };
        let l = limit;
        let step = log10_root(l);
        let queue = (l * (1.0 - noload / rtt)).ceil();
        let next = if sample.drop {
            l - step
        } else if sample.app_limited(l) {
            return l;
        } else if queue <= step {
            l + c.beta * step
        } else if queue < c.alpha * step {
            l + step
        } else if queue > c.beta * step {
            l - step
        } else {
            return l;
        };
        let next = next.clamp(c.min_limit, c.max_limit);
        let next = (1.0 - c.smoothing) * l + c.smoothing * next;
        if next.is_finite() {
            next
        } else {
            l
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_survives_garbage, Synth};
    use super::*;

    #[test]
    fn log_step_follows_netflix() {
        assert_eq!(log10_root(1.0), 1.0);
        assert_eq!(log10_root(9.9), 1.0);
        assert_eq!(log10_root(150.0), 2.0);
        assert_eq!(log10_root(999.0), 2.0);
        assert_eq!(log10_root(1600.0), 40.0);
    }

    #[test]
    fn flat_latency_grows_the_limit() {
        let mut v = Vegas::new(VegasConfig::default()).unwrap();
        let mut s = Synth::new(100.0, 8.0, 200.0);
        s.run(&mut v, 30, 0.05, 0.0);
        // No queueing: + 6·lg per window.
        assert!(v.estimate() > 100.0, "{}", v.estimate());
    }

    #[test]
    fn doubled_latency_shrinks_the_limit() {
        let mut v = Vegas::new(VegasConfig { initial_limit: 50.0, ..VegasConfig::default() }).unwrap();
        let mut s = Synth::new(100.0, 8.0, 200.0);
        s.step(&mut v, 0.05, 0.0); // starts the window
        s.step(&mut v, 0.05, 0.0); // rtt₀ = 50 ms
        let before = v.estimate();
        // queue = ⌈50·(1 − ½)⌉ = 25 > 6: − lg 50 = 1 per window.
        s.run(&mut v, 10, 0.10, 0.0);
        assert_eq!(v.estimate(), before - 10.0);
    }

    #[test]
    fn light_queueing_adds_one_and_the_sweet_spot_holds() {
        let mut v = Vegas::new(VegasConfig { initial_limit: 50.0, ..VegasConfig::default() }).unwrap();
        let mut s = Synth::new(100.0, 8.0, 200.0);
        // rtt₀ = 50 ms.
        s.run(&mut v, 2, 0.05, 0.0);
        // queue = ⌈50·(1 − 0.05/rtt)⌉ = ⌈1.5⌉ = 2: above lg = 1, below α = 3 → + 1.
        s.run(&mut v, 5, 0.05 / 0.97, 0.0);
        assert_eq!(v.estimate(), 55.0);
        // ⌈55·0.07⌉ = 4 ∈ [α, β] = [3, 6]: hold.
        s.run(&mut v, 5, 0.05 / 0.93, 0.0);
        assert_eq!(v.estimate(), 55.0);
    }

    #[test]
    fn a_full_backlog_is_a_drop() {
        let mut v = Vegas::new(VegasConfig { initial_limit: 50.0, ..VegasConfig::default() }).unwrap();
        let mut s = Synth::new(200.0, 8.0, 200.0);
        s.run(&mut v, 2, 0.05, 0.0);
        let before = v.estimate();
        s.run(&mut v, 5, 0.05, 0.0); // flat latency, but the backlog is at its cap
        assert_eq!(v.estimate(), before - 5.0);
    }

    /// Run `v` on the seed's pool: a calm second (2 busy, no contention) teaches it the
    /// no-load service time, then a backlog keeps every allowed executor busy, each slowed
    /// by `(n/4)²` past 4. Returns the limit after 20 s.
    fn on_the_pool(cfg: VegasConfig) -> u32 {
        let mut v = Vegas::new(cfg).unwrap();
        let base = 1.0 / 37.5;
        let mut s = Synth::new(150.0, 2.0, 75.0);
        s.run(&mut v, 20, base + 1.0, 1.0);
        for _ in 0..400 {
            let n = v.limit() as f64;
            s.obs.in_service = n;
            s.step(&mut v, base * (n / 4.0).powi(2).max(1.0) + 1.0, 1.0);
        }
        v.limit()
    }

    #[test]
    fn executors_settle_where_queueing_is_between_alpha_and_beta() {
        let cfg = VegasConfig::for_setting(Actuator::Executors, &Setting::default());
        // From 8 busy (service 4× no-load: queue ⌈8·¾⌉ = 6 > β = 4) down to 6, where
        // queue = ⌈6·(1 − 1/2.25)⌉ = 4 ∈ [α, β] = [2, 4].
        assert_eq!(on_the_pool(cfg), 6);
        // From 2 (nothing queues: + β) up to the same place.
        assert_eq!(on_the_pool(VegasConfig { initial_limit: 2.0, ..cfg }), 6);
        // With Netflix's α = 3, β = 6 it stays high: queue ⌈8·¾⌉ = 6 is inside [3, 6] (or,
        // rounded up to 7 by a last-bit error in rtt₀/rtt, one step down to 7, where
        // ⌈7·(1 − 1/3.06)⌉ = 5 is inside again).
        assert!(on_the_pool(VegasConfig { alpha: 3.0, beta: 6.0, ..cfg }) >= 7);
    }

    #[test]
    fn bounds_are_respected() {
        let mut v = Vegas::new(VegasConfig { min_limit: 10.0, max_limit: 40.0, ..VegasConfig::default() }).unwrap();
        let mut s = Synth::new(100.0, 8.0, 200.0);
        s.run(&mut v, 100, 0.05, 0.0);
        assert_eq!(v.limit(), 40);
        s.run(&mut v, 100, 0.5, 0.0);
        assert_eq!(v.limit(), 10);
    }

    #[test]
    fn bad_config_is_refused() {
        let d = VegasConfig::default();
        assert_eq!(Vegas::new(VegasConfig { smoothing: 2.0, ..d }).unwrap_err().field, "smoothing");
        assert_eq!(Vegas::new(VegasConfig { max_limit: 10.0, ..d }).unwrap_err().field, "initial_limit");
        assert_eq!(Vegas::new(VegasConfig { probe_multiplier: 0, ..d }).unwrap_err().field, "probe_multiplier");
        assert_eq!(Vegas::new(VegasConfig { beta: 2.0, ..d }).unwrap_err().field, "beta");
    }

    #[test]
    fn garbage_never_yields_a_bad_action() {
        assert_survives_garbage(&mut Vegas::new(VegasConfig::default()).unwrap());
        let mut v = Vegas::new(VegasConfig::for_setting(Actuator::Executors, &Setting::default())).unwrap();
        assert_survives_garbage(&mut v);
        assert!(v.estimate().is_finite());
    }
}
