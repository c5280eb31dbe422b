//! F19 of the seed's falsification criteria, measured here rather than in the model: the
//! live downstream emulator's throughput curve on loopback, fitted with the USL and the
//! `(C/n)^p` law (docs/throughput.md).

use safegate_studies::falsify::{Criterion, Evidence, Verdict};

use crate::throughput;

const CLAIM: &str = "a system with negligible contention (σ ≈ 0) and a real coherency penalty (κ > 0) decays at large concurrency other than as 1/N";
const EXPERIMENT: &str = "the live downstream emulator's throughput measured at 1–16·C concurrent clients on loopback, fitted with Gunther's USL and the (C/n)^p law";

/// F19 as a row that could not be measured: inconclusive, `cause` given.
pub fn unmeasured(cause: &str) -> Criterion {
    Criterion {
        id: "F19".into(),
        claim: CLAIM.into(),
        experiment: EXPERIMENT.into(),
        evidence: vec![],
        verdict: Verdict::Inconclusive,
        reason: format!("the measurement could not be made: {cause}"),
    }
}

/// F19 measured (small samples when `quick`): the fitted exponents and fits as evidence,
/// the verdict of [`throughput::f19`]; inconclusive when the measurement fails.
pub async fn criterion(quick: bool) -> Criterion {
    let opts = if quick { throughput::Options::quick() } else { throughput::Options::default() };
    let fit = match throughput::f19(&opts).await {
        Ok(f) => f,
        Err(e) => return unmeasured(&e.to_string()),
    };
    let m = &fit.measured;
    let mut evidence = Vec::new();
    if let Some(t) = m.tail {
        evidence.push(Evidence::new("measured tail exponent p̂ (2 is 1/n)", t.exponent, "X ∝ n^(1−p)"));
        evidence.push(Evidence::new("its 95 % interval, low", t.lo, ""));
        evidence.push(Evidence::new("its 95 % interval, high", t.hi, ""));
    }
    evidence.push(Evidence::new("USL fit σ", m.usl.sigma, ""));
    evidence.push(Evidence::new("USL fit κ", m.usl.kappa, ""));
    evidence.push(Evidence::new("USL tail constant λ/κ", m.usl.tail_constant(), "req/s·n"));
    evidence.push(Evidence::new(
        "(C/n)² law tail constant s·C²",
        m.contention.rate * m.contention.comfortable.powi(2),
        "req/s·n",
    ));
    evidence.push(Evidence::new("R² of the USL", m.usl.quality.r2, ""));
    evidence.push(Evidence::new("R² of the (C/n)² law", m.contention.quality.r2, ""));
    evidence.push(Evidence::new("wall time of the measurement", fit.wall_seconds, "s"));
    let verdict = fit.verdict;
    Criterion {
        id: "F19".into(),
        claim: CLAIM.into(),
        experiment: EXPERIMENT.into(),
        evidence,
        verdict,
        reason: format!(
            "{} (the emulator serves at H·s·min(1, (C/n)²) by construction: this shows the measurement recovers the law and that a σ = 0 USL's tail is also 1/n, not that real systems decay as 1/n)",
            fit.reason
        ),
    }
}
