//! The one tokio runtime builder of the binary: every command that runs async library code
//! (live, fleet, serve, the benches, F19) blocks on a runtime from here.

use anyhow::{Context, Result};

/// A multi-threaded runtime with I/O and time enabled.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")
}
