//! What the experiments run on: the [`Setup`] (the model, trial counts, a seed), and the
//! fluid-run helpers they share.

use safegate_sim::config::Config;
use safegate_sim::scenario::{Scenario, ScenarioError};

/// What the experiments run on.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The model: pool, health shape (its `hold_*`/`ramp_*`/`low`), dt. Traffic, schedule
    /// kind and duration are set by each experiment as the seed's setup requires.
    pub base: Config,
    /// Severity trials per design (the seed: 2,000,000).
    pub severity_trials: u64,
    /// Repeated runs for the distribution of worst severities.
    pub worst_runs: u64,
    /// IMM trials per noise law (the seed: 30,000).
    pub imm_trials: u64,
    /// Seed of every random draw.
    pub seed: u64,
}

impl Default for Setup {
    fn default() -> Self {
        Self { base: Config::default(), severity_trials: 2_000_000, worst_runs: 10_000, imm_trials: 30_000, seed: 1 }
    }
}

impl Setup {
    /// The default setup on the seed's model changed by `key = value` overrides of scenario
    /// keys (`model.rate = 36`, as `safegate reproduce --set` gives them), with `seed`. An
    /// unknown key or a value out of range is the error, as in a scenario file.
    pub fn with_overrides(overrides: &[(String, String)], seed: u64) -> Result<Self, ScenarioError> {
        let origin = "<reproduce>";
        let base = Scenario::from_toml_with("", origin, overrides)?.config(origin)?;
        // The experiments run hundreds of fluid runs of up to 1200 s each at this step: at
        // 1e-5 s one of them needs 960 MB and the sweep runs for minutes.
        if base.dt < MIN_REPRODUCE_DT {
            let error = safegate_core::RangeError::new("run.dt", base.dt, format!("at least {MIN_REPRODUCE_DT} s in reproduce (the seed's is 0.05; its experiments run hundreds of runs of up to 1200 s at this step)"));
            return Err(ScenarioError::Invalid { origin: origin.into(), error });
        }
        Ok(Setup { base, seed, ..Setup::default() })
    }

    /// The model every fluid run of the experiments starts from: [`Setup::base`] without
    /// what each experiment sets itself as the seed's setup requires (a traffic spike: λ is
    /// the experiment's; a settled window: its figures are over the whole run). The
    /// experiments read of it what their [`super::Reads`] say.
    pub(crate) fn model(&self) -> Config {
        Config { spike: None, warmup: 0.0, ..self.base.clone() }
    }
}

/// The finest `run.dt` `reproduce --set` takes \[s\].
pub const MIN_REPRODUCE_DT: f64 = 1e-3;

/// The dip shape of the setup's health schedule (the seed's when it has none).
pub(crate) fn dip_shape(setup: &Setup) -> safegate_sim::DipShape {
    match &setup.base.health.schedule {
        safegate_sim::HealthSchedule::Cycle(s) | safegate_sim::HealthSchedule::Dip { shape: s, .. } => *s,
        _ => safegate_sim::DipShape::default(),
    }
}

/// Fluid run helper shared by the experiments: queue series at every step.
pub(crate) fn fluid_series(cfg: &Config, sensitivity: f64, threshold: f64) -> safegate_sim::Series {
    let mut gate = safegate_core::SeedGate::new(threshold, sensitivity).expect("experiment gate parameters are valid");
    safegate_sim::fluid::simulate(cfg, &mut gate, safegate_sim::RunOptions { record_every: Some(1), progress: None })
        .series
        .expect("recorded")
}
