//! Connecting to Redis: the namespace check, the reconnecting connection, the URL for
//! messages.

use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::Client;

use crate::LiveError;

/// Check a key namespace: 1 to 64 of `A–Z a–z 0–9 _ . -` (no glob characters: the
/// namespace is also a `SCAN` pattern, and `*` would match other applications' keys).
pub fn check_namespace(ns: &str) -> Result<(), safegate_core::RangeError> {
    let ok = !ns.is_empty() && ns.len() <= 64 && ns.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(safegate_core::RangeError::new("namespace", format!("{ns:?}"), "1 to 64 of A-Z a-z 0-9 _ . -"))
    }
}

/// A client and a reconnecting connection to `url`, with `timeout` for connecting and for
/// each answer and `retries` reconnection attempts per failure; the whole connect is
/// bounded by twice the timeout plus a second. Errors name the URL, password elided.
pub(crate) async fn connect_manager(
    url: &str,
    timeout: Duration,
    retries: usize,
) -> Result<(Client, ConnectionManager), LiveError> {
    let shown = redact(url);
    let err = |what: &str| {
        let shown = shown.clone();
        let what = what.to_string();
        move |error| LiveError::Redis { url: shown, what, error }
    };
    let client = Client::open(url).map_err(err("parsing the URL"))?;
    let cfg = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(timeout))
        .set_response_timeout(Some(timeout))
        .set_number_of_retries(retries)
        .set_max_delay(timeout / 4);
    let con =
        tokio::time::timeout(2 * timeout + Duration::from_secs(1), client.get_connection_manager_with_config(cfg))
            .await
            .map_err(|_| timed_out(&shown, "connecting"))?
            .map_err(err("connecting"))?;
    Ok((client, con))
}

/// `what` at `url` took longer than its bound.
pub(crate) fn timed_out(url: &str, what: &str) -> LiveError {
    LiveError::Redis {
        url: url.to_string(),
        what: what.into(),
        error: redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut)),
    }
}

/// The URL without a password, for messages (the queue library's).
pub use safegate_queue::redact;
