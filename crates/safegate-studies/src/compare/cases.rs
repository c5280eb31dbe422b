//! The cases `compare` runs: the seed's scenarios, and what a case's physical limit and
//! envelope membership are.

use safegate_core::boundary::Boundary;
use safegate_core::Policy;

use safegate_sim::behaviour::{Retries, RetryPath, ServiceLaw};
use safegate_sim::config::{Checked, Config, Spike};
use safegate_sim::health::{DipShape, HealthSchedule, HealthTrack};
use safegate_sim::model::Busy;
use safegate_sim::record::RunOptions;
use safegate_sim::scenario::{Scenario, ScenarioError};

use super::CompareError;

/// One scenario of the comparison.
#[derive(Debug, Clone)]
pub struct Case {
    /// Short name (`cycle-80`).
    pub name: String,
    /// What it is, in words.
    pub description: String,
    /// The model to run (stochastic mode).
    pub config: Config,
}

/// The seed's scenarios, each `duration` seconds long (the stochastic mode).
///
/// λ = 55, 74.5, 76, 80 and 120, each through a single dip and on the repeating health
/// cycle; a step spike of 1.4× the pool's 75 req/s ceiling; heavy-tailed (Pareto 1.5)
/// service at λ = 80 on the cycle; health-dependent retries at λ = 70 through a dip.
pub fn default_cases(duration: f64) -> Vec<Case> {
    let base = Config { duration, ..Config::default() };
    let dip = |lambda: f64| Config {
        traffic: lambda,
        health: HealthTrack::new(HealthSchedule::Dip { shape: DipShape::default(), start: 60.0 }),
        ..base.clone()
    };
    let cycle = |lambda: f64| Config { traffic: lambda, ..base.clone() };
    let mut cases = Vec::new();
    // Every traffic level through one dip and on the repeating cycle.
    for (lambda, note) in [
        (55.0, " (the seed: recovers in 9 s)"),
        (74.5, " (the seed: 386 s to recover)"),
        (76.0, " (the seed: never recovers)"),
        (80.0, ""),
        (120.0, ""),
    ] {
        cases.push(Case {
            name: format!("dip-{lambda}"),
            description: format!("λ = {lambda}, one health dip at t = 60 s{note}"),
            config: dip(lambda),
        });
    }
    for (lambda, note) in [(55.0, ""), (74.5, ""), (76.0, ""), (80.0, " (the seed's running case)"), (120.0, "")] {
        cases.push(Case {
            name: format!("cycle-{lambda}"),
            description: format!("λ = {lambda} on the 19-s health cycle{note}"),
            config: cycle(lambda),
        });
    }
    cases.extend([
        Case {
            name: "spike-105".into(),
            description: "λ = 55, a 30-s step to 105 (1.4× the 75 req/s ceiling) at t = 60 s, full health".into(),
            config: Config {
                traffic: 55.0,
                spike: Some(Spike { start: 60.0, duration: 30.0, rate: 105.0 }),
                health: HealthTrack::new(HealthSchedule::Constant { level: 1.0 }),
                ..base.clone()
            },
        },
        Case {
            name: "heavy-tail-80".into(),
            description: "λ = 80 on the cycle, Pareto(1.5) service times (same mean)".into(),
            config: Config { service: ServiceLaw::Pareto { shape: 1.5 }, ..cycle(80.0) },
        },
        Case {
            name: "retries-70".into(),
            description: "λ = 70, one dip, retries up to 40 % as health falls, through the gate".into(),
            config: Config { retries: Retries::Health { probability: 0.4, path: RetryPath::Gate }, ..dip(70.0) },
        },
    ]);
    cases
}

impl Case {
    /// A case of the scenario `s` (its stochastic model; `run.mode` is not used): named by the
    /// scenario's `name`, or `default_name` (e.g. the file's stem), described by its
    /// `description`. `origin` names the scenario in errors; a value out of range is one.
    pub fn from_scenario(s: &Scenario, origin: &str, default_name: &str) -> Result<Case, ScenarioError> {
        Ok(Case {
            name: s.name.clone().unwrap_or_else(|| default_name.to_string()),
            description: s.description.clone().unwrap_or_default(),
            config: s.config(origin)?,
        })
    }
}

/// The seed's cases ([`default_cases`], each `duration` seconds) named in `names`, in that
/// order (each trimmed); no names: all of them. A name that is not one is the error.
pub fn select_cases(names: &[String], duration: f64) -> Result<Vec<Case>, CompareError> {
    let all = default_cases(duration);
    if names.is_empty() {
        return Ok(all);
    }
    names
        .iter()
        .map(|name| {
            all.iter().find(|c| c.name == name.trim()).cloned().ok_or_else(|| CompareError::UnknownCase {
                name: name.clone(),
                known: all.iter().map(|c| c.name.clone()).collect(),
            })
        })
        .collect()
}

/// The goodput of the ideal pool: the fluid model with exactly `min(q, C)` executors; a
/// configuration [`Config::check`] refuses is refused here too.
pub fn physical_limit(cfg: &Config) -> Checked<f64> {
    cfg.check()?;
    let mut ideal = cfg.clone();
    ideal.pool.busy = Busy::Fluid;
    ideal.pool.executors = ideal.pool.executors.max(cfg.pool.comfortable.ceil() as u32);
    let cap = cfg.pool.comfortable.round().max(1.0) as u32;
    // Fluid mode ignores the service law; a plain cap at C is the ideal pool.
    struct Ideal(u32);
    impl Policy for Ideal {
        fn decide(&mut self, _: &safegate_core::Observation) -> safegate_core::Action {
            safegate_core::Action { admit: 1.0, concurrency: Some(self.0), shed_retries: false }
        }
        fn name(&self) -> &'static str {
            "ideal-pool"
        }
    }
    let out = safegate_sim::fluid::simulate(&ideal, &mut Ideal(cap), RunOptions::default());
    Ok(out.summary.cleared / out.summary.duration)
}

/// Whether `cfg` is inside `b`'s envelope and model (a configuration [`Config::check`]
/// refuses is refused here too).
pub fn inside_envelope(cfg: &Config, b: &Boundary) -> Checked<bool> {
    cfg.check()?;
    let [t0, t1] = b.envelope.traffic;
    let [h0, h1] = b.envelope.health;
    let peak = cfg.peak_traffic();
    let low = lowest_health(cfg);
    Ok(cfg.traffic >= t0
        && peak <= t1
        && low >= h0 - 1e-9
        && low <= h1 + 1e-9
        && cfg.service == ServiceLaw::Exponential
        && cfg.health.noise.is_none())
}

fn lowest_health(cfg: &Config) -> f64 {
    let n = (cfg.duration / cfg.dt).ceil() as usize;
    (0..=n).map(|k| cfg.health.value(k as f64 * cfg.dt)).fold(f64::INFINITY, f64::min)
}

/// Ends of the health dips within the run.
pub(super) fn dip_ends(cfg: &Config) -> Vec<f64> {
    match &cfg.health.schedule {
        HealthSchedule::Cycle(s) => {
            let period = s.period();
            let first = s.hold_high + s.dip_length();
            (0..).map(|k| first + k as f64 * period).take_while(|&t| t < cfg.duration).collect()
        }
        other => other.dip_end().filter(|&t| t < cfg.duration).into_iter().collect(),
    }
}
