//! An axum server with the admission layer: a contended handler (service time grows like
//! `(n/C)²` past `C = 8` in flight, peak 400 req/s), `503` + `Retry-After` for rejections,
//! and Prometheus metrics at `/metrics`.
//!
//! ```sh
//! cargo run --release -p safegate-tower --features metrics --example axum_server -- 127.0.0.1:3000
//! cargo run --release -p safegate-tower --example load_client -- 127.0.0.1:3000 600 5
//! curl -s 127.0.0.1:3000/metrics | grep safegate_
//! ```

mod support;

use std::time::Duration;

use axum::routing::get;
use support::contention::{layer, router, Contended};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:3000".into());
    let prometheus = metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder()?;
    let app = router(Contended::new(8, Duration::from_millis(20)), Some(layer(16)))
        .route("/metrics", get(move || std::future::ready(prometheus.render())));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
