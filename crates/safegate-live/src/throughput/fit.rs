//! Fitting a throughput curve `X(n)`: Gunther's universal scalability law and the seed's
//! contention law, both by least squares on `ln X` (relative errors, so the tail weighs as
//! much as the peak), and the tail's log–log slope with an interval. Pure: no I/O, no clock.
//!
//! - USL (N. J. Gunther, *Guerrilla Capacity Planning*, Springer, 2007, ch. 4):
//!   `X(n) = λn / (1 + σ(n − 1) + κn(n − 1))`, `λ > 0`, `σ, κ ≥ 0`. With `κ > 0` it falls
//!   like `λ/(κn)` at large `n`.
//! - The contention law (docs/model.md §The pool): `X(n) = s·n·min(1, (C/n)^p)`, i.e.
//!   `s·n` up to `C` and `s·C^p·n^(1−p)` past it; the seed's `p = 2` is a `1/n` tail.
//!
//! "Tail exponent" means `p` in `X ∝ n^(1−p)`: 2 is `1/n`, and a USL with `κ > 0` has 2 as
//! its limit.

use serde::{Deserialize, Serialize};

mod contention;
mod usl;

pub use contention::{contention, fit_contention, ContentionFit};
pub use usl::{fit_usl, usl, usl_local_exponent, UslFit};

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
    /// than [`MIN_TAIL_POINTS`] points lie there.
    pub tail: Option<TailSlope>,
    /// The fits at 2× and 4× the largest measured `n`.
    pub tails: Vec<TailPoint>,
}

/// The fewest points the tail slope is fitted on.
pub const MIN_TAIL_POINTS: usize = 3;

/// Multiples of the largest measured `n` at which [`CurveFit::tails`] extrapolates.
pub const TAIL_MULTIPLES: [f64; 2] = [2.0, 4.0];

/// Fit the USL, the `p = 2` contention law and the free-exponent one, the tail slope over
/// `n ≥ 2C`, and the extrapolated tails.
pub fn fit_curve(points: &[Point]) -> Result<CurveFit, FitError> {
    let usl = fit_usl(points)?;
    let contention = fit_contention(points, Some(2.0))?;
    let free = fit_contention(points, None)?;
    let from = 2.0 * contention.comfortable;
    let tail = match tail_slope(points, from) {
        Ok(t) => Some(t),
        Err(FitError::TooFewPoints { .. }) => None,
        Err(e) => return Err(e),
    };
    let n_max = points.iter().map(|p| p.n).fold(0.0, f64::max);
    let tails = TAIL_MULTIPLES
        .iter()
        .map(|m| {
            let n = m * n_max;
            TailPoint { n, usl: usl.at(n), contention: contention.at(n), free: free.at(n) }
        })
        .collect();
    Ok(CurveFit { usl, contention, free, tail, tails })
}

/// The points as `(ln n, ln X, weight)`, checked: every `n` and `X` finite and positive, and
/// at least `need` distinct `n`.
pub(super) fn prepare(points: &[Point], need: usize) -> Result<Vec<(f64, f64, f64)>, FitError> {
    for (index, p) in points.iter().enumerate() {
        let ok = |v: f64| v.is_finite() && v > 0.0;
        if !ok(p.n) || !ok(p.throughput) {
            return Err(FitError::BadPoint { index, n: p.n, throughput: p.throughput });
        }
    }
    let mut ns: Vec<f64> = points.iter().map(|p| p.n).collect();
    ns.sort_by(f64::total_cmp);
    ns.dedup();
    if ns.len() < need {
        return Err(FitError::TooFewPoints { got: ns.len(), need });
    }
    let weighted = points.iter().all(|p| p.log_se.is_finite() && p.log_se > 0.0);
    Ok(points
        .iter()
        .map(|p| (p.n.ln(), p.throughput.ln(), if weighted { 1.0 / (p.log_se * p.log_se) } else { 1.0 }))
        .collect())
}

