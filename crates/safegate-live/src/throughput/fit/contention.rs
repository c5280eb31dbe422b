//! The seed's contention law `X(n) = s·n·min(1, (C/n)^p)` and its fit.

use serde::{Deserialize, Serialize};

use super::{prepare, quality, FitError, Point, Quality};

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
