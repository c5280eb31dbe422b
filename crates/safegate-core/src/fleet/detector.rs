//! Failure detectors for the coordinator's heartbeats, and their trade-off measured.
//!
//! Two detectors behind one trait, [`FailureDetector`]:
//!
//! - [`PhiAccrual`]: the φ accrual failure detector of N. Hayashibara, X. Défago, R. Yared
//!   and T. Katayama, "The φ Accrual Failure Detector" (SRDS 2004). It keeps a window of
//!   inter-arrival times and reports a suspicion level `φ(t) = −log₁₀(1 − F(t − t_last))`,
//!   `F` the normal CDF with the window's mean and standard deviation. As in Akka's
//!   `PhiAccrualFailureDetector`, the standard deviation is floored (`min_std`) and an
//!   `acceptable_pause` is added to the mean.
//! - [`Timeout`]: suspect after a fixed time `T` without a heartbeat.
//!
//! [`sweep`] measures what a threshold buys: for a heartbeat process with normal jitter and
//! occasional long pauses (seeded), the false suspicions per hour of a live process and the
//! mean and 99th percentile of the time to detect a crash, for every φ threshold and every
//! timeout asked for.
//!
//! Time is seconds as `f64`, passed in; nothing here reads a clock.
//!
//! ```
//! use safegate_core::fleet::detector::{FailureDetector, PhiAccrual, PhiConfig};
//!
//! let mut d = PhiAccrual::new(PhiConfig::default()).unwrap(); // Akka's defaults
//! for i in 0..100 {
//!     d.heartbeat(i as f64); // one heartbeat a second
//! }
//! assert!(!d.suspect(99.0 + 1.0));
//! assert!(d.suspect(99.0 + 6.0)); // at 1 s mean + 3 s pause + 5.61 × 0.1 s floored sd = 4.56 s
//! ```

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal, Pareto};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::{check, RangeError};

/// A failure detector fed with heartbeats; time is passed in, in seconds.
pub trait FailureDetector {
    /// A heartbeat arrived at `now`. A `now` that is not finite, or earlier than the last
    /// heartbeat (a message out of order), is ignored.
    fn heartbeat(&mut self, now: f64);

    /// The suspicion level at `now`, never below 0: φ for [`PhiAccrual`], elapsed time over
    /// the timeout for [`Timeout`]. 0 before the first heartbeat (nothing is monitored
    /// yet); `+∞` when `now` is not finite (an unknown clock cannot vouch for liveness).
    fn suspicion(&self, now: f64) -> f64;

    /// Whether the monitored process is suspected at `now`: its suspicion level has reached
    /// the detector's threshold.
    fn suspect(&self, now: f64) -> bool;

    /// The time of the last heartbeat taken, if any.
    fn last_heartbeat(&self) -> Option<f64>;
}

/// Elapsed time since the last heartbeat, clamped at 0 (a `now` before it reads as 0);
/// `None` before the first heartbeat, `+∞` for a `now` that is not finite.
fn elapsed(last: Option<f64>, now: f64) -> Option<f64> {
    let last = last?;
    if !crate::finite(now) {
        return Some(f64::INFINITY);
    }
    Some((now - last).max(0.0))
}

// ---------------------------------------------------------------------------------------
// The normal tail
// ---------------------------------------------------------------------------------------

