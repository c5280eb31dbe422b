//! The tail's log–log slope with a Student-t interval.

use super::{prepare, FitError, Point, TailSlope, MIN_TAIL_POINTS};

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