pub(super) fn quality(points: &[Point], f: impl Fn(f64) -> f64) -> Quality {
    let m = points.len() as f64;
    let mean = points.iter().map(|p| p.throughput).sum::<f64>() / m;
    let (mut ss_res, mut ss_tot, mut ss_log) = (0.0, 0.0, 0.0);
    for p in points {
        let fx = f(p.n);
        ss_res += (p.throughput - fx).powi(2);
        ss_tot += (p.throughput - mean).powi(2);
        ss_log += (p.throughput.ln() - fx.ln()).powi(2);
    }
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else if ss_res == 0.0 {
        1.0
    } else {
        0.0
    };
    Quality { r2, rmse: (ss_res / m).sqrt(), log_rmse: (ss_log / m).sqrt() }
}

/// The weighted least-squares slope of `ln X` on `ln n` over the points with `n ≥ from_n`, as
/// the exponent `p̂ = 1 − slope` with a 95 % Student-t interval (`m − 2` degrees of freedom).
/// With standard errors on every point the slope's error is theirs, scaled up by
/// `√(χ²/(m − 2))` when the scatter exceeds them; without, it is the residuals' alone.
pub fn tail_slope(points: &[Point], from_n: f64) -> Result<TailSlope, FitError> {
    let upper: Vec<Point> = points.iter().copied().filter(|p| p.n >= from_n).collect();
    let data = prepare(&upper, MIN_TAIL_POINTS)?;
    let known = upper.iter().all(|p| p.log_se.is_finite() && p.log_se > 0.0);
    let m = data.len();
    let sw: f64 = data.iter().map(|d| d.2).sum();
    let xb = data.iter().map(|d| d.2 * d.0).sum::<f64>() / sw;
    let yb = data.iter().map(|d| d.2 * d.1).sum::<f64>() / sw;
    let sxx: f64 = data.iter().map(|d| d.2 * (d.0 - xb).powi(2)).sum();
    let sxy: f64 = data.iter().map(|d| d.2 * (d.0 - xb) * (d.1 - yb)).sum();
    let slope = sxy / sxx;
    let chi2: f64 = data.iter().map(|d| d.2 * (d.1 - yb - slope * (d.0 - xb)).powi(2)).sum();
    let dof = (m - 2) as f64;
    let scale = if known { (chi2 / dof).max(1.0) } else { chi2 / dof };
    let se = (scale / sxx).sqrt();
    let half = student_t_975(m - 2) * se;
    let exponent = 1.0 - slope;
    Ok(TailSlope { from_n, points: m, exponent, lo: exponent - half, hi: exponent + half, se })
}

/// The 97.5 % quantile of Student's t with `dof` degrees of freedom: exact for 1 and 2, the
/// Cornish–Fisher expansion (Abramowitz & Stegun 26.7.5, to `ν⁻⁴`) from 3 on (0.1 % at 3).
pub fn student_t_975(dof: usize) -> f64 {
    let p: f64 = 0.975;
    match dof {
        0 => f64::INFINITY,
        1 => (std::f64::consts::PI * (p - 0.5)).tan(),
        2 => (2.0 * p - 1.0) / (2.0 * p * (1.0 - p)).sqrt(),
        _ => {
            let z = safegate_core::quantile::normal_quantile(p);
            let v = dof as f64;
            let z2 = z * z;
            z + z * (z2 + 1.0) / (4.0 * v)
                + z * (5.0 * z2 * z2 + 16.0 * z2 + 3.0) / (96.0 * v * v)
                + z * (3.0 * z2.powi(3) + 19.0 * z2 * z2 + 17.0 * z2 - 15.0) / (384.0 * v.powi(3))
                + z * (79.0 * z2.powi(4) + 776.0 * z2.powi(3) + 1482.0 * z2 * z2 - 1920.0 * z2 - 945.0)
                    / (92160.0 * v.powi(4))
        }
    }
}