/// `−log₁₀ Q(y)`, with `Q(y) = 1 − Φ(y)` the standard normal upper tail: the φ of a
/// standard score `y`.
///
/// Computed from the complementary error function, `Q(y) = ½·erfc(y/√2)` (`libm::erfc`,
/// accurate in the far tail where `1 − Φ(y)` would cancel to 0), so φ stays finite and
/// exact up to `y = 30` (φ ≈ 197). Beyond that, where `erfc` nears underflow, the
/// asymptotic expansion `Q(y) = φ_N(y)/y·(1 − 1/y² + 3/y⁴ − 15/y⁶ + …)` (Abramowitz and
/// Stegun, Handbook of Mathematical Functions, 1964, 26.2.12), truncated after a negative
/// term so that it errs low on `Q` and φ never steps down at the switch. Not the logistic
/// approximation Akka and Cassandra use (`1/(1 + e^{−y(1.5976 + 0.070566y²)})`, after
/// Bowling et al., Journal of Industrial Engineering and Management 2, 2009), whose
/// relative error in the far tail grows with `y`. `y = −∞` gives 0, `+∞` gives `+∞`, NaN
/// gives NaN.
pub fn phi_of_score(y: f64) -> f64 {
    if y.is_nan() {
        return f64::NAN;
    }
    if y < 30.0 {
        let q = 0.5 * libm::erfc(y / std::f64::consts::SQRT_2);
        return (-q.log10()).max(0.0);
    }
    if y == f64::INFINITY {
        return f64::INFINITY;
    }
    let y2 = y * y;
    let series = 1.0 - 1.0 / y2 + 3.0 / (y2 * y2) - 15.0 / (y2 * y2 * y2);
    let ln_q = -0.5 * y2 - y.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln() + series.ln();
    -ln_q / std::f64::consts::LN_10
}

/// The standard score at which φ reaches `phi`: the inverse of [`phi_of_score`], by
/// bisection (φ is increasing in the score). NaN for a `phi` that is NaN or below 0;
/// `−∞` for 0.
pub fn score_of_phi(phi: f64) -> f64 {
    if phi.is_nan() || phi < 0.0 {
        return f64::NAN;
    }
    if phi == 0.0 {
        return f64::NEG_INFINITY;
    }
    if phi == f64::INFINITY {
        return f64::INFINITY;
    }
    // φ(−40) ≈ 0 and φ grows like y²/(2 ln 10): the bracket [−40, 40 + 3√φ] holds the root.
    let (mut lo, mut hi) = (-40.0f64, 40.0 + 3.0 * phi.sqrt());
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if phi_of_score(mid) < phi {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-13 * hi.abs().max(1.0) {
            break;
        }
    }
    hi
}

// ---------------------------------------------------------------------------------------
// φ accrual
// ---------------------------------------------------------------------------------------

/// The φ accrual detector's constants. The defaults are Akka's
/// (`akka.cluster.failure-detector` in akka-cluster's `reference.conf`: threshold 8.0,
/// max-sample-size 1000, min-std-deviation 100 ms, acceptable-heartbeat-pause 3 s,
/// heartbeat-interval 1 s; checked against that file).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhiConfig {
    /// Suspect once φ reaches this: a threshold of `k` means a suspicion is wrong with
    /// probability about `10⁻ᵏ` under the fitted normal law. Default 8.
    pub threshold: f64,
    /// Most inter-arrival times kept (a sliding window). Default 1000.
    pub window: usize,
    /// Floor of the standard deviation \[s\]. Default 0.1.
    pub min_std: f64,
    /// Added to the window's mean before φ is computed \[s\]: pauses up to about this long
    /// are not suspected. Default 3.
    pub acceptable_pause: f64,
    /// The expected heartbeat interval \[s\], used while the window is empty (mean this,
    /// standard deviation a quarter of it, the statistics Akka seeds its window with).
    /// Default 1.
    pub first_interval: f64,
}

impl Default for PhiConfig {
    fn default() -> Self {
        Self { threshold: 8.0, window: 1000, min_std: 0.1, acceptable_pause: 3.0, first_interval: 1.0 }
    }
}

impl PhiConfig {
    /// Every constant in range: threshold in `(0, 1000]`, window in `[1, 10⁶]`, min_std and
    /// first_interval positive, acceptable_pause non-negative.
    pub fn validate(&self) -> Result<(), RangeError> {
        check::within("threshold", self.threshold, f64::MIN_POSITIVE, 1000.0, "(0, 1000]")?;
        check::within("window", self.window as f64, 1.0, 1e6, "[1, 1e6] samples")?;
        check::seconds("min_std", self.min_std)?;
        check::within("acceptable_pause", self.acceptable_pause, 0.0, 1e9, "[0, 1e9] seconds")?;
        check::seconds("first_interval", self.first_interval)?;
        Ok(())
    }
}

