//! F12: does the IMM ensemble keep its false-alarm rate under heavy-tailed noise?
//!
//! The seed's two-mode IMM with a small constant mixing probability (Definition 2, as
//! [`crate::experiments::imm`] runs it: mixing 0.02, Gaussian likelihood, alarm after 5
//! steps above 0.5, 200-step runs with no real shift) on N(0, 1) and Student-t noise of
//! ν = 3 and ν = 1.5, each trial on its own seed, plain and with the heavy-tail-robust
//! Student-t likelihood on the same trials. Intervals are 99 % Clopper–Pearson.

use safegate_core::estimators::ImmConfig;
use safegate_core::stats::clopper_pearson;

use super::{Criterion, Effort, Evidence, Figure, Outcome, Verdict};
use crate::experiments::imm::{compare_false_alarms, robust_config, Noise, ROBUST_NU};

/// The noise laws, light first.
pub const LAWS: [(Noise, &str); 3] = [
    (Noise::Gaussian, "Gaussian"),
    (Noise::StudentT(3.0), "Student-t ν = 3"),
    (Noise::StudentT(1.5), "Student-t ν = 1.5"),
];

/// A false-alarm rate with its 99 % Clopper–Pearson interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Alarms.
    pub alarms: u64,
    /// Trials.
    pub trials: u64,
    /// 99 % lower limit.
    pub low: f64,
    /// 99 % upper limit.
    pub high: f64,
}

impl Rate {
    /// From counts.
    pub fn new(alarms: u64, trials: u64) -> Self {
        let (low, high) = clopper_pearson(alarms, trials, 0.01);
        Rate { alarms, trials, low, high }
    }

    /// Point estimate.
    pub fn estimate(&self) -> f64 {
        self.alarms as f64 / self.trials.max(1) as f64
    }
}

/// The verdict from the plain filter's rates: `light` under Gaussian noise, `heavy` under
/// each heavy-tailed law.
pub fn judge(light: Rate, heavy: &[Rate]) -> (Verdict, String) {
    if let Some(h) = heavy.iter().find(|h| h.low > light.high) {
        (
            Verdict::Holds,
            format!(
                "heavy tails raise the plain filter's false alarms from {:.3} % (99 % CI up to {:.3} %) to {:.2} % (99 % CI from {:.2} %): the condition (no increase) is not met",
                light.estimate() * 100.0,
                light.high * 100.0,
                h.estimate() * 100.0,
                h.low * 100.0
            ),
        )
    } else if heavy.iter().all(|h| h.high <= 2.0 * light.high) {
        (
            Verdict::Falsified,
            "every heavy-tailed law's 99 % upper limit is within 2× the Gaussian's: the condition (no increase) is met"
                .into(),
        )
    } else {
        (
            Verdict::Inconclusive,
            "the intervals of the heavy-tailed and Gaussian rates overlap: too few trials to tell".into(),
        )
    }
}

/// F12.
pub fn f12(effort: &Effort) -> Outcome {
    let n = effort.imm_trials.max(1);
    let plain = ImmConfig::default();
    let robust = robust_config();
    let paired: Vec<_> =
        LAWS.iter().map(|&(noise, _)| compare_false_alarms(noise, n, effort.seed, plain, robust)).collect();
    let count = |p: f64| (p * n as f64).round() as u64;
    let plain_rates: Vec<Rate> = paired.iter().map(|p| Rate::new(count(p.a), n)).collect();
    let robust_rates: Vec<Rate> = paired.iter().map(|p| Rate::new(count(p.b), n)).collect();
    let (verdict, reason) = judge(plain_rates[0], &plain_rates[1..]);
    let mut evidence = Vec::new();
    for ((_, label), (p, r)) in LAWS.iter().zip(plain_rates.iter().zip(&robust_rates)).rev() {
        evidence.push(Evidence::new(
            format!("false alarms, plain, {label}"),
            p.estimate() * 100.0,
            format!("% of {n} runs (99 % CI {:.3}–{:.3})", p.low * 100.0, p.high * 100.0),
        ));
        evidence.push(Evidence::new(
            format!("false alarms, robust (t likelihood ν = {ROBUST_NU}), {label}"),
            r.estimate() * 100.0,
            format!("% of {n} runs (99 % CI {:.3}–{:.3})", r.low * 100.0, r.high * 100.0),
        ));
    }
    let g = plain_rates[0].estimate();
    evidence.push(Evidence::new(
        "plain, ν = 1.5 over Gaussian",
        if g > 0.0 { plain_rates[2].estimate() / g } else { f64::INFINITY },
        "ratio (infinite: no Gaussian alarm)",
    ));
    let xs = vec![0.0, 1.0 / 3.0, 1.0 / 1.5];
    let fig = Figure::new(
        "f12-imm",
        "F12: IMM false alarms per 200-step run by tail weight (1/ν; 0 = Gaussian)",
        "1/ν of the noise",
        "false-alarm rate [%]",
    )
    .line("plain (Gaussian likelihood)", xs.clone(), plain_rates.iter().map(|r| r.estimate() * 100.0).collect())
    .line("plain, 99 % upper limit", xs.clone(), plain_rates.iter().map(|r| r.high * 100.0).collect())
    .line(&format!("robust (t, ν = {ROBUST_NU})"), xs, robust_rates.iter().map(|r| r.estimate() * 100.0).collect());
    Outcome {
        criteria: vec![Criterion {
            id: "F12".into(),
            claim: "the IMM ensemble with a small constant mixing probability does not raise its false regime-shift rate under heavy-tailed noise".into(),
            experiment: format!(
                "two-mode IMM (mixing 0.02, Gaussian likelihood, alarm = 5 steps above 0.5), {n} runs of 200 steps with no shift per noise law (N(0,1), t ν = 3, t ν = 1.5), plain and robust on the same runs"
            ),
            evidence,
            verdict,
            reason,
        }],
        figures: vec![fig],
    }
}
