//! Nothing is lost: executor processes killed with SIGKILL at random moments, a Redis
//! restart with persistence on, and a stalled downstream, while ≥ 10,000 jobs go through.
//! The books must balance exactly: completed + failed + in backlog = admitted, with every
//! redelivery counted; and a dead executor's job is back in work within 2 s.
//!
//! Everything runs on 127.0.0.1: a private redis-server on a free port, the downstream
//! emulator in this process, executors as `safegate executor` processes. Every loop is
//! bounded in count and time.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use safegate_live::books::{Accounting, RetryCounts};
use safegate_live::downstream::{Downstream, DownstreamConfig, Faults};
use safegate_live::redis_server::RedisServer;
use safegate_live::ModelClock;
use safegate_queue::{Producer, Queue, QueueConfig};

/// The two tests measure wall-clock behaviour: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn executor(redis: &str, downstream: &str, executors: u32, timeout_ms: u64) -> Child {
    Command::new(env!("CARGO_BIN_EXE_safegate"))
        .args(["executor", "--redis", redis, "--downstream", downstream, "--namespace", "chaos"])
        .args(["--executors", &executors.to_string()])
        .args(["--timeout-ms", &timeout_ms.to_string(), "--heartbeat-ms", "600"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn safegate executor")
}

/// The run's queue, as `safegate live` configures it (a failed attempt fails its job).
async fn queue(url: &str, cap: u64) -> (Queue, Producer<String>) {
    let q = Queue::connect(url, "chaos").await.unwrap();
    q.configure(&QueueConfig { cap, fallback: cap, max_attempts: 1_000_000, dead_max: 0, ..QueueConfig::default() })
        .await
        .unwrap();
    let p = q.producer();
    (q, p)
}

async fn accounting(q: &Queue) -> Accounting {
    Accounting::from_stats(&q.stats().await.unwrap(), RetryCounts::default())
}

async fn downstream(speed: f64) -> Downstream {
    let cfg = DownstreamConfig { seed: 5, ..DownstreamConfig::new(ModelClock::start(speed)) };
    Downstream::start(cfg, ([127, 0, 0, 1], 0).into()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_a_redis_restart_and_a_stall_lose_nothing() {
    let _serial = SERIAL.lock().await;
    let mut redis = RedisServer::start(true).expect("redis-server on PATH (scripts/test installs it)");
    let url = redis.url();
    let ds = downstream(10.0).await;
    let (q, b) = queue(&url, 400).await;

    const PROCS: usize = 4;
    let mut procs: Vec<Child> = (0..PROCS).map(|_| executor(&url, &ds.url(), 2, 800)).collect();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(15);
    let target = 10_000u64;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(90);
    let (mut kills, mut restarted, mut stalled) = (0u32, false, false);
    let mut next_kill = started + Duration::from_millis(300);
    let mut stall_until: Option<Instant> = None;
    let mut serial = 0u64;
    let mut unsent = 0u64;
    let mut admitted_seen = 0u64;
    // Offer ~700 jobs/s until 10,000 are admitted, killing, restarting and stalling on the way.
    while admitted_seen < target {
        assert!(Instant::now() < deadline, "load phase took over 90 s (admitted {admitted_seen})");
        for _ in 0..7 {
            serial += 1;
            match b.enqueue_json_drawn(&format!("\"j{serial}\""), 0.0).await {
                Ok(a) if a.is_admitted() => admitted_seen += 1,
                Ok(_) => {}
                Err(_) => unsent += 1,
            }
        }
        let now = Instant::now();
        if now >= next_kill && kills < 24 {
            let i = rng.random_range(0..PROCS);
            procs[i].kill().unwrap(); // SIGKILL
            let _ = procs[i].wait();
            procs[i] = executor(&url, &ds.url(), 2, 800);
            kills += 1;
            next_kill = now + Duration::from_millis(rng.random_range(150..550));
        }
        if !restarted && admitted_seen >= target * 2 / 5 {
            redis.restart().unwrap();
            restarted = true;
        }
        if !stalled && admitted_seen >= target * 3 / 5 {
            ds.set_faults(Faults { stall: true, ..Faults::default() }).unwrap();
            stall_until = Some(now + Duration::from_millis(1500));
            stalled = true;
        }
        if stall_until.is_some_and(|t| now >= t) {
            ds.set_faults(Faults::default()).unwrap();
            stall_until = None;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    ds.set_faults(Faults::default()).unwrap();
    assert!(kills >= 20, "only {kills} kills");
    assert!(restarted && stalled);
    // Drain: the survivors (and replacements) work the backlog down.
    let drain_deadline = Instant::now() + Duration::from_secs(60);
    let acc = loop {
        let a = accounting(&q).await;
        if a.in_backlog == 0 || Instant::now() > drain_deadline {
            break a;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for p in &mut procs {
        let _ = p.kill();
        let _ = p.wait();
    }
    eprintln!(
        "chaos: {kills} kills, Redis restarted, downstream stalled 1.5 s; {acc:?}; {unsent} offers unsent while Redis was down; {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(acc.admitted >= target, "{acc:?}");
    assert_eq!(acc.completed + acc.failed + acc.in_backlog, acc.admitted, "the books do not balance: {acc:?}");
    assert_eq!(acc.lost(), 0);
    assert_eq!(acc.in_backlog, 0, "the backlog did not drain in 60 s: {acc:?}");
    assert!(acc.redelivered > 0, "kills mid-job must redeliver: {acc:?}");
    assert!(acc.failed > 0, "the stall must time some attempts out: {acc:?}");
    drop(redis);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_executors_job_is_back_in_work_within_two_seconds() {
    let _serial = SERIAL.lock().await;
    let redis = RedisServer::start(false).expect("redis-server on PATH");
    let url = redis.url();
    let ds = downstream(1.0).await;
    let (q, b) = queue(&url, 400).await;
    // The downstream holds every request 5 s: a job stays in service where it was taken.
    ds.set_faults(Faults { added_latency_ms: 5000.0, ..Faults::default() }).unwrap();
    let mut a = executor(&url, &ds.url(), 1, 20_000);
    // Wait until A serves a job.
    assert!(b.enqueue_json_drawn("\"held\"", 0.0).await.unwrap().is_admitted());
    let t = Instant::now();
    while accounting(&q).await.in_service == 0 {
        assert!(t.elapsed() < Duration::from_secs(10), "executor A never took the job");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut other = executor(&url, &ds.url(), 1, 20_000);
    tokio::time::sleep(Duration::from_millis(500)).await; // B is up and idle.
    a.kill().unwrap();
    let killed = Instant::now();
    let _ = a.wait();
    // Back in work: given back (redelivered) and in service again with B.
    let back = loop {
        let acc = accounting(&q).await;
        if acc.redelivered == 1 && acc.in_service == 1 {
            break killed.elapsed();
        }
        assert!(killed.elapsed() < Duration::from_secs(5), "not back in work after 5 s: {acc:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let _ = other.kill();
    let _ = other.wait();
    eprintln!("a dead executor's job was back in work {:.0} ms after SIGKILL", back.as_secs_f64() * 1e3);
    assert!(back <= Duration::from_secs(2), "{back:?}");
}
