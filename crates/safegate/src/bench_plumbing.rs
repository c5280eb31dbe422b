//! `safegate bench plumbing`: the throughput of our own Redis plumbing (enqueue → execute →
//! acknowledge with a no-op job), side by side with apalis-redis 1.x on the same Redis
//! when built with `--features peers` (docs/bench-plumbing.md).
//!
//! Each round runs every stack once, on fresh keys of the same Redis, the order of the
//! stacks alternating from round to round. A run starts the consumers (our executor pool,
//! or apalis's worker), then starts the clock, enqueues `--jobs` jobs from
//! 8 concurrent producer tasks while the consumers run, and stops the clock at
//! the last acknowledgement. Its figure is jobs per second of that wall time; each stack's
//! figure is the median over rounds. Everything runs on one tokio runtime with two worker
//! threads (the machine's two cores, shared with redis-server).
//!
//! Our path per job: one `EVALSHA` of the enqueue script (read the gate, count, `XADD`),
//! one `XREADGROUP` by an executor, one `EVALSHA` of the acknowledge script (`XACK`,
//! `XDEL`, count, the job's time in the system); every change of the books inside the
//! script that makes it.

use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use safegate_core::RangeError;
use safegate_live::backlog::{redact, Admission, Backlog};
use safegate_live::executor::{ExecutorConfig, Pool};
use safegate_live::redis_server::RedisServer;
use serde::Serialize;
use tokio::task::JoinSet;

/// Most jobs per round and stack.
const MAX_JOBS: u64 = 1_000_000;
/// Most executors (consumers) per stack.
const MAX_EXECUTORS: u32 = 1024;
/// Most rounds.
const MAX_ROUNDS: usize = 100;
/// Concurrent producer tasks enqueueing a round's jobs, per stack.
pub(crate) const PRODUCERS: u64 = 8;
/// The target for our plumbing \[jobs/s\].
const TARGET_JOBS_PER_S: f64 = 5000.0;
/// Our stack's name in the report.
const OURS: &str = "safegate";
/// The peer's name in the report.
const PEER: &str = "apalis-redis";

/// Flags of `safegate bench plumbing`.
#[derive(Debug, Args)]
pub(crate) struct PlumbingArgs {
    /// Jobs per round and stack (at most 1000000).
    #[arg(long, default_value_t = 20_000, value_name = "N")]
    jobs: u64,
    /// Executors (consumers) per stack: our pool's executors, apalis's worker concurrency.
    #[arg(long, default_value_t = 8, value_name = "P")]
    executors: u32,
    /// Rounds; each stack's figure is the median over them.
    #[arg(long, default_value_t = 3, value_name = "R")]
    rounds: usize,
    /// A running Redis (`redis://[:PASSWORD@]HOST:PORT/`); without it a private
    /// redis-server is started on a free loopback port and stopped after.
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
}

/// One stack's run in one round.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Round {
    /// Jobs per second from the first enqueue to the last acknowledgement.
    pub(crate) jobs_per_s: f64,
    /// That wall time \[s\].
    pub(crate) secs: f64,
    /// Wall time until the producers had enqueued every job \[s\].
    pub(crate) enqueue_secs: f64,
    /// Jobs the stack's books show completed (acknowledged as done).
    pub(crate) completed: u64,
    /// Jobs enqueued but neither completed, failed nor still in the backlog.
    pub(crate) lost: i64,
}

/// One stack's figures.
#[derive(Debug, Serialize)]
struct StackReport {
    stack: &'static str,
    /// Whether the stack is in this binary (the peer needs `--features peers`).
    built: bool,
    /// Median of the rounds' jobs/s; `None` when not built or failed.
    jobs_per_s: Option<f64>,
    rounds: Vec<Round>,
    /// Why the stack has no figure, if it has none.
    error: Option<String>,
    /// What the stack does per job.
    path: &'static str,
}

#[derive(Debug, Serialize)]
struct Report {
    jobs: u64,
    executors: u32,
    producers: u64,
    rounds: usize,
    redis: String,
    measured: &'static str,
    target_jobs_per_s: f64,
    /// Whether our median meets the target.
    meets_target: bool,
    stacks: Vec<StackReport>,
}

const MEASURED: &str = "wall time from the first enqueue to the last acknowledgement of N no-op jobs, \
     enqueued by 8 concurrent producers while P consumers run, on fresh keys of one Redis; \
     jobs/s = N / that time; the median over rounds, the stacks' order alternating by round";

const OUR_PATH: &str = "enqueue: one EVALSHA (read the gate, count, XADD); fetch: one XREADGROUP per job; \
     acknowledge: one EVALSHA (XACK, XDEL, count, time in the system)";

