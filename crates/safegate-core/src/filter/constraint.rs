//! The constraints, each an upper bound `u ≤ U(x)` on the admitted rate.
//!
//! Dynamics (docs/math.md §Notation): `q⁺ = q + dt·(u + d̄) + ξ`, with `d̄` the drift admission does not
//! control (retries minus expected service) and `ξ` zero-mean noise of variance `σ_q²`.
//! With headroom `G = θQ − q`:
//!
//! | constraint | bound `U(x)` | source |
//! |---|---|---|
//! | expectation, `E[h⁺] ≥ α·h` | `(1 − α)G/dt − d̄` | discrete-time CBF (Ames et al. 2017; Cosner et al. 2024) |
//! | chance, Gaussian or Cantelli κ | `((1 − α)G − κσ_q)/dt − d̄` | Definition 3 per step |
//! | chance, Poisson admissions (Gaussian approximation) | `(z*² − σ₀²)/dt`, `z* = (−κ + √(κ² + 4(R + σ₀²)))/2`, `R = (1 − α)G − dt·d̄` | docs/math.md §Chance constraints |
//! | chance, Bernstein (unit jumps, exact tail bound) | `w*/dt`, `w* = R + L − √(2RL + L² + c)`, `R = (1 − α)G − dt·d̄ − L/3`, `c = L²/9 + 2Lσ₀²`, `L = ln(1/ε)` | Bernstein's inequality; this crate |
//! | worst-case CVaR at tail η ≤ ρ | `(G + Qρ − κ_η σ_q)/dt − d̄`, `κ_η = √((1 − η)/η)` | Corollary 2; Kishida (arXiv 2308.14265); Zymler, Kuhn & Rustem (2013) |
//! | rate of closure, first order | `γ₀·G/dt − d̄` | Definition 4; Xiao & Belta (2022) |
//! | rate of closure, slew-limited | `γ₀γ₁G/dt + (1 − γ₀ − γ₁)(u₋ + d̄₋) − d̄` | Definition 4, second order; Xiong et al. (discrete HOCBF) |
//! | backup-implicit safe set | `(q_I − q)/dt − d̄` | Chen, Jankovic, Santillo & Ames (2021) |
//!
//! The Bernstein form is ours: the Gaussian κ under-states the tail of Poisson counts at the
//! small per-step ε a long horizon needs (docs/math.md §Limits of the guarantees), and
//! Cantelli is vacuous there.
//! Arrivals and completions are unit jumps, so the centred next-step increment `X` satisfies
//! `log E e^{tX} ≤ v·t²/(2(1 − t/3))` with `v = u·dt + σ₀²`, hence `P(X ≥ x) ≤
//! exp(−x²/(2(v + x/3)))`; requiring that to be ≤ ε at `x = R' − u·dt` and solving the
//! quadratic in `w = u·dt` gives the closed form above (feasible iff `R ≥ √c`).

use crate::error::{check, RangeError};

/// Largest CVaR bound ρ in barrier units (shares of capacity). Any ρ above `1 − θ` already
/// bounds nothing; the cap keeps `ρ·Q` finite for every allowed capacity.
pub const MAX_RHO: f64 = 1e6;

/// What the filter knows at a decision.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FilterState {
    /// Queue depth `q` \[requests\].
    pub queue: f64,
    /// Decision period `dt` \[s\].
    pub dt: f64,
    /// Predicted drift admission does not control, `d̄ = r̄ − s̄` [req/s] (negative when the
    /// pool clears faster than retries arrive).
    pub drift: f64,
    /// Std of the next depth's noise `σ_q` \[requests\] (Gaussian, Cantelli, CVaR forms).
    pub sigma: f64,
    /// Variance of the part of the noise admission does not control `σ₀²` \[requests²\]
    /// (Poisson and Bernstein forms, which add the admissions' own `u·dt`).
    pub var0: f64,
    /// Admitted rate of the previous decision [req/s] (slew-limited form).
    pub prev_admit: f64,
    /// Drift predicted at the previous decision [req/s] (slew-limited form).
    pub prev_drift: f64,
}

