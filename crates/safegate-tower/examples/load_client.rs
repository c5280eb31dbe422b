//! Open-loop load against a server on loopback: `load_client ADDR RATE SECONDS` sends
//! `RATE · SECONDS` `GET /` requests on schedule (each abandoned after 2 s, whatever the
//! others do) and prints goodput (`200`s within 1 s, per second), `503`s, failures and the
//! p50/p99 latency of the `200`s.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One `GET /` with `Connection: close`: the status code (0 on a transport error).
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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr: SocketAddr = args.next().unwrap_or_else(|| "127.0.0.1:3000".into()).parse()?;
    let rate: f64 = args.next().map_or(Ok(600.0), |s| s.parse())?;
    let secs: f64 = args.next().map_or(Ok(5.0), |s| s.parse())?;
    if !(rate > 0.0 && rate <= 20_000.0 && secs > 0.0 && secs <= 600.0) {
        return Err("RATE in (0, 20000], SECONDS in (0, 600]".into());
    }
    let n = (rate * secs) as usize;
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        tokio::time::sleep_until((start + Duration::from_secs_f64(i as f64 / rate)).into()).await;
        tasks.push(tokio::spawn(async move {
            let t = Instant::now();
            let code = tokio::time::timeout(Duration::from_secs(2), get_once(addr)).await.unwrap_or(0);
            (code, t.elapsed())
        }));
    }
    let (mut ok, mut rejected, mut failed, mut good) = (0, 0, 0, 0);
    let mut lat = Vec::new();
    for t in tasks {
        match t.await? {
            (200, d) => {
                ok += 1;
                good += usize::from(d <= Duration::from_secs(1));
                lat.push(d.as_secs_f64() * 1e3);
            }
            (503, _) => rejected += 1,
            _ => failed += 1,
        }
    }
    lat.sort_by(f64::total_cmp);
    let q = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1))).copied().unwrap_or(f64::NAN)
    };
    println!(
        "sent {n} | 200: {ok} | 503: {rejected} | failed/timed out: {failed} | goodput {:.1} req/s | p50 {:.1} ms | p99 {:.1} ms",
        good as f64 / secs,
        q(0.5),
        q(0.99)
    );
    Ok(())
}
