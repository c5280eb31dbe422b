//! The fits' inputs and results: points, errors, quality, tail slopes.

use serde::{Deserialize, Serialize};

use super::{ContentionFit, UslFit};

/// One point of a throughput curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Concurrency `n`.
    pub n: f64,
    /// Throughput `X(n)` \[req/s\].
    pub throughput: f64,
    /// Standard error of `ln X` (`1/√completions` for a measured point); 0 when unknown, as
    /// on an analytic curve. When every point has one the fits weigh points by `1/se²`.
    pub log_se: f64,
}

/// Why a curve cannot be fitted. Fatal for the fit; nothing is retried.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    /// Fewer points (with distinct `n`) than the fit has parameters.
    #[error("a throughput fit needs at least {need} points with distinct n, got {got}")]
    TooFewPoints {
        /// Distinct concurrencies given.
        got: usize,
        /// The least that can be fitted.
        need: usize,
    },
    /// A point whose `n` or throughput is zero, negative, infinite or NaN.
    #[error("point {index}: n = {n}, throughput = {throughput}: both must be finite and positive")]
    BadPoint {
        /// Its position in the input.
        index: usize,
        /// Its concurrency.
        n: f64,
        /// Its throughput.
        throughput: f64,
    },
}

/// How well a fit matches the points.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quality {
    /// `1 − SS_res/SS_tot` on the throughput itself (unweighted).
    pub r2: f64,
    /// Root-mean-square error of the throughput \[req/s\].
    pub rmse: f64,
    /// Root-mean-square error of `ln X`, about the typical relative error.
    pub log_rmse: f64,
}

/// The slope of `ln X` against `ln n` over the upper part of a curve, as a tail exponent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TailSlope {
    /// The smallest `n` used.
    pub from_n: f64,
    /// Points used.
    pub points: usize,
    /// `p̂ = 1 − slope`: 2 is a `1/n` tail.
    pub exponent: f64,
    /// Lower end of its 95 % interval.
    pub lo: f64,
    /// Upper end of its 95 % interval.
    pub hi: f64,
    /// The standard error of `p̂`.
    pub se: f64,
}

impl TailSlope {
    /// Whether the interval contains `p`.
    pub fn contains(&self, p: f64) -> bool {
        self.lo <= p && p <= self.hi
    }
}

/// What each fit predicts past the measured range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TailPoint {
    /// The concurrency (a multiple of the largest measured).
    pub n: f64,
    /// Under the USL fit \[req/s\].
    pub usl: f64,
    /// Under the contention law with `p = 2` \[req/s\].
    pub contention: f64,
    /// Under the contention law with `p` fitted \[req/s\].
    pub free: f64,
}

/// Every fit of one curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurveFit {
    /// Gunther's USL.
    pub usl: UslFit,
    /// The contention law with the seed's `p = 2`.
    pub contention: ContentionFit,
    /// The contention law with `p` fitted.
    pub free: ContentionFit,
    /// The log–log slope over `n ≥ 2C` (with `C` from the `p = 2` fit); `None` when fewer
    /// than [`MIN_TAIL_POINTS`](super::MIN_TAIL_POINTS) points lie there.
    pub tail: Option<TailSlope>,
    /// The fits at 2× and 4× the largest measured `n`.
    pub tails: Vec<TailPoint>,
}
