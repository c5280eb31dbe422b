//! Interval estimates for Monte-Carlo frequencies and tail means.

/// `ln C(n, k)` via `libm::lgamma`.
fn ln_choose(n: f64, k: f64) -> f64 {
    libm::lgamma(n + 1.0) - libm::lgamma(k + 1.0) - libm::lgamma(n - k + 1.0)
}

/// `P(X ≤ k)` for `X ~ Binomial(n, p)`, summed in log space.
pub fn binomial_cdf(k: u64, n: u64, p: f64) -> f64 {
    if k >= n || p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return 0.0;
    }
    let (lp, lq) = (p.ln(), (-p).ln_1p());
    let nf = n as f64;
    (0..=k).map(|i| (ln_choose(nf, i as f64) + i as f64 * lp + (nf - i as f64) * lq).exp()).sum::<f64>().min(1.0)
}

/// Clopper–Pearson interval for `k` successes in `n` trials at confidence `1 − alpha`
/// (exact, conservative; Clopper & Pearson, Biometrika 26, 1934). `(0, 1)` when `n = 0`.
///
/// # Examples
///
/// ```
/// use safegate_core::stats::clopper_pearson;
///
/// // No exit in 1,000 trials: the 99 % upper limit is 1 − 0.005^(1/1000) ≈ 0.0053.
/// let (lo, hi) = clopper_pearson(0, 1000, 0.01);
/// assert_eq!(lo, 0.0);
/// assert!((hi - (1.0 - 0.005f64.powf(1.0 / 1000.0))).abs() < 1e-9);
/// ```
pub fn clopper_pearson(k: u64, n: u64, alpha: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let half = alpha / 2.0;
    let lower = if k == 0 {
        0.0
    } else {
        // Smallest p with P(X ≥ k) ≥ α/2, i.e. 1 − cdf(k − 1) = α/2.
        bisect(|p| 1.0 - binomial_cdf(k - 1, n, p) - half)
    };
    let upper = if k >= n {
        1.0
    } else if k == 0 {
        1.0 - half.powf(1.0 / n as f64)
    } else {
        // Largest p with P(X ≤ k) ≥ α/2.
        bisect(|p| half - binomial_cdf(k, n, p))
    };
    (lower, upper)
}

/// Root of an increasing function on (0, 1).
fn bisect(f: impl Fn(f64) -> f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..80 {
        let mid = 0.5 * (lo + hi);
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Empirical CVaR at tail `eta`: the mean of the worst `⌈η·n⌉` losses (0 for no samples).
pub fn empirical_cvar(losses: &mut [f64], eta: f64) -> f64 {
    if losses.is_empty() {
        return 0.0;
    }
    let k = ((eta * losses.len() as f64).ceil() as usize).clamp(1, losses.len());
    losses.sort_unstable_by(|a, b| b.total_cmp(a));
    losses[..k].iter().sum::<f64>() / k as f64
}

/// An exit frequency with its 99 % Clopper–Pearson interval.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Frequency {
    /// Point estimate (0 with no trials).
    pub estimate: f64,
    /// 99 % Clopper–Pearson lower limit.
    pub ci_low: f64,
    /// 99 % Clopper–Pearson upper limit.
    pub ci_high: f64,
    /// Trajectories.
    pub trials: u64,
    /// Trajectories that left the safe set.
    pub exits: u64,
}

impl Frequency {
    /// `exits` of `trials` with the 99 % Clopper–Pearson interval (estimate 0 for no trials).
    pub fn from_counts(exits: u64, trials: u64) -> Self {
        let (ci_low, ci_high) = clopper_pearson(exits, trials, 0.01);
        let estimate = if trials > 0 { exits as f64 / trials as f64 } else { 0.0 };
        Self { estimate, ci_low, ci_high, trials, exits }
    }

    /// What this frequency shows about a tolerated probability `eps` (see [`Verdict`]).
    pub fn verdict(&self, eps: f64) -> Verdict {
        Verdict::of(self, eps)
    }
}

/// What a measured exit frequency shows about ε: the one verdict every command gives
/// (`verify`, `compare`, and what builds on them), whether the arm is filtered or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum Verdict {
    /// The 99 % upper limit is at most ε: the frequency is shown to hold ε.
    Holds,
    /// The 99 % lower limit is above ε: the frequency is shown to exceed ε.
    Violates,
    /// The interval straddles ε (too few trials to tell, or a frequency at ε), or there
    /// were no trials or ε is not a probability: nothing is shown.
    NotEstablished,
}

