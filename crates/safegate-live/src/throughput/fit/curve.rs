//! The whole fit of a curve, and the input checks and quality measure every fit shares.

use super::{fit_contention, fit_usl, tail_slope, CurveFit, FitError, Point, Quality, TailPoint};

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
