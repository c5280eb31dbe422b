//! Gunther's universal scalability law and its fit.
//!
//! `X(n) = λn / (1 + σ(n − 1) + κn(n − 1))` (N. J. Gunther, *Guerrilla Capacity Planning*,
//! Springer, 2007): `σ` prices contention (a serial fraction), `κ` coherency (crosstalk
//! between every pair of active requests). The peak is at `n* = √((1 − σ)/κ)`, and with
//! `κ > 0` the curve falls like `λ/(κn)` whatever `σ` is.

use serde::{Deserialize, Serialize};

use super::{prepare, quality, FitError, Point, Quality};

/// A fitted universal scalability law.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UslFit {
    /// `λ`, the throughput of one request alone \[req/s\].
    pub lambda: f64,
    /// `σ`, the contention (serial fraction) coefficient.
    pub sigma: f64,
    /// `κ`, the coherency (per-pair crosstalk) coefficient.
    pub kappa: f64,
    /// The peak's concurrency `√((1 − σ)/κ)`, at least 1; `None` when `κ = 0` (no peak).
    pub peak_n: Option<f64>,
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
    let peak_n = (kappa > 0.0).then(|| ((1.0 - sigma).max(0.0) / kappa).sqrt().max(1.0));
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