/// A constraint of the filter. Build them with the constructors, which check ranges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Constraint {
    /// `E[h(q⁺)] ≥ α·h(q)`.
    Expectation {
        /// α = exp(−dt/τ) ∈ [0, 1].
        decay: f64,
    },
    /// `P[h(q⁺) ≥ α·h] ≥ 1 − ε` with a quantile multiplier κ (Gaussian or Cantelli).
    Chance {
        /// κ: Φ⁻¹(1 − ε) (Gaussian) or √((1 − ε)/ε) (Cantelli).
        kappa: f64,
        /// α ∈ [0, 1); 0 is the pure form.
        decay: f64,
    },
    /// The chance constraint with Poisson admissions (variance `σ₀² + u·dt`).
    PoissonChance {
        /// κ, as for [`Constraint::Chance`].
        kappa: f64,
        /// α ∈ [0, 1).
        decay: f64,
    },
    /// The chance constraint by Bernstein's inequality for unit-jump counts.
    Bernstein {
        /// `L = ln(1/ε)` for the per-step ε.
        log_inv_eps: f64,
        /// α ∈ [0, 1).
        decay: f64,
    },
    /// Worst-case CVaR at tail η of the overshoot `−h(q⁺)` at most ρ.
    Cvar {
        /// `κ_η = √((1 − η)/η)` (worst case) or `φ(z_{1−η})/η` (Gaussian).
        kappa_eta: f64,
        /// `Q·ρ` \[requests\].
        rho_requests: f64,
    },
    /// First-order rate of closure: the margin may close at most at rate γ₀ per step.
    RateOfClosure {
        /// γ₀ ∈ (0, 1].
        gamma0: f64,
    },
    /// Second-order (slew-limited) rate of closure.
    SlewRateOfClosure {
        /// γ₀ ∈ (0, 1].
        gamma0: f64,
        /// γ₁ ∈ (0, 1].
        gamma1: f64,
    },
    /// Stay where the backup policy is known to keep the queue safe: `q⁺ ≤ q_I`.
    BackupSet {
        /// `q_I` \[requests\].
        depth: f64,
    },
}

/// Which constraint bound a decision (for records and metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum ConstraintKind {
    /// [`Constraint::Expectation`].
    Expectation,
    /// [`Constraint::Chance`].
    Chance,
    /// [`Constraint::PoissonChance`].
    PoissonChance,
    /// [`Constraint::Bernstein`].
    Bernstein,
    /// [`Constraint::Cvar`].
    Cvar,
    /// [`Constraint::RateOfClosure`].
    RateOfClosure,
    /// [`Constraint::SlewRateOfClosure`].
    SlewRateOfClosure,
    /// [`Constraint::BackupSet`].
    BackupSet,
}

impl ConstraintKind {
    /// A short stable name.
    pub fn name(&self) -> &'static str {
        match self {
            ConstraintKind::Expectation => "expectation",
            ConstraintKind::Chance => "chance",
            ConstraintKind::PoissonChance => "poisson-chance",
            ConstraintKind::Bernstein => "bernstein",
            ConstraintKind::Cvar => "cvar",
            ConstraintKind::RateOfClosure => "rate-of-closure",
            ConstraintKind::SlewRateOfClosure => "slew-rate-of-closure",
            ConstraintKind::BackupSet => "backup-set",
        }
    }
}

impl Constraint {
    /// Which kind this is.
    pub fn kind(&self) -> ConstraintKind {
        match self {
            Constraint::Expectation { .. } => ConstraintKind::Expectation,
            Constraint::Chance { .. } => ConstraintKind::Chance,
            Constraint::PoissonChance { .. } => ConstraintKind::PoissonChance,
            Constraint::Bernstein { .. } => ConstraintKind::Bernstein,
            Constraint::Cvar { .. } => ConstraintKind::Cvar,
            Constraint::RateOfClosure { .. } => ConstraintKind::RateOfClosure,
            Constraint::SlewRateOfClosure { .. } => ConstraintKind::SlewRateOfClosure,
            Constraint::BackupSet { .. } => ConstraintKind::BackupSet,
        }
    }

    /// The expectation constraint with time constant τ: `α = exp(−dt/τ)`.
    pub fn expectation(tau: f64, dt: f64) -> Result<Self, RangeError> {
        check::positive("tau", tau)?;
        check::positive("dt", dt)?;
        Ok(Constraint::Expectation { decay: (-dt / tau).exp() })
    }

