//! safegate as tower middleware: adaptive admission control whose safety is a
//! control-barrier-function filter, for axum, tonic and hyper services.
//!
//! An [`AdmissionLayer`] wraps a service in [`Admission`]: every request is admitted,
//! queued or rejected with a typed [`Overloaded`] error. A nominal controller (`peak` by
//! default; `vegas`, `gradient2`, `aimd`, `envoy-gradient`, `static`, `credits`,
//! `priority-levels`, `sre-throttle`) proposes a concurrency limit and an admission share.
//! The boundary keeps the requests in the layer (in service plus waiting) at or below
//! `θ·Q`: in reject mode by capping the limit at `⌊θ·Q⌋` (each request is admitted under
//! the limit by one compare-and-swap, so that holds deterministically); in queue mode
//! through the core's [`SafetyFilter`](safegate_core::safety::SafetyFilter), which changes
//! the share only as much as the boundary requires for what waits, with the noise it
//! measures from the service, falling back to its backup (reject all) where nothing is
//! safe (`docs/tower.md`, "What the barrier means for a service").
//!
//! # The model of a service
//!
//! | safegate model | here |
//! |---|---|
//! | queue `q` | requests in the inner service plus those waiting in the layer's queue |
//! | capacity `Q` | `max_concurrency` (+ the queue's capacity in queue mode) |
//! | busy executors `n`, their cap | requests in the inner service, the controller's limit |
//! | completions, latency, wait | counted when each response future finishes or is dropped |
//!
//! # The hot path
//!
//! A request costs two atomic read-modify-writes on one cache line: a compare-and-swap on
//! the gate word, which counts it, applies the admission share and takes a slot under the
//! limit at once (offered count in the high half, slots in the low), and the permit's
//! decrement when it leaves. No reference count is taken: the slot itself keeps the
//! layer's state alive (a protocol checked with loom). With several classes, a class's own
//! offered counter adds a `fetch_add`. Timed requests also read the clock twice (the
//! TSC where it is invariant, else the OS monotonic clock) and record their latency: every
//! request under light traffic, thinning to one in `timing_sample` (256 by default) as
//! traffic grows, about 16 per decision period. Nothing is locked: the controller runs at
//! most once per decision period (the boundary's `decision.period`, 50 ms by default), in
//! whichever timed request first crosses the period boundary and wins a `try_lock`; it
//! publishes the limit, the admission share of each class and the rejection reason in
//! atomics that every other request reads.
//!
//! # Example
//!
//! ```
//! use std::convert::Infallible;
//! use safegate_tower::{AdmissionLayer, Overloaded, Reason};
//! use tower::{service_fn, Layer, Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), safegate_tower::BoxError> {
//! let layer = AdmissionLayer::builder()
//!     .controller("static")   // a fixed limit, for the example
//!     .max_concurrency(2)     // two requests in service at most
//!     .capacity(100)          // the barrier's Q: at most ⌊0.7·100⌋ in service
//!     .build()?;
//! let svc = layer.layer(service_fn(|x: u32| async move { Ok::<_, Infallible>(x * 2) }));
//!
//! // Two requests in service at once are allowed …
//! let mut a = svc.clone();
//! let mut b = svc.clone();
//! let fa = a.ready().await?.call(1);
//! let fb = b.ready().await?.call(2);
//! // … a third is rejected at once, with a reason and a retry hint.
//! let mut c = svc.clone();
//! let err = c.ready().await?.call(3).await.unwrap_err();
//! let o = err.downcast_ref::<Overloaded>().unwrap();
//! assert_eq!(o.reason, Reason::Limit);
//! assert!(o.retry_after_secs() >= 1);
//! assert_eq!((fa.await?, fb.await?), (2, 4));
//! // Finished requests free their slots.
//! assert_eq!(c.ready().await?.call(5).await?, 10);
//! # Ok(())
//! # }
//! ```
//!
//! See `docs/tower.md` for the modes, priorities, metrics names and the dry run.

#[cfg(feature = "http")]
mod answer;
mod builder;
/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
mod classify;
mod clock;
mod error;
#[cfg(feature = "tonic")]
pub mod grpc;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "metrics")]
mod metrics;
mod outcome;
mod reason;
mod service;
mod shared;
mod sync;

#[cfg(feature = "toml")]
pub use builder::parse_boundary;
pub use builder::{Builder, MIN_BOUNDARY};
pub use classify::{Classify, SingleClass};
#[cfg(feature = "http")]
pub use classify::{HeaderClass, UserHashClass};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{BuildError, Overloaded};
#[cfg(feature = "http")]
pub use outcome::ServerErrorIsFailure;
pub use outcome::{ClassifyOutcome, ErrIsFailure, Verdict};
pub use reason::{ByReason, Reason};
pub use service::{Admission, AdmissionLayer, ResponseFuture, Snapshot};
pub use shared::Mode;
/// The gate word and the owner protocol, public for `tests/loom.rs` only: not part of the
/// API.
#[doc(hidden)]
pub use shared::{owner, slots};

/// The error type of [`Admission`]: the inner service's error or an [`Overloaded`],
/// boxed (tower's convention, as in `tower::BoxError`).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
