//! What `safegate verify` asks for, checked into a [`VerifyConfig`].

use safegate_core::boundary::Boundary;
use safegate_core::RangeError;
use safegate_sim::limits::{budget, MAX_GRID_POINTS, MAX_TRAJECTORY_STEPS, MAX_TRIALS};

use super::{Nominal, VerifyConfig};
use safegate_sim::scenario::GateSection;
use safegate_sim::Config;

/// Why a verification cannot be set up.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VerifyError {
    /// The boundary cannot build a filter for the scenario's pool.
    #[error("boundary: {0}")]
    Boundary(RangeError),
    /// Not a nominal controller `verify` runs.
    #[error("unknown nominal controller {0:?}: expected open or seed-gate")]
    Nominal(String),
    /// A setting out of range (`trials`).
    #[error("{0}")]
    Setting(RangeError),
}

/// At least one trajectory per cell and arm: there is no verdict on zero evidence.
pub(super) fn check_trials(trials: u64) -> Result<u64, RangeError> {
    if trials == 0 {
        return Err(RangeError::new("trials", 0, "1 or more (no verdict on zero evidence)"));
    }
    budget("trials", trials, trials as f64, MAX_TRIALS, "trials per cell and arm")?;
    Ok(trials)
}

/// The effort of a verification fits its budgets: trials, grid points (at least one each:
/// the envelope is what a boundary claims, and a check of no cell shows nothing), and the
/// trajectory-steps all of it adds up to, for a horizon of `steps` decision steps.
pub(super) fn check_effort(vc: &VerifyConfig, steps: u64) -> Result<(), RangeError> {
    check_trials(vc.trials)?;
    for (field, n) in [("traffic_points", vc.traffic_points), ("health_points", vc.health_points)] {
        if n == 0 {
            return Err(RangeError::new(field, 0, "1 or more (no verdict over an envelope of no cells)"));
        }
        budget(field, n, n as f64, MAX_GRID_POINTS, "grid points")?;
    }
    let cells = 1.0 + vc.traffic_points as f64 * vc.health_points as f64;
    let arms = 2.0 + f64::from(u8::from(vc.boundary.magnitude.is_some())) / cells;
    budget(
        "trials",
        vc.trials,
        cells * arms * vc.trials as f64 * steps as f64,
        MAX_TRAJECTORY_STEPS,
        "trajectory-steps (cells × 2 arms × trials × horizon steps)",
    )
}

impl Nominal {
    /// The nominal controller named `name`: `open`, or `seed-gate` with the scenario's gate
    /// (its threshold, and its sensitivity, raised to the smallest positive one when 0).
    pub fn from_name(name: &str, gate: &GateSection) -> Result<Nominal, VerifyError> {
        match name {
            "open" => Ok(Nominal::Open),
            "seed-gate" => Ok(Nominal::SeedGate {
                threshold: gate.threshold,
                sensitivity: gate.sensitivity.max(f64::MIN_POSITIVE),
            }),
            other => Err(VerifyError::Nominal(other.to_string())),
        }
    }
}

/// A verification as asked for: the scenario's model and gate, the boundary, the nominal
/// controller by name and the effort.
#[derive(Debug, Clone)]
pub struct VerifyRequest {
    /// The scenario's resolved model ([`safegate_sim::Scenario::config`]).
    pub base: Config,
    /// The scenario's gate (the `seed-gate` nominal controller's settings).
    pub gate: GateSection,
    /// The boundary.
    pub boundary: Boundary,
    /// The nominal controller's name (see [`Nominal::from_name`]).
    pub nominal: String,
    /// Trajectories per cell and arm (at least 1).
    pub trials: u64,
    /// Grid points over the envelope's traffic range.
    pub traffic_points: usize,
    /// Grid points over the envelope's health range.
    pub health_points: usize,
    /// Seed.
    pub seed: u64,
}

impl VerifyRequest {
    /// The checked configuration: the boundary's filter for the scenario's pool, then the
    /// nominal controller, then the number of trials, each a [`VerifyError`].
    pub fn build(self) -> Result<VerifyConfig, VerifyError> {
        self.boundary.safety_config(self.base.pool.capacity).map_err(VerifyError::Boundary)?;
        let nominal = Nominal::from_name(&self.nominal, &self.gate)?;
        let trials = check_trials(self.trials).map_err(VerifyError::Setting)?;
        let vc = VerifyConfig {
            base: self.base,
            boundary: self.boundary,
            nominal,
            trials,
            traffic_points: self.traffic_points,
            health_points: self.health_points,
            seed: self.seed,
        };
        check_effort(&vc, vc.boundary.horizon_steps()).map_err(VerifyError::Setting)?;
        Ok(vc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> VerifyRequest {
        VerifyRequest {
            base: Config::default(),
            gate: GateSection::default(),
            boundary: Boundary::default(),
            nominal: "open".into(),
            trials: 10,
            traffic_points: 2,
            health_points: 1,
            seed: 3,
        }
    }

    #[test]
    fn a_request_builds_its_config() {
        let vc = request().build().unwrap();
        assert_eq!(vc.nominal, Nominal::Open);
        assert_eq!((vc.trials, vc.traffic_points, vc.health_points, vc.seed), (10, 2, 1, 3));
        assert_eq!(vc.base, Config::default());
        let gate = GateSection { threshold: 0.6, sensitivity: 0.0 };
        let vc = VerifyRequest { nominal: "seed-gate".into(), gate, ..request() }.build().unwrap();
        assert_eq!(vc.nominal, Nominal::SeedGate { threshold: 0.6, sensitivity: f64::MIN_POSITIVE });
    }

    #[test]
    fn each_bad_input_is_its_error_in_order() {
        let e = VerifyRequest { nominal: "gate".into(), ..request() }.build().unwrap_err();
        assert_eq!(e, VerifyError::Nominal("gate".into()));
        assert_eq!(e.to_string(), "unknown nominal controller \"gate\": expected open or seed-gate");
        let e = VerifyRequest { trials: 0, ..request() }.build().unwrap_err();
        let VerifyError::Setting(r) = &e else { panic!("{e}") };
        assert_eq!((r.field.as_str(), r.value.as_str()), ("trials", "0"));
        // The boundary first, then the nominal controller, then the trials.
        let mut bad = request();
        bad.boundary.barrier.threshold = 1.5;
        bad.nominal = "gate".into();
        bad.trials = 0;
        let e = bad.clone().build().unwrap_err();
        assert!(matches!(&e, VerifyError::Boundary(r) if r.field == "barrier.threshold"), "{e}");
        bad.boundary = Boundary::default();
        assert!(matches!(bad.build(), Err(VerifyError::Nominal(_))));
    }
}
