//! `safegate serve`: a local page whose controls drive the simulator, and the JSON API
//! behind it (`docs/serve.md`).
//!
//! ```text
//!   browser ──GET /──────────────▶ index.html, app.css, app.js, vendored uPlot (embedded)
//!           ──POST /api/run {set}─▶ api::run ─▶ safegate_sim::run ─▶ `run --json`'s document
//!           ──GET /api/live/stream─▶ live::stream ─▶ safegate_live::run::run (own redis-server)
//!                                     ◀── server-sent events: start, progress…, done | error
//!           ──GET /api/fleet/stream─▶ fleet::stream ─▶ fleet_cmd::play (gate processes,
//!                                     own redis-server, an outage)
//!                                     ◀── server-sent events: start, second…, done | error
//! ```
//!
//! No build step and nothing fetched at run time: the page, its script and uPlot are
//! compiled into the binary.

mod api;
mod fleet;
mod live;
mod sse;

use std::collections::HashMap;
use std::net::IpAddr;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use clap::Args;
use safegate_core::controllers::PolicySpec;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Flags of `safegate serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Port to listen on; 0 picks a free one (the address is printed).
    #[arg(long, default_value_t = 8787)]
    pub(crate) port: u16,
    /// Address to bind; anything but loopback exposes an unauthenticated simulator.
    #[arg(long, default_value = "127.0.0.1")]
    pub(crate) bind: IpAddr,
}

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_CSS: &str = include_str!("../assets/app.css");
const APP_JS: &str = include_str!("../assets/app.js");
const LIVE_HTML: &str = include_str!("../assets/live.html");
const LIVE_JS: &str = include_str!("../assets/live.js");
const FLEET_HTML: &str = include_str!("../assets/fleet.html");
const FLEET_JS: &str = include_str!("../assets/fleet.js");
const COMMON_JS: &str = include_str!("../assets/common.js");
const UPLOT_JS: &str = include_str!("../assets/vendor/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../assets/vendor/uplot/uPlot.min.css");
const UPLOT_LICENSE: &str = include_str!("../assets/vendor/uplot/LICENSE");

/// Simulations running at once; a request beyond them waits for a slot.
const CONCURRENT_RUNS: usize = 2;

#[derive(Debug)]
struct AppState {
    /// The page, with the registry's policies as the options of its policy menu.
    index: String,
    /// The live view, with the same menu.
    live_page: String,
    runs: Semaphore,
    /// One live or fleet run at a time.
    live: Arc<Semaphore>,
}

/// The page's policy options: the scenario's gate, then every registry spec.
fn policy_options() -> String {
    let mut out = String::from("<option value=\"gate\" selected>gate (θ and sensitivity below)</option>");
    for spec in PolicySpec::all() {
        out.push_str(&format!("<option value=\"{spec}\">{spec}</option>"));
    }
    out
}

/// The server's routes: the pages and their assets, `POST /api/run` and the two streams.
pub(crate) fn app() -> Router {
    let state = Arc::new(AppState {
        index: INDEX_HTML.replace("<!--POLICIES-->", &policy_options()),
        live_page: LIVE_HTML.replace("<!--POLICIES-->", &policy_options()),
        runs: Semaphore::new(CONCURRENT_RUNS),
        live: live::slot(),
    });
    let text = |ty: &'static str, body: &'static str| get(move || async move { ([(header::CONTENT_TYPE, ty)], body) });
    Router::new()
        .route("/", get(|State(s): State<Arc<AppState>>| async move { page(s.index.clone()) }))
        .route("/app.css", text("text/css; charset=utf-8", APP_CSS))
        .route("/app.js", text("text/javascript; charset=utf-8", APP_JS))
        .route("/vendor/uplot.js", text("text/javascript; charset=utf-8", UPLOT_JS))
        .route("/vendor/uplot.css", text("text/css; charset=utf-8", UPLOT_CSS))
        .route("/vendor/uplot.LICENSE", text("text/plain; charset=utf-8", UPLOT_LICENSE))
        .route("/api/run", post(run_handler))
        .route("/live", get(|State(s): State<Arc<AppState>>| async move { page(s.live_page.clone()) }))
        .route("/live.js", text("text/javascript; charset=utf-8", LIVE_JS))
        .route("/api/live/stream", get(live_handler))
        .route("/fleet", get(|| async { page(FLEET_HTML.to_string()) }))
        .route("/fleet.js", text("text/javascript; charset=utf-8", FLEET_JS))
        .route("/common.js", text("text/javascript; charset=utf-8", COMMON_JS))
        .route("/api/fleet/stream", get(fleet_handler))
        .layer(DefaultBodyLimit::max(api::MAX_BODY_BYTES))
        .with_state(state)
}

fn page(html: String) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
}

/// `{"error": message}` with `status`.
fn error(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "error": message }).to_string();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn run_handler(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return error(e.status(), &format!("request body over {} bytes", api::MAX_BODY_BYTES));
        }
        Err(e) => return error(e.status(), &e.body_text()),
    };
    let Ok(text) = std::str::from_utf8(&body) else {
        return error(StatusCode::BAD_REQUEST, "request body: not UTF-8");
    };
    let toml = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/toml"));
    let parsed = if toml { Ok(api::from_toml(text)) } else { api::parse(text) };
    let req = match parsed {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e.message),
    };
    let Ok(_permit) = state.runs.acquire().await else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "shutting down");
    };
    match tokio::task::spawn_blocking(move || api::run(&req)).await {
        Ok(Ok(doc)) => ([(header::CONTENT_TYPE, "application/json")], doc.to_string()).into_response(),
        Ok(Err(e)) => error(StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST), &e.message),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &format!("the run failed: {e}")),
    }
}

/// The 409 of a second live or fleet run.
const ONE_AT_A_TIME: &str = "a live or fleet run is already playing; one at a time";

/// A stream's start: from its query and the one-run slot's permit.
type StartStream = fn(&HashMap<String, String>, OwnedSemaphorePermit) -> Result<Response, api::ApiError>;

/// Takes the one-run slot (409 when a run holds it) and starts the stream.
fn one_at_a_time(state: &AppState, query: &HashMap<String, String>, start: StartStream) -> Response {
    let Ok(permit) = state.live.clone().try_acquire_owned() else {
        return error(StatusCode::CONFLICT, ONE_AT_A_TIME);
    };
    match start(query, permit) {
        Ok(sse) => sse,
        Err(e) => error(StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST), &e.message),
    }
}

async fn live_handler(State(state): State<Arc<AppState>>, Query(query): Query<HashMap<String, String>>) -> Response {
    one_at_a_time(&state, &query, live::stream)
}

async fn fleet_handler(State(state): State<Arc<AppState>>, Query(query): Query<HashMap<String, String>>) -> Response {
    one_at_a_time(&state, &query, fleet::stream)
}

pub(crate) fn run(args: &ServeArgs) -> Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind((args.bind, args.port))
            .await
            .with_context(|| format!("binding {}:{}", args.bind, args.port))?;
        let addr = listener.local_addr()?;
        if !args.bind.is_loopback() {
            eprintln!("warning: {} is not loopback; the page and its API have no authentication", args.bind);
        }
        println!("safegate serve: http://{addr}/ (Ctrl-C stops)");
        use std::io::Write as _;
        std::io::stdout().flush()?;
        axum::serve(listener, app())
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .context("serving")?;
        Ok(ExitCode::SUCCESS)
    })
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt as _;

    use super::*;

    async fn post(body: impl Into<Body>) -> (StatusCode, serde_json::Value) {
        let req = Request::post("/api/run").body(body.into()).unwrap();
        let resp = app().oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 24).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn the_page_lists_the_registry_policies() {
        let resp = app().oneshot(Request::get("/").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let html = String::from_utf8(axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap().to_vec()).unwrap();
        assert!(html.contains("<option value=\"gradient2+pool\">"));
        assert!(!html.contains("<!--POLICIES-->"));
    }

    #[tokio::test]
    async fn errors_are_json_with_their_status() {
        let (s, v) = post(r#"{"set": {"traffic.rate": -1}}"#).await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        assert!(v["error"].as_str().unwrap().contains("traffic.rate"), "{v}");
        let (s, v) = post(vec![b' '; api::MAX_BODY_BYTES + 1]).await;
        assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(v["error"].as_str().unwrap().contains("65536"), "{v}");
        let (s, v) = post(r#"{"set": {"run.dt": 1e-3}}"#).await;
        assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(v["error"].as_str().unwrap().contains("run.duration / run.dt"), "{v}");
    }

    #[tokio::test]
    async fn a_run_answers_with_the_run_json_document() {
        let (s, v) = post(r#"{"set": {"traffic.rate": 55}}"#).await;
        assert_eq!(s, StatusCode::OK);
        for key in ["scenario", "policy", "label", "summary", "series", "baseline", "chart"] {
            assert!(v.get(key).is_some(), "{key} missing");
        }
        assert_eq!(v["scenario"]["traffic"]["rate"], 55.0);
        let req = Request::post("/api/run")
            .header("content-type", "application/toml")
            .body(Body::from("name = \"t\"\n[traffic]\nrate = 60\n"))
            .unwrap();
        let resp = app().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let v: serde_json::Value =
            serde_json::from_slice(&axum::body::to_bytes(resp.into_body(), 1 << 24).await.unwrap()).unwrap();
        assert_eq!(
            (v["scenario"]["name"].as_str(), v["scenario"]["traffic"]["rate"].as_f64()),
            (Some("t"), Some(60.0))
        );
    }

    async fn get_text(app: Router, uri: &str) -> (StatusCode, String) {
        let resp = app.oneshot(Request::get(uri).body(Body::empty()).unwrap()).await.unwrap();
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 24).await.unwrap();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_live_run_out_of_bounds_is_refused_before_it_starts() {
        let (s, body) = get_text(app(), "/api/live/stream?duration=1000").await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        assert!(body.contains("duration = 1000"), "{body}");
        let (s, body) = get_text(app(), "/api/live/stream?duration=400&speed=2").await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        assert!(body.contains("at most 60 wall seconds"), "{body}");
        let (s, body) = get_text(app(), "/api/live/stream?run=%7B%22policy%22%3A%22nope%22%7D").await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        assert!(body.contains("policy: unknown policy"), "{body}");
    }

    /// Needs redis-server on PATH (`scripts/test` installs it), as `safegate live` does.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_live_run_streams_progress_then_done_one_at_a_time() {
        let app = app();
        let uri = "/api/live/stream?duration=6&speed=6&run=%7B%22set%22%3A%7B%22traffic.rate%22%3A80%7D%7D";
        let first = app.clone().oneshot(Request::get(uri).body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(first.status(), StatusCode::OK);
        let (s, body) = get_text(app.clone(), uri).await;
        assert_eq!(s, StatusCode::CONFLICT, "{body}");
        let bytes = axum::body::to_bytes(first.into_body(), 1 << 24).await.unwrap();
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        assert!(text.starts_with("event: start\n"), "{text}");
        assert!(!text.contains("event: error"), "{text}");
        let progress: Vec<serde_json::Value> = text
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("event: progress\ndata: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        assert!(progress.len() >= 2, "{text}");
        for p in &progress {
            let (q, line, margin) =
                (p["queue"].as_f64().unwrap(), p["line"].as_f64().unwrap(), p["margin"].as_f64().unwrap());
            assert_eq!((line, margin), (140.0, line - q));
        }
        let done = text.split("\n\n").find_map(|e| e.strip_prefix("event: done\ndata: ")).expect("a done event");
        let done: serde_json::Value = serde_json::from_str(done).unwrap();
        assert!(done["accounting"]["admitted"].as_u64().unwrap() > 100, "{done}");
        // The slot is free again once the run has ended.
        let (s, _) = get_text(app, "/api/live/stream?duration=1000").await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
    }
}
