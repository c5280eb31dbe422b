//! The plumbing bench's inputs, rounds and report.
//!
//! Each round runs every stack once, on fresh keys of the same Redis, the order of the
//! stacks alternating from round to round. A run starts the consumers (our executor pool,
//! or apalis's worker), then starts the clock, enqueues `jobs` jobs from
//! [`PRODUCERS`] concurrent producer tasks while the consumers run, and stops the clock at
//! the last acknowledgement. Its figure is jobs per second of that wall time; each stack's
//! figure is the median over rounds (`safegate_core::stats::median`: for an even count the
//! lower middle round). Everything runs on the one tokio runtime the caller passes (the
//! figures assume two worker threads: the machine's two cores, shared with redis-server).

use std::time::Duration;

use safegate_core::stats::median;
use safegate_core::RangeError;
use safegate_live::redis_conn::redact;
use safegate_live::redis_server::RedisServer;
use serde::Serialize;
use tokio::runtime::Runtime;

use super::{peer, queue};
use crate::error::{Error, Result};

/// Most jobs per round and stack.
pub const MAX_JOBS: u64 = 1_000_000;
/// Most executors (consumers) per stack.
pub const MAX_EXECUTORS: u32 = 1024;
/// Most rounds.
pub const MAX_ROUNDS: usize = 100;
/// Concurrent producer tasks enqueueing a round's jobs, per stack.
pub const PRODUCERS: u64 = 8;
/// The target for our plumbing \[jobs/s\]: what the live system's own scripts reached on
/// this 2-core machine before it ran on the queue library (14,314), which the library must
/// match (the first target, 5,000, is long passed).
const TARGET_JOBS_PER_S: f64 = 14_000.0;
/// Our stack's name in the report.
pub const OURS: &str = "safegate";

/// What to run.
#[derive(Debug, Clone)]
pub struct PlumbingSpec {
    /// Jobs per round and stack: `[1, MAX_JOBS]`.
    pub jobs: u64,
    /// Executors (consumers) per stack: `[1, MAX_EXECUTORS]`.
    pub executors: u32,
    /// Rounds: `[1, MAX_ROUNDS]`.
    pub rounds: usize,
    /// A running Redis (`redis://[:PASSWORD@]HOST:PORT/`); `None` starts a private
    /// redis-server on a free loopback port and stops it after.
    pub redis: Option<String>,
    /// `redis` lists the nodes of a running Redis Cluster (comma-separated); the peer is not
    /// run on it.
    pub cluster: bool,
}

/// One stack's run in one round.
#[derive(Debug, Clone, Serialize)]
pub struct Round {
    /// Jobs per second from the first enqueue to the last acknowledgement.
    pub jobs_per_s: f64,
    /// That wall time \[s\].
    pub secs: f64,
    /// Wall time until the producers had enqueued every job \[s\].
    pub enqueue_secs: f64,
    /// Jobs the stack's books show completed (acknowledged as done).
    pub completed: u64,
    /// Jobs enqueued but neither completed, failed nor still in the backlog.
    pub lost: i64,
    /// Median latency of an admitted offer (the enqueue call) \[ms\], where measured.
    pub admitted_p50_ms: Option<f64>,
    /// 99th percentile of the same \[ms\].
    pub admitted_p99_ms: Option<f64>,
    /// 99th percentile latency of an offer turned away at a full bound \[ms\], where measured.
    pub rejected_p99_ms: Option<f64>,
}

/// One stack's figures.
#[derive(Debug, Serialize)]
pub struct StackReport {
    /// The stack's name.
    pub stack: &'static str,
    /// Whether the stack is in this build (the peer needs the feature `peers`).
    pub built: bool,
    /// Median of the rounds' jobs/s; `None` when not built or failed.
    pub jobs_per_s: Option<f64>,
    /// Every round's run.
    pub rounds: Vec<Round>,
    /// Why the stack has no figure, if it has none.
    pub error: Option<String>,
    /// What the stack does per job.
    pub path: &'static str,
}

/// Every figure of a measurement.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Jobs per round and stack.
    pub jobs: u64,
    /// Executors per stack.
    pub executors: u32,
    /// Producer tasks per stack.
    pub producers: u64,
    /// Rounds.
    pub rounds: usize,
    /// The Redis used, its password redacted.
    pub redis: String,
    /// What is measured, in words.
    pub measured: &'static str,
    /// The target for our plumbing \[jobs/s\].
    pub target_jobs_per_s: f64,
    /// Whether our median meets the target.
    pub meets_target: bool,
    /// Ours (the queue crate's public API, the live system's path), then the peer.
    pub stacks: Vec<StackReport>,
}

