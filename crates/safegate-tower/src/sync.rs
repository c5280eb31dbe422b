//! The atomics of the slot protocol (the gate word and the owner protocol): std's, or
//! loom's when built with `RUSTFLAGS="--cfg loom"`, so that `tests/loom.rs` model-checks
//! the production code with its own memory orderings (tokio's pattern). Only the protocol
//! uses these; the statistics counters are std's atomics in either build.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
