//! From a parsed scenario to a checked [`Config`]: every range is checked in one place,
//! [`Config::check`] (and the gate's in [`safegate_core::SeedGate::new`]); this only
//! assembles the runtime types and names the scenario in errors.

use safegate_core::{RangeError, SeedGate};

use super::schema::{HealthKind, HealthSection, LawKind, RetryKind};
use super::{load_trace, Scenario, ScenarioError};
use crate::behaviour::{Retries, ServiceLaw};
use crate::config::Config;
use crate::health::{HealthNoise, HealthSchedule, HealthTrack};

impl HealthSection {
    /// The health track this section describes, its shape checked whatever the kind (so a
    /// typo in an unused key still shows); `seed` keys the noise, `origin` names the file.
    pub fn track(&self, seed: u64, origin: &str) -> Result<HealthTrack, ScenarioError> {
        let invalid = |error: RangeError| ScenarioError::Invalid { origin: origin.to_string(), error };
        let h = self;
        let schedule = match h.kind {
            HealthKind::Constant => HealthSchedule::Constant { level: h.shape.high },
            HealthKind::Cycle => HealthSchedule::Cycle(h.shape),
            HealthKind::Dip => HealthSchedule::Dip { shape: h.shape, start: h.start },
            HealthKind::Trace => {
                let file = h.file.as_ref().ok_or_else(|| {
                    invalid(RangeError::new("health.file", "(missing)", "a CSV path when health.kind = \"trace\""))
                })?;
                HealthSchedule::Trace { points: load_trace(file)? }
            }
        };
        h.shape.check().map_err(invalid)?;
        let noise = (h.noise != 0.0).then_some(HealthNoise {
            sigma: h.noise,
            period: h.noise_period,
            seed: seed ^ 0x5EED_4EA1_7400_0000,
        });
        Ok(HealthTrack { schedule, noise })
    }
}

impl Scenario {
    /// Check every value and build the runtime [`Config`]. `origin` names the scenario in
    /// errors.
    pub fn config(&self, origin: &str) -> Result<Config, ScenarioError> {
        let invalid = |error: RangeError| ScenarioError::Invalid { origin: origin.to_string(), error };
        let h = &self.health;
        let health = h.track(self.run.seed, origin)?;
        let r = &self.retries;
        let retries = match r.kind {
            RetryKind::Off => Retries::Off,
            RetryKind::Constant => Retries::Constant { probability: r.probability, path: r.path },
            RetryKind::Health => Retries::Health { probability: r.probability, path: r.path },
        };
        let sv = &self.service;
        let service = match sv.distribution {
            LawKind::Exponential => ServiceLaw::Exponential,
            LawKind::Pareto => ServiceLaw::Pareto { shape: sv.shape },
            LawKind::Lognormal => ServiceLaw::Lognormal { sigma: sv.sigma },
        };
        let run = &self.run;
        let cfg = Config {
            pool: self.model,
            traffic: self.traffic.rate,
            spike: self.traffic.spike,
            health,
            retries,
            service,
            duration: run.duration,
            dt: run.dt,
            seed: run.seed,
            initial_queue: run.initial_queue,
            drain_level: run.drain_level,
            warmup: run.warmup,
        };
        cfg.check().map_err(invalid)?;
        // Keys the runtime does not carry when their rule or kind is off are still checked,
        // so a typo in an unused key shows.
        use safegate_core::error::check;
        check::unit("retries.probability", r.probability).map_err(invalid)?;
        check::seconds("health.noise_period", h.noise_period).map_err(invalid)?;
        check::within("health.start", h.start, 0.0, 1e9, "[0, 1e9] seconds").map_err(invalid)?;
        SeedGate::new(self.gate.threshold, self.gate.sensitivity).map_err(|e| invalid(e.at("gate")))?;
        if let Some(pg) = &self.postgres {
            pg.check().map_err(|e| invalid(e.at("postgres")))?;
        }
        Ok(cfg)
    }

    /// The seed's gate as configured (sensitivity 0 is the open, ungated pool).
    pub fn gate(&self) -> Result<SeedGate, ScenarioError> {
        SeedGate::new(self.gate.threshold, self.gate.sensitivity).map_err(|e| ScenarioError::Invalid {
            origin: self.name.clone().unwrap_or_else(|| "<scenario>".into()),
            error: e.at("gate"),
        })
    }
}
