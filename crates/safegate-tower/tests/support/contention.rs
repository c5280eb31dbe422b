//! Shared by the end-to-end and burst tests: a handler whose
//! service time grows like the seed's pool past a concurrency `C` (the model's `(C/n)²`
//! slowdown, crates/safegate-sim/src/model.rs), the router with and without the layer, and
//! an open-loop HTTP/1.1 load generator over loopback.
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use safegate_tower::http::HttpAdmissionLayer;
use safegate_tower::AdmissionLayer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The contended handler: with `n` requests in it, each takes `base · max(1, (n/C)²)`, so
/// throughput `n / time` peaks at `C / base` with `n = C` and falls as `C² / (base · n)`
/// past it (the seed's executor pool, with requests for executors).
#[derive(Debug, Clone)]
pub struct Contended {
    pub knee: usize,
    pub base: Duration,
    active: Arc<AtomicUsize>,
}

impl Contended {
    pub fn new(knee: usize, base: Duration) -> Self {
        Self { knee, base, active: Arc::new(AtomicUsize::new(0)) }
    }

    /// The handler's peak throughput, `C / base` [req/s].
    pub fn peak(&self) -> f64 {
        self.knee as f64 / self.base.as_secs_f64()
    }

    /// One request: `base · max(1, (n/C)²)` with `n` requests in the handler, this one
    /// included. A request abandoned mid-way (its future dropped) leaves the count too.
    pub async fn handle(&self) -> &'static str {
        struct Leave<'a>(&'a AtomicUsize);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let n = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        let _leave = Leave(&self.active);
        let x = n as f64 / self.knee as f64;
        tokio::time::sleep(self.base.mul_f64(x.max(1.0).powi(2))).await;
        "ok"
    }

    /// Requests in the handler now.
    pub fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }
}

/// The router: `/` is the contended handler, under `layer` if given.
pub fn router(handler: Contended, layer: Option<AdmissionLayer>) -> Router {
    let h = handler.clone();
    let app = Router::new().route("/", get(move || async move { h.handle().await }));
    match layer {
        Some(layer) => app.layer(HttpAdmissionLayer::new(layer)),
        None => app,
    }
}

/// The layer the example and the tests use: the default controller (`peak`) under the
/// default boundary, at most `max` requests in the handler. In reject mode the barrier is
/// held by the limit itself (at most ⌊θ·Q⌋ = ⌊0.7·200⌋ = 140 in service, above `max`), so
/// the capacity only has to leave the controller its range (docs/tower.md, "What the
/// barrier means for a service").
pub fn layer(max: u32) -> AdmissionLayer {
    AdmissionLayer::builder().max_concurrency(max).capacity(200).build().expect("valid settings")
}

/// What an open-loop run measured.
#[derive(Debug, Clone, Default)]
pub struct LoadStats {
    pub sent: usize,
    pub ok: usize,
    pub rejected: usize,
    pub failed: usize,
    /// Successful responses within the SLO, per second of the run.
    pub goodput: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub wall_s: f64,
}

/// One `GET /` with `Connection: close`; the status code (0 on a transport error).
async fn get_once(addr: SocketAddr) -> u16 {
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else { return 0 };
    if s.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").await.is_err() {
        return 0;
    }
    let mut buf = Vec::with_capacity(256);
    if s.read_to_end(&mut buf).await.is_err() {
        return 0;
    }
    // "HTTP/1.1 200 OK"
    std::str::from_utf8(buf.get(9..12).unwrap_or_default()).ok().and_then(|c| c.parse().ok()).unwrap_or(0)
}

/// Open-loop load: `rate` requests per second for `duration` (so `rate · duration`
/// requests, each started on schedule whatever the others do), each abandoned after
/// `timeout`; goodput counts `200`s answered within `slo`.
pub async fn open_loop(addr: SocketAddr, rate: f64, duration: Duration, timeout: Duration, slo: Duration) -> LoadStats {
    let n = (rate * duration.as_secs_f64()).round() as usize;
    let start = tokio::time::Instant::now();
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        tokio::time::sleep_until(start + Duration::from_secs_f64(i as f64 / rate)).await;
        tasks.push(tokio::spawn(async move {
            let t0 = Instant::now();
            let code = tokio::time::timeout(timeout, get_once(addr)).await.unwrap_or(0);
            (code, t0.elapsed())
        }));
    }
    let mut lat = Vec::new();
    let mut st = LoadStats { sent: n, ..Default::default() };
    let mut good = 0usize;
    for t in tasks {
        let (code, d) = t.await.unwrap_or((0, timeout));
        match code {
            200 => {
                st.ok += 1;
                lat.push(d.as_secs_f64() * 1e3);
                if d <= slo {
                    good += 1;
                }
            }
            503 => st.rejected += 1,
            _ => st.failed += 1,
        }
    }
    st.wall_s = start.elapsed().as_secs_f64();
    st.goodput = good as f64 / duration.as_secs_f64();
    lat.sort_by(f64::total_cmp);
    let q = |p: f64| if lat.is_empty() { f64::INFINITY } else { lat[((lat.len() - 1) as f64 * p).round() as usize] };
    st.p50_ms = q(0.5);
    st.p99_ms = q(0.99);
    st
}
