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
//!
//! # The heavy-tail-robust variant
//!
//! With the Gaussian likelihood the log-likelihood ratio `(m₁ − m₀)·y/s² − (m₁² − m₀²)/(2s²)`
//! is linear, hence unbounded, in `y`: one large draw of heavy-tailed noise is read as
//! overwhelming evidence for the mode on its side. The seed measures the cost (F12: 0.03 %
//! false alarms under Gaussian noise, 3.08 % under Student-t ν = 3, 12.44 % under ν = 1.5).
//! [`Likelihood::StudentT`] replaces the Gaussian by the Student-t density with `ν` degrees of
//! freedom and the same scale `s` (the likelihood of the noise the seed feeds it; robust
//! filtering with Student-t likelihoods: Lange, Little & Taylor, JASA 84(408), 1989; Roth,
//! Özkan & Gustafsson, ICASSP 2013). Its normalising constants cancel in the ratio:
//!
//! ```text
//! ln Λ₁/Λ₀ = −(ν + 1)/2 · ln[(ν + z₁²)/(ν + z₀²)],   z_j = (y − m_j)/s
//! ```
//!
//! which tends to 0 as `|y| → ∞` (an outlier far from both means says nothing about which
//! mode produced it) and is bounded by `±L`, with, writing `Δ = |m₁ − m₀|/s`,
//!
//! ```text
//! L = (ν + 1)/2 · ln(1 + Δ·(Δ + √(Δ² + 4ν))/(2ν))
//! ```
//!
//! (maximise `(ν + (z + Δ)²)/(ν + z²)` over `z`: the stationary point solves
//! `z² + Δz − ν = 0`; derivation ours). Mixing keeps the prior log-odds within
//! `±ln((1 − p)/p)`, so when `L < ln((1 − p)/p)` no single observation can move the belief
//! from the nominal steady state past 1/2 ([`TwoModeImm::max_log_likelihood_ratio`]). The
//! seed's setup (Δ = 3, p = 0.02: ln 49 = 3.89) gives L = 2.58 at ν = 1.5, 3.13 at ν = 3 and
//! 3.77 at ν = 5.
//!
//! # Over a series
//!
//! [`run_series`] runs a fresh filter over a whole series and reports a [`Detection`]: the
//! posterior at every step, the steps at which an alarm completes and the periods in alarm.

mod series;

pub use series::{run_series, Detection};

use crate::error::{check, RangeError};

/// The observation likelihood of each mode (both modes share the form and the scale).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Likelihood {
    /// `N(y; m_j, s²)`: the seed's Definition 2 (the default).
    #[default]
    Gaussian,
    /// Student-t with `nu` degrees of freedom, location `m_j`, scale `s`: the bounded,
    /// heavy-tail-robust variant (see the module documentation).
    StudentT {
        /// Degrees of freedom `ν > 0` (smaller is more robust and slower to decide).
        nu: f64,
    },
}

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
    /// The likelihood of an observation under each mode ([`Likelihood::Gaussian`], the
    /// seed's).
    pub likelihood: Likelihood,
}

impl Default for ImmConfig {
    fn default() -> Self {
        Self {
            mean0: 0.0,
            mean1: 3.0,
            sd: 1.0,
            switch: 0.02,
            alarm_level: 0.5,
            alarm_run: 5,
            likelihood: Likelihood::Gaussian,
        }
    }
}

impl ImmConfig {
    /// The seed's configuration with the Student-t likelihood of `nu` degrees of freedom.
    pub fn robust(nu: f64) -> Self {
        Self { likelihood: Likelihood::StudentT { nu }, ..Self::default() }
    }

