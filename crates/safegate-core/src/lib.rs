//! The pure decision core of safegate.
//!
//! Everything here is a function of its inputs: no I/O, no clock, no threads. Time arrives
//! as [`Observation::now`], so a simulated second and a real one run through the same code
//! (the simulator, the tower middleware and the live pool all call these functions).
//!
//! # Quick example
//!
//! The seed's admission gate (threshold θ = 0.7, sensitivity 1) at a queue 85 % full
//! rejects half of the arrivals:
//!
//! ```
//! use safegate_core::{Observation, Policy, SeedGate};
//!
//! let mut gate = SeedGate::new(0.7, 1.0).unwrap();
//! let obs = Observation::new(12.0, 170.0, 200.0);
//! let action = gate.decide(&obs);
//! assert!((action.admit - 0.5).abs() < 1e-12);
//! assert_eq!(action.concurrency, None);
//! ```
//!
//! # Features
//!
//! Every decision works with no feature on; the features add the file formats around them.
//!
//! - `serde` (default): `serde::Serialize` for the reports and records (actions,
//!   observations, filter decisions, estimator reports, errors) and `serde::Deserialize`
//!   for the configurations a file holds ([`boundary::Boundary`] and its sections,
//!   [`safety::SafetyConfig`], [`filter::Backup`]).
//! - `toml` (default; implies `serde`): the TOML file format, [`config_file`] (one parser
//!   with `key.path = value` overrides for boundaries, scenarios and the other files) and
//!   [`boundary::Boundary::from_toml`].
//!
//! The tower layer takes the core with `default-features = false` and asks for `toml` only
//! through its own `toml` feature, so a service that builds its boundary in code links
//! neither serde nor toml.

pub mod boundary;
#[cfg(feature = "toml")]
pub mod config_file;
pub mod controllers;
pub mod error;
pub mod estimators;
pub mod filter;
pub mod fleet;
pub mod gate;
pub mod limits;
pub mod names;
pub mod policy;
pub mod quantile;
pub mod safety;
pub mod stats;

pub use error::RangeError;
pub use gate::{Open, SeedGate};
pub use policy::{Action, Observation, Policy};

/// The README's example, compiled and run as a doc test (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// `x.is_finite()`, written so the compiler keeps it a floating-point compare.
///
/// LLVM turns `is_finite` (and `x < ∞` next to another test) into an integer
/// classification of the bits with its own branches: 10–27 instructions per check on the
/// decision path, measured with callgrind. `|x| ≤ f64::MAX` is the same predicate (false for
/// NaN and ±∞) in one compare.
#[inline(always)]
pub(crate) fn finite(x: f64) -> bool {
    x.abs() <= f64::MAX
}
