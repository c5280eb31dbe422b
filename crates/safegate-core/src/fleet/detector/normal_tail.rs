//! The standard normal upper tail as φ: [`phi_of_score`] and its inverse [`score_of_phi`].

/// `−log₁₀ Q(y)`, with `Q(y) = 1 − Φ(y)` the standard normal upper tail: the φ of a
/// standard score `y`.
///
/// Computed from the complementary error function, `Q(y) = ½·erfc(y/√2)` (`libm::erfc`,
/// accurate in the far tail where `1 − Φ(y)` would cancel to 0), so φ stays finite and
/// exact up to `y = 30` (φ ≈ 197). Beyond that, where `erfc` nears underflow, the
/// asymptotic expansion `Q(y) = φ_N(y)/y·(1 − 1/y² + 3/y⁴ − 15/y⁶ + …)` (Abramowitz and
/// Stegun, Handbook of Mathematical Functions, 1964, 26.2.12), truncated after a negative
/// term so that it errs low on `Q` and φ never steps down at the switch. Not the logistic
/// approximation Akka and Cassandra use (`1/(1 + e^{−y(1.5976 + 0.070566y²)})`, after
/// Bowling et al., Journal of Industrial Engineering and Management 2, 2009), whose
/// relative error in the far tail grows with `y`. `y = −∞` gives 0, `+∞` gives `+∞`, NaN
/// gives NaN.
pub fn phi_of_score(y: f64) -> f64 {
    if y.is_nan() {
        return f64::NAN;
    }
    if y < 30.0 {
        let q = 0.5 * libm::erfc(y / std::f64::consts::SQRT_2);
        return (-q.log10()).max(0.0);
    }
    if y == f64::INFINITY {
        return f64::INFINITY;
    }
    let y2 = y * y;
    let series = 1.0 - 1.0 / y2 + 3.0 / (y2 * y2) - 15.0 / (y2 * y2 * y2);
    let ln_q = -0.5 * y2 - y.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln() + series.ln();
    -ln_q / std::f64::consts::LN_10
}

/// The standard score at which φ reaches `phi`: the inverse of [`phi_of_score`], by
/// bisection (φ is increasing in the score). NaN for a `phi` that is NaN or below 0;
/// `−∞` for 0.
pub fn score_of_phi(phi: f64) -> f64 {
    if phi.is_nan() || phi < 0.0 {
        return f64::NAN;
    }
    if phi == 0.0 {
        return f64::NEG_INFINITY;
    }
    if phi == f64::INFINITY {
        return f64::INFINITY;
    }
    // φ(−40) ≈ 0 and φ grows like y²/(2 ln 10): the bracket [−40, 40 + 3√φ] holds the root.
    let (mut lo, mut hi) = (-40.0f64, 40.0 + 3.0 * phi.sqrt());
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if phi_of_score(mid) < phi {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-13 * hi.abs().max(1.0) {
            break;
        }
    }
    hi
}