impl Verdict {
    /// The verdict of `f` against `eps`. With no trials, or an ε outside (0, 1), nothing
    /// is shown — never a verdict on zero evidence.
    pub fn of(f: &Frequency, eps: f64) -> Self {
        if f.trials == 0 || !(eps > 0.0 && eps < 1.0) {
            Verdict::NotEstablished
        } else if f.ci_high <= eps {
            Verdict::Holds
        } else if f.ci_low > eps {
            Verdict::Violates
        } else {
            Verdict::NotEstablished
        }
    }

    /// `holds ε`, `violates ε`, `not established`.
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Holds => "holds ε",
            Verdict::Violates => "violates ε",
            Verdict::NotEstablished => "not established",
        }
    }
}

/// The fewest trials whose 99 % Clopper–Pearson upper limit with no exit is ≤ `eps`
/// (`1 − 0.005^{1/n} ≤ ε`); 0 for an ε outside (0, 1).
pub fn trials_to_show(eps: f64) -> u64 {
    if !(eps > 0.0 && eps < 1.0) {
        return 0;
    }
    let n = (0.005f64.ln() / (1.0 - eps).ln()).ceil() as u64;
    // The closed form and the interval code agree; step past any rounding at the edge.
    (n.saturating_sub(2)..n + 3).find(|&k| Frequency::from_counts(0, k).ci_high <= eps).unwrap_or(n)
}

/// The `p`-quantile of `sorted` (ascending) by nearest rank: the value of rank
/// ⌈p·n⌉ (1-based, at least 1). The one rule every study, bench and report uses, so that a
/// median or a percentile means the same thing everywhere; for an even count the median is
/// the lower middle value, an observed sample rather than an average of two. `None` when
/// `sorted` is empty or `p` is not in [0, 1].
///
/// ```
/// use safegate_core::stats::quantile_sorted;
/// assert_eq!(quantile_sorted(&[1.0, 2.0, 3.0, 4.0], 0.5), Some(2.0));
/// assert_eq!(quantile_sorted(&[1.0, 2.0, 3.0], 0.5), Some(2.0));
/// assert_eq!(quantile_sorted(&[1.0, 2.0, 3.0], 0.99), Some(3.0));
/// assert_eq!(quantile_sorted(&[], 0.5), None);
/// ```
pub fn quantile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=1.0).contains(&p) {
        return None;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// The `p`-quantile of `values` by the rule of [`quantile_sorted`], NaN left out; `None`
/// when no value is left. Reorders nothing the caller keeps (it sorts a copy).
///
/// ```
/// use safegate_core::stats::quantile;
/// assert_eq!(quantile(&[4.0, f64::NAN, 1.0, 3.0, 2.0], 0.5), Some(2.0));
/// ```
pub fn quantile(values: &[f64], p: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    quantile_sorted(&v, p)
}

/// The median of `values` ([`quantile`] at ½: the lower middle value for an even count).
///
/// ```
/// use safegate_core::stats::median;
/// assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
/// ```
pub fn median(values: &[f64]) -> Option<f64> {
    quantile(values, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_verdict_for_every_arm() {
        let eps = 0.01;
        // 0 of 600: the upper limit is under ε.
        assert_eq!(Frequency::from_counts(0, 600).verdict(eps), Verdict::Holds);
        // 0 of 100: within ε, but not shown.
        assert_eq!(Frequency::from_counts(0, 100).verdict(eps), Verdict::NotEstablished);
        // 5 of 100: the lower limit (≈ 0.011) is above ε.
        assert_eq!(Frequency::from_counts(5, 100).verdict(eps), Verdict::Violates);
        // 2 of 100: above ε as an estimate, but the interval straddles it: not established,
        // for every arm and in every command.
        assert_eq!(Frequency::from_counts(2, 100).verdict(eps), Verdict::NotEstablished);
        // No evidence, no verdict.
        assert_eq!(Frequency::from_counts(0, 0).verdict(eps), Verdict::NotEstablished);
        assert_eq!(Frequency::from_counts(0, 600).verdict(f64::NAN), Verdict::NotEstablished);
    }

    #[test]
    fn clopper_pearson_known_values() {
        // 5 of 100 at 95 %: (0.01643, 0.11284) (standard tables).
        let (lo, hi) = clopper_pearson(5, 100, 0.05);
        assert!((lo - 0.016_431).abs() < 1e-5 && (hi - 0.112_836).abs() < 1e-5, "{lo} {hi}");
        let (lo, hi) = clopper_pearson(100, 100, 0.01);
        assert!(hi == 1.0 && (lo - 0.005f64.powf(0.01)).abs() < 1e-9);
    }

    #[test]
    fn cvar_is_the_tail_mean() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(empirical_cvar(&mut v, 0.05), (96.0 + 97.0 + 98.0 + 99.0 + 100.0) / 5.0);
        assert_eq!(empirical_cvar(&mut [], 0.05), 0.0);
    }
}
