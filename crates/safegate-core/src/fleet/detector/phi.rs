//! The φ accrual detector: [`PhiConfig`], its constants, and [`PhiAccrual`].

use std::collections::VecDeque;

use super::failure_detector::elapsed;
use super::normal_tail::{phi_of_score, score_of_phi};
use super::FailureDetector;
use crate::error::{check, RangeError};

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
