//! The peer: apalis-redis 1.x, with the feature `peers` (without it, a row saying it is
//! not built).
//!
//! apalis-redis's path per job, as read in its 1.0.0 sources (apalis-core 1.0.0):
//!
//! - enqueue (`TaskSink::push`): one `EVALSHA` of `batch_push.lua` with one task:
//!   `HSETNX` of the payload into `Q:data`, `HMSET` of a per-task metadata hash
//!   `Q:meta:ID` (attempts, status, …), `RPUSH` of the id onto `Q:active`, a `PUBLISH`
//!   (events on by default) and a reset of the signal list (`DEL` + `LPUSH`).
//! - fetch: the worker's single backend stream runs `fetch_next.lua` for a batch of up
//!   to `batch_size` (10) ids: `LRANGE` + `LTRIM` of `Q:active`, `SADD` to the worker's
//!   inflight set, `HMGET` of the payloads and one `HGETALL` per task's metadata.
//! - lock (`lock_tasks`, on by default): the job's `Lock` event goes through a channel
//!   and is written in batches by `acquire_leases.lua` (`SISMEMBER`, `LREM` of the id
//!   from `Q:active` (a scan of the whole waiting list), `SADD`, `HSET` of the metadata,
//!   a `PUBLISH`).
//! - acknowledge (`persist_results`, on by default): the job's `Complete` event, in
//!   batches, by `handle_results.lua` (`SREM` from the inflight set, `SADD` to
//!   `Q:done`, a `PUBLISH`, `HSET` of the result and status into the metadata).
//!
//! Lock and acknowledgement batches are written by the same backend stream between
//! fetches, one script at a time. The worker runs the handler futures concurrently,
//! limited here to P by tower's `ConcurrencyLimit`. With nothing to fetch, the stream
//! waits for its next wake-up: we poll every 1 ms (`poll_with_interval`); without a
//! poll strategy only a finishing job or the next heartbeat (30 s) wakes it. Done jobs
//! stay in Redis (their metadata hash and the done set): the keys are deleted after each
//! round, outside the timed part.

/// The peer's name in the report.
pub(super) const NAME: &str = "apalis-redis";

#[cfg(feature = "peers")]
pub(super) use built::{report, round};
#[cfg(not(feature = "peers"))]
pub(super) use stub::{report, round};

#[cfg(feature = "peers")]
mod built {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use apalis_core::backend::ext::BackendExt;
    use apalis_core::backend::TaskSink;
    use apalis_core::worker::builder::WorkerBuilder;
    use apalis_core::worker::context::WorkerContext;
    use apalis_redis::{Config, RedisStorage};
    use tokio::task::JoinSet;
    use tower::limit::ConcurrencyLimitLayer;

    use super::super::harness::{run_timeout, shares, Round, StackReport};
    use super::NAME;
    use crate::error::{chain, Error, Result};

    const PATH: &str = "enqueue: one EVALSHA (HSETNX payload, HMSET a metadata hash, RPUSH, PUBLISH); \
     fetch: one EVALSHA per batch of 10 (LRANGE, LTRIM, SADD, HMGET, HGETALL per job); \
     lock and acknowledge: batched EVALSHAs (LREM over the waiting list, SADD/SREM, HSET, PUBLISH)";

    pub(in crate::plumbing) fn report() -> StackReport {
        StackReport { stack: NAME, built: true, jobs_per_s: None, rounds: Vec::new(), error: None, path: PATH }
    }

    /// One run of apalis-redis; a failure is recorded in the report (our stack's figures
    /// stand without it) and the later rounds skip the peer.
    pub(in crate::plumbing) async fn round(rep: &mut StackReport, url: &str, queue: &str, n: u64, p: u32) {
        if rep.error.is_some() {
            return;
        }
        let r = run(url, queue, n, p).await;
        cleanup(url, queue).await;
        match r {
            Ok(round) => rep.rounds.push(round),
            Err(e) => rep.error = Some(format!("round {}: {}", rep.rounds.len() + 1, chain(&e))),
        }
    }

