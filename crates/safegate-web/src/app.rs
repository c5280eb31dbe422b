//! The app: a local page whose controls drive the simulator, and the JSON API behind it
//! (`docs/serve.md`); its routes, their handlers, and [`serve`].
//!
//! ```text
//!   browser ──GET /──────────────▶ index.html, app.css, app.js, vendored uPlot (embedded)
//!           ──POST /api/run {set}─▶ api::run ─▶ safegate_sim::run ─▶ `run --json`'s document
//!           ──GET /api/live/stream─▶ live::stream ─▶ safegate_live::run::run (own redis-server)
//!                                     ◀── server-sent events: start, progress…, done | error
//!           ──GET /api/fleet/stream─▶ fleet::stream ─▶ safegate_live::fleet::play (gate processes,
//!                                     own redis-server, an outage)
//!                                     ◀── server-sent events: start, second…, done | error
//! ```
//!
//! No build step and nothing fetched at run time: the page, its script and uPlot are
//! compiled into the program.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{DefaultBodyLimit, FromRequest as _, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use safegate_core::controllers::PolicySpec;
use safegate_live::fleet::GateCommand;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::{api, fleet, live, sse};

/// What the server needs from its host program.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// How the fleet view starts a gate process (`safegate fleet-gate`).
    pub gate: GateCommand,
}

/// How the server ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// Every run it was playing stopped its servers.
    Clean,
    /// A run was still stopping after this long; its servers may be left.
    RunStillStopping(Duration),
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
/// Longest wait for a request's body: a client that declares `Content-Length: 100` and
/// sends 2 bytes gets a 408 then, rather than holding a connection (and a task) for ever.
pub(crate) const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for a request's head (its request line and headers), from when the
/// connection is ready for one: a client that connects and sends `GET / HT` and no more is
/// disconnected then, rather than holding a connection (and a task) for ever. A keep-alive
/// connection left idle is closed after as long.
pub(crate) const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The media types `POST /api/run` takes. Anything else, `text/plain` and form posts above
/// all (a page on any origin can send those without a CORS preflight), is a 415.
const ACCEPTED_TYPES: &str = "application/json or application/toml";

#[derive(Debug)]
struct AppState {
    /// The page, with the registry's policies as the options of its policy menu.
    index: String,
    /// The live view, with the same menu.
    live_page: String,
    runs: Semaphore,
    /// One live or fleet run at a time.
    live: Arc<Semaphore>,
    /// Set on Ctrl-C or SIGTERM: a playing run stops (and stops its servers).
    stop: tokio::sync::watch::Sender<bool>,
    /// [`BODY_TIMEOUT`], shorter in the tests.
    body_timeout: Duration,
    /// How the fleet view starts a gate process.
    gate: GateCommand,
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
#[cfg(test)]
pub(crate) fn app() -> Router {
    router(test_state(BODY_TIMEOUT))
}

/// The tests' server state, waiting at most `body_timeout` for a request's body.
#[cfg(test)]
fn test_state(body_timeout: Duration) -> Arc<AppState> {
    let gate = GateCommand { program: "safegate".into(), args: vec!["fleet-gate".into()] };
    state(body_timeout, ServeConfig { gate })
}

/// The server's state, waiting at most `body_timeout` for a request's body.
fn state(body_timeout: Duration, config: ServeConfig) -> Arc<AppState> {
    Arc::new(AppState {
        index: INDEX_HTML.replace("<!--POLICIES-->", &policy_options()),
        live_page: LIVE_HTML.replace("<!--POLICIES-->", &policy_options()),
        runs: Semaphore::new(CONCURRENT_RUNS),
        live: live::slot(),
        stop: tokio::sync::watch::channel(false).0,
        body_timeout,
        gate: config.gate,
    })
}

/// The server's routes: the pages and their assets, `POST /api/run` and the two streams.
fn router(state: Arc<AppState>) -> Router {
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
        // After the routes: it is set on each of them.
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
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

/// The error of a request the API refused, with its status.
fn api_error(e: &api::ApiError) -> Response {
    error(StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST), &e.message)
}

/// A path that leads nowhere: a 404 as `{"error"}` naming it, as every other error is.
async fn not_found(method: Method, uri: Uri) -> Response {
    error(
        StatusCode::NOT_FOUND,
        &format!(
            "{method} {}: not found; the pages are /, /live and /fleet, the API POST /api/run, GET /api/live/stream and GET /api/fleet/stream",
            uri.path()
        ),
    )
}

/// A 405 as `{"error"}` (axum keeps its `Allow` header).
async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    let allowed = if uri.path() == "/api/run" { "POST" } else { "GET" };
    error(StatusCode::METHOD_NOT_ALLOWED, &format!("{method} {}: method not allowed; use {allowed}", uri.path()))
}

