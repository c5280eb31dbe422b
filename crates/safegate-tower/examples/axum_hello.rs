//! A slow handler behind the admission layer: `cargo run --example axum_hello`.
use std::time::Duration;

use axum::{routing::get, Router};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A handler with a slow dependency: 50 ms a request.
    let slow = || async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        "done\n"
    };
    // At most 100 requests in the handler; past that a `503` with `Retry-After`.
    let app = Router::new().route("/", get(slow)).layer(safegate_tower::http::layer()?);
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:3000".into());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