    /// Gaussian chance constraint at per-step ε: `κ = Φ⁻¹(1 − ε)`.
    pub fn gaussian(eps: f64, decay: f64) -> Result<Self, RangeError> {
        check::probability("epsilon", eps)?;
        check::decay("decay", decay)?;
        Ok(Constraint::Chance { kappa: crate::quantile::normal_isf(eps), decay })
    }

    /// Distribution-free (Cantelli) chance constraint at per-step ε: `κ = √((1 − ε)/ε)`.
    pub fn cantelli(eps: f64, decay: f64) -> Result<Self, RangeError> {
        check::probability("epsilon", eps)?;
        check::decay("decay", decay)?;
        Ok(Constraint::Chance { kappa: ((1.0 - eps) / eps).sqrt(), decay })
    }

    /// Poisson-admission chance constraint (Gaussian approximation) at per-step ε.
    pub fn poisson(eps: f64, decay: f64) -> Result<Self, RangeError> {
        check::probability("epsilon", eps)?;
        check::decay("decay", decay)?;
        Ok(Constraint::PoissonChance { kappa: crate::quantile::normal_isf(eps), decay })
    }

    /// Bernstein chance constraint at per-step ε (exact tail bound for unit-jump counts).
    pub fn bernstein(eps: f64, decay: f64) -> Result<Self, RangeError> {
        check::probability("epsilon", eps)?;
        check::decay("decay", decay)?;
        Ok(Constraint::Bernstein { log_inv_eps: (1.0 / eps).ln(), decay })
    }

    /// Worst-case CVaR at tail `eta` at most `rho` (in barrier units) on a queue of `capacity`.
    pub fn cvar_worst_case(eta: f64, rho: f64, capacity: f64) -> Result<Self, RangeError> {
        check::within("eta", eta, 1e-9, 1.0 - f64::EPSILON, "[1e-9, 1)")?;
        check::within("rho", rho, 0.0, MAX_RHO, "[0, 1e6] (barrier units)")?;
        check::capacity("capacity", capacity)?;
        Ok(Constraint::Cvar { kappa_eta: ((1.0 - eta) / eta).sqrt(), rho_requests: rho * capacity })
    }

    /// Gaussian (not worst-case) CVaR: `κ = φ(z_{1−η})/η`.
    pub fn cvar_gaussian(eta: f64, rho: f64, capacity: f64) -> Result<Self, RangeError> {
        check::within("eta", eta, 1e-9, 1.0 - f64::EPSILON, "[1e-9, 1)")?;
        check::within("rho", rho, 0.0, MAX_RHO, "[0, 1e6] (barrier units)")?;
        check::capacity("capacity", capacity)?;
        let z = crate::quantile::normal_isf(eta);
        Ok(Constraint::Cvar { kappa_eta: crate::quantile::normal_pdf(z) / eta, rho_requests: rho * capacity })
    }

    /// First-order rate of closure with γ₀ ∈ (0, 1].
    pub fn rate_of_closure(gamma0: f64) -> Result<Self, RangeError> {
        check::gain("gamma0", gamma0)?;
        Ok(Constraint::RateOfClosure { gamma0 })
    }

    /// Slew-limited second-order rate of closure with γ₀, γ₁ ∈ (0, 1].
    pub fn slew_rate_of_closure(gamma0: f64, gamma1: f64) -> Result<Self, RangeError> {
        check::gain("gamma0", gamma0)?;
        check::gain("gamma1", gamma1)?;
        Ok(Constraint::SlewRateOfClosure { gamma0, gamma1 })
    }