impl Report {
    /// The figures as the text table `safegate bench plumbing` prints.
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let r = self;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "safegate bench plumbing: {} no-op jobs per round and stack, {} producers, {} executors, median of {} rounds",
            r.jobs, r.producers, r.executors, r.rounds
        );
        let _ = writeln!(o, "redis: {}\nmeasured: {}\n", r.redis, r.measured);
        let head = format!("jobs/s (median of {})", r.rounds);
        let _ = writeln!(o, "{:<15} {head:>22}   rounds (jobs/s; enqueue done at s / last ack at s)", "stack");
        for s in &r.stacks {
            let rounds: Vec<String> =
                s.rounds.iter().map(|q| format!("{:.0} ({:.2}/{:.2})", q.jobs_per_s, q.enqueue_secs, q.secs)).collect();
            let _ = match (s.jobs_per_s, &s.error) {
                (Some(x), _) => writeln!(o, "{:<15} {x:>22.0}   {}", s.stack, rounds.join(", ")),
                (None, Some(e)) => writeln!(o, "{:<15} {:>22}   {e}", s.stack, "-"),
                (None, None) => writeln!(o, "{:<15} {:>22}", s.stack, "-"),
            };
        }
        for s in &r.stacks {
            let ms = |f: fn(&Round) -> Option<f64>| {
                let v: Vec<String> = s.rounds.iter().filter_map(f).map(|x| format!("{x:.2}")).collect();
                (!v.is_empty()).then(|| v.join(", "))
            };
            if let (Some(p50), Some(p99)) = (ms(|q| q.admitted_p50_ms), ms(|q| q.admitted_p99_ms)) {
                let _ = writeln!(o, "{}: enqueue latency, admitted: p50 {p50} ms, p99 {p99} ms (per round)", s.stack);
            }
            if let Some(p99) = ms(|q| q.rejected_p99_ms) {
                let _ =
                    writeln!(o, "{}: enqueue latency, turned away at a full bound: p99 {p99} ms (per round)", s.stack);
            }
        }
        o.push_str("\nper job:\n");
        for s in &r.stacks {
            let _ = writeln!(o, "  {}: {}", s.stack, s.path);
        }
        let ours = r.stacks.iter().find(|s| s.stack == OURS).and_then(|s| s.jobs_per_s).unwrap_or(f64::NAN);
        let met = if r.meets_target { "met" } else { "NOT met" };
        let _ = writeln!(
            o,
            "\ntarget: ≥ {:.0} jobs/s for our plumbing: {met} ({ours:.0} jobs/s, median of {} rounds)",
            r.target_jobs_per_s, r.rounds
        );
        o
    }
}

const MEASURED: &str = "wall time from the first enqueue to the last acknowledgement of N no-op jobs, \
     enqueued by 8 concurrent producers while P consumers run, on fresh keys of one Redis; \
     jobs/s = N / that time; the median over rounds, the stacks' order alternating by round";

