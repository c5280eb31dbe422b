//! Client-side throttling with a plain `tower::Service`: a client of a remote dependency
//! that fails (and slows) when too many calls are in it. The layer on the client side
//! counts the dependency's errors as failures (the default, `ErrIsFailure`), lowers its
//! limit, and fails the calls past it at once with `Overloaded` instead of piling them on.
//!
//! ```sh
//! cargo run --release -p safegate-tower --example client_throttle
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use safegate_tower::{AdmissionLayer, Overloaded};
use tower::{service_fn, BoxError, Service, ServiceBuilder, ServiceExt};

/// The remote dependency: 10 ms a call, and an error for every call made while more than
/// 8 others are in it (a database out of connections, say).
fn remote(active: Arc<AtomicUsize>) -> impl Service<u64, Response = u64, Error = BoxError, Future: Send> + Clone {
    service_fn(move |id: u64| {
        let active = active.clone();
        async move {
            let n = active.fetch_add(1, Ordering::SeqCst) + 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
            active.fetch_sub(1, Ordering::SeqCst);
            if n > 8 {
                Err(BoxError::from(format!("call {id}: too many connections ({n})")))
            } else {
                Ok(id)
            }
        }
    })
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let layer = AdmissionLayer::builder().name("remote-client").max_concurrency(64).build()?;
    let client = ServiceBuilder::new().layer(layer.clone()).service(remote(Arc::default()));
    // 64 workers calling as fast as they can for 3 seconds.
    let until = Instant::now() + Duration::from_secs(3);
    let workers: Vec<_> = (0..64)
        .map(|w| {
            let mut client = client.clone();
            tokio::spawn(async move {
                let (mut ok, mut failed, mut throttled) = (0u64, 0u64, 0u64);
                let mut id = w << 32;
                while Instant::now() < until {
                    id += 1;
                    match client.ready().await?.call(id).await {
                        Ok(_) => ok += 1,
                        Err(e) if e.is::<Overloaded>() => {
                            throttled += 1;
                            // Back off for a moment, as a real client would (the hint is
                            // `Overloaded::retry_after`, for a caller to pass on).
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                        Err(_) => failed += 1,
                    }
                }
                Ok::<_, BoxError>((ok, failed, throttled))
            })
        })
        .collect();
    let (mut ok, mut failed, mut throttled) = (0, 0, 0);
    for w in workers {
        let (o, f, t) = w.await??;
        (ok, failed, throttled) = (ok + o, failed + f, throttled + t);
    }
    let s = layer.snapshot();
    println!("succeeded {ok} | failed at the remote {failed} | throttled in the client {throttled}");
    println!("limit now {} (started at 64), {} decisions", s.limit, s.decisions);
    Ok(())
}