    /// Check a constraint built by hand (the variants are public): every parameter in the
    /// range its constructor would give. [`super::Filter::new`] refuses a constraint that
    /// fails this, naming the parameter (`kappa`, `decay`, …).
    pub fn check(&self) -> Result<(), RangeError> {
        let kappa = |v: f64| check::non_negative("kappa", v);
        match *self {
            Constraint::Expectation { decay } => check::unit("decay", decay).map(drop),
            Constraint::Chance { kappa: k, decay } | Constraint::PoissonChance { kappa: k, decay } => {
                kappa(k)?;
                check::decay("decay", decay).map(drop)
            }
            Constraint::Bernstein { log_inv_eps, decay } => {
                check::positive("log_inv_eps", log_inv_eps)?;
                check::decay("decay", decay).map(drop)
            }
            Constraint::Cvar { kappa_eta, rho_requests } => {
                check::non_negative("kappa_eta", kappa_eta)?;
                check::non_negative("rho_requests", rho_requests).map(drop)
            }
            Constraint::RateOfClosure { gamma0 } => check::gain("gamma0", gamma0).map(drop),
            Constraint::SlewRateOfClosure { gamma0, gamma1 } => {
                check::gain("gamma0", gamma0)?;
                check::gain("gamma1", gamma1).map(drop)
            }
            // The depth is patched every decision (NaN until the first); any number will do.
            Constraint::BackupSet { depth } => {
                if depth.is_infinite() {
                    Err(RangeError::new("depth", depth, "a finite depth [requests] (NaN: not yet known)"))
                } else {
                    Ok(())
                }
            }
        }
    }

    /// The upper bound `U(x)` on the admitted rate [req/s]. `−∞` where no rate satisfies the
    /// constraint (and NaN inputs give NaN, which the filter treats as infeasible).
    ///
    /// This is the reference form, one constraint at a time; [`super::Filter`] evaluates the
    /// same bounds from rows compiled once, and is tested against this.
    pub fn upper(&self, x: &FilterState, boundary: f64) -> f64 {
        let g = boundary - x.queue;
        let dt = x.dt;
        let inv_dt = 1.0 / dt;
        match *self {
            Constraint::Expectation { decay } => (1.0 - decay) * g * inv_dt - x.drift,
            Constraint::Chance { kappa, decay } => ((1.0 - decay) * g - kappa * x.sigma) * inv_dt - x.drift,
            Constraint::PoissonChance { kappa, decay } => {
                let r = (1.0 - decay) * g - dt * x.drift;
                let s0 = x.var0;
                let disc = kappa * kappa + 4.0 * (r + s0);
                if disc < 0.0 {
                    return f64::NEG_INFINITY;
                }
                let z = 0.5 * (disc.sqrt() - kappa);
                if z < 0.0 {
                    return f64::NEG_INFINITY;
                }
                (z * z - s0) * inv_dt
            }
            Constraint::Bernstein { log_inv_eps: l, decay } => {
                let r = (1.0 - decay) * g - dt * x.drift - l * (1.0 / 3.0);
                let c = l * l * (1.0 / 9.0) + 2.0 * l * x.var0;
                let w = (r + l - (2.0 * r * l + l * l + c).max(0.0).sqrt()) * inv_dt;
                // Feasible iff R ≥ √c; otherwise (or on NaN input) even u = 0 leaves more than
                // ε of crossing. Written as a select so the hot path has no branch.
                if r >= 0.0 && r * r >= c {
                    w
                } else {
                    f64::NEG_INFINITY
                }
            }
            Constraint::Cvar { kappa_eta, rho_requests } => (g + rho_requests - kappa_eta * x.sigma) * inv_dt - x.drift,
            Constraint::RateOfClosure { gamma0 } => gamma0 * g * inv_dt - x.drift,
            Constraint::SlewRateOfClosure { gamma0, gamma1 } => {
                gamma0 * gamma1 * g * inv_dt + (1.0 - gamma0 - gamma1) * (x.prev_admit + x.prev_drift) - x.drift
            }
            Constraint::BackupSet { depth } => (depth.min(boundary) - x.queue) * inv_dt - x.drift,
        }
    }
}

