//! safegate's benchmark harnesses, as library calls a test or a program can make; each
//! returns its figures as data, and the `safegate bench …` commands render them.
//!
//! - `overhead`: the tower layer's cost per request beside tower's `ConcurrencyLimit`, a
//!   no-op service and (feature `tower-acc`) tower-acc's adaptive limit;
//! - `overload`: admission-control stacks side by side under open-loop overload on
//!   in-process backends (the backends, the generator, its histogram, the stacks, the
//!   scenarios and the report data);
//! - `plumbing`: jobs per second through safegate-live's Redis backlog and executors, beside
//!   apalis-redis (feature `peers`) on the same Redis;
//! - `boundary`: seconds the telemetry checklist takes on a generated file;
//! - `error`: what the harnesses refuse or fail on, naming the input.

pub mod boundary;
pub mod error;
pub mod overhead;
pub mod overload;
pub mod plumbing;

pub use error::Error;
