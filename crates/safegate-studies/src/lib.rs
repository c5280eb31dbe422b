//! The studies around the seed's model: each one a function of its inputs that returns
//! data (rows, verdicts, series); rendering is the caller's. Errors name fields of the
//! inputs, never command-line flags.
//!
//! | module | holds |
//! |---|---|
//! | [`experiments`] | every worked result of the seed, measured in the model (`reproduce`) |
//! | [`verify`] | a boundary file checked by Monte Carlo over its envelope |
//! | [`compare`] | every nominal controller, with and without the filter, on the seed's scenarios |
//! | [`falsify`] | the seed's falsification criteria F10–F19, each with a verdict |
//! | [`fleet`] | several gates on one contended dependency, and the coordination price |
//! | [`run`] | one scenario in its variants or the main job's four arms, each with its verdict (`safegate run`) |
//! | [`telemetry`] | a user's telemetry, and the seed's boundary checklist run on it |
//!
//! ```
//! use safegate_studies::experiments::Setup;
//!
//! let setup = Setup::default();
//! assert_eq!(setup.base.pool.executors, 8);
//! ```

pub mod compare;
pub mod experiments;
pub mod falsify;
pub mod fleet;
pub mod run;
pub mod telemetry;
pub mod verify;
