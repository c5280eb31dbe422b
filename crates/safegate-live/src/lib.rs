//! safegate's live system: the seed's executor pool as real processes on loopback.
//!
//! One user of the queue library (`safegate-queue`): its queue is the backlog (a Redis
//! stream with a consumer group, admission at the enqueue by one server-side function), its
//! worker is the executor pool whose concurrency is the policy's second input, its
//! producer the open-loop load generator with retries, its controller the one that runs
//! the same decision core as the simulator and the tower layer; beside them a downstream
//! emulator serving at the model's contended rate. See `docs/live.md`.
//!
//! Modules:
//!
//! - [`clock`]: [`ModelClock`], model time on a wall or tokio clock ([`TimeSource`]).
//! - [`books`]: a run's job accounting, from the queue's books.
//! - [`executor`]: the executor pool that serves the backlog (a queue worker).
//! - [`downstream`]: the downstream emulator and its fault injection.
//! - [`loadgen`]: the open-loop load generator with retries.
//! - [`metrics`]: the `/metrics` endpoint.
//! - [`redis_server`]: a private `redis-server` on a free port.
//! - [`redis_conn`]: connecting to Redis (the fleet's coordination), the namespace check.
//! - [`run`]: one live run, from start to report.
//! - [`coord`] and [`fleet_gate`]: the fleet's price over Redis and one gate of a fleet.
//! - [`throughput`]: the downstream's throughput curve and its fits (criterion F19's
//!   measurement); [`f19`]: F19's row for `safegate falsify`.
//! - [`error`]: the live system's errors ([`LiveError`]).

pub mod books;
pub mod clock;
pub mod coord;
pub mod downstream;
pub mod error;
pub mod executor;
pub mod f19;
pub mod fleet;
pub mod fleet_gate;
pub mod loadgen;
pub mod metrics;
pub mod pg;
pub mod pg_study;
pub mod redis_conn;
pub mod redis_server;
pub mod run;
pub mod throughput;

pub use clock::{ModelClock, TimeSource};
pub use error::LiveError;
