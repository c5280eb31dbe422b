//! Open-loop load against a server on loopback: `load_client ADDR RATE SECONDS` sends
//! `RATE · SECONDS` `GET /` requests on schedule (each abandoned after 2 s) and prints
//! goodput (200s within 1 s, per second), 503s, failures and p50/p99 latency.

mod support;

use std::time::Duration;

use support::contention::open_loop;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:3000".into()).parse()?;
    let rate: f64 = args.next().map_or(Ok(600.0), |s| s.parse())?;
    let secs: f64 = args.next().map_or(Ok(5.0), |s| s.parse())?;
    if !(rate > 0.0 && rate <= 20_000.0 && secs > 0.0 && secs <= 600.0) {
        return Err("RATE in (0, 20000], SECONDS in (0, 600]".into());
    }
    let s = open_loop(addr, rate, Duration::from_secs_f64(secs), Duration::from_secs(2), Duration::from_secs(1)).await;
    println!(
        "sent {} | 200: {} | 503: {} | failed/timed out: {} | goodput {:.1} req/s | p50 {:.1} ms | p99 {:.1} ms",
        s.sent, s.ok, s.rejected, s.failed, s.goodput, s.p50_ms, s.p99_ms
    );
    Ok(())
}
