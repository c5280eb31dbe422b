//! An axum server with the admission layer in front of a contended handler (its service
//! time grows like `(n/C)²` past `C = 8` requests in flight: peak 400 req/s at 20 ms),
//! `503` + `Retry-After` for rejections, and Prometheus metrics at `/metrics`.
//!
//! ```sh
//! cargo run --release -p safegate-tower --features metrics --example axum_server -- 127.0.0.1:3000
//! cargo run --release -p safegate-tower --example load_client -- 127.0.0.1:3000 600 5
//! curl -s 127.0.0.1:3000/metrics | grep safegate_
//! ```
//!
//! Without the layer (`--no-layer` as the second argument) the same load collapses the
//! handler: every request waits behind all the others.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use safegate_tower::AdmissionLayer;

/// A contended dependency: with `n` requests in it, each takes `base · max(1, (n/C)²)`,
/// so its throughput peaks at `C / base` and falls past `n = C`.
#[derive(Clone)]
struct Contended {
    knee: usize,
    base: Duration,
    active: Arc<AtomicUsize>,
}

impl Contended {
    async fn handle(self) -> &'static str {
        struct Leave(Arc<AtomicUsize>);
        impl Drop for Leave {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let n = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        let _leave = Leave(self.active.clone());
        let x = (n as f64 / self.knee as f64).max(1.0);
        tokio::time::sleep(self.base.mul_f64(x * x)).await;
        "ok\n"
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:3000".into());
    let with_layer = args.next().as_deref() != Some("--no-layer");
    let prometheus = metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder()?;
    let handler = Contended { knee: 8, base: Duration::from_millis(20), active: Arc::default() };
    let mut app = Router::new().route("/", get(move || handler.clone().handle()));
    if with_layer {
        // The default controller (`peak`) under the default boundary, at most 16 in service.
        app = app.layer(AdmissionLayer::builder().name("contended").max_concurrency(16).build_http()?);
    }
    let app = app.route("/metrics", get(move || std::future::ready(prometheus.render())));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!(
        "listening on http://{} ({} the layer)",
        listener.local_addr()?,
        if with_layer { "with" } else { "without" }
    );
    axum::serve(listener, app).await?;
    Ok(())
}
