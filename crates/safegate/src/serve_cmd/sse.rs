//! What the two streams (`/api/live/stream`, `/api/fleet/stream`) share: a run played on a
//! thread of its own, its events sent as server-sent events.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse as _, Response};
use tokio::sync::{mpsc, OwnedSemaphorePermit};

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
/// (holding `permit`, the one-run slot, until it ends): what `run` sends, then `done` with
/// what it returns, or `error` with its message.
pub(crate) fn play<F>(start: serde_json::Value, permit: OwnedSemaphorePermit, run: F) -> Response
where
    F: FnOnce(&tokio::runtime::Runtime, &Sender) -> anyhow::Result<serde_json::Value> + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    send(&tx, "start", &start);
    std::thread::spawn(move || {
        let _permit = permit;
        let result = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| anyhow::anyhow!("runtime: {e}"))
            .and_then(|rt| run(&rt, &tx));
        match result {
            Ok(done) => send(&tx, "done", &done),
            Err(e) => send(&tx, "error", &serde_json::json!({ "error": format!("{e:#}") })),
        };
    });
    Sse::new(Events(rx)).keep_alive(KeepAlive::default()).into_response()
}
