//! The tokio runtime the bench commands run on.

use anyhow::{Context, Result};

/// A multi-threaded runtime with two workers (the machine's two cores), time and I/O on.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the tokio runtime")
}