/// `min(q_I, θQ) − θQ`: the backup set's bound `(min(q_I, θQ) − q)` written as `G` plus this
/// offset, the form of the filter's compiled backup row (built and patched from here).
pub(crate) fn backup_offset(depth: f64, boundary: f64) -> f64 {
    depth.min(boundary) - boundary
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(q: f64) -> FilterState {
        FilterState { queue: q, dt: 0.05, drift: -75.0, sigma: 2.0, var0: 3.61, prev_admit: 80.0, prev_drift: -75.0 }
    }

    #[test]
    fn closed_forms_match_math_md() {
        let x = state(100.0); // G = 40
        let e = Constraint::Expectation { decay: 0.9 };
        assert!((e.upper(&x, 140.0) - (0.1 * 40.0 / 0.05 + 75.0)).abs() < 1e-9);
        let c = Constraint::Chance { kappa: 3.0, decay: 0.0 };
        assert!((c.upper(&x, 140.0) - ((40.0 - 6.0) / 0.05 + 75.0)).abs() < 1e-9);
        let v = Constraint::Cvar { kappa_eta: 4.358_898_943_540_674, rho_requests: 20.0 };
        assert!((v.upper(&x, 140.0) - ((40.0 + 20.0 - 4.358_898_943_540_674 * 2.0) / 0.05 + 75.0)).abs() < 1e-9);
        let r = Constraint::RateOfClosure { gamma0: 0.1 };
        assert!((r.upper(&x, 140.0) - e.upper(&x, 140.0)).abs() < 1e-9);
    }

    /// The Poisson form's bound satisfies its defining equation with equality.
    #[test]
    fn poisson_form_is_tight() {
        let x = state(120.0);
        let kappa = 3.0;
        let u = Constraint::PoissonChance { kappa, decay: 0.0 }.upper(&x, 140.0);
        let lhs = 20.0 - x.dt * x.drift - u * x.dt;
        let rhs = kappa * (x.var0 + u * x.dt).sqrt();
        assert!((lhs - rhs).abs() < 1e-9, "{lhs} {rhs}");
    }

    /// The Bernstein bound holds with equality at U and the tail bound is ε there.
    #[test]
    fn bernstein_form_is_tight() {
        let x = state(110.0);
        let eps: f64 = 1e-6;
        let l = (1.0 / eps).ln();
        let u = Constraint::Bernstein { log_inv_eps: l, decay: 0.0 }.upper(&x, 140.0);
        assert!(u > 0.0);
        let w = u * x.dt;
        let room = 30.0 - x.dt * x.drift - w; // x in P(X ≥ x)
        let v = w + x.var0;
        let tail = (-room * room / (2.0 * (v + room / 3.0))).exp();
        assert!((tail / eps - 1.0).abs() < 1e-6, "{tail}");
    }

    #[test]
    fn bernstein_is_infeasible_at_the_boundary() {
        let mut x = state(140.0);
        x.drift = 0.0;
        let u = Constraint::Bernstein { log_inv_eps: 14.0, decay: 0.0 }.upper(&x, 140.0);
        assert_eq!(u, f64::NEG_INFINITY);
    }

    #[test]
    fn slew_form_matches_the_derivation() {
        // u_{k+1} ≤ γ0γ1 G/dt + (1 − γ0 − γ1)(u_k + d̄_k) − d̄_{k+1}
        let x = state(100.0);
        let c = Constraint::SlewRateOfClosure { gamma0: 0.2, gamma1: 0.5 };
        let expect = 0.1 * 40.0 / 0.05 + 0.3 * (80.0 - 75.0) + 75.0;
        assert!((c.upper(&x, 140.0) - expect).abs() < 1e-9);
    }

    #[test]
    fn constructors_check_ranges() {
        assert!(Constraint::gaussian(0.0, 0.0).is_err());
        assert!(Constraint::cantelli(0.5, 1.0).is_err());
        assert!(Constraint::expectation(-1.0, 0.05).is_err());
        assert!(Constraint::rate_of_closure(1.5).is_err());
        let Constraint::Chance { kappa, .. } = Constraint::cantelli(0.01, 0.0).unwrap() else { panic!() };
        assert!((kappa - 9.949_874_371_066_2).abs() < 1e-9);
        let Constraint::Chance { kappa, .. } = Constraint::gaussian(0.01, 0.0).unwrap() else { panic!() };
        assert!((kappa - 2.326_347_874).abs() < 1e-8);
        let Constraint::Cvar { kappa_eta, .. } = Constraint::cvar_gaussian(0.05, 0.1, 200.0).unwrap() else { panic!() };
        assert!((kappa_eta - 2.062_712_807).abs() < 1e-6);
    }
}
