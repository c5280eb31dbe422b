//! What passes between the scheduler and everyone else: the messages it is sent, the
//! completions it answers with, the counters it publishes, and the sending end that
//! submits a request in process.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering as AtomicOrdering};
use std::sync::mpsc;
use std::time::Duration;

use tokio::sync::oneshot;

use super::Faults;

/// How a request left service.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Completion {
    /// Answer 500 (the fault's `error_rate` drew it).
    pub(crate) error: bool,
    /// Wall time to add after service (the fault's `added_latency_ms`).
    pub(crate) added_latency: Duration,
    /// Not served: every worker busy and the queue full ([`Workers`]); answer 503.
    pub(crate) full: bool,
}

/// What the scheduler thread is told.
#[derive(Debug)]
pub(crate) enum Msg {
    /// A request enters service; the reply goes out when its work is done.
    Submit(oneshot::Sender<Completion>),
    /// New faults, in force from now on.
    Faults(Faults),
    /// Stop: waiting requests are dropped (their handlers answer 503).
    Shutdown,
}

/// Counters the scheduler publishes (read by `Downstream::stats`).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Requests in service now.
    pub(crate) in_service: AtomicU32,
    /// Requests whose service completed (including those answered 500).
    pub(crate) served: AtomicU64,
    /// Requests answered 500 by the `error_rate` fault.
    pub(crate) errors: AtomicU64,
    /// Timed wake-ups for a due completion.
    pub(crate) wakes: AtomicU64,
    /// Requests waiting for a worker now.
    pub(crate) waiting: AtomicU32,
    /// Requests turned away with every worker busy and the queue full.
    pub(crate) full: AtomicU64,
    /// Sum of their lateness past the due instant \[ns\].
    pub(crate) late_ns: AtomicU64,
    /// The largest lateness \[ns\].
    pub(crate) max_late_ns: AtomicU64,
    /// `∫ n dt` over model time up to `occupancy_at` \[request-seconds\], as `f64` bits.
    pub(crate) occupancy: AtomicU64,
    /// The model time `occupancy` is current at \[s\], as `f64` bits.
    pub(crate) occupancy_at: AtomicU64,
}

impl Counters {
    /// `∫ n dt` over model time up to `t` \[request-seconds\]: the published integral plus
    /// the requests in service since (read without a lock, so a change between the loads
    /// misplaces at most one event's share).
    pub(crate) fn occupancy(&self, t: f64) -> f64 {
        let n = f64::from(self.in_service.load(AtomicOrdering::Relaxed));
        let at = f64::from_bits(self.occupancy_at.load(AtomicOrdering::Relaxed));
        f64::from_bits(self.occupancy.load(AtomicOrdering::Relaxed)) + n * (t - at).max(0.0)
    }
}

/// The sending end of the scheduler's inbox: a std channel for the scheduler's own thread
/// (wall clock), a tokio one for the scheduler task (tokio clock).
#[derive(Debug, Clone)]
pub(super) enum Inbox {
    /// To the scheduler thread.
    Thread(mpsc::Sender<Msg>),
    /// To the scheduler task.
    Task(tokio::sync::mpsc::UnboundedSender<Msg>),
}

impl Inbox {
    /// Send `msg`; false when the scheduler has stopped.
    pub(super) fn send(&self, msg: Msg) -> bool {
        match self {
            Inbox::Thread(tx) => tx.send(msg).is_ok(),
            Inbox::Task(tx) => tx.send(msg).is_ok(),
        }
    }
}

/// Submits requests to the scheduler in process (what `POST /work` does, without HTTP).
#[derive(Debug, Clone)]
pub(crate) struct Submitter {
    pub(super) inbox: Inbox,
}

impl Submitter {
    /// Serve one request: its completion, or `None` when the scheduler has stopped.
    pub(crate) async fn submit(&self) -> Option<Completion> {
        let (tx, rx) = oneshot::channel();
        if !self.inbox.send(Msg::Submit(tx)) {
            return None;
        }
        rx.await.ok()
    }
}
