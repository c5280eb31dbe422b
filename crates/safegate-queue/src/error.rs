//! What can go wrong, each error naming its input.

/// An error of the queue: a bad name or setting, Redis unreachable or refusing a call, or a
/// payload that does not encode.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// The queue's name breaks the naming rule.
    #[error("queue name {name:?}: must be 1 to 64 of A-Z a-z 0-9 _ . - (it goes into Redis keys and a hash tag)")]
    Name {
        /// The name given.
        name: String,
    },
    /// A setting is out of its range.
    #[error("{what} = {value}: {rule}")]
    Setting {
        /// The setting.
        what: &'static str,
        /// Its value, as given.
        value: String,
        /// What it must be.
        rule: &'static str,
    },
    /// Redis refused a call or could not be reached.
    #[error("Redis at {url}: {what}: {error}")]
    Redis {
        /// The server's address, password elided.
        url: String,
        /// What was being done.
        what: String,
        /// The client's error.
        #[source]
        error: redis::RedisError,
    },
    /// The server answered something the wire format does not allow.
    #[error("Redis at {url}: {what}: unexpected answer {answer}")]
    Protocol {
        /// The server's address, password elided.
        url: String,
        /// What was being done.
        what: String,
        /// The answer, abridged.
        answer: String,
    },
    /// A payload did not encode as JSON.
    #[error("encoding the payload as JSON: {0}")]
    Encode(#[source] serde_json::Error),
    /// The boundary (or the policy under it) was refused.
    #[error("{0}")]
    Policy(String),
}

impl QueueError {
    pub(crate) fn setting(what: &'static str, value: impl std::fmt::Display, rule: &'static str) -> Self {
        QueueError::Setting { what, value: value.to_string(), rule }
    }
}
