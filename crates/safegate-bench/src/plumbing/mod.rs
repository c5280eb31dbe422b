//! Jobs per second through safegate-queue's Redis plumbing (enqueue → execute →
//! acknowledge with a no-op job; the live system runs on the same path), side by side with
//! apalis-redis 1.x on the same Redis with the feature `peers` (docs/bench-plumbing.md).
//!
//! - `harness`: the inputs ([`PlumbingSpec`]), the rounds and the report;
//! - `queue`: one run of our stack, safegate-queue through its public API (jobs/s and the
//!   enqueue's latency, admitted and turned away);
//! - `peer`: one run of apalis-redis (a stub row without the feature `peers`).

mod harness;
mod peer;
mod queue;

pub use harness::{
    plumbing, PlumbingSpec, Report, Round, StackReport, MAX_EXECUTORS, MAX_JOBS, MAX_ROUNDS, OURS, PRODUCERS,
};
