//! The budgets every size derived from input is checked against before anything is
//! allocated or looped over: steps, events, trajectories, cells, samples, requests.
//!
//! A typo (a period of `1e-12`, a million-fold duration, `--trials 1e12`) must get an error
//! that names the input and says what would fit, not an abort in the allocator, an hour of
//! silence or gigabytes of memory. Each limit is far above what the seed's model, the CLI's
//! defaults and the tests need; `docs/limits.md` lists them with the inputs that drive them.
//!
//! [`MAX_STEPS`], [`MAX_RATE`] and [`budget`] are the core's ([`safegate_core::limits`]):
//! a boundary's checks use them too, so they are defined once, there.
//!
//! ```
//! use safegate_sim::limits::{budget, MAX_EVENTS};
//!
//! let e = budget("run.duration", 1e9, 80.0 * 1e9, MAX_EVENTS, "traffic × run.duration arrivals").unwrap_err();
//! assert_eq!(e.field, "run.duration");
//! assert!(e.allowed.ends_with("at most 1e8"), "{e}");
//! ```

pub use safegate_core::limits::{budget, MAX_RATE, MAX_STEPS};

/// Most expected arrivals of one stochastic run, `λ·duration` (each is an event).
pub const MAX_EVENTS: f64 = 1e8;
/// Most trajectory-steps of one `verify` (cells × arms × trials × horizon steps): about
/// ten minutes at the measured tens of millions of steps per second on two cores.
pub const MAX_TRAJECTORY_STEPS: f64 = 2e10;
/// Most trials (trajectories) per cell and arm; each keeps one number for the CVaR.
pub const MAX_TRIALS: f64 = 1e7;
/// Most grid points along one axis of an envelope.
pub const MAX_GRID_POINTS: f64 = 1000.0;
/// Most points of a series a command prints or holds for output (longer series are
/// decimated to this).
pub const MAX_SERIES_POINTS: usize = 100_000;