/// How a `POST /api/run` body is to be read, from its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyType {
    Json,
    Toml,
}

/// The body's type: `application/json` or `application/toml`, compared without regard to
/// case and with any parameters (`; charset=utf-8`) ignored; `None` for anything else or
/// no `Content-Type` at all.
fn body_type(headers: &HeaderMap) -> Option<BodyType> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let essence = value.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Some(BodyType::Json)
    } else if essence.eq_ignore_ascii_case("application/toml") {
        Some(BodyType::Toml)
    } else {
        None
    }
}

async fn run_handler(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let Some(kind) = body_type(request.headers()) else {
        let got = request.headers().get(header::CONTENT_TYPE).map_or_else(
            || "no Content-Type".to_string(),
            |v| format!("Content-Type {:?}", String::from_utf8_lossy(v.as_bytes())),
        );
        let mut resp =
            error(StatusCode::UNSUPPORTED_MEDIA_TYPE, &format!("Content-Type: expected {ACCEPTED_TYPES}, got {got}"));
        // The body is left unread: the connection is not reused.
        resp.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        return resp;
    };
    let body = match tokio::time::timeout(state.body_timeout, Bytes::from_request(request, &())).await {
        Err(_) => {
            let mut resp = error(
                StatusCode::REQUEST_TIMEOUT,
                &format!("request body: not received within {} s", state.body_timeout.as_secs_f64()),
            );
            resp.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            return resp;
        }
        Ok(Ok(b)) => b,
        Ok(Err(e)) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return error(e.status(), &format!("request body over {} bytes", api::MAX_BODY_BYTES));
        }
        Ok(Err(e)) => return error(e.status(), &e.body_text()),
    };
    let Ok(text) = std::str::from_utf8(&body) else {
        return error(StatusCode::BAD_REQUEST, "request body: not UTF-8");
    };
    let toml = kind == BodyType::Toml;
    let parsed = if toml { api::from_toml(text) } else { api::parse(text) };
    let req = match parsed {
        Ok(r) => r,
        Err(e) => return api_error(&e),
    };
    let Ok(_permit) = state.runs.acquire().await else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "shutting down");
    };
    match tokio::task::spawn_blocking(move || api::run(&req)).await {
        Ok(Ok(doc)) => ([(header::CONTENT_TYPE, "application/json")], doc.to_string()).into_response(),
        Ok(Err(e)) => api_error(&e),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &format!("the run failed: {e}")),
    }
}

/// The 409 of a second live or fleet run.
const ONE_AT_A_TIME: &str = "a live or fleet run is already playing; one at a time";

/// Takes the one-run slot (409 when a run holds it) and starts the stream from its query
/// and the slot.
fn one_at_a_time(
    state: &AppState,
    query: &HashMap<String, String>,
    start: impl FnOnce(&HashMap<String, String>, sse::Slot) -> Result<Response, api::ApiError>,
) -> Response {
    let Ok(permit) = state.live.clone().try_acquire_owned() else {
        return error(StatusCode::CONFLICT, ONE_AT_A_TIME);
    };
    match start(query, sse::Slot { permit, stop: sse::Stop(state.stop.subscribe()) }) {
        Ok(sse) => sse,
        Err(e) => api_error(&e),
    }
}