/// Check `spec`: an error names the field (`jobs`, `executors`, `rounds`).
pub(crate) fn check(a: &PlumbingSpec) -> Result<()> {
    if !(1..=MAX_JOBS).contains(&a.jobs) {
        return Err(RangeError::new("jobs", a.jobs, format!("[1, {MAX_JOBS}]")).into());
    }
    if !(1..=MAX_EXECUTORS).contains(&a.executors) {
        return Err(RangeError::new("executors", a.executors, format!("[1, {MAX_EXECUTORS}]")).into());
    }
    if !(1..=MAX_ROUNDS).contains(&a.rounds) {
        return Err(RangeError::new("rounds", a.rounds, format!("[1, {MAX_ROUNDS}]")).into());
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

/// Measure: check `spec`, start a private redis-server unless `spec.redis` names one, run
/// every round on `rt` (dropped before the server stops) and return the figures.
pub fn plumbing(spec: &PlumbingSpec, rt: Runtime) -> Result<Report> {
    check(spec)?;
    if spec.cluster && spec.redis.is_none() {
        return Err(Error::input(
            "redis",
            "a cluster's nodes are needed with --cluster (this bench starts no cluster)",
        ));
    }
    let (server, url) = match &spec.redis {
        Some(u) => (None, u.clone()),
        None => {
            let s = RedisServer::start(false).map_err(|e| Error::failed("starting a private redis-server", e))?;
            let u = s.url();
            (Some(s), u)
        }
    };
    let shown = match &server {
        Some(s) => format!("private redis-server on 127.0.0.1:{}", s.port()),
        None => redact(&url),
    };
    let shown = if spec.cluster { format!("Redis Cluster at {shown}") } else { shown };
    let report = rt.block_on(rounds(spec, &url, shown));
    drop(rt);
    drop(server);
    report
}

async fn rounds(a: &PlumbingSpec, url: &str, shown: String) -> Result<Report> {
    // Reachable? A clear error naming the URL before anything starts.
    safegate_queue::Queue::connect_to(url, a.cluster, "sgbench-probe")
        .await
        .map_err(|e| Error::input("redis", format!("{}: {}", redact(url), crate::error::chain(&e))))?;
    let run_id = safegate_live::executor::new_incarnation();
    let mut ours = queue::report();
    let mut peer = peer::report();
    if a.cluster {
        peer.error = Some("not run on a cluster by this bench".into());
    }
    for r in 0..a.rounds {
        let ns = |stack: &str| format!("sgbench-{run_id}-r{r}-{stack}");
        // Alternate the order, so neither stack always runs on a warmer (or more
        // fragmented) Redis.
        let peer_first = r % 2 == 1;
        let peer_runs = peer.error.is_none();
        if peer_first && peer_runs {
            peer::round(&mut peer, url, &ns(peer::NAME), a.jobs, a.executors).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let round = queue::round(url, a.cluster, &ns("queue"), a.jobs, a.executors)
            .await
            .map_err(|e| Error::failed(format!("{OURS}, round {}", r + 1), e))?;
        ours.rounds.push(round);
        if !peer_first && peer_runs {
            tokio::time::sleep(Duration::from_millis(200)).await;
            peer::round(&mut peer, url, &ns(peer::NAME), a.jobs, a.executors).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let jobs_per_s = |s: &StackReport| median(&s.rounds.iter().map(|r| r.jobs_per_s).collect::<Vec<_>>());
    ours.jobs_per_s = jobs_per_s(&ours);
    if peer.error.is_none() && !peer.rounds.is_empty() {
        peer.jobs_per_s = jobs_per_s(&peer);
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
    fn the_table_names_every_stack_and_the_target() {
        let round = Round {
            jobs_per_s: 12_000.0,
            secs: 1.0,
            enqueue_secs: 0.9,
            completed: 10,
            lost: 0,
            admitted_p50_ms: Some(0.5),
            admitted_p99_ms: Some(1.25),
            rejected_p99_ms: None,
        };
        let ours = StackReport { jobs_per_s: Some(12_000.0), rounds: vec![round], ..queue::report() };
        let peer = StackReport { error: Some("not built".into()), ..peer::report() };
        let mut r = Report {
            jobs: 10,
            executors: 8,
            producers: PRODUCERS,
            rounds: 1,
            redis: "here".into(),
            measured: MEASURED,
            target_jobs_per_s: 14_000.0,
            meets_target: false,
            stacks: vec![ours, peer],
        };
        let t = r.table();
        assert!(t.contains("12000 (0.90/1.00)"), "{t}");
        assert!(t.contains("p50 0.50 ms, p99 1.25 ms"), "{t}");
        assert!(t.contains(&format!("{} ", peer::NAME)) && t.contains("not built"), "{t}");
        assert!(t.contains("NOT met (12000 jobs/s"), "{t}");
        r.meets_target = true;
        assert!(r.table().contains(": met (12000 jobs/s"));
    }

    #[test]
    fn bad_inputs_name_the_field() {
        let spec = PlumbingSpec { jobs: 10, executors: 8, rounds: 1, redis: None, cluster: false };
        let field = |s: PlumbingSpec| check(&s).unwrap_err().field().map(String::from);
        assert_eq!(field(PlumbingSpec { jobs: 0, ..spec.clone() }).as_deref(), Some("jobs"));
        assert_eq!(field(PlumbingSpec { jobs: MAX_JOBS + 1, ..spec.clone() }).as_deref(), Some("jobs"));
        assert_eq!(field(PlumbingSpec { executors: 0, ..spec.clone() }).as_deref(), Some("executors"));
        assert_eq!(field(PlumbingSpec { rounds: MAX_ROUNDS + 1, ..spec }).as_deref(), Some("rounds"));
    }

    /// A short run on a private redis-server (redis-server on PATH): our books balance.
    #[test]
    fn a_short_run_balances_our_books() {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        let spec = PlumbingSpec { jobs: 200, executors: 4, rounds: 2, redis: None, cluster: false };
        let r = plumbing(&spec, rt).expect("measured");
        let ours = &r.stacks[0];
        assert_eq!(ours.stack, OURS);
        assert_eq!(ours.rounds.len(), 2);
        // The queue crate's public API: its books balance, both latencies measured.
        assert!(
            ours.rounds.iter().all(|q| q.completed == 200
                && q.lost == 0
                && q.admitted_p99_ms.is_some_and(|x| x > 0.0)
                && q.rejected_p99_ms.is_some_and(|x| x > 0.0)),
            "{ours:?}"
        );
        // The median of two rounds is the lower one.
        let lower = ours.rounds.iter().map(|q| q.jobs_per_s).fold(f64::INFINITY, f64::min);
        assert_eq!(ours.jobs_per_s, Some(lower));
    }
}
