//! One run of our stack, safegate-queue, through its public API alone (the path the live
//! system runs on too): `Producer::enqueue`, a `Worker` with a no-op handler,
//! `Queue::stats`, then the latency of turned-away offers.
//!
//! Its path per job: one `FCALL sg_enqueue`, one `XREADGROUP` by a lane, one `FCALL
//! sg_ack`; the books inside the functions that change them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use safegate_queue::{Admission, Job, JobError, Queue, QueueConfig, Reason, Worker};
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use super::harness::{run_timeout, shares, Round, StackReport, OURS};
use crate::error::{Error, Result};

const PATH: &str = "the crate's public API: Producer::enqueue (one FCALL sg_enqueue: grant, bound, count, XADD); \
     a Worker lane's XREADGROUP; the ack (one FCALL sg_ack: XACK, XDEL, count)";

/// Offers timed against a full bound after the run, for the turned-away latency.
const REJECTED_OFFERS: usize = 2000;

/// The stack's row, before its rounds.
pub(super) fn report() -> StackReport {
    StackReport { stack: OURS, built: true, jobs_per_s: None, rounds: Vec::new(), error: None, path: PATH }
}

fn failed(context: &str) -> impl FnOnce(safegate_queue::QueueError) -> Error + '_ {
    move |e| Error::failed(context, e)
}

/// The `q`-quantile of `xs` in milliseconds (nearest rank; `xs` sorted here).
fn quantile_ms(xs: &mut [Duration], q: f64) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_unstable();
    let i = ((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len()) - 1;
    Some(xs[i].as_secs_f64() * 1e3)
}

/// One run: a fresh queue (cap and fallback `n`: every offer admitted, no controller), a
/// worker of `p` lanes, `n` offers from the producers, the books; then `REJECTED_OFFERS`
/// offers against a bound of 1 with no worker, each turned away.
pub(super) async fn round(url: &str, cluster: bool, name: &str, n: u64, p: u32) -> Result<Round> {
    let q = Queue::connect_to(url, cluster, name).await.map_err(failed("connecting"))?;
    q.configure(&QueueConfig { cap: n.max(1), fallback: n.max(1), ..QueueConfig::default() })
        .await
        .map_err(failed("configuring"))?;
    let (stop, stopped) = oneshot::channel::<()>();
    // The handler counts its calls, so the wait for the last acknowledgement does not poll
    // Redis while the jobs flow (the other stacks' waits read in-process counters too).
    let handled = Arc::new(AtomicU64::new(0));
    let h = handled.clone();
    let worker = tokio::spawn(Worker::new(&q).lanes(p as usize).run(
        move |_: Job<u64>| {
            h.fetch_add(1, Ordering::Relaxed);
            async { Ok::<(), JobError>(()) }
        },
        async move {
            let _ = stopped.await;
        },
    ));
    // The lanes' connections and first reads before the clock starts (as the other stacks).
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t0 = Instant::now();
    let timed = async {
        let mut producers = JoinSet::new();
        for count in shares(n) {
            let p = q.producer::<u64>();
            producers.spawn(async move {
                let mut lat = Vec::with_capacity(count as usize);
                for j in 0..count {
                    let t = Instant::now();
                    let a = p.enqueue(&j).await.map_err(failed("enqueueing"))?;
                    lat.push(t.elapsed());
                    if !a.is_admitted() {
                        return Err(Error::Message(format!("an offer was not admitted ({a:?}) with a bound of {n}")));
                    }
                }
                Ok(lat)
            });
        }
        let mut lat = Vec::with_capacity(n as usize);
        while let Some(r) = producers.join_next().await {
            lat.extend(r.map_err(|e| Error::failed("a producer task panicked", e))??);
        }
        let enqueue = t0.elapsed();
        let deadline = t0 + run_timeout(n);
        loop {
            if handled.load(Ordering::Relaxed) < n {
                if Instant::now() > deadline {
                    return Err(Error::Message(format!(
                        "timed out: {} of {n} jobs handled",
                        handled.load(Ordering::Relaxed)
                    )));
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
                continue;
            }
            let s = q.stats().await.map_err(failed("reading the books"))?;
            if s.completed >= n {
                break;
            }
            if Instant::now() > deadline {
                return Err(Error::Message(format!("timed out: {} of {n} jobs done", s.completed)));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        Ok((enqueue, t0.elapsed(), lat))
    }
    .await;
    let _ = stop.send(());
    let _ = worker.await;
    let (enqueue, secs, mut lat) = timed?;
    let s = q.stats().await.map_err(failed("reading the books"))?;
    if !(s.balanced() && s.admitted == n && s.completed == n) {
        return Err(Error::Message(format!("the books do not balance: {n} jobs offered, {s:?}")));
    }
    // Turned away: a bound of 1, one job waiting, no worker.
    q.configure(&QueueConfig { cap: 1, fallback: 1, ..QueueConfig::default() }).await.map_err(failed("configuring"))?;
    let pr = q.producer::<u64>();
    if !pr.enqueue(&0).await.map_err(failed("enqueueing"))?.is_admitted() {
        return Err(Error::Message("the first job under a bound of 1 was turned away".into()));
    }
    let mut rejected = Vec::with_capacity(REJECTED_OFFERS);
    for j in 0..REJECTED_OFFERS as u64 {
        let t = Instant::now();
        let a = pr.enqueue(&j).await.map_err(failed("enqueueing"))?;
        rejected.push(t.elapsed());
        if !matches!(a, Admission::Rejected { reason: Reason::Full, .. }) {
            return Err(Error::Message(format!("an offer over a full bound got {a:?}")));
        }
    }
    q.destroy().await.map_err(failed("deleting the queue's keys"))?;
    Ok(Round {
        jobs_per_s: n as f64 / secs.as_secs_f64(),
        secs: secs.as_secs_f64(),
        enqueue_secs: enqueue.as_secs_f64(),
        completed: s.completed,
        lost: s.admitted as i64 - (s.completed + s.failed + s.dead + s.waiting()) as i64,
        admitted_p50_ms: quantile_ms(&mut lat, 0.5),
        admitted_p99_ms: quantile_ms(&mut lat, 0.99),
        rejected_p99_ms: quantile_ms(&mut rejected, 0.99),
    })
}
