//! Retries and service-time laws: the two optional behaviours of the model.

use rand::Rng;
use rand_distr::{Distribution, Exp1, StandardNormal};
use serde::{Deserialize, Serialize};

/// Where a retried request re-enters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RetryPath {
    /// Through the admission gate, like a fresh arrival (it may be rejected).
    #[default]
    Gate,
    /// Straight into the backlog, around the gate.
    Direct,
}

/// Retries: a completed request fails downstream and re-enters with probability `p(H)`.
///
/// Off by default: the seed's numbers need no retries beyond health-scaled clearing
/// (docs/model.md §Retries). The seed names both forms: a constant probability (Schroeder's partly-open
/// model) or one that rises as health falls (its opening incident).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Retries {
    /// No retries.
    Off,
    /// `p(H) = probability`.
    Constant {
        /// Retry probability per completion.
        probability: f64,
        /// Where retries re-enter.
        path: RetryPath,
    },
    /// `p(H) = probability · clamp(1 − H, 0, 1)`: zero at full health.
    Health {
        /// Retry probability per completion at zero health.
        probability: f64,
        /// Where retries re-enter.
        path: RetryPath,
    },
}

impl std::fmt::Display for Retries {
    /// `off`, `constant 10 % through the gate`, `up to 40 % as health falls, around the gate`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = |p: RetryPath| match p {
            RetryPath::Gate => "through the gate",
            RetryPath::Direct => "around the gate",
        };
        match *self {
            Retries::Off => f.write_str("off"),
            Retries::Constant { probability, path: p } => {
                write!(f, "constant {} % of completions, {}", probability * 100.0, path(p))
            }
            Retries::Health { probability, path: p } => {
                write!(f, "up to {} % of completions as health falls, {}", probability * 100.0, path(p))
            }
        }
    }
}

impl Retries {
    /// Check the probability; named as in a scenario's `[retries]`.
    pub fn check(&self) -> Result<(), safegate_core::RangeError> {
        match *self {
            Retries::Off => Ok(()),
            Retries::Constant { probability, .. } => safegate_core::error::check::within(
                "retries.probability",
                probability,
                0.0,
                1.0 - f64::EPSILON,
                "[0, 1) for a constant rule (1 never clears)",
            )
            .map(drop),
            Retries::Health { probability, .. } => {
                safegate_core::error::check::unit("retries.probability", probability).map(drop)
            }
        }
    }
    /// Probability that a completion at health `h` fails and re-enters.
    #[inline]
    pub fn probability(&self, h: f64) -> f64 {
        match *self {
            Retries::Off => 0.0,
            Retries::Constant { probability, .. } => probability,
            Retries::Health { probability, .. } => probability * (1.0 - h).clamp(0.0, 1.0),
        }
    }

    /// Where retries re-enter (irrelevant when off).
    pub fn path(&self) -> RetryPath {
        match *self {
            Retries::Off => RetryPath::Gate,
            Retries::Constant { path, .. } | Retries::Health { path, .. } => path,
        }
    }

    /// Whether retries are on.
    pub fn enabled(&self) -> bool {
        !matches!(self, Retries::Off)
    }
}

/// The law of one request's work, in units of one executor-second at unit rate, mean 1.
///
/// An executor clears work at rate `H(t)·s·min(1, (C/n)²)`; with exponential work this is
/// the memoryless model of docs/model.md §Stochastic mode, with the others the same mean and
/// a heavier tail.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "distribution", rename_all = "lowercase")]
pub enum ServiceLaw {
    /// Exponential with mean 1 (default).
    Exponential,
    /// Pareto with tail index `shape > 1`, scaled to mean 1 (`x_m = (α − 1)/α`).
    Pareto {
        /// Tail index α.
        shape: f64,
    },
    /// Log-normal with log-sd `sigma`, scaled to mean 1 (`μ = −σ²/2`).
    Lognormal {
        /// Standard deviation of the log.
        sigma: f64,
    },
}

impl ServiceLaw {
    /// Check the law's parameter; named as in a scenario's `[service]`.
    pub fn check(&self) -> Result<(), safegate_core::RangeError> {
        use safegate_core::error::check;
        match *self {
            ServiceLaw::Exponential => Ok(()),
            ServiceLaw::Pareto { shape } => {
                if shape > 1.0 && shape <= 100.0 {
                    Ok(())
                } else {
                    Err(safegate_core::RangeError::new("service.shape", shape, "(1, 100] (the mean must be finite)"))
                }
            }
            ServiceLaw::Lognormal { sigma } => {
                check::within("service.sigma", sigma, f64::MIN_POSITIVE, 5.0, "(0, 5]").map(drop)
            }
        }
    }

    /// One draw of work (mean 1).
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        match *self {
            ServiceLaw::Exponential => Exp1.sample(rng),
            ServiceLaw::Pareto { shape } => {
                let xm = (shape - 1.0) / shape;
                let u: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
                xm * u.powf(-1.0 / shape)
            }
            ServiceLaw::Lognormal { sigma } => {
                let z: f64 = StandardNormal.sample(rng);
                (sigma * z - 0.5 * sigma * sigma).exp()
            }
        }
    }

    /// Squared coefficient of variation of the work (1 for exponential).
    pub fn scv(&self) -> f64 {
        match *self {
            ServiceLaw::Exponential => 1.0,
            ServiceLaw::Pareto { shape } if shape > 2.0 => 1.0 / (shape * (shape - 2.0)),
            ServiceLaw::Pareto { .. } => f64::INFINITY,
            ServiceLaw::Lognormal { sigma } => (sigma * sigma).exp() - 1.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn every_law_has_mean_one() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        for law in [ServiceLaw::Exponential, ServiceLaw::Pareto { shape: 3.5 }, ServiceLaw::Lognormal { sigma: 1.0 }] {
            let n = 400_000;
            let m = (0..n).map(|_| law.sample(&mut rng)).sum::<f64>() / n as f64;
            // sd of the mean: sqrt(scv/n) ≤ sqrt(1.72/4e5) ≈ 0.0021; allow 5 sd.
            assert!((m - 1.0).abs() < 0.011, "{law:?} mean {m}");
        }
    }

    #[test]
    fn retry_probability_rises_as_health_falls() {
        let r = Retries::Health { probability: 0.4, path: RetryPath::Direct };
        assert_eq!(r.probability(1.0), 0.0);
        assert!((r.probability(0.1) - 0.36).abs() < 1e-12);
        assert_eq!(Retries::Off.probability(0.0), 0.0);
    }
}
