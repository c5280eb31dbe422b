//! Ctrl-C or SIGTERM for the commands that start processes of their own (`live`, `fleet`):
//! a signal sent to the command alone (`kill PID`, a service manager) would end it before
//! its private redis-server and its children are stopped. The run's future is dropped
//! instead, which stops them, and the command says which signal ended it.

use std::future::Future;

use anyhow::{anyhow, Context as _, Result};

/// `run` to its end, or until Ctrl-C or SIGTERM; then an error saying `stopped` (what the
/// drop stopped).
pub(crate) async fn on_signal<T>(run: impl Future<Output = Result<T>>, stopped: &str) -> Result<T> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    tokio::select! {
        r = run => r,
        _ = tokio::signal::ctrl_c() => Err(anyhow!("interrupted: {stopped}")),
        _ = term.recv() => Err(anyhow!("terminated: {stopped}")),
    }
}
