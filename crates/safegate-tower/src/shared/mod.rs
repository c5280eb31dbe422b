//! The state one layer shares across all its services, split by role:
//!
//! - [`state`]: the state itself ([`Shared`]): settings, the values the decision step
//!   publishes for the hot path, the counters the hot path writes;
//! - [`slots`]: the gate word ([`slots::Gate`]), one atomic that counts offered requests
//!   and holds the slots taken: `offer`, `try_acquire`, `release`, `retire`;
//! - [`owner`]: the owner protocol ([`Owner`], [`owner::Slot`]): handles and slots keep
//!   the state alive, and whichever goes last frees it;
//! - [`step`]: the controller (nominal + safety filter) run once per decision period,
//!   which returns a [`step::StepReport`] for the metrics.
//!
//! The gate word and the owner protocol run on [`crate::sync`]'s atomics, loom's under
//! `cfg(loom)` (`tests/loom.rs`).

pub mod owner;
pub mod slots;
mod state;
mod step;
#[cfg(all(test, not(loom)))]
mod tests;

pub(crate) use owner::Owner;
pub use state::Mode;
pub(crate) use state::{weyl, ClassState, Done, Padded, Published, Settings, Shared, ONE};
#[cfg(feature = "metrics")]
pub(crate) use step::StepReport;
pub(crate) use step::{class_limit, completed_of, Controller};