/// A stream's query with each key given once (a 400 naming a repeated one, see
/// [`api::single_valued`]), or the 400 of a query that does not decode.
fn stream_query(
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<HashMap<String, String>, api::ApiError> {
    let Query(pairs) = query.map_err(|e| api::ApiError::bad(format!("query: {}", e.body_text())))?;
    api::single_valued(pairs)
}

/// A browser sends `Origin` with a cross-origin `EventSource` and none with the page's own
/// (same-origin GET): a stream asked for by another site's page is refused, so no page the
/// user happens to have open can start runs here and hold the one slot. Clients that are
/// not browsers (curl) send no `Origin`.
fn foreign_origin(headers: &HeaderMap) -> Option<Response> {
    let origin = headers.get(header::ORIGIN)?.to_str().unwrap_or("");
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    let own = origin.strip_prefix("http://").is_some_and(|o| !host.is_empty() && o == host);
    (!own).then(|| {
        error(
            StatusCode::FORBIDDEN,
            &format!("a stream for the page at {origin}: streams are served to this server's own pages only"),
        )
    })
}

async fn live_handler(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Response {
    foreign_origin(&headers).unwrap_or_else(|| match stream_query(query) {
        Ok(query) => one_at_a_time(&state, &query, live::stream),
        Err(e) => api_error(&e),
    })
}

async fn fleet_handler(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Response {
    foreign_origin(&headers).unwrap_or_else(|| match stream_query(query) {
        Ok(query) => one_at_a_time(&state, &query, |q, slot| fleet::stream(q, slot, state.gate.clone())),
        Err(e) => api_error(&e),
    })
}

/// Longest wait on shutdown for a playing run to stop its servers.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// Serves the page and its API on `listener` until `shutdown` completes; then stops a
/// playing run (its stream ends with an `error` event), lets the open connections finish
/// their responses, and waits up to 10 s for the run to stop its servers. A connection
/// that has not sent a whole request head 10 s after it could have is closed. No error
/// ends it: a failed accept (out of file descriptors) is retried a second later, as
/// `axum::serve` does.
pub async fn serve(
    listener: TcpListener,
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<Stopped> {
    serve_with(listener, state(BODY_TIMEOUT, config), HEADER_TIMEOUT, shutdown).await
}

/// [`serve`] with `state`, closing a connection whose request head takes longer than
/// `header_timeout` ([`HEADER_TIMEOUT`], shorter in the tests). Its own accept loop over
/// hyper, since `axum::serve` sets no header read timeout.
async fn serve_with(
    listener: TcpListener,
    state: Arc<AppState>,
    header_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<Stopped> {
    let app = router(state.clone());
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(header_timeout);
    let connections = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // A connection reset before it was accepted is that connection's
                    // affair; anything else (EMFILE) would come back at once.
                    if !matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionRefused
                            | std::io::ErrorKind::ConnectionAborted
                            | std::io::ErrorKind::ConnectionReset
                    ) {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let connection = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let connection = connections.watch(connection);
        tokio::spawn(async move {
            // A connection's error (a reset, a header timeout) ends that connection only.
            let _ = connection.await;
        });
    }
    drop(listener);
    // A playing run's stream ends with an `error` event once its future is dropped.
    state.stop.send_replace(true);
    // Idle connections close now; the others after the response they are sending.
    connections.shutdown().await;
    // The run's thread frees the slot after its servers are stopped: wait for it (the
    // process would otherwise end first and leave its redis-server running).
    let stopped = match tokio::time::timeout(SHUTDOWN_WAIT, state.live.acquire()).await {
        Ok(_) => Stopped::Clean,
        Err(_) => Stopped::RunStillStopping(SHUTDOWN_WAIT),
    };
    Ok(stopped)
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt as _;

    use super::*;

    async fn post(body: impl Into<Body>) -> (StatusCode, serde_json::Value) {
        post_as("application/json", body).await
    }

    async fn post_as(content_type: &str, body: impl Into<Body>) -> (StatusCode, serde_json::Value) {
        let mut req = Request::post("/api/run");
        if !content_type.is_empty() {
            req = req.header("content-type", content_type);
        }
        let resp = app().oneshot(req.body(body.into()).unwrap()).await.unwrap();
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

    /// A page on any origin can POST `text/plain` or a form without a preflight: only the
    /// two types a script must declare are read, whatever their case and parameters.
    #[tokio::test]
    async fn only_json_and_toml_bodies_are_read() {
        for ty in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""] {
            let (s, v) = post_as(ty, r#"{"set": {"traffic.rate": 55}}"#).await;
            assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{ty}: {v}");
            assert!(v["error"].as_str().unwrap().contains("application/json or application/toml"), "{v}");
        }
        let (s, v) = post_as("Application/JSON; charset=utf-8", r#"{"set": {"traffic.rate": 55}}"#).await;
        assert_eq!((s, v["scenario"]["traffic"]["rate"].as_f64()), (StatusCode::OK, Some(55.0)), "{v}");
        let (s, v) = post_as("APPLICATION/TOML; charset=UTF-8", "name = \"t\"\n[traffic]\nrate = 61\n").await;
        assert_eq!((s, v["scenario"]["traffic"]["rate"].as_f64()), (StatusCode::OK, Some(61.0)), "{v}");
        for body in ["[]", r#"["x"]"#, "1", "null", r#""{}""#] {
            let (s, v) = post(body).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{body}: {v}");
            assert!(v["error"].as_str().unwrap().contains("expected a JSON object"), "{body}: {v}");
        }
    }

    #[tokio::test]
    async fn a_wrong_method_is_a_405_with_a_json_error() {
        let resp = app().oneshot(Request::get("/api/run").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(resp.headers().get(header::ALLOW).map(|v| v.to_str().unwrap()), Some("POST"));
        let v: serde_json::Value =
            serde_json::from_slice(&axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap()).unwrap();
        assert!(v["error"].as_str().unwrap().contains("use POST"), "{v}");
        let resp = app().oneshot(Request::post("/api/live/stream").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    }

    /// The API reads no file of the host, whichever way a trace is asked for: a 400 that
    /// quotes `/etc/passwd`'s second line, or `/dev/zero` read to the trace limit, fails it.
    #[tokio::test]
    async fn a_health_trace_file_is_refused_without_reading_it() {
        let bodies = [
            ("application/json", r#"{"set": {"health.kind": "trace", "health.file": "/etc/passwd"}}"#),
            ("application/json", r#"{"set": {"health.kind": "trace", "health.file": "/dev/zero"}}"#),
            ("application/json", r#"{"set": {"health.file": "/etc/passwd"}}"#),
            ("application/json", r#"{"set": {"health.kind": "trace"}}"#),
            ("application/json", r#"{"scenario": "[health]\nkind = \"trace\"\nfile = \"/etc/passwd\"\n"}"#),
            ("application/json", r#"{"set": {"health": "={kind = \"trace\", file = \"/etc/passwd\"}"}}"#),
            ("application/toml", "[health]\nkind = \"trace\"\nfile = \"/dev/zero\"\n"),
            ("application/toml", "[health]\nfile = \"/nonexistent\"\n"),
        ];
        for (ty, body) in bodies {
            let started = std::time::Instant::now();
            let (s, v) = post_as(ty, body).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{body}: {v}");
            let e = v["error"].as_str().unwrap();
            assert!(e.contains("health.file") && e.contains("no file paths"), "{body}: {e}");
            assert!(!e.contains("root") && !e.contains("No such file"), "{body}: {e}");
            assert!(started.elapsed() < std::time::Duration::from_secs(2), "{body}: {:?}", started.elapsed());
        }
        let (s, body) =
            get_text(app(), "/api/live/stream?run=%7B%22set%22%3A%7B%22health.kind%22%3A%22trace%22%2C%22health.file%22%3A%22%2Fetc%2Fpasswd%22%7D%7D")
                .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
        assert!(body.contains("health.file") && !body.contains("root"), "{body}");
    }

    /// Health pieces are events of a stochastic run: 1e-6 s ramps over 99 s make 1e8 of
    /// them, just inside `safegate run`'s budget, and such a request would take 9 s.
    #[tokio::test]
    async fn health_pieces_count_against_the_event_budget() {
        let body = r#"{"set":{"run.mode":"stochastic","run.duration":99,"health.ramp_down":1e-6,"health.ramp_up":1e-6,"health.hold_high":1e-6,"health.hold_low":1e-6},"baseline":true,"points":10}"#;
        let started = std::time::Instant::now();
        let (s, v) = post(body).await;
        assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
        let e = v["error"].as_str().unwrap();
        assert!(e.contains("health pieces") && e.contains("2000000"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
        // Noise redraws too.
        let (s, v) = post(r#"{"set":{"run.mode":"stochastic","health.noise":0.1,"health.noise_period":1e-4}}"#).await;
        assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
        // The embedded scenario, stochastic, still runs.
        let (s, v) = post(r#"{"set":{"run.mode":"stochastic"},"points":10}"#).await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }

    /// A client that declares a body and never sends it gets a 408 and a closed
    /// connection, over a real socket.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_body_that_never_arrives_gets_a_408() {
        use std::io::{Read as _, Write as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = test_state(Duration::from_millis(300));
        let server = tokio::spawn(serve_with(listener, state, HEADER_TIMEOUT, std::future::pending()));
        let answer = tokio::task::spawn_blocking(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let started = std::time::Instant::now();
            write!(s, "POST /api/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{}}")
                .unwrap();
            let mut out = Vec::new();
            // Ends when the server closes the connection; a read timeout fails the test.
            s.read_to_end(&mut out).unwrap();
            (String::from_utf8_lossy(&out).into_owned(), started.elapsed())
        })
        .await
        .unwrap();
        server.abort();
        let (text, took) = answer;
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
        assert!(text.contains("not received within 0.3 s"), "{text}");
        assert!(took < Duration::from_secs(3), "{took:?}");
    }

    #[tokio::test]
    async fn a_live_query_with_an_unknown_key_is_refused() {
        for q in ["foo=1", "&&&==&", "duration=5&durtion=5"] {
            let (s, body) = get_text(app(), &format!("/api/live/stream?{q}")).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{q}: {body}");
            assert!(body.contains("unknown query parameter; expected one of run, duration, speed"), "{q}: {body}");
        }
        let (s, body) = get_text(app(), "/api/live/stream?run=notjson").await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        assert!(body.contains("\"run: expected"), "{body}");
        let (s, body) = get_text(app(), "/api/live/stream?run=%5B%5D").await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        assert!(body.contains("run: expected a JSON object"), "{body}");
    }

    #[tokio::test]
    async fn a_stream_for_another_sites_page_is_refused() {
        for path in ["/api/live/stream?duration=1000", "/api/fleet/stream?nodes=0"] {
            let req = |origin: Option<&str>| {
                let mut r = Request::get(path).header(header::HOST, "127.0.0.1:8787");
                if let Some(o) = origin {
                    r = r.header(header::ORIGIN, o);
                }
                r.body(Body::empty()).unwrap()
            };
            let resp = app().oneshot(req(Some("https://evil.example"))).await.unwrap();
            assert_eq!(resp.status(), StatusCode::FORBIDDEN, "{path}");
            let resp = app().oneshot(req(Some("null"))).await.unwrap();
            assert_eq!(resp.status(), StatusCode::FORBIDDEN, "{path}");
            // The page's own origin and no origin at all reach the stream's own checks (a
            // 400 for these out-of-range queries, before anything starts).
            let resp = app().oneshot(req(Some("http://127.0.0.1:8787"))).await.unwrap();
            assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{path}");
            let resp = app().oneshot(req(None)).await.unwrap();
            assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{path}");
        }
    }

    /// A request line sent in part and never finished: the connection is closed once the
    /// header timeout has passed (it was held for ever), with no answer; a whole request on
    /// another connection is still served, and the server stops cleanly when told to.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_request_head_that_never_ends_is_closed_after_the_header_timeout() {
        use std::io::{Read as _, Write as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = test_state(BODY_TIMEOUT);
        let server = tokio::spawn(serve_with(listener, state, Duration::from_millis(300), async move {
            let _ = stopped.await;
        }));
        let exchange = move |request: &'static str| {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let started = std::time::Instant::now();
            s.write_all(request.as_bytes()).unwrap();
            let mut out = Vec::new();
            // Ends when the server closes the connection; a read timeout fails the test.
            s.read_to_end(&mut out).unwrap();
            (String::from_utf8_lossy(&out).into_owned(), started.elapsed())
        };
        for partial in
            ["GET /api/run HT", "GET / HTTP/1.1\r\nHost: x\r\n", "G", "POST /api/run HTTP/1.1\r\nContent-Type: appl"]
        {
            let (text, took) = tokio::task::spawn_blocking(move || exchange(partial)).await.unwrap();
            assert_eq!(text, "", "{partial:?}: no answer, only a close");
            assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(3), "{partial:?}: {took:?}");
        }
        let (text, _) = tokio::task::spawn_blocking(move || {
            exchange("GET /app.css HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        })
        .await
        .unwrap();
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        stop.send(()).unwrap();
        let stopped = tokio::time::timeout(Duration::from_secs(5), server).await.expect("stopped within 5 s");
        assert_eq!(stopped.unwrap().unwrap(), Stopped::Clean);
    }

    /// Every error is `{"error"}` naming what was asked for, a path that leads nowhere too.
    #[tokio::test]
    async fn an_unknown_path_is_a_json_404_naming_it() {
        for (method, path) in [("GET", "/nope"), ("POST", "/api/run/"), ("DELETE", "/api"), ("GET", "/live/x.js")] {
            let req = Request::builder().method(method).uri(path).body(Body::empty()).unwrap();
            let resp = app().oneshot(req).await.unwrap();
            assert_eq!(resp.status(), StatusCode::NOT_FOUND, "{method} {path}");
            assert_eq!(resp.headers().get(header::CONTENT_TYPE).unwrap(), "application/json");
            let v: serde_json::Value =
                serde_json::from_slice(&axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap()).unwrap();
            let e = v["error"].as_str().unwrap();
            assert!(e.starts_with(&format!("{method} {path}: not found")), "{e}");
        }
    }

    /// `safegate live` refuses a repeated flag; the streams took the last value.
    #[tokio::test]
    async fn a_repeated_query_parameter_is_refused_by_both_streams() {
        for (uri, key, values) in [
            ("/api/live/stream?duration=10&duration=20", "duration", "(\"10\", \"20\")"),
            ("/api/live/stream?run=%7B%7D&speed=2&run=%7B%7D", "run", "(\"{}\", \"{}\")"),
            ("/api/live/stream?speed=1&sp%65ed=1&speed=1", "speed", "3 times"),
            ("/api/fleet/stream?nodes=2&nodes=3", "nodes", "(\"2\", \"3\")"),
            ("/api/fleet/stream?outage=&mode=freeze&outage=none", "outage", "(\"\", \"none\")"),
            ("/api/fleet/stream?=1&=2", "(an empty key)", "2 times"),
        ] {
            let (s, body) = get_text(app(), uri).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{uri}: {body}");
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            let e = v["error"].as_str().unwrap();
            assert!(e.starts_with(&format!("{key}: query parameter given ")) && e.contains(values), "{uri}: {e}");
        }
    }

    /// An empty `scenario` (or TOML body), or one of comments only, ran the embedded
    /// band-80 in silence; `{}` and an empty JSON body still do, as documented.
    #[tokio::test]
    async fn an_explicitly_empty_scenario_is_refused() {
        for (ty, body, start) in [
            ("application/json", r#"{"scenario": ""}"#, "request body: scenario is empty ("),
            ("application/json", r#"{"scenario": "\n \t\r\n"}"#, "request body: scenario is empty ("),
            (
                "application/json",
                r##"{"scenario": "\n# x = 1\n  #[traffic]"}"##,
                "request body: scenario is empty: comments only",
            ),
            ("application/toml", "", "request body: the scenario is empty ("),
            ("application/toml", "\u{feff}\r\n\t", "request body: the scenario is empty ("),
            ("application/toml", "# nothing\n\n", "request body: the scenario is empty: comments only"),
        ] {
            let (s, v) = post_as(ty, body).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{body:?}: {v}");
            let e = v["error"].as_str().unwrap();
            assert!(e.starts_with(start) && e.contains("at least one table or key"), "{body:?}: {e}");
        }
        for body in ["", "{}", r#"{"scenario": null}"#] {
            let (s, v) = post(body).await;
            assert_eq!((s, v["scenario"]["name"].as_str()), (StatusCode::OK, Some("band-80")), "{body:?}");
        }
        let (s, v) = post_as("application/toml", "# a comment, then a key\n[traffic]\nrate = 55\n").await;
        assert_eq!((s, v["scenario"]["traffic"]["rate"].as_f64()), (StatusCode::OK, Some(55.0)));
        let (s, body) = get_text(app(), "/api/live/stream?run=%7B%22scenario%22%3A%22%20%22%7D").await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        assert!(body.contains("run: scenario is empty"), "{body}");
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
        // A load the live generator cannot offer: λ = 1e6 at speed 10.
        let (s, body) = get_text(app(), "/api/live/stream?run=%7B%22set%22%3A%7B%22traffic.rate%22%3A1e6%7D%7D").await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        assert!(body.contains("traffic.rate") && body.contains("50000"), "{body}");
        // The step budget is checked on the query's duration, not the scenario's 400 s.
        let (s, body) =
            get_text(app(), "/api/live/stream?duration=50&run=%7B%22set%22%3A%7B%22run.dt%22%3A1e-7%7D%7D").await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        assert!(body.contains("run.duration = 50 "), "{body}");
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
