//! Ctrl-C or SIGTERM for the commands that start processes of their own (`live`, `fleet`):
//! a signal sent to the command alone (`kill PID`, a service manager) would end it before
//! its private redis-server and its children are stopped. The run's future is dropped
//! instead, which stops them, and the command says which signal ended it. `serve` waits on
//! the same [`signal`] to stop the run it is playing.

use std::future::Future;

use anyhow::{anyhow, Context as _, Result};

/// Ctrl-C or SIGTERM: a future that ends with what happened (`interrupted`, `terminated`).
/// The SIGTERM handler is installed by this call (inside a runtime), so a signal that comes
/// before the future is first polled is not lost.
pub(crate) fn signal() -> Result<impl Future<Output = &'static str>> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    Ok(async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => "interrupted",
            _ = term.recv() => "terminated",
        }
    })
}

/// `run` to its end, or until Ctrl-C or SIGTERM; then an error saying `stopped` (what the
/// drop stopped).
pub(crate) async fn on_signal<T>(run: impl Future<Output = Result<T>>, stopped: &str) -> Result<T> {
    let signalled = signal()?;
    tokio::select! {
        r = run => r,
        what = signalled => Err(anyhow!("{what}: {stopped}")),
    }
}