fn check(a: &PlumbingArgs) -> Result<()> {
    if !(1..=MAX_JOBS).contains(&a.jobs) {
        bail!(RangeError::new("--jobs", a.jobs, format!("[1, {MAX_JOBS}]")));
    }
    if !(1..=MAX_EXECUTORS).contains(&a.executors) {
        bail!(RangeError::new("--executors", a.executors, format!("[1, {MAX_EXECUTORS}]")));
    }
    if !(1..=MAX_ROUNDS).contains(&a.rounds) {
        bail!(RangeError::new("--rounds", a.rounds, format!("[1, {MAX_ROUNDS}]")));
    }
    Ok(())
}

/// The longest a run may take before it counts as failed: 30 s plus 5 ms per job (a
/// stack slower than 200 jobs/s fails).
pub(crate) fn run_timeout(n: u64) -> Duration {
    Duration::from_secs(30) + Duration::from_millis(5 * n)
}

/// `n` jobs split over [`PRODUCERS`] producers: each one's count.
pub(crate) fn shares(n: u64) -> Vec<u64> {
    (0..PRODUCERS).map(|i| n / PRODUCERS + u64::from(i < n % PRODUCERS)).filter(|&c| c > 0).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// `safegate bench plumbing`.
pub(crate) fn run(a: &PlumbingArgs) -> Result<ExitCode> {
    check(a)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let (server, url) = match &a.redis {
        Some(u) => (None, u.clone()),
        None => {
            let s = RedisServer::start(false).context("starting a private redis-server")?;
            let u = s.url();
            (Some(s), u)
        }
    };
    let shown = match &server {
        Some(s) => format!("private redis-server on 127.0.0.1:{}", s.port()),
        None => redact(&url),
    };
    let report = rt.block_on(bench(a, &url, shown))?;
    drop(rt);
    drop(server);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    Ok(ExitCode::SUCCESS)
}

async fn bench(a: &PlumbingArgs, url: &str, shown: String) -> Result<Report> {
    // Reachable? A clear error naming the URL before anything starts.
    Backlog::connect(url, "sgbench-probe").await.with_context(|| format!("--redis {}", redact(url)))?;
    let run_id = safegate_live::executor::new_incarnation();
    let mut ours =
        StackReport { stack: OURS, built: true, jobs_per_s: None, rounds: Vec::new(), error: None, path: OUR_PATH };
    let mut peer = peer::report();
    for r in 0..a.rounds {
        let ns = |stack: &str| format!("sgbench-{run_id}-r{r}-{stack}");
        // Alternate the order, so neither stack always runs on a warmer (or more
        // fragmented) Redis.
        let peer_first = r % 2 == 1;
        if peer_first {
            peer::round(&mut peer, url, &ns(PEER), a.jobs, a.executors).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let round = ours_round(url, &ns(OURS), a.jobs, a.executors)
            .await
            .with_context(|| format!("{OURS}, round {}", r + 1))?;
        ours.rounds.push(round);
        if !peer_first {
            tokio::time::sleep(Duration::from_millis(200)).await;
            peer::round(&mut peer, url, &ns(PEER), a.jobs, a.executors).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    ours.jobs_per_s = Some(median(ours.rounds.iter().map(|r| r.jobs_per_s).collect()));
    if peer.error.is_none() && !peer.rounds.is_empty() {
        peer.jobs_per_s = Some(median(peer.rounds.iter().map(|r| r.jobs_per_s).collect()));
    }
    let meets_target = ours.jobs_per_s.is_some_and(|x| x >= TARGET_JOBS_PER_S);
    Ok(Report {
        jobs: a.jobs,
        executors: a.executors,
        producers: PRODUCERS,
        rounds: a.rounds,
        redis: shown,
        measured: MEASURED,
        target_jobs_per_s: TARGET_JOBS_PER_S,
        meets_target,
        stacks: vec![ours, peer],
    })
}

/// One run of our stack: a fresh namespace, a pool of `p` executors with no downstream,
/// `n` offers from the producers (share 1, bound `n`: every one admitted), then the books.
async fn ours_round(url: &str, ns: &str, n: u64, p: u32) -> Result<Round> {
    let b = Backlog::connect(url, ns).await?;
    b.reset().await?;
    b.publish(1.0, None, n).await?;
    let cfg = ExecutorConfig { executors: p, slots: p, downstream: None, ..ExecutorConfig::default() };
    let pool = Pool::start(b.clone(), cfg).await?;
    let stats = pool.stats();
    let t0 = Instant::now();
    let timed = async {
        let mut producers = JoinSet::new();
        for (i, count) in shares(n).into_iter().enumerate() {
            let b = b.clone();
            producers.spawn(async move {
                for j in 0..count {
                    let job = format!("{i}-{j}");
                    match b.offer(0.0, &job, false).await? {
                        Admission::Admitted => {}
                        other => bail!("job {job} was not admitted ({other:?}) with share 1 and bound {n}"),
                    }
                }
                Ok(())
            });
        }
        while let Some(r) = producers.join_next().await {
            r.context("a producer task panicked")??;
        }
        let enqueue = t0.elapsed();
        let deadline = t0 + run_timeout(n);
        loop {
            let done = stats.done.load(Ordering::Relaxed);
            if done >= n {
                break;
            }
            if Instant::now() > deadline {
                bail!("timed out: {done} of {n} jobs acknowledged after {:.0} s", run_timeout(n).as_secs_f64());
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Ok::<_, anyhow::Error>((enqueue, t0.elapsed()))
    }
    .await;
    pool.stop(Duration::from_secs(2)).await;
    let (enqueue, secs) = timed?;
    let acc = b.accounting().await?;
    if acc.admitted != n || acc.completed != n || acc.lost() != 0 {
        bail!(
            "the books do not balance: {n} jobs offered, admitted {}, completed {}, failed {}, \
             in the backlog {}, lost {}",
            acc.admitted,
            acc.completed,
            acc.failed,
            acc.in_backlog,
            acc.lost()
        );
    }
    Ok(Round {
        jobs_per_s: n as f64 / secs.as_secs_f64(),
        secs: secs.as_secs_f64(),
        enqueue_secs: enqueue.as_secs_f64(),
        completed: acc.completed,
        lost: acc.lost(),
    })
}

fn print_table(r: &Report) {
    println!(
        "safegate bench plumbing: {} no-op jobs per round and stack, {} producers, {} executors, median of {} rounds",
        r.jobs, r.producers, r.executors, r.rounds
    );
    println!("redis: {}", r.redis);
    println!("measured: {}", r.measured);
    println!();
    let head = format!("jobs/s (median of {})", r.rounds);
    println!("{:<14} {:>22}   rounds (jobs/s; enqueue done at s / last ack at s)", "stack", head);
    for s in &r.stacks {
        match (s.jobs_per_s, &s.error) {
            (Some(x), _) => {
                let rounds: Vec<String> = s
                    .rounds
                    .iter()
                    .map(|q| format!("{:.0} ({:.2}/{:.2})", q.jobs_per_s, q.enqueue_secs, q.secs))
                    .collect();
                println!("{:<14} {:>22.0}   {}", s.stack, x, rounds.join(", "));
            }
            (None, Some(e)) => println!("{:<14} {:>22}   {e}", s.stack, "-"),
            (None, None) => println!("{:<14} {:>22}", s.stack, "-"),
        }
    }
    println!();
    println!("per job:");
    for s in &r.stacks {
        println!("  {}: {}", s.stack, s.path);
    }
    println!();
    let ours = r.stacks.iter().find(|s| s.stack == OURS).and_then(|s| s.jobs_per_s).unwrap_or(f64::NAN);
    if r.meets_target {
        println!(
            "target: ≥ {:.0} jobs/s for our plumbing: met ({ours:.0} jobs/s, median of {} rounds)",
            r.target_jobs_per_s, r.rounds
        );
    } else {
        println!(
            "target: ≥ {:.0} jobs/s for our plumbing: NOT met ({ours:.0} jobs/s, median of {} rounds)",
            r.target_jobs_per_s, r.rounds
        );
    }
}

/// The peer: apalis-redis 1.x, built with `--features peers`.
///
/// apalis-redis's path per job, as read in its 1.0.0 sources (apalis-core 1.0.0):
///
/// - enqueue (`TaskSink::push`): one `EVALSHA` of `batch_push.lua` with one task:
///   `HSETNX` of the payload into `Q:data`, `HMSET` of a per-task metadata hash
///   `Q:meta:ID` (attempts, status, …), `RPUSH` of the id onto `Q:active`, a `PUBLISH`
///   (events on by default) and a reset of the signal list (`DEL` + `LPUSH`).
/// - fetch: the worker's single backend stream runs `fetch_next.lua` for a batch of up
///   to `batch_size` (10) ids: `LRANGE` + `LTRIM` of `Q:active`, `SADD` to the worker's
///   inflight set, `HMGET` of the payloads and one `HGETALL` per task's metadata.
/// - lock (`lock_tasks`, on by default): the job's `Lock` event goes through a channel
///   and is written in batches by `acquire_leases.lua` (`SISMEMBER`, `LREM` of the id
///   from `Q:active` (a scan of the whole waiting list), `SADD`, `HSET` of the metadata,
///   a `PUBLISH`).
/// - acknowledge (`persist_results`, on by default): the job's `Complete` event, in
///   batches, by `handle_results.lua` (`SREM` from the inflight set, `SADD` to
///   `Q:done`, a `PUBLISH`, `HSET` of the result and status into the metadata).
///
/// Lock and acknowledgement batches are written by the same backend stream between
/// fetches, one script at a time. The worker runs the handler futures concurrently,
/// limited here to P by tower's `ConcurrencyLimit`. With nothing to fetch, the stream
/// waits for its next wake-up: we poll every 1 ms (`poll_with_interval`); without a
/// poll strategy only a finishing job or the next heartbeat (30 s) wakes it. Done jobs stay in Redis
/// (their metadata hash and the done set): the keys are deleted after each round,
/// outside the timed part.
#[cfg(feature = "peers")]
mod peer {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use anyhow::{bail, Context, Result};
    use apalis_core::backend::ext::BackendExt;
    use apalis_core::backend::TaskSink;
    use apalis_core::worker::builder::WorkerBuilder;
    use apalis_core::worker::context::WorkerContext;
    use apalis_redis::{Config, RedisStorage};
    use tokio::task::JoinSet;
    use tower::limit::ConcurrencyLimitLayer;

    use super::{run_timeout, shares, Round, StackReport, PEER};

    const PATH: &str = "enqueue: one EVALSHA (HSETNX payload, HMSET a metadata hash, RPUSH, PUBLISH); \
         fetch: one EVALSHA per batch of 10 (LRANGE, LTRIM, SADD, HMGET, HGETALL per job); \
         lock and acknowledge: batched EVALSHAs (LREM over the waiting list, SADD/SREM, HSET, PUBLISH)";

    pub(super) fn report() -> StackReport {
        StackReport { stack: PEER, built: true, jobs_per_s: None, rounds: Vec::new(), error: None, path: PATH }
    }

    /// One run of apalis-redis; a failure is recorded in the report (our stack's figures
    /// stand without it) and the later rounds skip the peer.
    pub(super) async fn round(rep: &mut StackReport, url: &str, queue: &str, n: u64, p: u32) {
        if rep.error.is_some() {
            return;
        }
        let r = run(url, queue, n, p).await;
        cleanup(url, queue).await;
        match r {
            Ok(round) => rep.rounds.push(round),
            Err(e) => rep.error = Some(format!("round {}: {e:#}", rep.rounds.len() + 1)),
        }
    }

    async fn run(url: &str, queue: &str, n: u64, p: u32) -> Result<Round> {
        let conn = tokio::time::timeout(Duration::from_secs(5), apalis_redis::connect(url))
            .await
            .context("connecting: timed out")?
            .context("connecting")?;
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
                    s.push(j).await.map_err(|e| anyhow::anyhow!("push: {e}"))?;
                }
                Ok::<_, anyhow::Error>(())
            });
        }
        while let Some(r) = producers.join_next().await {
            if let Err(e) = r.context("a producer task panicked").and_then(|r| r) {
                running.abort();
                return Err(e);
            }
        }
        let enqueue = t0.elapsed();
        let left = run_timeout(n).saturating_sub(t0.elapsed());
        match tokio::time::timeout(left, &mut running).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => bail!("the worker failed: {e}"),
            Ok(Err(e)) => bail!("the worker task failed: {e}"),
            Err(_) => {
                running.abort();
                bail!(
                    "timed out: {} of {n} jobs executed after {:.0} s",
                    executed.load(Ordering::Relaxed),
                    run_timeout(n).as_secs_f64()
                );
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
            .context("reading its done set")?;
        let ran = executed.load(Ordering::Relaxed);
        if done != n || ran != n {
            bail!(
                "the books do not balance: {n} jobs pushed, {ran} executed, {done} in its done set, {waiting} waiting"
            );
        }
        Ok(Round {
            jobs_per_s: n as f64 / secs.as_secs_f64(),
            secs: secs.as_secs_f64(),
            enqueue_secs: enqueue.as_secs_f64(),
            completed: done,
            lost: n as i64 - done as i64 - waiting as i64,
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

/// Without `--features peers`: the peer is not built.
#[cfg(not(feature = "peers"))]
mod peer {
    use super::{StackReport, PEER};

    pub(super) fn report() -> StackReport {
        StackReport {
            stack: PEER,
            built: false,
            jobs_per_s: None,
            rounds: Vec::new(),
            error: Some("not built (build with --features peers)".into()),
            path: "apalis-redis 1.x (not built)",
        }
    }

    pub(super) async fn round(_: &mut StackReport, _: &str, _: &str, _: u64, _: u32) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up() {
        for n in [1, 7, 8, 9, 20_000, 20_003] {
            let s = shares(n);
            assert_eq!(s.iter().sum::<u64>(), n);
            assert!(s.len() as u64 <= PRODUCERS);
            assert!(s.iter().all(|&c| c > 0));
        }
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
