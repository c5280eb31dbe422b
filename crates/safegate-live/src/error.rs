//! Errors of the live system: each names the input or the service it is about.

use std::net::SocketAddr;

/// What went wrong, with the input or service it concerns.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// A value out of range (the field's dotted path, its value and the allowed range).
    #[error("{0}")]
    Invalid(#[from] safegate_core::RangeError),
    /// The scenario could not be loaded.
    #[error(transparent)]
    Scenario(#[from] safegate_sim::ScenarioError),
    /// The executors were outside the run ([`LiveOptions::executors`] off) and none took a
    /// job: there is nothing to report a verdict on.
    ///
    /// [`LiveOptions::executors`]: crate::run::LiveOptions::executors
    #[error(
        "no executor served the backlog during the run ({admitted} jobs admitted, none taken): with \
         --external-executors, `safegate executor` processes must join it (the command was shown \
         when the run started); no verdict on a run nothing served"
    )]
    NobodyServed {
        /// Jobs admitted to the backlog.
        admitted: u64,
    },
    /// `redis-server` is not on `PATH`.
    #[error(
        "redis-server not found on PATH: install it (Debian/Ubuntu: `apt-get install -y redis-server`, \
         macOS: `brew install redis`) or pass --redis URL of a running server"
    )]
    RedisMissing,
    /// Redis refused, was unreachable, or answered with an error.
    ///
    /// The client's error is shown in the message and is not also a `source()`: a
    /// `RedisError` repeats its I/O cause in its own text, so an error chain printed whole
    /// (`{:#}`) said "Connection refused" three times.
    #[error("redis at {url}: {what}: {error}")]
    Redis {
        /// The server's address (password elided).
        url: String,
        /// What was being done.
        what: String,
        /// The client's error.
        error: redis::RedisError,
    },
    /// A listening socket could not be bound.
    ///
    /// The OS error is in the message and not also a `source()` (as for [`LiveError::Redis`]):
    /// a chain printed whole said it twice.
    #[error("cannot listen on {addr} ({what}): {error}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Which server.
        what: &'static str,
        /// The OS error.
        error: std::io::Error,
    },
    /// The downstream could not be reached or answered badly.
    #[error("downstream at {url}: {message}")]
    Downstream {
        /// The downstream's URL.
        url: String,
        /// What happened.
        message: String,
    },
    /// PostgreSQL refused, was unreachable, or answered with an error.
    #[error("PostgreSQL at {url}: {what}: {message}")]
    Postgres {
        /// The database's URL (password elided).
        url: String,
        /// What was being done.
        what: String,
        /// The client's error, with the server's message.
        message: String,
    },
    /// A throughput curve could not be fitted (too few points, a zero or non-finite one).
    #[error("throughput fit: {0}")]
    Fit(#[from] crate::throughput::FitError),
    /// The queue refused a setting or answered out of its wire format.
    #[error("{0}")]
    Queue(String),
    /// Any other I/O failure (spawning redis-server, temporary directories).
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error (in the message, not also a `source()`).
        error: std::io::Error,
    },
}

impl From<safegate_queue::QueueError> for LiveError {
    /// The queue's errors in the live system's terms (its Redis errors say `redis at URL`,
    /// as the live system's own do).
    fn from(e: safegate_queue::QueueError) -> Self {
        match e {
            safegate_queue::QueueError::Redis { url, what, error } => LiveError::Redis { url, what, error },
            other => LiveError::Queue(other.to_string()),
        }
    }
}
