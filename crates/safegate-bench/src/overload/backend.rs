//! The backends every stack wraps: in-process tower services with no sockets, so what is
//! measured is the limiter and the backend's shape, not a network stack; and PostgreSQL
//! (`safegate_live::pg`), a real database whose contention nobody here chose.
//!
//! Each has a `health` factor (shared by all clones, changeable while it runs) that scales
//! its speed: a request's service time is divided by the health at its entry, so health
//! 0.5 halves the backend's capacity. A request's work is a tokio sleep owned by its
//! response future; dropping the future (a client that gave up) cancels the work, and the
//! collapse backend's count of requests inside it is returned by a drop guard, so an
//! abandoned request stops slowing the others at once (the axum example's handler,
//! `crates/safegate-tower/examples/support/contention.rs`, decrements after its sleep and
//! leaks the count when the request is cancelled mid-sleep).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use safegate_tower::BoxError;
use tokio::sync::Semaphore;
use tower::Service;

use safegate_live::pg::Pg;

/// Longest service time a backend sleeps for: far past any client timeout the CLI accepts,
/// and short enough that `Duration` arithmetic cannot overflow at absurd `n`.
const MAX_SERVICE: Duration = Duration::from_secs(3600);

/// The response future of every backend (only PostgreSQL's ever fails: a transaction that
/// did not commit after its retries).
pub(crate) type BackendFuture = Pin<Box<dyn Future<Output = Result<(), BoxError>> + Send>>;

/// A backend's health, shared by all its clones: service times are divided by it.
#[derive(Debug, Clone)]
pub(crate) struct Health(Arc<AtomicU64>);

impl Health {
    pub(crate) fn new(h: f64) -> Self {
        Health(Arc::new(AtomicU64::new(h.to_bits())))
    }
    pub(crate) fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
    pub(crate) fn set(&self, h: f64) {
        self.0.store(h.to_bits(), Ordering::Relaxed);
    }
}

/// `base / health`, capped at [`MAX_SERVICE`].
fn scaled(base: Duration, health: f64, factor: f64) -> Duration {
    let secs = base.as_secs_f64() * factor / health;
    if secs.is_finite() && secs < MAX_SERVICE.as_secs_f64() {
        Duration::from_secs_f64(secs.max(0.0))
    } else {
        MAX_SERVICE
    }
}

/// The collapsing backend: with `n` requests inside (this one included, counted at its
/// entry) a request takes `base/health · max(1, (n/C)²)`, so throughput `n / time` peaks at
/// `C·health/base` with `n = C` and falls as `C²·health/(base·n)` past it: the seed's
/// executor pool, whose work slows with contention. The best fixed concurrency limit is `C`.
#[derive(Debug, Clone)]
pub(crate) struct Collapse {
    knee: usize,
    base: Duration,
    health: Health,
    active: Arc<AtomicUsize>,
}

impl Collapse {
    pub(crate) fn new(knee: usize, base: Duration, health: Health) -> Self {
        Collapse { knee, base, health, active: Arc::new(AtomicUsize::new(0)) }
    }

    /// Service time of a request that finds `n` requests inside, itself included.
    pub(crate) fn service_time(&self, n: usize) -> Duration {
        let x = n as f64 / self.knee as f64;
        scaled(self.base, self.health.get(), x.max(1.0).powi(2))
    }

    /// Requests inside now.
    #[cfg(test)]
    pub(crate) fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }
}

/// Takes one off the collapse backend's count when its request ends, however it ends
/// (completed, or its future dropped by a client that gave up).
struct Inside(Arc<AtomicUsize>);

