//! The seed's executor-pool model: fluid and stochastic, seeded, fast.
//!
//! An executor pool of `P` workers pulls from a bounded backlog and calls a contended
//! downstream whose health `H(t)` dips on a schedule. Past `C` concurrent requests every
//! busy executor slows by `(C/n)²`, so with all eight busy the pool clears at most
//! `s·C²/P = 75` req/s: above that traffic a health dip pins the queue at its cap
//! (Polyulya, "Safe in Probability, Not in Size", 2026).
//!
//! - [`run_fluid`]: forward Euler, deterministic; reproduces every fluid number of the seed.
//! - [`run_stochastic`]: exact discrete-event simulation (Poisson arrivals, per-executor
//!   service at the current contention- and health-scaled rate), for probabilities.
//! - [`Scenario`]: the TOML file format; [`Config`]: a resolved run.
//! - [`heartbeat`]: a seeded heartbeat process and the failure detectors' trade-off on it.
//! - [`limits`]: the budgets every input-derived size is checked against.
//!
//! Both take any [`safegate_core::Policy`] as the admission gate.
//!
//! ```
//! use safegate_core::{Open, SeedGate};
//! use safegate_sim::{run_fluid, Config, RunOptions};
//!
//! // λ = 80 on the repeating 19 s health cycle (the defaults), 400 s.
//! let cfg = Config::default();
//! let open = run_fluid(&cfg, &mut Open, RunOptions::default()).unwrap();
//! let gated = run_fluid(&cfg, &mut SeedGate::new(0.7, 1.0).unwrap(), RunOptions::default()).unwrap();
//! assert_eq!(open.summary.queue_final, 200.0); // pinned at the cap
//! assert!(gated.summary.queue_max < 195.0); // the gate holds it in a band
//! ```

pub mod behaviour;
pub mod config;
pub mod fluid;
pub mod health;
pub mod heartbeat;
pub mod input;
pub mod limits;
pub mod model;
pub mod record;
pub mod scenario;
pub mod series_text;
pub mod stepped;
pub mod stochastic;
pub mod variants;

pub use behaviour::{Retries, RetryPath, ServiceLaw};
pub use config::{Checked, Config, Spike};
pub use fluid::run_fluid;
pub use health::{DipShape, HealthNoise, HealthSchedule, HealthTrack};
pub use model::{usl_throughput, Busy, Pool};
pub use record::{Outcome, RunOptions, Series, Summary};
pub use scenario::{Mode, Scenario, ScenarioError};
pub use stepped::run_stepped;
pub use stochastic::run_stochastic;

use safegate_core::Policy;

/// Run `cfg` in `mode` under `policy`; a configuration that fails [`Config::check`] is
/// refused with the field, its value and the allowed range.
pub fn run<P: Policy + ?Sized>(mode: Mode, cfg: &Config, policy: &mut P, opts: RunOptions<'_>) -> Checked<Outcome> {
    cfg.check_for(mode)?;
    Ok(match mode {
        Mode::Fluid => fluid::simulate(cfg, policy, opts),
        Mode::Stochastic => stochastic::simulate(cfg, policy, opts),
        Mode::Stepped => stepped::simulate(cfg, policy, opts),
    })
}
