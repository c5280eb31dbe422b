//! safegate's live system: the seed's executor pool as real processes on loopback.
//!
//! A backlog in Redis (a stream with a consumer group), admission at the enqueue by one
//! server-side script, an executor pool whose concurrency is the policy's second input, a
//! downstream emulator serving at the model's contended rate, an open-loop load generator
//! with retries, and a controller that runs the same decision core as the simulator and
//! the tower layer. See `docs/live.md`.

pub mod backlog;
pub mod clock;
pub mod coord;
pub mod downstream;
pub mod error;
pub mod executor;
pub mod fleet;
pub mod fleet_gate;
pub mod loadgen;
pub mod metrics;
pub mod redis_server;
pub mod run;
pub mod throughput;

pub use clock::ModelClock;
pub use error::LiveError;
