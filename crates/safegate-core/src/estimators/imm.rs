//! The two-mode interacting-multiple-model regime detector (the seed's Definition 2).
//!
//! Two hypotheses about a scalar observation `y`: mode 0 with mean `m₀` and mode 1 with mean
//! `m₁`, both with scale `s`. Each step first *mixes* through the transition matrix
//! `Π = [[1−p, p], [p, 1−p]]` (the small, constant probability that keeps the detector
//! willing to reconsider a confident belief), then applies Bayes' rule with a Gaussian
//! likelihood:
//!
//! ```text
//! c̄₁ = (1 − p)·μ₁ + p·(1 − μ₁)
//! μ₁ ← N(y; m₁, s²)·c̄₁ / (N(y; m₀, s²)·(1 − c̄₁) + N(y; m₁, s²)·c̄₁)
//! ```
//!
//! computed in log-odds for numerical stability (Blom & Bar-Shalom, IEEE TAC 33(8), 1988,
//! reduced to known mode means; seed, "Trusting the Estimate That Triggers the Boundary").
//! An *alarm* is the posterior of mode 1 above a threshold for a number of consecutive steps
//! (the seed: > 0.5 for ≥ 5 steps).

/// Configuration of a [`TwoModeImm`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImmConfig {
    /// Mean of the nominal mode `m₀` (the seed: 0).
    pub mean0: f64,
    /// Mean of the alternate mode `m₁` (the seed: 3).
    pub mean1: f64,
    /// Scale `s` of the Gaussian likelihood (the seed: 1).
    pub sd: f64,
    /// Mixing (switch) probability `p` per step (the seed: 0.02).
    pub switch: f64,
    /// Posterior of mode 1 above which a step counts toward an alarm (0.5).
    pub alarm_level: f64,
    /// Consecutive steps above `alarm_level` that make an alarm (5).
    pub alarm_run: u32,
}

impl Default for ImmConfig {
    fn default() -> Self {
        Self { mean0: 0.0, mean1: 3.0, sd: 1.0, switch: 0.02, alarm_level: 0.5, alarm_run: 5 }
    }
}

