//! `GET /api/live/stream`: one `safegate live` run (its own redis-server, the emulated
//! downstream) streamed as server-sent events. See `docs/serve.md §The live view`.
//!
//! The run plays on a thread of its own with a current-thread runtime, as `safegate live`
//! does; its progress callbacks (four a second) become `progress` events on a channel the
//! response body drains. One run at a time; a bounded wall time.

use std::collections::HashMap;
use std::sync::Arc;

use axum::response::Response;
use safegate_core::Policy as _;
use safegate_live::run::{LiveOptions, LivePolicy, LiveRun, Progress};
use safegate_sim::variants::variants;

use crate::api::{self, ApiError, ORIGIN};
use crate::sse;

/// Longest live run \[wall seconds\] (`duration / speed`).
pub(crate) const MAX_LIVE_WALL_SECONDS: f64 = 60.0;
/// Longest live run \[model seconds\].
pub(crate) const MAX_LIVE_DURATION: f64 = 400.0;

/// The query's keys, all optional.
const KEYS: [&str; 3] = ["run", "duration", "speed"];

/// A live run as the query asks for it: `run` (the JSON of `POST /api/run`: `scenario`,
/// `set`, `policy`), `duration` \[model s\] and `speed` (model seconds per wall second).
fn parse(query: &HashMap<String, String>) -> Result<(LiveRun, LivePolicy), ApiError> {
    api::known_keys(query, &KEYS)?;
    let req = api::parse_named(query.get("run").map_or("", String::as_str), "run")?;
    let number = |key: &str, default: f64| -> Result<f64, ApiError> {
        query.get(key).map_or(Ok(default), |v| {
            v.trim().parse::<f64>().map_err(|_| ApiError::bad(format!("{key}: {v:?} is not a number")))
        })
    };
    let duration = number("duration", 60.0)?;
    let speed = number("speed", 10.0)?;
    if !(duration > 0.0 && duration <= MAX_LIVE_DURATION) {
        return Err(ApiError::bad(format!("duration = {duration}: allowed (0, {MAX_LIVE_DURATION}] model seconds")));
    }
    let max_speed = safegate_live::run::MAX_SPEED;
    if !((1.0..=max_speed).contains(&speed) && duration / speed <= MAX_LIVE_WALL_SECONDS) {
        return Err(ApiError::bad(format!(
            "speed = {speed}: allowed [1, {max_speed}], and duration / speed at most {MAX_LIVE_WALL_SECONDS} wall seconds"
        )));
    }
    // The query's duration replaces the scenario's before anything is checked: a step
    // budget is checked against the run that will play (with run.dt = 1e-6, the band's 400 s
    // would be refused although the query asks for 100).
    let req = req.with_set("run.duration", duration);
    let (scenario, cfg) = api::resolve(&req)?;
    let policy = match api::policy_spec(&req)? {
        None => {
            let v = variants(&scenario, false).map_err(api::variant_error)?;
            LivePolicy::from(v.into_iter().next_back().ok_or_else(|| ApiError::bad("no policy"))?.policy)
        }
        Some(spec) => LivePolicy::from_spec(&spec, &cfg, scenario.boundary.as_ref())
            .map_err(|e| ApiError::bad(format!("policy: {e}")))?,
    };
    let line = scenario.safe_threshold() * cfg.pool.capacity;
    // Its own redis-server, the emulated downstream, executors in this process: the defaults.
    let opts = LiveOptions { speed, namespace: "safegate-serve".into(), ..LiveOptions::default() };
    opts.check().map_err(|e| ApiError::bad(e.to_string()))?;
    safegate_live::run::check_offer_rate(&cfg, speed).map_err(|e| ApiError::bad(format!("{ORIGIN}: {e}")))?;
    Ok((LiveRun { cfg, opts, line }, policy))
}

/// Starts the run on its own thread (holding the slot until it ends) and streams it.
pub(crate) fn stream(query: &HashMap<String, String>, slot: sse::Slot) -> Result<Response, ApiError> {
    let (run, policy) = parse(query)?;
    let line = run.line;
    let start = serde_json::json!({
        "policy": policy.name(), "duration": run.cfg.duration, "speed": run.opts.speed,
        "capacity": run.cfg.pool.capacity, "line": line, "traffic": run.cfg.traffic,
    });
    Ok(sse::play(start, slot, move |rt, tx, stop| {
        let mut on_progress = |p: &Progress| {
            let q = p.queue as f64;
            sse::send(
                tx,
                "progress",
                &serde_json::json!({
                    "t": p.t, "queue": q, "line": line,
                    // h = θ·cap − q: positive inside the safe set, in requests.
                    "margin": line - q,
                    "admit": p.admit, "limit": p.concurrency, "accounting": p.acc,
                }),
            );
        };
        let report = stop.block_on(rt, safegate_live::run::run(&run, policy, &mut on_progress))?;
        Ok(serde_json::json!({
            "summary": report.summary, "accounting": report.accounting, "policy": report.policy, "load": report.load,
        }))
    }))
}

/// The single live-run slot.
pub(crate) fn slot() -> Arc<tokio::sync::Semaphore> {
    Arc::new(tokio::sync::Semaphore::new(1))
}
