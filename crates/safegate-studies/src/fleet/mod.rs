//! A fleet of admission gates sharing one contended dependency, and the coordination price.
//!
//! `M` gates, each with its own traffic `λ_i`, backlog `q_i ≤ cap_i`, `P_i` executors and
//! policy, call one downstream whose contention counts every gate's in-flight work: with
//! `n_i` busy at gate `i` and `N = Σ n_i`, every busy request clears at
//! `H(t)·s·min(1, (C/N)²)` (the seed's curve, [`safegate_sim::model`]). Uncoordinated, a gate's
//! share of the dependency is its share of `N`, and greedy gates push `N` far past `C`.
//! A shared Kelly price ([`price`]) splits a declared capacity fairly; fed back with delay it
//! loses stability past a threshold ([`sweep`]). docs/fleet.md has the measurements, and
//! [`suite`] takes them (`safegate fleet --sim`).
//!
//! ```
//! use safegate_studies::fleet::{run_fleet, FleetConfig, FleetRecord, GateConfig, GatePolicy, PriceConfig};
//!
//! let cfg = FleetConfig {
//!     gates: vec![
//!         GateConfig { rate: 120.0, executors: 32, delay: 0.05, ..GateConfig::default() },
//!         GateConfig { rate: 120.0, executors: 8, delay: 0.02, ..GateConfig::default() },
//!     ],
//!     price: Some(PriceConfig::default()),
//!     ..FleetConfig::default()
//! };
//! let mut priced = vec![GatePolicy::Priced, GatePolicy::Priced];
//! let out = run_fleet(&cfg, &mut priced, FleetRecord::default()).unwrap();
//! assert!(out.jain > 0.99); // an equal split of 0.9·C·s = 135 req/s
//! assert!((out.goodput - 135.0).abs() < 1.0);
//! ```

mod config;
pub mod price;
mod run;
mod scenario;
pub mod stag;
pub mod suite;
pub mod sweep;

pub use config::{FleetConfig, GateConfig, PriceConfig, DEFAULT_UTILISATION, MAX_DELAY, MAX_DELAY_STEPS, MAX_GATES};
pub use price::{
    equilibrium, euler_threshold, hayes_threshold, nyquist_threshold, sufficient_threshold, Equilibrium, EulerThreshold,
};
pub use run::{jain, run_fleet, FleetOutcome, FleetRecord, FleetSeries, GatePolicy, GateSummary, PriceShare};
pub use scenario::{FleetScenario, FleetSection};
pub use sweep::{delay_sweep, threshold, Amplitudes, OscillationTest, SweepPoint};

#[cfg(test)]
mod tests;