/// Why an [`ImmConfig`] is unusable.
#[derive(Debug, Clone, PartialEq)]
pub struct ImmConfigError(&'static str);

impl std::fmt::Display for ImmConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for ImmConfigError {}

/// The two-mode IMM filter with its alarm rule.
///
/// # Examples
///
/// ```
/// use safegate_core::estimators::{ImmConfig, TwoModeImm};
///
/// let mut imm = TwoModeImm::new(ImmConfig::default()).unwrap();
/// for _ in 0..10 {
///     imm.update(0.1); // near the nominal mean: belief stays on mode 0
/// }
/// assert!(imm.posterior() < 0.05);
/// for _ in 0..5 {
///     imm.update(3.2); // a real shift to the alternate mean
/// }
/// assert!(imm.posterior() > 0.99);
/// assert!(imm.alarmed());
/// ```
#[derive(Debug, Clone)]
pub struct TwoModeImm {
    cfg: ImmConfig,
    /// `(m₁ − m₀)/s²` and `(m₁² − m₀²)/(2s²)`: the log-likelihood ratio is `a·y − b`.
    slope: f64,
    offset: f64,
    /// Posterior probability of mode 1.
    p1: f64,
    run: u32,
    alarmed: bool,
}

impl TwoModeImm {
    /// A filter starting with all belief on mode 0.
    pub fn new(cfg: ImmConfig) -> Result<Self, ImmConfigError> {
        if !(cfg.sd > 0.0 && cfg.sd.is_finite()) {
            return Err(ImmConfigError("sd must be positive and finite"));
        }
        if !(0.0..=0.5).contains(&cfg.switch) {
            return Err(ImmConfigError("switch must be in [0, 0.5]"));
        }
        if !(cfg.mean0.is_finite() && cfg.mean1.is_finite()) || cfg.mean0 == cfg.mean1 {
            return Err(ImmConfigError("mode means must be finite and distinct"));
        }
        if !(0.0..1.0).contains(&cfg.alarm_level) || cfg.alarm_run == 0 {
            return Err(ImmConfigError("alarm level must be in [0, 1) and the run at least 1"));
        }
        let v = cfg.sd * cfg.sd;
        Ok(Self {
            cfg,
            slope: (cfg.mean1 - cfg.mean0) / v,
            offset: (cfg.mean1 * cfg.mean1 - cfg.mean0 * cfg.mean0) / (2.0 * v),
            p1: 0.0,
            run: 0,
            alarmed: false,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ImmConfig {
        &self.cfg
    }

    /// Mix, then update with observation `y`; returns the posterior of mode 1. A non-finite
    /// observation is skipped (mixing still happens), so NaN telemetry cannot poison it.
    #[inline]
    pub fn update(&mut self, y: f64) -> f64 {
        let p = self.cfg.switch;
        let prior = (1.0 - p) * self.p1 + p * (1.0 - self.p1);
        self.p1 = if y.is_finite() {
            let llr = self.slope * y - self.offset;
            // posterior odds = prior odds · e^llr, evaluated without overflow.
            let prior = prior.clamp(1e-300, 1.0 - 1e-16);
            let log_odds = (prior / (1.0 - prior)).ln() + llr;
            if log_odds >= 0.0 {
                1.0 / (1.0 + (-log_odds).exp())
            } else {
                let e = log_odds.exp();
                e / (1.0 + e)
            }
        } else {
            prior
        };
        if self.p1 > self.cfg.alarm_level {
            self.run += 1;
            if self.run >= self.cfg.alarm_run {
                self.alarmed = true;
            }
        } else {
            self.run = 0;
        }
        self.p1
    }

    /// Posterior probability of mode 1.
    pub fn posterior(&self) -> f64 {
        self.p1
    }

    /// Whether the current run above the alarm level is long enough to be an alarm.
    pub fn alarm_now(&self) -> bool {
        self.run >= self.cfg.alarm_run
    }

    /// Whether an alarm has happened since creation or the last [`TwoModeImm::reset`].
    pub fn alarmed(&self) -> bool {
        self.alarmed
    }

    /// Back to all belief on mode 0, no alarm.
    pub fn reset(&mut self) {
        self.p1 = 0.0;
        self.run = 0;
        self.alarmed = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same recursion written out in probability space, as in the seed's description.
    fn reference_step(p1: f64, y: f64, c: &ImmConfig) -> f64 {
        let prior = (1.0 - c.switch) * p1 + c.switch * (1.0 - p1);
        let n = |m: f64| (-(y - m) * (y - m) / (2.0 * c.sd * c.sd)).exp();
        n(c.mean1) * prior / (n(c.mean0) * (1.0 - prior) + n(c.mean1) * prior)
    }

    #[test]
    fn matches_the_probability_space_recursion() {
        let c = ImmConfig { mean0: 1.0, mean1: -2.0, sd: 1.7, switch: 0.05, ..ImmConfig::default() };
        let mut imm = TwoModeImm::new(c).unwrap();
        let mut p = 0.0;
        for i in 0..300 {
            let y = ((i * 7919) % 101) as f64 / 101.0 * 8.0 - 4.0;
            p = reference_step(p, y, &c);
            let got = imm.update(y);
            assert!((got - p).abs() < 1e-12, "step {i}: {got} vs {p}");
        }
    }

    #[test]
    fn alarm_needs_a_run_of_five() {
        let mut imm = TwoModeImm::new(ImmConfig::default()).unwrap();
        for _ in 0..4 {
            imm.update(5.0);
        }
        assert!(!imm.alarmed());
        imm.update(0.0);
        imm.update(5.0);
        assert!(!imm.alarmed(), "the run restarted");
        for _ in 0..4 {
            imm.update(5.0);
        }
        assert!(imm.alarmed());
    }

    #[test]
    fn extreme_and_nan_observations_stay_finite() {
        let mut imm = TwoModeImm::new(ImmConfig::default()).unwrap();
        for y in [1e300, -1e300, f64::NAN, f64::INFINITY, 0.0, 1e-300] {
            let p = imm.update(y);
            assert!((0.0..=1.0).contains(&p), "{y}: {p}");
        }
        assert!(TwoModeImm::new(ImmConfig { sd: 0.0, ..ImmConfig::default() }).is_err());
    }
}
