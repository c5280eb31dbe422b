//! A seeded heartbeat process and the failure detectors' trade-off measured on it.
//!
//! The detectors themselves are pure and live in the core
//! ([`safegate_core::fleet::detector`]: [`PhiAccrual`] and [`Timeout`]); this module draws
//! the heartbeats they are fed and counts what a threshold buys.
//!
//! [`sweep`] measures that trade-off: for a heartbeat process with normal jitter and
//! occasional long pauses ([`HeartbeatProcess`], [`Pauses`]; seeded), the false suspicions
//! per hour of a live process and the mean and 99th percentile of the time to detect a
//! crash, for every φ threshold and every timeout asked for ([`TradeoffRow`]).
//!
//! ```
//! use safegate_sim::heartbeat::{sweep, DetectorKind, HeartbeatProcess, Pauses, Sweep};
//!
//! let process = HeartbeatProcess { interval: 1.0, jitter_sd: 0.1, pauses: Pauses::None };
//! let rows = sweep(&Sweep::standard(process, 1.0, 3)).unwrap();
//! assert_eq!(rows.len(), 26); // φ 1..=16 and timeouts of 1..=10 intervals
//! assert_eq!(rows[0].detector, DetectorKind::Phi);
//! ```
//!
//! [`Timeout`]: safegate_core::fleet::detector::Timeout

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal, Pareto};
use rand_xoshiro::Xoshiro256PlusPlus;

use safegate_core::error::{check, RangeError};
use safegate_core::fleet::detector::{score_of_phi, FailureDetector, PhiAccrual, PhiConfig};

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
    /// [`Timeout`](safegate_core::fleet::detector::Timeout); the row's threshold is the timeout in intervals.
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
mod tests;
