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

/// A fitted universal scalability law.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UslFit {
    /// `λ`, the throughput of one request alone \[req/s\].
    pub lambda: f64,
    /// `σ`, the contention (serial fraction) coefficient.
    pub sigma: f64,
    /// `κ`, the coherency (per-pair crosstalk) coefficient.
    pub kappa: f64,
    /// The peak's concurrency `√((1 − σ)/κ)` (infinite when `κ = 0`).
    pub peak_n: f64,
    /// The fit's quality.
    pub quality: Quality,
}

impl UslFit {
    /// `X(n)` under the fit.
    pub fn at(&self, n: f64) -> f64 {
        usl(n, self.lambda, self.sigma, self.kappa)
    }

    /// `lim n·X(n) = λ/κ`, the constant of the `1/n` tail (infinite when `κ = 0`).
    pub fn tail_constant(&self) -> f64 {
        self.lambda / self.kappa
    }

    /// The local tail exponent at `n`, `1 − d ln X/d ln n = n(σ + κ(2n − 1))/(1 + σ(n − 1) +
    /// κn(n − 1))`: it tends to 2 as `n → ∞` when `κ > 0`, from above once `κn > 2 − σ/κ`.
    pub fn local_exponent(&self, n: f64) -> f64 {
        usl_local_exponent(n, self.sigma, self.kappa)
    }
}