    /// Whether a filter can be built from it ([`TwoModeImm::new`] checks it): a scale `sd`
    /// in `[1e-100, 1e100]` (its square must neither underflow nor overflow), a switch
    /// probability in `[0, 0.5]`, distinct means within `±1e100`, an alarm level in `[0, 1)`
    /// with a run of at least 1, and for the Student-t likelihood `ν` in `(0, 1e6]`.
    pub fn check(&self) -> Result<(), RangeError> {
        check::within("sd", self.sd, 1e-100, 1e100, "[1e-100, 1e100]")?;
        check::within("switch", self.switch, 0.0, 0.5, "[0, 0.5]")?;
        check::within("mean0", self.mean0, -1e100, 1e100, "[-1e100, 1e100]")?;
        check::within("mean1", self.mean1, -1e100, 1e100, "[-1e100, 1e100], other than mean0")?;
        if self.mean0 == self.mean1 {
            return Err(RangeError::new("mean1", self.mean1, "[-1e100, 1e100], other than mean0"));
        }
        check::decay("alarm_level", self.alarm_level)?;
        if self.alarm_run == 0 {
            return Err(RangeError::new("alarm_run", 0, "1 or more"));
        }
        if let Likelihood::StudentT { nu } = self.likelihood {
            check::within("likelihood.nu", nu, f64::MIN_POSITIVE, 1e6, "(0, 1e6]")?;
        }
        Ok(())
    }
}

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
    /// Gaussian: `(m₁ − m₀)/s²` and `(m₁² − m₀²)/(2s²)`: the log-likelihood ratio is `a·y − b`.
    /// Student-t: `ν·s²` and `(ν + 1)/2`.
    slope: f64,
    offset: f64,
    /// Posterior probability of mode 1.
    p1: f64,
    run: u32,
    alarmed: bool,
}

impl TwoModeImm {
    /// A filter starting with all belief on mode 0.
    pub fn new(cfg: ImmConfig) -> Result<Self, RangeError> {
        cfg.check()?;
        let v = cfg.sd * cfg.sd;
        let (slope, offset) = match cfg.likelihood {
            Likelihood::Gaussian => {
                ((cfg.mean1 - cfg.mean0) / v, (cfg.mean1 * cfg.mean1 - cfg.mean0 * cfg.mean0) / (2.0 * v))
            }
            Likelihood::StudentT { nu } => (nu * v, (nu + 1.0) / 2.0),
        };
        Ok(Self { cfg, slope, offset, p1: 0.0, run: 0, alarmed: false })
    }

    /// The log-likelihood ratio `ln Λ₁(y)/Λ₀(y)` of mode 1 against mode 0 for a finite `y`.
    ///
    /// Gaussian: `(m₁ − m₀)·y/s² − (m₁² − m₀²)/(2s²)`. Student-t:
    /// `−(ν + 1)/2 · ln[(νs² + (y − m₁)²)/(νs² + (y − m₀)²)]`, and exactly 0 where the squares
    /// overflow (`|y| ≳ 1e154`, where the true value is below 1e-150 in magnitude).
    #[inline]
    pub fn log_likelihood_ratio(&self, y: f64) -> f64 {
        match self.cfg.likelihood {
            Likelihood::Gaussian => self.slope * y - self.offset,
            Likelihood::StudentT { .. } => {
                let (d1, d0) = (y - self.cfg.mean1, y - self.cfg.mean0);
                let ratio = (self.slope + d1 * d1) / (self.slope + d0 * d0);
                if ratio.is_finite() && ratio > 0.0 {
                    -self.offset * ratio.ln()
                } else {
                    0.0
                }
            }
        }
    }