/// The φ accrual failure detector (Hayashibara, Défago, Yared, Katayama, SRDS 2004), with
/// Akka's floor on the standard deviation and its acceptable pause.
///
/// With `μ`, `σ` the mean and standard deviation of the window of inter-arrival times,
/// `Δ = t − t_last` the time since the last heartbeat,
///
/// ```text
/// μ' = μ + acceptable_pause,   σ' = max(σ, min_std),   y = (Δ − μ')/σ'
/// φ(t) = −log₁₀(1 − F(Δ)) = −log₁₀ Q(y)          (Q the standard normal upper tail)
/// ```
///
/// φ is increasing in `Δ`. `Q` is computed by [`phi_of_score`] (erfc-based).
#[derive(Debug, Clone)]
pub struct PhiAccrual {
    cfg: PhiConfig,
    intervals: VecDeque<f64>,
    sum: f64,
    sum_sq: f64,
    /// Pushes since the sums were last recomputed from the window (bounds rounding drift).
    since_refresh: usize,
    last: Option<f64>,
    /// The standard score at which φ reaches the threshold.
    z_threshold: f64,
}

impl PhiAccrual {
    /// A detector with no heartbeat yet.
    pub fn new(cfg: PhiConfig) -> Result<Self, RangeError> {
        cfg.validate()?;
        Ok(Self {
            cfg,
            intervals: VecDeque::with_capacity(cfg.window.min(4096)),
            sum: 0.0,
            sum_sq: 0.0,
            since_refresh: 0,
            last: None,
            z_threshold: score_of_phi(cfg.threshold),
        })
    }

    /// Its constants.
    pub fn config(&self) -> &PhiConfig {
        &self.cfg
    }

    /// Inter-arrival times in the window.
    pub fn samples(&self) -> usize {
        self.intervals.len()
    }

    /// The normal law φ is computed from: `(μ', σ')`, the window's mean plus the acceptable
    /// pause and its standard deviation floored at `min_std` \[s\]. With no sample, the
    /// configured first interval and a quarter of it; with one sample, that sample and the
    /// floor (never a division by zero).
    pub fn law(&self) -> (f64, f64) {
        let n = self.intervals.len();
        let (mean, std) = if n == 0 {
            (self.cfg.first_interval, self.cfg.first_interval / 4.0)
        } else {
            let nf = n as f64;
            let mean = self.sum / nf;
            let var = (self.sum_sq / nf - mean * mean).max(0.0);
            (mean, var.sqrt())
        };
        (mean + self.cfg.acceptable_pause, std.max(self.cfg.min_std))
    }

    /// φ at `now` (see the type's formula); the trait's [`FailureDetector::suspicion`].
    pub fn phi(&self, now: f64) -> f64 {
        match elapsed(self.last, now) {
            None => 0.0,
            Some(d) if d == f64::INFINITY => f64::INFINITY,
            Some(d) => {
                let (m, s) = self.law();
                phi_of_score((d - m) / s)
            }
        }
    }

    /// Time since the last heartbeat at which φ reaches the threshold \[s\]: the detection
    /// delay the current window implies, `μ' + σ'·Q⁻¹(10^−threshold)`.
    pub fn detection_delay(&self) -> f64 {
        let (m, s) = self.law();
        m + s * self.z_threshold
    }

