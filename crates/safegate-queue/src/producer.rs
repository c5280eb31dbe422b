//! The producer: offer a typed job, admitted or turned away in one round trip.

use std::marker::PhantomData;
use std::time::Duration;

use redis::Value;
use serde::Serialize;

use crate::{Queue, QueueError};

/// Why an offer was turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The controller's admission share (the safety filter's, or its policy's) turned it
    /// away: offer it again after `retry_after`, or shed it.
    Share,
    /// The backlog is at its bound.
    Full,
}

/// Which grant the gate applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateMode {
    /// A controller's grant whose lease runs (it may have stopped publishing: the grant
    /// is then frozen until the lease ends).
    Granted,
    /// The lease ran out: the fallback bound, never above the last grant's.
    Fallback,
    /// No controller has published yet: the fallback bound.
    Bootstrap,
}

impl GateMode {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "granted" => GateMode::Granted,
            "fallback" => GateMode::Fallback,
            "bootstrap" => GateMode::Bootstrap,
            _ => return None,
        })
    }

    /// `granted`, `fallback` or `bootstrap`.
    pub fn name(self) -> &'static str {
        match self {
            GateMode::Granted => "granted",
            GateMode::Fallback => "fallback",
            GateMode::Bootstrap => "bootstrap",
        }
    }
}

/// The answer to an offer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Admission {
    /// Enqueued under the bound, with this stream id.
    Admitted {
        /// The job's id in the stream.
        id: String,
    },
    /// Turned away; nothing was enqueued.
    Rejected {
        /// Why.
        reason: Reason,
        /// When an offer may do better: the controller's period for [`Reason::Share`], the
        /// time for the backlog to drain below its bound for [`Reason::Full`].
        retry_after: Duration,
        /// The grant that decided.
        mode: GateMode,
    },
}

impl Admission {
    /// Whether the job was enqueued.
    pub fn is_admitted(&self) -> bool {
        matches!(self, Admission::Admitted { .. })
    }
}

/// Offers jobs of type `T` to a queue, encoded as JSON (see the crate's documentation for
/// why JSON). Cheap to clone.
pub struct Producer<T> {
    queue: Queue,
    _t: PhantomData<fn(&T)>,
}

impl<T> Clone for Producer<T> {
    fn clone(&self) -> Self {
        Self { queue: self.queue.clone(), _t: PhantomData }
    }
}

impl<T> std::fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer").field("queue", &self.queue).finish()
    }
}

impl Queue {
    /// A producer of jobs of type `T`.
    pub fn producer<T: Serialize>(&self) -> Producer<T> {
        Producer { queue: self.clone(), _t: PhantomData }
    }
}

impl<T: Serialize> Producer<T> {
    /// Offer `job`: admitted and enqueued, or turned away with the reason and a
    /// retry-after, in one call of `sg_enqueue` (atomic with the bound).
    pub async fn enqueue(&self, job: &T) -> Result<Admission, QueueError> {
        let payload = serde_json::to_string(job).map_err(QueueError::Encode)?;
        self.enqueue_json(&payload).await
    }

    /// Offer a payload already encoded (it is stored as given; workers decode it as `T`).
    pub async fn enqueue_json(&self, payload: &str) -> Result<Admission, QueueError> {
        let q = &self.queue;
        let v: Vec<Value> = q.fcall("sg_enqueue", &q.keys.enqueue(), &payload).await?;
        self.answer(&v)
    }

    /// Offer `job` with your own draw `u` in \[0, 1) for the admission share: admitted
    /// when `u < share` (a coin, as in the seed's model of the gate), where
    /// [`Producer::enqueue`] passes exactly `share` of the offers, evenly spread. A seeded
    /// draw makes a run reproducible; `u = 0` always passes the share (a retry that goes
    /// around the gate), never the bound.
    ///
    /// ```no_run
    /// # async fn demo(producer: safegate_queue::Producer<String>) -> Result<(), safegate_queue::QueueError> {
    /// let admission = producer.enqueue_drawn(&"a job".to_string(), 0.25).await?;
    /// # Ok(()) }
    /// ```
    pub async fn enqueue_drawn(&self, job: &T, u: f64) -> Result<Admission, QueueError> {
        let payload = serde_json::to_string(job).map_err(QueueError::Encode)?;
        self.enqueue_json_drawn(&payload, u).await
    }

    /// [`Producer::enqueue_drawn`] with a payload already encoded.
    pub async fn enqueue_json_drawn(&self, payload: &str, u: f64) -> Result<Admission, QueueError> {
        if !(0.0..1.0).contains(&u) {
            return Err(QueueError::setting("draw u", u, "a number in [0, 1)"));
        }
        let q = &self.queue;
        let v: Vec<Value> = q.fcall("sg_enqueue", &q.keys.enqueue(), &(payload, u)).await?;
        self.answer(&v)
    }

    fn answer(&self, v: &[Value]) -> Result<Admission, QueueError> {
        let q = &self.queue;
        parse_admission(v).ok_or_else(|| QueueError::Protocol {
            url: q.url.clone(),
            what: "sg_enqueue".into(),
            answer: format!("{v:?}").chars().take(200).collect(),
        })
    }

    /// The queue.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }
}

/// `{code, id, retry_after_us, mode}` as an [`Admission`].
fn parse_admission(v: &[Value]) -> Option<Admission> {
    let int = |x: &Value| redis::from_redis_value_ref::<i64>(x).ok();
    let text = |x: &Value| redis::from_redis_value_ref::<String>(x).ok();
    let [code, id, retry, mode] = v else { return None };
    let mode = GateMode::parse(&text(mode)?)?;
    let retry_after = Duration::from_micros(int(retry)?.max(0) as u64);
    Some(match int(code)? {
        0 => Admission::Admitted { id: text(id)? },
        1 => Admission::Rejected { reason: Reason::Share, retry_after, mode },
        2 => Admission::Rejected { reason: Reason::Full, retry_after, mode },
        _ => return None,
    })
}