    /// The largest `|ln Λ₁(y)/Λ₀(y)|` over all `y`: infinite for the Gaussian likelihood,
    /// `(ν + 1)/2 · ln(1 + Δ·(Δ + √(Δ² + 4ν))/(2ν))` with `Δ = |m₁ − m₀|/s` for the Student-t
    /// one (module documentation). When it is below `ln((1 − p)/p)`, the bound mixing puts on
    /// the prior log-odds, one observation cannot flip a settled belief.
    pub fn max_log_likelihood_ratio(&self) -> f64 {
        match self.cfg.likelihood {
            Likelihood::Gaussian => f64::INFINITY,
            Likelihood::StudentT { nu } => {
                let d = (self.cfg.mean1 - self.cfg.mean0).abs() / self.cfg.sd;
                (nu + 1.0) / 2.0 * (d * (d + (d * d + 4.0 * nu).sqrt()) / (2.0 * nu)).ln_1p()
            }
        }
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
            let llr = self.log_likelihood_ratio(y);
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
        let mut robust = TwoModeImm::new(ImmConfig::robust(1.5)).unwrap();
        for y in [1e300, -1e300, 1e160, f64::NAN, f64::NEG_INFINITY, 0.0, 3.0] {
            let p = robust.update(y);
            assert!((0.0..=1.0).contains(&p), "{y}: {p}");
        }
        for nu in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(TwoModeImm::new(ImmConfig::robust(nu)).is_err(), "ν = {nu}");
        }
    }

    #[test]
    fn the_default_likelihood_is_the_seeds_gaussian() {
        assert_eq!(ImmConfig::default().likelihood, Likelihood::Gaussian);
        assert_eq!(TwoModeImm::new(ImmConfig::default()).unwrap().max_log_likelihood_ratio(), f64::INFINITY);
    }

    /// The Student-t recursion in probability space with the unnormalised densities
    /// `(1 + z²/ν)^(−(ν+1)/2)` (the constants cancel in Bayes' rule).
    fn reference_step_t(p1: f64, y: f64, c: &ImmConfig, nu: f64) -> f64 {
        let prior = (1.0 - c.switch) * p1 + c.switch * (1.0 - p1);
        let t = |m: f64| {
            let z = (y - m) / c.sd;
            (1.0 + z * z / nu).powf(-(nu + 1.0) / 2.0)
        };
        t(c.mean1) * prior / (t(c.mean0) * (1.0 - prior) + t(c.mean1) * prior)
    }

    #[test]
    fn student_t_matches_the_probability_space_recursion() {
        for nu in [1.0, 1.5, 4.0, 30.0] {
            let c = ImmConfig { mean0: 0.5, mean1: 2.0, sd: 0.8, switch: 0.03, ..ImmConfig::robust(nu) };
            let mut imm = TwoModeImm::new(c).unwrap();
            let mut p = 0.0;
            for i in 0..300 {
                let y = ((i * 7919) % 101) as f64 / 101.0 * 12.0 - 5.0;
                p = reference_step_t(p, y, &c, nu);
                let got = imm.update(y);
                assert!((got - p).abs() < 1e-12, "ν = {nu}, step {i}: {got} vs {p}");
            }
        }
    }

    #[test]
    fn student_t_ratio_is_bounded_by_the_closed_form_and_reaches_it() {
        for nu in [0.5, 1.5, 3.0, 10.0] {
            let imm = TwoModeImm::new(ImmConfig::robust(nu)).unwrap();
            let bound = imm.max_log_likelihood_ratio();
            let mut hi = f64::NEG_INFINITY;
            let mut lo = f64::INFINITY;
            for i in 0..=200_000 {
                let y = -20.0 + i as f64 * 43.0 / 200_000.0;
                let r = imm.log_likelihood_ratio(y);
                hi = hi.max(r);
                lo = lo.min(r);
            }
            assert!(hi <= bound + 1e-12 && -lo <= bound + 1e-12, "ν = {nu}: {lo}..{hi} vs ±{bound}");
            assert!(hi > bound - 1e-6 && -lo > bound - 1e-6, "ν = {nu}: the bound is attained: {lo}..{hi} vs ±{bound}");
            // Far from both means an observation carries (almost) no evidence.
            assert!(imm.log_likelihood_ratio(1e6).abs() < 1e-4);
        }
        // The seed's setup: the values quoted in the module documentation.
        let l = |nu: f64| TwoModeImm::new(ImmConfig::robust(nu)).unwrap().max_log_likelihood_ratio();
        assert!((l(1.5) - 2.58).abs() < 0.005 && (l(3.0) - 3.13).abs() < 0.005 && (l(5.0) - 3.77).abs() < 0.005);
    }

    #[test]
    fn one_outlier_cannot_flip_a_settled_robust_belief_but_flips_the_gaussian_one() {
        let settle = |cfg: ImmConfig| {
            let mut imm = TwoModeImm::new(cfg).unwrap();
            for _ in 0..50 {
                imm.update(0.0);
            }
            imm
        };
        let robust = settle(ImmConfig::robust(3.0));
        for i in 0..=4000 {
            let y = -100.0 + i as f64 * 0.05;
            let mut r = robust.clone();
            assert!(r.update(y) < 0.5, "robust flipped by y = {y}");
        }
        let mut plain = settle(ImmConfig::default());
        assert!(plain.update(5.0) > 0.99, "the Gaussian likelihood is unbounded");
        // Two observations at the alternate mean are enough for the robust one.
        let mut r = robust.clone();
        r.update(3.0);
        assert!(r.update(3.0) > 0.5);
    }
}