    fn push(&mut self, x: f64) {
        if self.intervals.len() == self.cfg.window {
            if let Some(old) = self.intervals.pop_front() {
                self.sum -= old;
                self.sum_sq -= old * old;
            }
        }
        self.intervals.push_back(x);
        self.sum += x;
        self.sum_sq += x * x;
        self.since_refresh += 1;
        if self.since_refresh >= self.cfg.window.max(64) {
            self.sum = self.intervals.iter().sum();
            self.sum_sq = self.intervals.iter().map(|v| v * v).sum();
            self.since_refresh = 0;
        }
    }
}

impl FailureDetector for PhiAccrual {
    fn heartbeat(&mut self, now: f64) {
        if !crate::finite(now) {
            return;
        }
        match self.last {
            None => self.last = Some(now),
            Some(last) if now >= last => {
                self.push(now - last);
                self.last = Some(now);
            }
            Some(_) => {}
        }
    }

    fn suspicion(&self, now: f64) -> f64 {
        self.phi(now)
    }

    fn suspect(&self, now: f64) -> bool {
        self.phi(now) >= self.cfg.threshold
    }

    fn last_heartbeat(&self) -> Option<f64> {
        self.last
    }
}

// ---------------------------------------------------------------------------------------
// Timeout
// ---------------------------------------------------------------------------------------

/// Suspect after `timeout` seconds without a heartbeat (Akka's `DeadlineFailureDetector`
/// is this rule with `timeout = heartbeat-interval + acceptable-heartbeat-pause`).
/// Its suspicion level is the elapsed time over the timeout; it suspects at 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeout {
    timeout: f64,
    last: Option<f64>,
}

impl Timeout {
    /// A detector with no heartbeat yet; `timeout` in `[1e-9, 1e9]` seconds.
    pub fn new(timeout: f64) -> Result<Self, RangeError> {
        Ok(Self { timeout: check::seconds("timeout", timeout)?, last: None })
    }

    /// The timeout \[s\].
    pub fn timeout(&self) -> f64 {
        self.timeout
    }
}

impl FailureDetector for Timeout {
    fn heartbeat(&mut self, now: f64) {
        if crate::finite(now) && self.last.map_or(true, |l| now >= l) {
            self.last = Some(now);
        }
    }

    fn suspicion(&self, now: f64) -> f64 {
        elapsed(self.last, now).map_or(0.0, |d| d / self.timeout)
    }

    fn suspect(&self, now: f64) -> bool {
        self.suspicion(now) >= 1.0
    }

    fn last_heartbeat(&self) -> Option<f64> {
        self.last
    }
}

// ---------------------------------------------------------------------------------------
// The trade-off, measured
// ---------------------------------------------------------------------------------------

/// Long pauses on top of a heartbeat process's normal jitter (a stop-the-world collection,
/// a stalled network): added to the inter-arrival time they fall on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pauses {
    /// No pauses.
    None,
    /// With probability `1/k` per heartbeat, a pause of fixed `length` \[s\].
    OneIn {
        /// One heartbeat in `k` (on average) is late.
        k: u32,
        /// By this much \[s\].
        length: f64,
    },
    /// With `probability` per heartbeat, a Pareto pause: `scale·U^(−1/shape)` \[s\]
    /// (at least `scale`; shape ≤ 2 has infinite variance).
    Pareto {
        /// Chance that a heartbeat is paused.
        probability: f64,
        /// Smallest pause \[s\].
        scale: f64,
        /// Tail index α: `P(pause > x) = (scale/x)^α`.
        shape: f64,
    },
}

/// A live process's heartbeats: every `interval` plus normal jitter (clamped so that an
/// inter-arrival time is at least 1 % of the interval), plus [`Pauses`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeartbeatProcess {
    /// Mean interval between heartbeats \[s\].
    pub interval: f64,
    /// Standard deviation of the normal jitter \[s\].
    pub jitter_sd: f64,
    /// Occasional long pauses.
    pub pauses: Pauses,
}