impl Drop for Inside {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The queueing backend: `W` workers behind a FIFO (tokio's fair semaphore); a request
/// holds a worker for `base/health`. Throughput is flat at `W·health/base` past `W` in
/// flight; latency grows with the backend's own queue. The best fixed limit is `W`.
#[derive(Debug, Clone)]
pub(crate) struct Queueing {
    base: Duration,
    health: Health,
    workers: Arc<Semaphore>,
}

impl Queueing {
    pub(crate) fn new(workers: usize, base: Duration, health: Health) -> Self {
        Queueing { base, health, workers: Arc::new(Semaphore::new(workers)) }
    }
}

/// A fast healthy service far below its capacity: answers after one `yield_now`, so a
/// request is in flight across one scheduling point (an answer in the same poll would
/// never have two requests in a limiter at once, and no limiter would ever bind).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fast;

/// One of the backends, as the one type every stack wraps.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    Collapse(Collapse),
    Queueing(Queueing),
    Fast(Fast),
    Postgres(Pg),
}

impl Service<()> for Backend {
    type Response = ();
    type Error = BoxError;
    type Future = BackendFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: ()) -> BackendFuture {
        match self {
            Backend::Collapse(c) => {
                // Counted at entry (in `call`, not at the first poll), and the guard owned by
                // the future: dropped unpolled or mid-sleep, it still gives the count back.
                let n = c.active.fetch_add(1, Ordering::SeqCst) + 1;
                let guard = Inside(c.active.clone());
                let t = c.service_time(n);
                Box::pin(async move {
                    let _inside = guard;
                    tokio::time::sleep(t).await;
                    Ok(())
                })
            }
            Backend::Queueing(q) => {
                let workers = q.workers.clone();
                let (base, health) = (q.base, q.health.clone());
                Box::pin(async move {
                    // The semaphore is never closed, so `acquire_owned` cannot fail; a
                    // closed one would mean a worker-less backend, answered at once.
                    let _worker = workers.acquire_owned().await.ok();
                    tokio::time::sleep(scaled(base, health.get(), 1.0)).await;
                    Ok(())
                })
            }
            Backend::Fast(_) => Box::pin(async {
                tokio::task::yield_now().await;
                Ok(())
            }),
            Backend::Postgres(pg) => {
                let pg = pg.clone();
                Box::pin(async move { pg.call().await.map_err(Into::into) })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;

    fn collapse(knee: usize) -> Collapse {
        Collapse::new(knee, Duration::from_millis(10), Health::new(1.0))
    }

    #[test]
    fn collapse_service_time_is_quadratic_past_the_knee() {
        let c = collapse(32);
        assert_eq!(c.service_time(1), Duration::from_millis(10));
        assert_eq!(c.service_time(32), Duration::from_millis(10));
        assert_eq!(c.service_time(64), Duration::from_millis(40), "n = 2C is 4× base");
        c.health.set(0.5);
        assert_eq!(c.service_time(64), Duration::from_millis(80), "half health, twice as slow");
        assert_eq!(c.service_time(usize::MAX), MAX_SERVICE);
    }

    /// Paused time: 2C requests entered together, the last one (n = 2C) takes 4× base.
    #[tokio::test(start_paused = true)]
    async fn the_last_of_2c_requests_takes_four_times_base() {
        let c = collapse(4);
        let mut b = Backend::Collapse(c.clone());
        let futs: Vec<_> = (0..8).map(|_| b.call(())).collect();
        assert_eq!(c.active(), 8);
        let start = tokio::time::Instant::now();
        let mut last = futs.into_iter().last().expect("8 futures");
        (&mut last).await.ok();
        assert_eq!(start.elapsed(), Duration::from_millis(40));
        drop(last);
        // The other seven were dropped unpolled: the guard gave their count back.
        assert_eq!(c.active(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn abandoned_requests_give_their_count_back() {
        let c = collapse(32);
        let mut b = Backend::Collapse(c.clone());
        let mut futs: Vec<_> = (0..100).map(|_| b.call(())).collect();
        // Poll each once: all are mid-sleep.
        for f in &mut futs {
            let first = poll_fn(|cx| Poll::Ready(f.as_mut().poll(cx))).await;
            assert!(first.is_pending());
        }
        assert_eq!(c.active(), 100);
        // A client timeout shorter than the service time abandons them all.
        let all = async {
            for f in futs {
                f.await.ok();
            }
        };
        assert!(tokio::time::timeout(Duration::from_millis(5), all).await.is_err());
        assert_eq!(c.active(), 0);
        // And a completed one too.
        poll_fn(|cx| b.poll_ready(cx)).await.ok();
        b.call(()).await.ok();
        assert_eq!(c.active(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn queueing_serves_w_at_a_time_in_order() {
        let mut b = Backend::Queueing(Queueing::new(2, Duration::from_millis(10), Health::new(1.0)));
        let start = tokio::time::Instant::now();
        let handles: Vec<_> = (0..5)
            .map(|_| {
                let f = b.call(());
                tokio::spawn(async move {
                    f.await.ok();
                    start.elapsed()
                })
            })
            .collect();
        let mut ends = Vec::new();
        for h in handles {
            ends.push(h.await.expect("task"));
        }
        let ms: Vec<u128> = ends.iter().map(|d| d.as_millis()).collect();
        assert_eq!(ms, vec![10, 10, 20, 20, 30]);
    }
}
