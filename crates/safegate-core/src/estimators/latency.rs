//! Latency gradient and windowed minimum RTT: what latency-based concurrency limiters read.
//!
//! Two exponentially weighted averages of the latency samples, a *long* one (the baseline)
//! and a *short* one (the current latency), and their ratio, the *gradient*
//!
//! ```text
//! gradient = long / short
//! ```
//!
//! which is 1 at steady state and falls below 1 as a queue builds (latency rises faster than
//! the baseline follows). Netflix's concurrency-limits `Gradient2Limit` scales its limit by
//! `max(0.5, min(1, long/short))` with a long exponential average (600 samples by default)
//! and the latest sample as the short one ([`LatencyGradient::gradient_clamped`]). Envoy's
//! adaptive concurrency filter instead compares a *minimum* RTT, re-measured in a dedicated
//! window every `interval`, with the sampled latency: `gradient = (minRTT + B)/sampleRTT`,
//! `B` a buffer fraction of minRTT (Envoy docs, "Adaptive Concurrency", gradient controller;
//! [`LatencyGradient::envoy_gradient`]). The minimum is recalculated rather than kept for
//! ever so that it can move *up* when the no-load latency of the upstream rises.
//!
//! Here the averages are in continuous time, the time passed in: a sample `x` arriving `Δt`
//! after the previous instant moves an average by `(1 − e^{−Δt/τ})·(x − avg)`, the
//! exponential moving average for unevenly spaced series (Eckner, "Algorithms for Unevenly
//! Spaced Time Series: Moving Averages and Other Rolling Operators", 2012; here the new
//! sample stands for the whole interval since the previous one). Samples that share an instant are averaged first and enter
//! as one, so a burst of completions weighs as much as the time it spans, not its count. The
//! minimum is taken over consecutive windows of `min_window` seconds; [`LatencyGradient::min_rtt`]
//! is the minimum of the last completed window (of the current one before any completes).

/// Time constants of a [`LatencyGradient`] (seconds of the caller's clock).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyConfig {
    /// Time constant of the long (baseline) average, τ_long (ours: 60 s).
    pub long_tau: f64,
    /// Time constant of the short (current) average, τ_short (ours: 1 s).
    pub short_tau: f64,
    /// Length of one minimum-RTT window (ours: 60 s, a common Envoy `interval`).
    pub min_window: f64,
}

impl Default for LatencyConfig {
    fn default() -> Self {
        Self { long_tau: 60.0, short_tau: 1.0, min_window: 60.0 }
    }
}

/// An exponential average in continuous time.
#[derive(Debug, Clone, Copy)]
struct TimeEwma {
    tau: f64,
    /// `(time of the last fold, value)`.
    state: Option<(f64, f64)>,
}

impl TimeEwma {
    fn new(tau: f64) -> Self {
        Self { tau, state: None }
    }

    /// The value after folding `x` at time `t` (not stored).
    fn peek(&self, t: f64, x: f64) -> f64 {
        match self.state {
            None => x,
            Some((t0, v)) => {
                // 1 − e^{−Δt/τ}, exact for small Δt.
                let w = -(-(t - t0).max(0.0) / self.tau).exp_m1();
                v + w * (x - v)
            }
        }
    }

    fn fold(&mut self, t: f64, x: f64) {
        self.state = Some((t, self.peek(t, x)));
    }
}

/// Long and short latency averages, their gradient, and a windowed minimum RTT.
///
/// # Examples
///
/// ```
/// use safegate_core::estimators::{LatencyConfig, LatencyGradient};
///
/// let cfg = LatencyConfig { long_tau: 30.0, short_tau: 1.0, min_window: 10.0 };
/// let mut lat = LatencyGradient::new(cfg).unwrap();
/// for i in 0..600 {
///     lat.observe(i as f64 * 0.1, 0.010); // 10 ms for a minute
/// }
/// assert!((lat.gradient().unwrap() - 1.0).abs() < 1e-9);
/// for i in 600..650 {
///     lat.observe(i as f64 * 0.1, 0.020); // a queue builds: 20 ms for 5 s
/// }
/// let g = lat.gradient().unwrap();
/// assert!(g < 0.6, "the short average moved, the long one barely: {g}");
/// assert_eq!(lat.gradient_clamped(0.5, 1.0), Some(g.max(0.5)));
/// assert_eq!(lat.min_rtt(), Some(0.010));
/// ```
#[derive(Debug, Clone)]
pub struct LatencyGradient {
    cfg: LatencyConfig,
    long: TimeEwma,
    short: TimeEwma,
    /// Samples at the newest instant, not yet folded: `(time, sum, count)`.
    pending: Option<(f64, f64, u32)>,
    /// Start of the current minimum window and its running minimum.
    window_start: Option<f64>,
    window_min: f64,
    /// Minimum of the last completed window.
    last_min: Option<f64>,
    samples: u64,
}

