//! The tower side, split by role in the style of tower's `limit/` folders:
//!
//! - [`layer`]: [`AdmissionLayer`], the [`Layer`](tower_layer::Layer) that puts services
//!   under one shared state;
//! - [`admission`]: [`Admission`], the service: classify, sample, offer to the gate word,
//!   then run, queue or reject;
//! - [`future`]: [`ResponseFuture`], a rejection, a wait in the queue, or the inner future
//!   holding its permit;
//! - [`permit`]: the permit an admitted request holds (its slot, its bookkeeping on
//!   drop) and the wait for a slot in queue mode;
//! - [`snapshot`]: [`Snapshot`], the layer's counters at one instant.

mod admission;
mod future;
mod layer;
mod permit;
mod snapshot;

pub use admission::Admission;
pub use future::ResponseFuture;
pub use layer::AdmissionLayer;
pub use snapshot::Snapshot;
