//! The HTTP API's handlers and routes.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};

use super::channel::Submitter;
use super::server::Shared;
use super::{DownstreamStats, Faults};

/// `POST /work`, `GET`/`POST /admin/faults` and `GET /admin/state` over `shared`.
pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/work", post(work))
        .route("/admin/faults", get(get_faults).post(post_faults))
        .route("/admin/state", get(get_state))
        .with_state(shared)
}

/// The handlers' state.
type App = State<Arc<Shared>>;

async fn work(State(shared): App, _body: Bytes) -> Response {
    if shared.noop {
        shared.counters.served.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return StatusCode::OK.into_response();
    }
    let done = Submitter { inbox: shared.inbox.clone() }.submit().await;
    match done {
        None => (StatusCode::SERVICE_UNAVAILABLE, "downstream shutting down").into_response(),
        Some(c) if c.full => {
            (StatusCode::SERVICE_UNAVAILABLE, "downstream full: every worker busy, queue full").into_response()
        }
        Some(c) => {
            if !c.added_latency.is_zero() {
                tokio::time::sleep(c.added_latency).await;
            }
            if c.error {
                (StatusCode::INTERNAL_SERVER_ERROR, "injected error").into_response()
            } else {
                StatusCode::OK.into_response()
            }
        }
    }
}

async fn get_faults(State(shared): App) -> Json<Faults> {
    Json(*shared.faults_lock())
}

async fn post_faults(State(shared): App, body: Bytes) -> Response {
    let f = match Faults::from_json(&body) {
        Ok(f) => f,
        Err(message) => return (StatusCode::BAD_REQUEST, message).into_response(),
    };
    match shared.set_faults(f) {
        Ok(()) => Json(f).into_response(),
        Err(e) => (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    }
}

async fn get_state(State(shared): App) -> Json<DownstreamStats> {
    Json(shared.stats())
}
