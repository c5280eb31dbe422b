//! One run of our stack: safegate-live's backlog and executor pool on fresh keys.
//!
//! Our path per job: one `EVALSHA` of the enqueue script (read the gate, count, `XADD`),
//! one `XREADGROUP` by an executor, one `EVALSHA` of the acknowledge script (`XACK`,
//! `XDEL`, count, the job's time in the system); every change of the books inside the
//! script that makes it.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use safegate_live::backlog::{Admission, Backlog};
use safegate_live::executor::{ExecutorConfig, Pool};
use tokio::task::JoinSet;

use super::harness::{run_timeout, shares, Round, StackReport, OURS};
use crate::error::{Error, Result};

const PATH: &str = "enqueue: one EVALSHA (read the gate, count, XADD); fetch: one XREADGROUP per job; \
     acknowledge: one EVALSHA (XACK, XDEL, count, time in the system)";

/// Our stack's row, before its rounds.
pub(super) fn report() -> StackReport {
    StackReport { stack: OURS, built: true, jobs_per_s: None, rounds: Vec::new(), error: None, path: PATH }
}

fn live(context: &str) -> impl FnOnce(safegate_live::LiveError) -> Error + '_ {
    move |e| Error::failed(context, e)
}

/// One run: a fresh namespace, a pool of `p` executors with no downstream, `n` offers from
/// the producers (share 1, bound `n`: every one admitted), then the books.
pub(super) async fn round(url: &str, ns: &str, n: u64, p: u32) -> Result<Round> {
    let b = Backlog::connect(url, ns).await.map_err(live("connecting"))?;
    b.reset().await.map_err(live("resetting the backlog"))?;
    b.publish(1.0, None, n).await.map_err(live("publishing the gate"))?;
    let cfg = ExecutorConfig { executors: p, slots: p, downstream: None, ..ExecutorConfig::default() };
    let pool = Pool::start(b.clone(), cfg).await.map_err(live("starting the executors"))?;
    let stats = pool.stats();
    let t0 = Instant::now();
    let timed = async {
        let mut producers = JoinSet::new();
        for (i, count) in shares(n).into_iter().enumerate() {
            let b = b.clone();
            producers.spawn(async move {
                for j in 0..count {
                    let job = format!("{i}-{j}");
                    match b.offer(0.0, &job, false).await.map_err(live("enqueueing"))? {
                        Admission::Admitted => {}
                        other => {
                            return Err(Error::Message(format!(
                                "job {job} was not admitted ({other:?}) with share 1 and bound {n}"
                            )))
                        }
                    }
                }
                Ok(())
            });
        }
        while let Some(r) = producers.join_next().await {
            r.map_err(|e| Error::failed("a producer task panicked", e))??;
        }
        let enqueue = t0.elapsed();
        let deadline = t0 + run_timeout(n);
        loop {
            let done = stats.done.load(Ordering::Relaxed);
            if done >= n {
                break;
            }
            if Instant::now() > deadline {
                return Err(Error::Message(format!(
                    "timed out: {done} of {n} jobs acknowledged after {:.0} s",
                    run_timeout(n).as_secs_f64()
                )));
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Ok((enqueue, t0.elapsed()))
    }
    .await;
    pool.stop(Duration::from_secs(2)).await;
    let (enqueue, secs) = timed?;
    let acc = b.accounting().await.map_err(live("reading the books"))?;
    if acc.admitted != n || acc.completed != n || acc.lost() != 0 {
        return Err(Error::Message(format!(
            "the books do not balance: {n} jobs offered, admitted {}, completed {}, failed {}, \
             in the backlog {}, lost {}",
            acc.admitted,
            acc.completed,
            acc.failed,
            acc.in_backlog,
            acc.lost()
        )));
    }
    Ok(Round {
        jobs_per_s: n as f64 / secs.as_secs_f64(),
        secs: secs.as_secs_f64(),
        enqueue_secs: enqueue.as_secs_f64(),
        completed: acc.completed,
        lost: acc.lost(),
        admitted_p50_ms: None,
        admitted_p99_ms: None,
        rejected_p99_ms: None,
    })
}
