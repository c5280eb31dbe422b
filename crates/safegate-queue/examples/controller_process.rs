//! A controller as its own process: `peak+pool` under a boundary's filter (backlog ≤ 0.7·Q,
//! ε = 1 % over 600 s), on a lease. Run two: one leads, the other takes over when it dies.
//!
//! `cargo run -p safegate-queue --example controller_process -- URL QUEUE ID [LEASE_MS] [Q]`
use std::time::Duration;

use safegate_core::boundary::Boundary;
use safegate_queue::{Controller, Queue};

const BOUNDARY: &str = "[barrier]\nthreshold = 0.7\n[probability]\nepsilon = 0.01\nhorizon = 600\n";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(url), Some(name), Some(id)) = (args.get(1), args.get(2), args.get(3)) else {
        return Err("usage: controller_process URL QUEUE ID [LEASE_MS] [Q]".into());
    };
    let lease = Duration::from_millis(args.get(4).map_or(Ok(2000), |s| s.parse())?);
    let capacity: u64 = args.get(5).map_or(Ok(1000), |s| s.parse())?;
    let queue = Queue::connect(url, name).await?;
    let boundary = Boundary::from_toml(BOUNDARY, &[])?;
    let (controller, _settings) = Controller::with_boundary(&queue, &boundary, "peak+pool", capacity, 8)?;
    let report = controller
        .id(id.clone())
        .lease(lease)
        .run(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    eprintln!("{report:?}");
    Ok(())
}