impl HeartbeatProcess {
    fn validate(&self) -> Result<(), RangeError> {
        check::seconds("process.interval", self.interval)?;
        check::non_negative("process.jitter_sd", self.jitter_sd)?;
        match self.pauses {
            Pauses::None => {}
            Pauses::OneIn { k, length } => {
                check::within("process.pauses.k", k as f64, 1.0, f64::MAX, "[1, ∞)")?;
                check::non_negative("process.pauses.length", length)?;
            }
            Pauses::Pareto { probability, scale, shape } => {
                check::unit("process.pauses.probability", probability)?;
                check::seconds("process.pauses.scale", scale)?;
                check::within("process.pauses.shape", shape, 0.1, 100.0, "[0.1, 100]")?;
            }
        }
        Ok(())
    }
}

/// What to sweep: a process, the φ detector's other constants, how long to run, the seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The live process being watched.
    pub process: HeartbeatProcess,
    /// The φ detector's constants; its `threshold` is replaced by each of `phi_thresholds`.
    pub phi: PhiConfig,
    /// φ thresholds to measure (each in `(0, 1000]`).
    pub phi_thresholds: Vec<f64>,
    /// Timeouts to measure, in multiples of the process's interval.
    pub timeouts: Vec<f64>,
    /// Simulated hours of the live process (false suspicions are counted over this).
    pub hours: f64,
    /// Seed of the xoshiro256++ generator.
    pub seed: u64,
}

impl Sweep {
    /// φ from 1 to 16 and timeouts of 1 to 10 intervals, over `hours`, with Akka's φ
    /// constants (the first interval set to the process's).
    pub fn standard(process: HeartbeatProcess, hours: f64, seed: u64) -> Self {
        Self {
            process,
            phi: PhiConfig { first_interval: process.interval, ..PhiConfig::default() },
            phi_thresholds: (1..=16).map(f64::from).collect(),
            timeouts: (1..=10).map(f64::from).collect(),
            hours,
            seed,
        }
    }
}

/// Which detector a [`TradeoffRow`] measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetectorKind {
    /// [`PhiAccrual`]; the row's threshold is φ.
    Phi,
    /// [`Timeout`]; the row's threshold is the timeout in intervals.
    Timeout,
}

/// One threshold's measured trade-off.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TradeoffRow {
    /// The detector.
    pub detector: DetectorKind,
    /// φ, or the timeout in intervals.
    pub threshold: f64,
    /// Suspicions of the live process per hour (each late heartbeat that crosses the
    /// threshold before it arrives counts once).
    pub false_per_hour: f64,
    /// Mean time from a crash to the suspicion \[s\].
    pub detection_mean: f64,
    /// 99th percentile of that time \[s\].
    pub detection_p99: f64,
}

/// Heartbeats discarded at the start (the window fills) before anything is counted.
const WARM_UP: usize = 100;
/// A crash is sampled after every this many heartbeats.
const CRASH_EVERY: usize = 10;