/// The USL's local tail exponent `1 − d ln X/d ln n` at `n` (see [`UslFit::local_exponent`]).
pub fn usl_local_exponent(n: f64, sigma: f64, kappa: f64) -> f64 {
    n * (sigma + kappa * (2.0 * n - 1.0)) / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// Gunther's universal scalability law `X(n) = λn / (1 + σ(n − 1) + κn(n − 1))`
/// (*Guerrilla Capacity Planning*, 2007).
pub fn usl(n: f64, lambda: f64, sigma: f64, kappa: f64) -> f64 {
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// A fitted contention law `X(n) = s·n·min(1, (C/n)^p)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ContentionFit {
    /// `s`, one request's rate below the knee \[req/s\].
    pub rate: f64,
    /// `C`, the knee: the comfortable concurrency.
    pub comfortable: f64,
    /// `p`, the tail exponent (`X ∝ n^(1−p)` past `C`).
    pub exponent: f64,
    /// Whether `p` was fitted (else it was fixed).
    pub exponent_free: bool,
    /// The fit's quality.
    pub quality: Quality,
}

impl ContentionFit {
    /// `X(n)` under the fit.
    pub fn at(&self, n: f64) -> f64 {
        contention(n, self.rate, self.comfortable, self.exponent)
    }
}

/// The contention law `X(n) = s·n·min(1, (C/n)^p)`; `p = 2` is the seed's (docs/model.md
/// §The pool).
pub fn contention(n: f64, rate: f64, comfortable: f64, exponent: f64) -> f64 {
    if n <= comfortable {
        rate * n
    } else {
        rate * n * (comfortable / n).powf(exponent)
    }
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
fn prepare(points: &[Point], need: usize) -> Result<Vec<(f64, f64, f64)>, FitError> {
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

fn quality(points: &[Point], f: impl Fn(f64) -> f64) -> Quality {
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

/// Fit the USL: a grid over `(σ, κ)` with `ln λ` in closed form, then Levenberg–Marquardt on
/// `(ln λ, σ, κ)` on each face of `σ, κ ≥ 0` (both free, `σ = 0`, `κ = 0`, both 0); the best
/// feasible result wins. Deterministic.
pub fn fit_usl(points: &[Point]) -> Result<UslFit, FitError> {
    let data = prepare(points, 3)?;
    let profiled = |sigma: f64, kappa: f64| -> (f64, f64) {
        let (mut sw, mut swz) = (0.0, 0.0);
        for &(ln_n, y, w) in &data {
            let d = 1.0 + sigma * (ln_n.exp() - 1.0) + kappa * ln_n.exp() * (ln_n.exp() - 1.0);
            if !(d > 0.0) {
                return (f64::INFINITY, 0.0);
            }
            sw += w;
            swz += w * (y - ln_n + d.ln());
        }
        let a = swz / sw;
        (usl_objective(&data, [a, sigma, kappa]), a)
    };
    let mut best = (f64::INFINITY, [0.0, 0.0, 0.0]);
    let sigmas = std::iter::once(0.0).chain((0..=24).map(|k| 1e-4 * 10f64.powf(k as f64 / 6.0)));
    for sigma in sigmas {
        let kappas = std::iter::once(0.0).chain((0..=36).map(|k| 1e-6 * 10f64.powf(k as f64 / 6.0)));
        for kappa in kappas {
            let (obj, a) = profiled(sigma, kappa);
            if obj < best.0 {
                best = (obj, [a, sigma, kappa]);
            }
        }
    }
    let start = best.1;
    for free in [[true, true], [false, true], [true, false], [false, false]] {
        let mut theta = start;
        for (j, on) in free.iter().enumerate() {
            if !on {
                theta[j + 1] = 0.0;
            }
        }
        // The closed-form ln λ for the projected start.
        theta[0] = profiled(theta[1], theta[2]).1;
        let theta = levenberg_marquardt(&data, theta, [true, free[0], free[1]]);
        if theta[1] >= 0.0 && theta[2] >= 0.0 {
            let obj = usl_objective(&data, theta);
            if obj < best.0 {
                best = (obj, theta);
            }
        }
    }
    let [a, sigma, kappa] = best.1;
    let lambda = a.exp();
    let peak_n = if kappa > 0.0 { ((1.0 - sigma).max(0.0) / kappa).sqrt().max(1.0) } else { f64::INFINITY };
    let quality = quality(points, |n| usl(n, lambda, sigma, kappa));
    Ok(UslFit { lambda, sigma, kappa, peak_n, quality })
}

/// `Σ w (ln X − ln λ − ln n + ln D)²`, infinite where `D ≤ 0`.
fn usl_objective(data: &[(f64, f64, f64)], [a, sigma, kappa]: [f64; 3]) -> f64 {
    let mut sum = 0.0;
    for &(ln_n, y, w) in data {
        let n = ln_n.exp();
        let d = 1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0);
        if !(d > 0.0) {
            return f64::INFINITY;
        }
        sum += w * (y - a - ln_n + d.ln()).powi(2);
    }
    sum
}

/// Levenberg–Marquardt (Marquardt's diagonal scaling) on the USL's log residuals over the
/// parameters marked free.
fn levenberg_marquardt(data: &[(f64, f64, f64)], mut theta: [f64; 3], free: [bool; 3]) -> [f64; 3] {
    let mut obj = usl_objective(data, theta);
    let mut mu = 1e-3;
    for _ in 0..500 {
        let mut jtj = [[0.0; 3]; 3];
        let mut jtr = [0.0; 3];
        for &(ln_n, y, w) in data {
            let n = ln_n.exp();
            let d = 1.0 + theta[1] * (n - 1.0) + theta[2] * n * (n - 1.0);
            let r = y - theta[0] - ln_n + d.ln();
            let g = [-1.0, (n - 1.0) / d, n * (n - 1.0) / d];
            for i in 0..3 {
                jtr[i] += w * g[i] * r;
                for j in 0..3 {
                    jtj[i][j] += w * g[i] * g[j];
                }
            }
        }
        let mut improved = false;
        while mu < 1e20 {
            let mut a = [[0.0; 3]; 3];
            let mut b = [0.0; 3];
            for i in 0..3 {
                for j in 0..3 {
                    a[i][j] = if free[i] && free[j] { jtj[i][j] } else { 0.0 };
                }
                a[i][i] = if free[i] { jtj[i][i] * (1.0 + mu) + 1e-300 } else { 1.0 };
                b[i] = if free[i] { -jtr[i] } else { 0.0 };
            }
            let Some(step) = solve3(a, b) else {
                mu *= 10.0;
                continue;
            };
            let next = [theta[0] + step[0], theta[1] + step[1], theta[2] + step[2]];
            let next_obj = usl_objective(data, next);
            if next_obj < obj {
                let small = (0..3).all(|i| step[i].abs() <= 1e-13 * (theta[i].abs() + 1e-12));
                theta = next;
                obj = next_obj;
                mu = (mu / 3.0).max(1e-12);
                improved = !small;
                break;
            }
            mu *= 4.0;
        }
        if !improved {
            break;
        }
    }
    theta
}

/// Gaussian elimination with partial pivoting; `None` when singular.
fn solve3(mut a: [[f64; 3]; 3], mut b: [f64; 3]) -> Option<[f64; 3]> {
    for col in 0..3 {
        let pivot = (col..3).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if !(a[pivot][col].abs() > 0.0) {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        let (pivot_row, b_pivot) = (a[col], b[col]);
        for (row, b_row) in a.iter_mut().zip(b.iter_mut()).skip(col + 1) {
            let f = row[col] / pivot_row[col];
            for (v, p) in row.iter_mut().zip(pivot_row).skip(col) {
                *v -= f * p;
            }
            *b_row -= f * b_pivot;
        }
    }
    let mut x = [0.0; 3];
    for row in (0..3).rev() {
        let tail: f64 = (row + 1..3).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - tail) / a[row][row];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// Fit the contention law with `p` fixed (`Some`) or free (`None`): for a knee `C`, `ln s`
/// (and `p`) are a weighted linear regression of `ln X − ln n` on `max(0, ln n − ln C)`, so
/// only `ln C` is searched, on a grid over the measured range refined by golden section. `C`
/// stays within the measured `n` (below it `s` and `C` cannot be told apart), and with `p`
/// free at least two points lie past it.
pub fn fit_contention(points: &[Point], exponent: Option<f64>) -> Result<ContentionFit, FitError> {
    let data = prepare(points, 3)?;
    let mut ln_ns: Vec<f64> = data.iter().map(|d| d.0).collect();
    ln_ns.sort_by(f64::total_cmp);
    ln_ns.dedup();
    let lo = ln_ns[0];
    let hi = if exponent.is_some() { ln_ns[ln_ns.len() - 1] } else { ln_ns[ln_ns.len() - 2] };
    let eval = |ln_c: f64| profile(&data, ln_c, exponent).map_or(f64::INFINITY, |r| r.0);
    const GRID: usize = 600;
    let at = |k: usize| lo + (hi - lo) * k as f64 / GRID as f64;
    let best_k = (0..=GRID).min_by(|&i, &j| eval(at(i)).total_cmp(&eval(at(j)))).unwrap_or(0);
    // Golden section within the neighbouring grid cells.
    let (mut a, mut b) = (at(best_k.saturating_sub(1)), at((best_k + 1).min(GRID)));
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let (mut x1, mut x2) = (b - ratio * (b - a), a + ratio * (b - a));
    let (mut f1, mut f2) = (eval(x1), eval(x2));
    for _ in 0..200 {
        if b - a <= 1e-14 * (1.0 + a.abs()) {
            break;
        }
        if f1 <= f2 {
            (b, x2, f2) = (x2, x1, f1);
            x1 = b - ratio * (b - a);
            f1 = eval(x1);
        } else {
            (a, x1, f1) = (x1, x2, f2);
            x2 = a + ratio * (b - a);
            f2 = eval(x2);
        }
    }
    let candidates = [at(best_k), x1, x2];
    let ln_c = candidates.into_iter().min_by(|&u, &v| eval(u).total_cmp(&eval(v))).unwrap_or(at(best_k));
    let (_, ln_s, p) = profile(&data, ln_c, exponent).ok_or(FitError::TooFewPoints { got: ln_ns.len(), need: 4 })?;
    let (rate, comfortable) = (ln_s.exp(), ln_c.exp());
    let quality = quality(points, |n| contention(n, rate, comfortable, p));
    Ok(ContentionFit { rate, comfortable, exponent: p, exponent_free: exponent.is_none(), quality })
}

/// For knee `e^ln_c`: `(objective, ln s, p)` by weighted least squares; `None` when `p` is
/// free and no point lies past the knee.
fn profile(data: &[(f64, f64, f64)], ln_c: f64, exponent: Option<f64>) -> Option<(f64, f64, f64)> {
    let u = |ln_n: f64| (ln_n - ln_c).max(0.0);
    let sw: f64 = data.iter().map(|d| d.2).sum();
    let (a, p) = match exponent {
        Some(p) => (data.iter().map(|&(l, y, w)| w * (y - l + p * u(l))).sum::<f64>() / sw, p),
        None => {
            let ub = data.iter().map(|&(l, _, w)| w * u(l)).sum::<f64>() / sw;
            let zb = data.iter().map(|&(l, y, w)| w * (y - l)).sum::<f64>() / sw;
            let suu: f64 = data.iter().map(|&(l, _, w)| w * (u(l) - ub).powi(2)).sum();
            let suz: f64 = data.iter().map(|&(l, y, w)| w * (u(l) - ub) * (y - l - zb)).sum();
            if !(suu > 1e-12 * sw) {
                return None;
            }
            let p = -suz / suu;
            (zb + p * ub, p)
        }
    };
    let obj = data.iter().map(|&(l, y, w)| w * (y - l - a + p * u(l)).powi(2)).sum();
    Some((obj, a, p))
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
