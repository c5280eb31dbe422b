//! The downstream emulator: an HTTP server that serves `POST /work` at the model's
//! contended rate, with fault injection.
//!
//! With `n` requests in service at health `H` each clears work at
//! `H · s · min(1, (C/n)²)` (processor sharing), so jointly `μ(n, H) = H·n·s·min(1, (C/n)²)`:
//! `150·H` req/s at `n = 4`, `75·H` at `n = 8` with the seed's `s = 37.5`, `C = 4`
//! (docs/model.md, "The pool" and "Stochastic mode"). A request's work is drawn from the
//! configured [`ServiceLaw`](safegate_sim::ServiceLaw) (mean 1), health comes from the [`HealthTrack`](safegate_sim::HealthTrack) at model time
//! `t = clock.now()`, and every rate runs `speed` times faster on the wall clock.
//!
//! HTTP API:
//!
//! - `POST /work` (body ignored): 200 when the request's work is done (500 when the
//!   `error_rate` fault drew it, 503 when the downstream is shutting down).
//! - `POST /admin/faults` with a JSON [`Faults`] (keys left out take their defaults): 200
//!   with the faults now in force, 400 naming the field when a value is of the wrong type,
//!   unknown or out of range. `GET /admin/faults`: the faults in force.
//! - `GET /admin/state`: a JSON [`DownstreamStats`].
//!
//! Files:
//!
//! - `config.rs`: [`DownstreamConfig`] and [`Workers`].
//! - `faults.rs`: [`Faults`], what `POST /admin/faults` sets.
//! - `stats.rs`: [`DownstreamStats`] and the scheduler's wake-up [`Precision`].
//! - `server.rs`: [`Downstream`], starting and stopping the scheduler and the server.
//! - `http.rs`: the HTTP handlers and routes.
//! - `probe.rs`: [`probe`], whether a downstream given by URL accepts connections.
//! - `channel.rs`: the scheduler's messages, completions, counters, and in-process
//!   submission.
//! - `health.rs`: health integrated exactly over model time.
//! - `sched.rs`: the processor-sharing scheduler's model.
//! - `driver.rs`: how the scheduler waits, on its own thread or as a tokio task.
//! - `bench.rs`: [`closed_loop_rate`], a wall-clock throughput measurement for benchmarks.

mod bench;
mod channel;
mod config;
mod driver;
mod faults;
mod health;
mod http;
mod probe;
mod sched;
mod server;
mod stats;
#[cfg(test)]
mod tests;

pub use bench::{closed_loop_rate, ClosedLoopRate};
pub use config::{DownstreamConfig, Workers};
pub use faults::{Faults, MAX_ADDED_LATENCY_MS};
pub use probe::probe;
pub use server::Downstream;
pub use stats::{DownstreamStats, Precision};
