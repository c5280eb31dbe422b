//! Every worked result of the seed, as an experiment that measures it in this model.
//!
//! Each experiment is a function of a [`Setup`] (the model's constants, trial counts and a
//! seed) returning [`Row`]s (claim, the seed's figure, ours, the tolerance, a verdict) and
//! [`Figure`]s (plain data; the binary renders them). `safegate reproduce` runs them all.
//! Where the seed's figure cannot be matched by construction (a worst case from an unknown
//! random stream) the row is informational and says why; where a measurement disagrees,
//! the verdict says so.
//!
//! | file | holds |
//! |---|---|
//! | `setup.rs` | [`Setup`], its overrides, and the fluid-run helpers the experiments share |
//! | `row.rs` | [`Row`], one checked claim, and its [`Verdict`] |
//! | `figure.rs` | [`Figure`] and [`FigureLine`], figures as plain data |
//! | `registry.rs` | [`ALL`] the experiments, [`find`] one by id, and the [`Report`] one produces |
//! | `selection.rs` | [`select`]: which experiments and rows a run asks for |
//! | `reach.rs` | [`Reads`]: which scenario keys each experiment reads; [`check_overrides`]: which overrides reach the selection |
//! | `reached.rs` | which rows shown an accepted override missed ([`unread_by`], [`rows_not_reading`]); the rows as JSON ([`rows_json`]) |
//! | one file per experiment | [`ceiling`], [`recovery`], [`pinned`], [`poa`], [`band`], [`severity`], [`imm`], [`frontier`], [`probebw`], [`game`] |

pub mod band;
pub mod ceiling;
mod figure;
pub mod frontier;
pub mod game;
pub mod imm;
pub mod pinned;
pub mod poa;
pub mod probebw;
mod reach;
mod reached;
pub mod recovery;
mod registry;
mod row;
mod run_many;
mod selection;
mod setup;
pub mod severity;

pub use figure::{Figure, FigureLine};
pub use reach::{check_overrides, experiment_reads, row_reads, OverrideError, Reads};
pub use reached::{rows_json, rows_not_reading, unread_by};
pub use registry::{find, Experiment, Report, ALL};
pub use row::{Row, Verdict};
pub use run_many::run_many;
pub use selection::{row_belongs, select, Selection, UnknownExperiment};
pub(crate) use setup::{dip_shape, fluid_series};
pub use setup::{Setup, MIN_REPRODUCE_DT};

#[cfg(test)]
mod tests;