/// Measures the trade-off of every threshold in `sweep` on one seeded heartbeat trace.
///
/// The trace is drawn once and every threshold sees the same one (common random numbers,
/// so the rows differ only by their threshold). For each heartbeat after a warm-up of 100:
///
/// - **false suspicion**: the next inter-arrival time `g` exceeds the detector's detection
///   delay `D` (for φ, `μ' + σ'·Q⁻¹(10^−threshold)` from the window as it stands, see
///   [`PhiAccrual::detection_delay`]; for a timeout, the timeout). φ is increasing in the
///   elapsed time, so φ reaches the threshold before the heartbeat iff `g > D`. Counted
///   per simulated hour.
/// - **detection time** (every 10th heartbeat): the process crashes at a uniform instant
///   `u` within the next gap (before it would have sent the next heartbeat); the crash is
///   detected `max(D − u, 0)` after it.
pub fn sweep(sweep: &Sweep) -> Result<Vec<TradeoffRow>, RangeError> {
    sweep.process.validate()?;
    check::within("hours", sweep.hours, 1e-3, 1e4, "[0.001, 10000]")?;
    for &t in &sweep.timeouts {
        check::within("timeouts", t, 1e-6, 1e6, "[1e-6, 1e6] intervals")?;
    }
    let mut det = PhiAccrual::new(PhiConfig { threshold: 1.0, ..sweep.phi })?;
    let mut zs = Vec::with_capacity(sweep.phi_thresholds.len());
    for &t in &sweep.phi_thresholds {
        check::within("phi_thresholds", t, f64::MIN_POSITIVE, 1000.0, "(0, 1000]")?;
        zs.push(score_of_phi(t));
    }
    let p = sweep.process;
    let timeouts: Vec<f64> = sweep.timeouts.iter().map(|t| t * p.interval).collect();

    let mut rng = Xoshiro256PlusPlus::seed_from_u64(sweep.seed);
    let jitter =
        Normal::new(0.0, p.jitter_sd).map_err(|_| RangeError::new("process.jitter_sd", p.jitter_sd, "[0, ∞)"))?;
    let pareto = match p.pauses {
        Pauses::Pareto { scale, shape, .. } => Some(
            Pareto::new(scale, shape).map_err(|_| RangeError::new("process.pauses", shape, "a valid Pareto law"))?,
        ),
        _ => None,
    };
    let gap = |rng: &mut Xoshiro256PlusPlus| -> f64 {
        let mut g = (p.interval + jitter.sample(rng)).max(0.01 * p.interval);
        match p.pauses {
            Pauses::None => {}
            Pauses::OneIn { k, length } => {
                if rng.random_range(0..k) == 0 {
                    g += length;
                }
            }
            Pauses::Pareto { probability, .. } => {
                if rng.random::<f64>() < probability {
                    if let Some(law) = &pareto {
                        g += law.sample(rng);
                    }
                }
            }
        }
        g
    };

    let beats = (sweep.hours * 3600.0 / p.interval).ceil() as usize + WARM_UP;
    let rows_n = zs.len() + timeouts.len();
    let mut false_count = vec![0u64; rows_n];
    let mut detections: Vec<Vec<f64>> = vec![Vec::with_capacity(beats / CRASH_EVERY + 1); rows_n];
    let mut now = 0.0f64;
    let mut counted_time = 0.0f64;
    det.heartbeat(now);
    for i in 0..beats {
        let g = gap(&mut rng);
        if i >= WARM_UP {
            counted_time += g;
            let (m, s) = det.law();
            let crash = if i % CRASH_EVERY == 0 { Some(rng.random::<f64>() * g) } else { None };
            let delays = zs.iter().map(|z| m + s * z).chain(timeouts.iter().copied());
            for (k, d) in delays.enumerate() {
                if g > d {
                    false_count[k] += 1;
                }
                if let Some(u) = crash {
                    detections[k].push((d - u).max(0.0));
                }
            }
        }
        now += g;
        det.heartbeat(now);
    }

    let hours = counted_time / 3600.0;
    let kinds = sweep
        .phi_thresholds
        .iter()
        .map(|&t| (DetectorKind::Phi, t))
        .chain(sweep.timeouts.iter().map(|&t| (DetectorKind::Timeout, t)));
    Ok(kinds
        .zip(false_count)
        .zip(detections)
        .map(|(((detector, threshold), f), mut d)| {
            d.sort_by(f64::total_cmp);
            let mean = if d.is_empty() { f64::NAN } else { d.iter().sum::<f64>() / d.len() as f64 };
            let p99 = if d.is_empty() {
                f64::NAN
            } else {
                d[((d.len() as f64 * 0.99).ceil() as usize).clamp(1, d.len()) - 1]
            };
            TradeoffRow {
                detector,
                threshold,
                false_per_hour: f as f64 / hours,
                detection_mean: mean,
                detection_p99: p99,
            }
        })
        .collect())
}

#[cfg(test)]
#[path = "detector_tests.rs"]
mod tests;
