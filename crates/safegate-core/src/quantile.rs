//! Normal distribution helpers for configuring constraints (not on the hot path).

/// Standard normal density φ(z).
pub fn normal_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Standard normal upper tail `1 − Φ(z)`, via `libm::erfc` (accurate in the far tail).
pub fn normal_sf(z: f64) -> f64 {
    0.5 * libm::erfc(z / std::f64::consts::SQRT_2)
}

/// Standard normal quantile `Φ⁻¹(p)` for `p ∈ (0, 1)`, to about 1e-14. NaN outside (0, 1).
/// For a small upper tail prefer [`normal_isf`], which does not lose `ε` to `1 − ε`.
pub fn normal_quantile(p: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    if p > 0.5 {
        normal_isf(1.0 - p)
    } else {
        -normal_isf(p)
    }
}

/// Inverse upper tail: the `z` with `1 − Φ(z) = tail`, for `tail ∈ (0, 1)`; by bisection then
/// Newton on `libm::erfc`. `κ = Φ⁻¹(1 − ε)` is `normal_isf(ε)`.
pub fn normal_isf(tail: f64) -> f64 {
    if !(tail > 0.0 && tail < 1.0) {
        return f64::NAN;
    }
    if tail > 0.5 {
        return -normal_isf(1.0 - tail);
    }
    let sign = 1.0;
    let (mut lo, mut hi) = (0.0f64, 40.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if normal_sf(mid) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-15 * hi.max(1.0) {
            break;
        }
    }
    let mut z = 0.5 * (lo + hi);
    for _ in 0..3 {
        let f = normal_sf(z) - tail;
        let d = -normal_pdf(z);
        if d != 0.0 {
            z -= f / d;
        }
    }
    sign * z
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_quantiles() {
        for (p, z) in [
            (0.95, 1.644_853_626_951_472),
            (0.99, 2.326_347_874_040_841),
            (0.999, 3.090_232_306_167_813),
            (0.9999, 3.719_016_485_455_709),
            (0.5, 0.0),
            (0.025, -1.959_963_984_540_054),
        ] {
            assert!((normal_quantile(p) - z).abs() < 1e-9, "{p}: {} vs {z}", normal_quantile(p));
        }
        assert!((normal_isf(1e-12) - 7.034_483_825_748_47).abs() < 1e-9);
        assert!((normal_isf(8.333e-7) - 4.790_5).abs() < 1e-3);
        assert!(normal_quantile(0.0).is_nan() && normal_quantile(1.0).is_nan());
    }
}
