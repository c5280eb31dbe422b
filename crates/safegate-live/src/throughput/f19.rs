//! F19 end to end: measure the emulator's curve, fit it and the analytic USL, judge, and
//! list the evidence.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::fit::{self, CurveFit};
use super::{judge, measure, AnalyticUsl, Curve, Options, Verdict};
use crate::LiveError;

/// F19's result: the verdict, why, the evidence, and every number behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct F19Fit {
    /// The verdict on the measured curve.
    pub verdict: Verdict,
    /// Why, in one sentence.
    pub reason: String,
    /// What was measured and fitted, one finding a line.
    pub evidence: Vec<String>,
    /// The fits of the measured curve.
    pub measured: CurveFit,
    /// The analytic USL with `σ = 0` and the fits of it.
    pub analytic: AnalyticUsl,
    /// The measured curve.
    pub curve: Curve,
    /// Wall time of the whole run \[s\].
    pub wall_seconds: f64,
}

/// Measure the emulator's curve, fit it and the analytic USL, and judge F19.
/// [`LiveError::Fit`] when the measured curve cannot be fitted (too few levels, a level with
/// no completion), otherwise the errors of [`measure`].
pub async fn f19(opts: &Options) -> Result<F19Fit, LiveError> {
    let started = Instant::now();
    let curve = measure(opts).await?;
    let measured = fit::fit_curve(&curve.points())?;
    let levels: Vec<f64> = opts.levels().iter().map(|&n| f64::from(n)).collect();
    let analytic = AnalyticUsl::new(curve.rate, curve.comfortable, &levels)?;
    let (verdict, reason) = judge(&measured);
    let evidence = evidence(&curve, &measured, &analytic);
    Ok(F19Fit { verdict, reason, evidence, measured, analytic, curve, wall_seconds: started.elapsed().as_secs_f64() })
}

fn evidence(curve: &Curve, m: &CurveFit, a: &AnalyticUsl) -> Vec<String> {
    let (s, c) = (curve.rate, curve.comfortable);
    let mut out = vec![format!(
        "the emulator serves at H·s·min(1, (C/n)²) by construction (s = {s}, C = {c}): this checks that the \
         measurement pipeline recovers that law and how the USL's tail compares, not whether real systems decay as 1/n"
    )];
    if let Some(t) = m.tail {
        out.push(format!(
            "measured tail exponent p̂ = {:.3} [{:.3}, {:.3}] (95 %) over n ≥ {:.1}, {} points; p = 2 is 1/n",
            t.exponent, t.lo, t.hi, t.from_n, t.points
        ));
    }
    let law = |f: &fit::ContentionFit| {
        format!(
            "s = {:.2}, C = {:.2}, p = {:.3}: R² = {:.4}, RMSE {:.2} req/s",
            f.rate, f.comfortable, f.exponent, f.quality.r2, f.quality.rmse
        )
    };
    out.push(format!("contention law, p = 2: {}", law(&m.contention)));
    out.push(format!("contention law, p free: {}", law(&m.free)));
    let u = &m.usl;
    let peak = u.peak_n.map_or("no peak".to_string(), |n| format!("peak at n = {n:.1}"));
    out.push(format!(
        "USL: λ = {:.2}, σ = {:.4}, κ = {:.5}, {peak}: R² = {:.4}, RMSE {:.2} req/s; its tail λ/(κn) = {:.0}/n \
         against the law's sC²/n = {:.0}/n",
        u.lambda,
        u.sigma,
        u.kappa,
        u.quality.r2,
        u.quality.rmse,
        u.tail_constant(),
        m.contention.rate * m.contention.comfortable.powi(2)
    ));
    for t in &m.tails {
        out.push(format!(
            "at n = {:.0}: USL {:.2}, (C/n)² {:.2}, free p {:.2} req/s (USL/(C/n)² = {:.2})",
            t.n,
            t.usl,
            t.contention,
            t.free,
            t.usl / t.contention
        ));
    }
    let local: Vec<String> = a.local_exponents.iter().map(|e| format!("{:.3} at n = {:.0}", e.exponent, e.n)).collect();
    out.push(format!(
        "analytic USL with σ = 0 peaking at the law's peak (κ = 1/C² = {:.4}, λ = s(2C − 1)/C = {:.2}): tail {:.0}/n \
         against the law's {:.0}/n (ratio {:.3}), both 1/n; its local exponent is {} (→ 2)",
        a.kappa,
        a.lambda,
        a.usl_tail_constant,
        a.law_tail_constant,
        a.constant_ratio,
        local.join(", ")
    ));
    if let Some(t) = a.fit.tail {
        out.push(format!(
            "over the measured levels that USL's log–log slope gives p̂ = {:.3} [{:.3}, {:.3}], and the free-exponent law \
             p = {:.3}: a finite range sees the approach to 1/n, not its limit",
            t.exponent, t.lo, t.hi, a.fit.free.exponent
        ));
    }
    out.push(format!(
        "the seed's own USL matching (γ = s, κ = 1/C²) gives λ/κ = sC² = {:.0}: the very tail of the law",
        s * c * c
    ));
    out
}
