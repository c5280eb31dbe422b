//! The analytic comparison curve: a USL with `σ = 0` peaking where the law peaks.

use serde::{Deserialize, Serialize};

use super::fit::{self, CurveFit, FitError, Point};

/// The local exponent of a curve at one concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ExponentAt {
    /// The concurrency.
    pub n: f64,
    /// `1 − d ln X/d ln n` there.
    pub exponent: f64,
}

/// The analytic comparison: a USL with `σ = 0` whose peak is the law's (at `n = C`, height
/// `s·C`), so `κ = 1/C²` and `λ = s(2C − 1)/C`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalyticUsl {
    /// `λ` \[req/s\].
    pub lambda: f64,
    /// `κ`.
    pub kappa: f64,
    /// `lim n·X(n) = λ/κ` of this USL.
    pub usl_tail_constant: f64,
    /// `lim n·X(n) = s·C²` of the law.
    pub law_tail_constant: f64,
    /// `usl_tail_constant / law_tail_constant = (2C − 1)/C`.
    pub constant_ratio: f64,
    /// The USL's exact local exponent at 1×, 4× and 64× the largest measured `n`.
    pub local_exponents: Vec<ExponentAt>,
    /// The same fits as on the measured curve, on this USL at the measured levels.
    pub fit: CurveFit,
}

impl AnalyticUsl {
    /// The curve for a law with rate `s` and knee `C`, fitted at `levels`.
    pub fn new(rate: f64, comfortable: f64, levels: &[f64]) -> Result<Self, FitError> {
        let c = comfortable;
        let kappa = 1.0 / (c * c);
        let lambda = rate * (2.0 * c - 1.0) / c;
        let points: Vec<Point> =
            levels.iter().map(|&n| Point { n, throughput: fit::usl(n, lambda, 0.0, kappa), log_se: 0.0 }).collect();
        let fit = fit::fit_curve(&points)?;
        let n_max = levels.iter().copied().fold(0.0, f64::max);
        let local_exponents = [1.0, 4.0, 64.0]
            .iter()
            .map(|m| ExponentAt { n: m * n_max, exponent: fit::usl_local_exponent(m * n_max, 0.0, kappa) })
            .collect();
        Ok(Self {
            lambda,
            kappa,
            usl_tail_constant: lambda / kappa,
            law_tail_constant: rate * c * c,
            constant_ratio: (lambda / kappa) / (rate * c * c),
            local_exponents,
            fit,
        })
    }
}
