//! The one tokio runtime of the commands that run servers or processes.

/// A multi-threaded runtime with every driver (time, I/O, signals) enabled.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}
