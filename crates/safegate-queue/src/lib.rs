//! # safegate-queue
//!
//! A job queue on Redis with admission at the enqueue: an offer is admitted or turned
//! away in one call, atomically with the backlog's bound, and the bound and the admission
//! share come from a controller running safegate's decision core (any registry policy,
//! under the safety filter of a boundary file).
//!
//! - [`Producer::enqueue`]: a typed payload (JSON), answered [`Admission::Admitted`] or
//!   [`Admission::Rejected`] with the [`Reason`] and a retry-after.
//! - [`Worker::run`]: your `async fn(Job<T>) -> Result<(), JobError>`, at the concurrency
//!   the controller publishes; heartbeats, a reaper, at-least-once delivery, retries with
//!   exponential backoff and jitter, a dead-letter list, and a graceful shutdown.
//! - [`Controller::run`]: reads the queue's own books every period, decides, publishes a
//!   grant with a lease. Run several: one leads through a lease in Redis; another takes
//!   over when it dies. When none publishes, the gate keeps the last grant until its lease
//!   ends and then the fallback bound (never above the last grant's): never an unbounded
//!   admit.
//! - Any language enqueues with one `FCALL sg_enqueue` (the [`LIBRARY`], loaded by every
//!   Rust component on connect).
//!
//! Nothing wipes a queue: every component resumes what is in Redis on restart.
//!
//! ## Features
//! - `tls`: `rediss://` URLs (the system's roots), and [`Queue::connect_tls`] with a
//!   private CA or a client certificate (mutual TLS), by rustls; off by default.
//!
//! ## Why JSON
//! The payload crosses languages (a Python or Node producer writes it with its standard
//! library, `redis-cli` shows it as text) and it must survive a schema change on one side
//! (serde ignores unknown fields by default). Its cost next to the round trip to Redis is
//! small for job-sized payloads; a binary format would save bytes, not round trips.
//!
//! ## Keys
//! All of a queue's keys carry the hash tag `{NAME}` (`sg:{NAME}:jobs`, …), so each
//! function call touches one Redis Cluster slot.

mod books;
mod conn;
mod controller;
mod error;
mod keys;
mod lane;
mod producer;
mod queue;
mod records;
#[cfg(feature = "tls")]
mod tls;
mod worker;

pub use controller::{Controller, ControllerReport, Status};
pub use error::QueueError;
pub use keys::check_name;
pub use producer::{Admission, GateMode, Producer, Reason};
pub use queue::{redact, Queue, LIBRARY, LIBRARY_REVISION, WIRE_VERSION};
pub use records::{Bounds, DeadLetter, Grant, QueueConfig, Stats};
#[cfg(feature = "tls")]
pub use tls::Tls;
pub use worker::{Job, JobError, Worker, WorkerReport};

/// The README's program, compiled as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
