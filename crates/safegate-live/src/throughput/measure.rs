//! Measuring `X(n)`: the downstream emulator on loopback, `n` closed-loop HTTP clients per
//! level, completions per model second.
//!
//! Each level starts a fresh emulator with its own [`ModelClock`]. Its speed is chosen so a
//! request's mean wall time in service is at least [`Options::min_service_wall`], so the
//! HTTP round trip between two requests (0.3 ms on an idle loopback, more on a busy machine)
//! stays a minor share of it, and the clients send at most [`Options::max_request_rate`]
//! requests per wall second, so the machine's CPU is not the bottleneck. The per-request time is not taken from the law
//! under test: the first level assumes the unloaded `1/s`, each later one the sojourn time
//! the level before measured (`n̄/X` by Little's law), which never overestimates it when
//! contention only grows with `n`.
//!
//! Throughput is the emulator's completions over the window divided by the model time that
//! passed; the concurrency is the time average of the requests it had in service (the
//! emulator's exact `∫ n dt`, [`DownstreamStats::request_seconds`](crate::downstream::DownstreamStats::request_seconds)),
//! which is what the contended rate depends on. It is under the clients' `n` by the share
//! of time each spends between answer and next request. (Sampling the count from a tokio
//! task instead reads it low: the timer fires in the same wake-up as a client's answer,
//! just before its next request arrives.)

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::{Deserialize, Serialize};

use super::fit::Point;
use super::Options;
use crate::downstream::{Downstream, DownstreamConfig};
use crate::{LiveError, ModelClock};

/// One measured concurrency level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// Closed-loop clients `n`.
    pub clients: u32,
    /// The time-averaged number of requests the emulator had in service.
    pub in_service: f64,
    /// Completions per model second \[req/s\].
    pub throughput: f64,
    /// Completions in the window.
    pub completions: u64,
    /// The window in model seconds.
    pub model_seconds: f64,
    /// The window in wall seconds.
    pub wall_seconds: f64,
    /// The model clock's speed at this level (model seconds per wall second).
    pub speed: f64,
    /// Requests answered with anything but 2xx, or not answered, in the window (0 expected).
    pub failed: u64,
}

impl Level {
    /// The level as a fit point: `n` is the time-averaged in-service count, the error of
    /// `ln X` that of a Poisson count, `1/√completions`.
    pub fn point(&self) -> Point {
        Point { n: self.in_service, throughput: self.throughput, log_se: 1.0 / (self.completions as f64).sqrt() }
    }
}

/// A measured throughput curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// The emulator's configured `s` \[req/s\].
    pub rate: f64,
    /// The emulator's configured `C`.
    pub comfortable: f64,
    /// The levels, by increasing `n`.
    pub levels: Vec<Level>,
    /// Wall time of the whole measurement \[s\].
    pub wall_seconds: f64,
}

impl Curve {
    /// The levels as fit points.
    pub fn points(&self) -> Vec<Point> {
        self.levels.iter().map(Level::point).collect()
    }
}

/// Measure `X(n)` at each of [`Options::levels`], one fresh emulator per level at health 1
/// with exponential work. [`LiveError::Invalid`] for options out of range,
/// [`LiveError::Bind`] when no loopback port is free, [`LiveError::Downstream`] when the
/// clients' requests fail.
pub async fn measure(opts: &Options) -> Result<Curve, LiveError> {
    opts.check()?;
    let started = Instant::now();
    let levels = opts.levels();
    let mut out = Vec::with_capacity(levels.len());
    // The mean time a request spends in service, model seconds: unloaded at first.
    let mut sojourn = 1.0 / opts.pool.rate;
    for (i, &n) in levels.iter().enumerate() {
        let wall_target = opts.min_service_wall.as_secs_f64().max(n as f64 / opts.max_request_rate);
        let speed = (sojourn / wall_target).clamp(1e-3, opts.max_speed);
        let level = measure_level(opts, n, speed, opts.seed.wrapping_add(i as u64)).await?;
        if level.throughput > 0.0 {
            sojourn = sojourn.max(level.in_service / level.throughput);
        }
        out.push(level);
    }
    Ok(Curve {
        rate: opts.pool.rate,
        comfortable: opts.pool.comfortable,
        levels: out,
        wall_seconds: started.elapsed().as_secs_f64(),
    })
}

async fn measure_level(opts: &Options, n: u32, speed: f64, seed: u64) -> Result<Level, LiveError> {
    let mut cfg = DownstreamConfig::new(ModelClock::start(speed));
    cfg.pool = opts.pool;
    cfg.seed = seed;
    let ds = Downstream::start(cfg, ([127, 0, 0, 1], 0).into()).await?;
    let uri: hyper::Uri = format!("{}/work", ds.url())
        .parse()
        .map_err(|e| LiveError::Downstream { url: ds.url(), message: format!("bad URL: {e}") })?;
    let http = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(n as usize)
        .build::<_, Empty<Bytes>>(HttpConnector::new());
    let stop = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> =
        (0..n).map(|_| tokio::spawn(client(http.clone(), uri.clone(), stop.clone(), failed.clone()))).collect();

    tokio::time::sleep(opts.warmup).await;
    let (a, failed_a, wall_a) = (ds.stats(), failed.load(Ordering::Relaxed), Instant::now());
    tokio::time::sleep(opts.window).await;
    let (b, failed_b, wall_b) = (ds.stats(), failed.load(Ordering::Relaxed), Instant::now());

    stop.store(true, Ordering::Relaxed);
    for c in &clients {
        c.abort();
    }
    for c in clients {
        let _ = c.await;
    }
    drop(http);
    ds.shutdown().await;

    let completions = b.served.saturating_sub(a.served);
    let model_seconds = b.t_model - a.t_model;
    let failed = failed_b - failed_a;
    if failed > 0 {
        return Err(LiveError::Downstream {
            url: uri.to_string(),
            message: format!("{failed} of {} requests failed at n = {n}", completions + failed),
        });
    }
    Ok(Level {
        clients: n,
        in_service: if model_seconds > 0.0 { (b.request_seconds - a.request_seconds) / model_seconds } else { 0.0 },
        throughput: if model_seconds > 0.0 { completions as f64 / model_seconds } else { 0.0 },
        completions,
        model_seconds,
        wall_seconds: (wall_b - wall_a).as_secs_f64(),
        speed,
        failed,
    })
}

/// One closed-loop client: a request, its answer, the next, until `stop`.
async fn client(
    http: Client<HttpConnector, Empty<Bytes>>,
    uri: hyper::Uri,
    stop: Arc<AtomicBool>,
    failed: Arc<AtomicU64>,
) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(req) = hyper::Request::post(uri.clone()).body(Empty::<Bytes>::new()) else { return };
        let ok = match http.request(req).await {
            Ok(resp) => {
                let ok = resp.status().is_success();
                ok && resp.into_body().collect().await.is_ok()
            }
            Err(_) => false,
        };
        if !ok && !stop.load(Ordering::Relaxed) {
            failed.fetch_add(1, Ordering::Relaxed);
            // Do not spin on a dead server.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}
