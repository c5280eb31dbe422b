//! What the two streams (`/api/live/stream`, `/api/fleet/stream`) share: a run played on a
//! thread of its own, its events sent as server-sent events.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse as _, Response};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit};

/// The server's stop signal as every run it plays sees it: set when `serve` gets Ctrl-C or
/// SIGTERM, so that a playing run drops its future (which stops its private redis-server and
/// its gate processes) instead of being cut off with the process.
#[derive(Debug, Clone)]
pub(crate) struct Stop(pub(crate) watch::Receiver<bool>);

impl Stop {
    /// `run` on `rt` to its end, or until the server stops; an error as its [`chain`].
    pub(crate) fn block_on<T, E: std::error::Error>(
        &self,
        rt: &tokio::runtime::Runtime,
        run: impl std::future::Future<Output = Result<T, E>>,
    ) -> Result<T, String> {
        let mut rx = self.0.clone();
        rt.block_on(async move {
            tokio::select! {
                r = run => r.map_err(|e| chain(&e)),
                _ = async {
                    // A server that went away without stopping (a test's router dropped)
                    // is not a stop.
                    if rx.wait_for(|stop| *stop).await.is_err() {
                        std::future::pending::<()>().await;
                    }
                } => Err("the server is stopping: the run and its private Redis were stopped".to_string()),
            }
        })
    }
}

/// A run's hold on the server: the one-run slot, released when the run's thread ends, and
/// the stop signal.
#[derive(Debug)]
pub(crate) struct Slot {
    /// The one-run slot.
    pub(crate) permit: OwnedSemaphorePermit,
    /// The server's stop signal.
    pub(crate) stop: Stop,
}

/// An error and its sources, each after a `: `.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// Where a run sends its events.
pub(crate) type Sender = mpsc::UnboundedSender<Event>;

/// The response body: the events the run's thread sends, until it ends.
#[derive(Debug)]
struct Events(mpsc::UnboundedReceiver<Event>);

impl futures_core::Stream for Events {
    type Item = Result<Event, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|e| e.map(Ok))
    }
}

/// Sends the event `name` with `data` as its JSON; false when the viewer has gone.
pub(crate) fn send(tx: &Sender, name: &str, data: &serde_json::Value) -> bool {
    tx.send(Event::default().event(name).data(data.to_string())).is_ok()
}

/// Streams `start`, then plays `run` on a thread of its own with a current-thread runtime
/// (holding the slot until it ends): what `run` sends, then `done` with what it returns, or
/// `error` with its message. `run` plays its future through [`Stop::block_on`].
pub(crate) fn play<F>(start: serde_json::Value, slot: Slot, run: F) -> Response
where
    F: FnOnce(&tokio::runtime::Runtime, &Sender, &Stop) -> Result<serde_json::Value, String> + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    send(&tx, "start", &start);
    std::thread::spawn(move || {
        let Slot { permit: _permit, stop } = slot;
        let result = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("runtime: {e}"))
            .and_then(|rt| run(&rt, &tx, &stop));
        match result {
            Ok(done) => send(&tx, "done", &done),
            Err(e) => send(&tx, "error", &serde_json::json!({ "error": e })),
        };
    });
    Sse::new(Events(rx)).keep_alive(KeepAlive::default()).into_response()
}