    async fn run(url: &str, queue: &str, n: u64, p: u32) -> Result<Round> {
        let conn = tokio::time::timeout(Duration::from_secs(5), apalis_redis::connect(url))
            .await
            .map_err(|_| Error::Message("connecting: timed out".into()))?
            .map_err(|e| Error::failed("connecting", e))?;
        let config = Config::default().queue(queue);
        let storage: RedisStorage<u64> = RedisStorage::new(conn.clone()).with_config(config.clone());
        let executed = Arc::new(AtomicU64::new(0));
        let count = executed.clone();
        // The no-op job; the one that makes N stops the worker, which then finishes the
        // jobs in flight, writes the last acknowledgements and deregisters.
        let handler = move |_job: u64, worker: WorkerContext| {
            let count = count.clone();
            async move {
                if count.fetch_add(1, Ordering::Relaxed) + 1 == n {
                    let _ = worker.stop();
                }
            }
        };
        let worker = WorkerBuilder::new(format!("{queue}-worker"))
            .backend(storage.clone().poll_with_interval(Duration::from_millis(1)))
            .layer(ConcurrencyLimitLayer::new(p as usize))
            .build(handler);
        let mut running = tokio::spawn(worker.run());
        let t0 = Instant::now();
        let mut producers = JoinSet::new();
        for count in shares(n) {
            let mut s = storage.clone();
            producers.spawn(async move {
                for j in 0..count {
                    s.push(j).await.map_err(|e| Error::Message(format!("push: {e}")))?;
                }
                Ok::<_, Error>(())
            });
        }
        while let Some(r) = producers.join_next().await {
            if let Err(e) = r.map_err(|e| Error::failed("a producer task panicked", e)).and_then(|r| r) {
                running.abort();
                return Err(e);
            }
        }
        let enqueue = t0.elapsed();
        let left = run_timeout(n).saturating_sub(t0.elapsed());
        match tokio::time::timeout(left, &mut running).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => return Err(Error::Message(format!("the worker failed: {e}"))),
            Ok(Err(e)) => return Err(Error::Message(format!("the worker task failed: {e}"))),
            Err(_) => {
                running.abort();
                return Err(Error::Message(format!(
                    "timed out: {} of {n} jobs executed after {:.0} s",
                    executed.load(Ordering::Relaxed),
                    run_timeout(n).as_secs_f64()
                )));
            }
        }
        let secs = t0.elapsed();
        // Its books: the done set, the waiting list and the worker's inflight set.
        let mut c = conn.clone();
        let (done, waiting): (u64, u64) = redis::pipe()
            .scard(config.done_jobs_set())
            .llen(config.active_jobs_list())
            .query_async(&mut c)
            .await
            .map_err(|e| Error::failed("reading its done set", e))?;
        let ran = executed.load(Ordering::Relaxed);
        if done != n || ran != n {
            return Err(Error::Message(format!(
                "the books do not balance: {n} jobs pushed, {ran} executed, {done} in its done set, {waiting} waiting"
            )));
        }
        Ok(Round {
            jobs_per_s: n as f64 / secs.as_secs_f64(),
            secs: secs.as_secs_f64(),
            enqueue_secs: enqueue.as_secs_f64(),
            completed: done,
            lost: n as i64 - done as i64 - waiting as i64,
            admitted_p50_ms: None,
            admitted_p99_ms: None,
            rejected_p99_ms: None,
        })
    }

    /// Delete the round's keys (every key under `queue:`).
    async fn cleanup(url: &str, queue: &str) {
        let Ok(client) = redis::Client::open(url) else { return };
        let Ok(mut c) = client.get_multiplexed_async_connection().await else { return };
        let keys: Vec<String> =
            redis::cmd("KEYS").arg(format!("{queue}:*")).query_async(&mut c).await.unwrap_or_default();
        for chunk in keys.chunks(1000) {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(chunk).query_async(&mut c).await;
        }
    }
}

#[cfg(not(feature = "peers"))]
mod stub {
    use super::super::harness::StackReport;
    use super::NAME;

    pub(in crate::plumbing) fn report() -> StackReport {
        StackReport {
            stack: NAME,
            built: false,
            jobs_per_s: None,
            rounds: Vec::new(),
            error: Some("not built (build with --features peers)".into()),
            path: "apalis-redis 1.x (not built)",
        }
    }

    pub(in crate::plumbing) async fn round(_: &mut StackReport, _: &str, _: &str, _: u64, _: u32) {}
}