impl LatencyGradient {
    /// An estimator with no samples. Every time constant must be positive and finite.
    pub fn new(cfg: LatencyConfig) -> Result<Self, &'static str> {
        for x in [cfg.long_tau, cfg.short_tau, cfg.min_window] {
            if !(x > 0.0 && x.is_finite()) {
                return Err("latency time constants and the minimum window must be positive and finite");
            }
        }
        Ok(Self {
            cfg,
            long: TimeEwma::new(cfg.long_tau),
            short: TimeEwma::new(cfg.short_tau),
            pending: None,
            window_start: None,
            window_min: f64::INFINITY,
            last_min: None,
            samples: 0,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &LatencyConfig {
        &self.cfg
    }

    /// Record one latency sample completed at `now` (seconds, non-decreasing; a sample dated
    /// before the newest instant counts at that instant). Non-finite or negative latencies
    /// and non-finite times are ignored.
    pub fn observe(&mut self, now: f64, latency: f64) {
        if !(latency >= 0.0 && latency.is_finite() && now.is_finite()) {
            return;
        }
        self.samples += 1;
        self.pending = Some(match self.pending {
            Some((t, sum, n)) if now <= t => (t, sum + latency, n + 1),
            Some((t, sum, n)) => {
                let mean = sum / f64::from(n);
                self.long.fold(t, mean);
                self.short.fold(t, mean);
                (now, latency, 1)
            }
            None => (now, latency, 1),
        });
        match self.window_start {
            Some(start) if now - start >= self.cfg.min_window => {
                self.last_min = Some(self.window_min);
                self.window_start = Some(now);
                self.window_min = latency;
            }
            Some(_) => self.window_min = self.window_min.min(latency),
            None => {
                self.window_start = Some(now);
                self.window_min = latency;
            }
        }
    }

    fn read(&self, avg: &TimeEwma) -> Option<f64> {
        match self.pending {
            Some((t, sum, n)) => Some(avg.peek(t, sum / f64::from(n))),
            None => avg.state.map(|(_, v)| v),
        }
    }

    /// The long (baseline) average, `None` before any sample.
    pub fn long(&self) -> Option<f64> {
        self.read(&self.long)
    }

    /// The short (current) average, `None` before any sample.
    pub fn short(&self) -> Option<f64> {
        self.read(&self.short)
    }

    /// `long / short` (Gradient2's ratio before clamping): below 1 while latency rises,
    /// above 1 while it falls. `None` before any sample or while the short average is 0.
    pub fn gradient(&self) -> Option<f64> {
        let (l, s) = (self.long()?, self.short()?);
        (s > 0.0).then(|| l / s)
    }

    /// The gradient clamped to `[lo, hi]`; Gradient2Limit uses `[0.5, 1]` so that one slow
    /// window cuts the limit by at most half and a fast one never raises it by itself.
    pub fn gradient_clamped(&self, lo: f64, hi: f64) -> Option<f64> {
        self.gradient().map(|g| g.clamp(lo, hi))
    }

    /// Envoy's gradient `(minRTT + B)/sampleRTT` with `B = buffer·minRTT` and the short
    /// average as the sample latency (Envoy's default buffer is 25 %, `buffer = 0.25`).
    pub fn envoy_gradient(&self, buffer: f64) -> Option<f64> {
        let (m, s) = (self.min_rtt()?, self.short()?);
        (s > 0.0).then(|| m * (1.0 + buffer) / s)
    }

    /// The windowed minimum latency: of the last completed `min_window`, or of the current
    /// window before one completes; `None` before any sample.
    pub fn min_rtt(&self) -> Option<f64> {
        self.last_min.or(self.window_start.map(|_| self.window_min))
    }

    /// Samples recorded (ignored ones not counted).
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Forget every sample.
    pub fn reset(&mut self) {
        *self = Self::new(self.cfg).expect("the configuration was checked at construction");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(long_tau: f64, short_tau: f64, min_window: f64) -> LatencyGradient {
        LatencyGradient::new(LatencyConfig { long_tau, short_tau, min_window }).unwrap()
    }

    #[test]
    fn averages_follow_the_closed_form_of_a_step() {
        // 10 for the first sample, then 20 every 0.5 s: avg(k) = 20 − 10·e^{−0.5k/τ}.
        let mut lat = est(10.0, 2.0, 1e9);
        lat.observe(0.0, 10.0);
        for k in 1..=40 {
            lat.observe(0.5 * k as f64, 20.0);
            let t = 0.5 * k as f64;
            let (long, short) = (lat.long().unwrap(), lat.short().unwrap());
            assert!((long - (20.0 - 10.0 * (-t / 10.0).exp())).abs() < 1e-9, "k {k}: long {long}");
            assert!((short - (20.0 - 10.0 * (-t / 2.0).exp())).abs() < 1e-9, "k {k}: short {short}");
            assert!(lat.gradient().unwrap() < 1.0);
        }
    }

    #[test]
    fn the_gradient_rises_above_one_when_latency_falls() {
        let mut lat = est(30.0, 1.0, 10.0);
        for i in 0..300 {
            lat.observe(i as f64 * 0.1, 50.0);
        }
        for i in 300..350 {
            lat.observe(i as f64 * 0.1, 10.0);
        }
        let g = lat.gradient().unwrap();
        assert!(g > 2.0, "{g}");
        assert_eq!(lat.gradient_clamped(0.5, 1.0), Some(1.0));
    }

    #[test]
    fn samples_at_one_instant_enter_as_their_mean() {
        let mut a = est(5.0, 1.0, 10.0);
        let mut b = est(5.0, 1.0, 10.0);
        for (t, xs) in [(0.0, vec![4.0]), (1.0, vec![1.0, 3.0, 8.0]), (2.5, vec![2.0]), (3.0, vec![7.0, 1.0])] {
            let mean = xs.iter().sum::<f64>() / xs.len() as f64;
            for x in xs {
                a.observe(t, x);
            }
            b.observe(t, mean);
            assert!((a.long().unwrap() - b.long().unwrap()).abs() < 1e-12);
            assert!((a.short().unwrap() - b.short().unwrap()).abs() < 1e-12);
        }
        assert_eq!(a.samples(), 7);
    }

    #[test]
    fn the_minimum_is_recalculated_each_window_and_can_rise() {
        let mut lat = est(60.0, 1.0, 10.0);
        assert_eq!(lat.min_rtt(), None);
        for i in 0..100 {
            // first window: a floor of 5, then the floor rises to 8 from t = 10 s.
            let t = i as f64 * 0.2;
            let x = if t < 10.0 { 5.0 + (i % 3) as f64 } else { 8.0 + (i % 4) as f64 };
            lat.observe(t, x);
            if t < 10.0 {
                assert_eq!(lat.min_rtt(), Some(5.0), "t {t}: the current window before one completes");
            }
        }
        // At t = 10 the first window (min 5) completed; at t = 20 (not reached) the second would.
        assert_eq!(lat.min_rtt(), Some(5.0));
        lat.observe(20.0, 9.0);
        assert_eq!(lat.min_rtt(), Some(8.0), "the floor moved up with the upstream");
        let g = lat.envoy_gradient(0.25).unwrap();
        assert!((g - 8.0 * 1.25 / lat.short().unwrap()).abs() < 1e-12);
    }

    #[test]
    fn bad_input_is_ignored_and_bad_config_refused() {
        let mut lat = est(10.0, 1.0, 10.0);
        lat.observe(0.0, 3.0);
        for (t, x) in [(1.0, f64::NAN), (1.0, -1.0), (f64::NAN, 2.0), (2.0, f64::INFINITY)] {
            lat.observe(t, x);
        }
        assert_eq!((lat.samples(), lat.long(), lat.min_rtt()), (1, Some(3.0), Some(3.0)));
        lat.reset();
        assert_eq!((lat.samples(), lat.gradient(), lat.min_rtt()), (0, None, None));
        assert!(LatencyGradient::new(LatencyConfig { short_tau: 0.0, ..LatencyConfig::default() }).is_err());
        assert!(LatencyGradient::new(LatencyConfig { min_window: f64::NAN, ..LatencyConfig::default() }).is_err());
    }
}
