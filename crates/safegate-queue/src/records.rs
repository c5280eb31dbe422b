//! A queue's settings, books, grant and dead letters, as read from Redis.

use std::time::Duration;

use crate::QueueError;

/// A queue's settings, kept in Redis (`sg:{NAME}:config`) and shared by every producer,
/// worker and controller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueConfig {
    /// The backlog's hard cap \[jobs\]: waiting, in service and waiting for a retry. No grant
    /// raises the bound above it.
    pub cap: u64,
    /// The bound when no controller's grant is fresh: before the first, and once the last
    /// one's lease has run out (the safe fallback; a controller built from a boundary sets
    /// it to the barrier's line, θ·Q).
    pub fallback: u64,
    /// Attempts before a job is dead-lettered (≥ 1).
    pub max_attempts: u32,
    /// The first retry's delay; each further retry doubles it, up to `backoff_max`, with
    /// jitter (times 0.5 to 1).
    pub backoff: Duration,
    /// The longest delay between attempts.
    pub backoff_max: Duration,
    /// Dead letters kept (the oldest are dropped beyond it; 0 keeps none; the count goes on).
    pub dead_max: u64,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            cap: 10_000,
            fallback: 10_000,
            max_attempts: 5,
            backoff: Duration::from_millis(100),
            backoff_max: Duration::from_secs(60),
            dead_max: 10_000,
        }
    }
}

impl QueueConfig {
    /// Check every setting's range.
    pub fn validate(&self) -> Result<(), QueueError> {
        if self.cap == 0 || self.cap > 1 << 40 {
            return Err(QueueError::setting("cap", self.cap, "1 to 2^40 jobs"));
        }
        if self.fallback > self.cap {
            return Err(QueueError::setting("fallback", self.fallback, "at most the cap"));
        }
        if self.max_attempts == 0 {
            return Err(QueueError::setting("max_attempts", self.max_attempts, "at least 1"));
        }
        if self.backoff > self.backoff_max || self.backoff_max > Duration::from_secs(86_400 * 7) {
            return Err(QueueError::setting(
                "backoff",
                format!("{:?}", self.backoff),
                "at most backoff_max, at most 7 days",
            ));
        }
        if self.max_attempts > 1_000_000 {
            return Err(QueueError::setting("max_attempts", self.max_attempts, "at most 1000000"));
        }
        if self.dead_max > 1_000_000_000 {
            return Err(QueueError::setting("dead_max", self.dead_max, "at most 10^9"));
        }
        Ok(())
    }

    pub(crate) fn fields(&self) -> [(&'static str, String); 6] {
        [
            ("cap", self.cap.to_string()),
            ("fallback", self.fallback.to_string()),
            ("max_attempts", self.max_attempts.to_string()),
            ("backoff_us", self.backoff.as_micros().to_string()),
            ("backoff_max_us", self.backoff_max.as_micros().to_string()),
            ("dead_max", self.dead_max.to_string()),
        ]
    }
}

/// A queue's two bounds \[jobs\] (see [`QueueConfig::cap`] and [`QueueConfig::fallback`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The backlog's hard cap.
    pub cap: u64,
    /// The bound when no controller's grant is fresh.
    pub fallback: u64,
}

/// A queue's books and state, read atomically.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Offers (`enqueue` calls).
    pub offered: u64,
    /// Offers admitted.
    pub admitted: u64,
    /// Offers turned away by the controller's admission share.
    pub rejected_share: u64,
    /// Offers turned away at the backlog's bound.
    pub rejected_full: u64,
    /// Jobs done.
    pub completed: u64,
    /// Jobs failed for good (a fatal error).
    pub failed: u64,
    /// Jobs dead-lettered after their last attempt.
    pub dead: u64,
    /// Failed attempts put back for a retry.
    pub retried: u64,
    /// Jobs given back from a worker that stopped beating.
    pub redelivered: u64,
    /// Jobs in the stream: waiting and in service.
    pub in_stream: u64,
    /// Jobs delivered and not acknowledged (in service).
    pub in_service: u64,
    /// Jobs waiting for a retry.
    pub delayed: u64,
    /// Time in the stream at the end of every attempt (from the attempt's entry: a retry's
    /// backoff is left out), summed \[µs\].
    pub latency_us: u64,
    /// Service time of every attempt, summed \[µs\].
    pub service_us: u64,
}

impl Stats {
    /// Jobs admitted and not yet completed, failed or dead-lettered.
    pub fn waiting(&self) -> u64 {
        self.in_stream + self.delayed
    }

    /// Whether the books balance: `admitted = completed + failed + dead + waiting`.
    pub fn balanced(&self) -> bool {
        self.admitted == self.completed + self.failed + self.dead + self.waiting()
    }
}

/// The controller's grant as published.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Grant {
    /// The admission share in \[0, 1\].
    pub share: f64,
    /// Workers allowed at once (`None`: all).
    pub concurrency: Option<u32>,
    /// The backlog's bound \[jobs\].
    pub bound: u64,
    /// When the lease expires, Redis time \[µs since the epoch\].
    pub expires_us: u64,
    /// The controllers' epoch (grows with every new leader).
    pub epoch: u64,
    /// The controller that published it.
    pub leader: String,
    /// Failed attempts are dead-lettered (kind `"shed"`), not retried, while this grant is
    /// in force: the safety filter's backup shedding retries.
    pub shed_retries: bool,
}

/// A job that was dead-lettered (`kind` = `"dead"`: out of attempts; `"shed"`: failed while
/// the grant shed retries) or failed for good (`"failed"`).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct DeadLetter {
    /// Its last stream id.
    pub id: String,
    /// The payload, as enqueued (JSON text).
    pub payload: String,
    /// Attempts made.
    pub attempts: u32,
    /// The last error.
    pub error: String,
    /// `"dead"`, `"shed"` or `"failed"`.
    pub kind: String,
    /// When, Redis time \[µs since the epoch\].
    pub at: f64,
}
