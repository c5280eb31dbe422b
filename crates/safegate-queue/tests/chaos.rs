//! Chaos on the library's API, with real processes: three worker processes killed with
//! SIGKILL 24 times (each replaced), the leading controller of two killed, and Redis
//! restarted (append-only file fsynced on every write), while a producer offers jobs.
//! Then: the books balance exactly, every job the producer saw admitted was done (its
//! payload is in the handler's set), none lost; the follower led within twice the lease;
//! the backlog never passed its cap, with or without a controller.

mod common;

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use safegate_queue::{Admission, Queue, QueueConfig};

fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("examples").join(name);
    assert!(bin.is_file(), "{} not built (cargo test builds the examples)", bin.display());
    bin
}

fn spawn(bin: &PathBuf, args: &[&str]) -> Child {
    Command::new(bin).args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()
}

#[test]
fn books_balance_and_nothing_is_lost_through_kills_and_a_redis_restart() {
    let mut redis = common::Redis::start(true);
    let url = redis.url();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let q = rt.block_on(Queue::connect(&url, "chaos")).unwrap();
    // Redeliveries count as attempts: enough of them that no job is dead-lettered by kills.
    let cap = 300;
    rt.block_on(q.configure(&QueueConfig { cap, fallback: 210, max_attempts: 100, ..QueueConfig::default() })).unwrap();
    let worker = example("worker_process");
    let controller = example("controller_process");
    let lease = Duration::from_millis(500);
    let lease_ms = lease.as_millis().to_string();
    let mut controllers: Vec<(String, Child)> = ["c1", "c2"]
        .iter()
        .map(|id| (id.to_string(), spawn(&controller, &[&url, "chaos", id, &lease_ms, &cap.to_string()])))
        .collect();
    let mut workers: Vec<Child> = (0..3).map(|_| spawn(&worker, &[&url, "chaos", "4", "2"])).collect();

    // The producer: about 1,500 offers a second for 12 s, in its own task.
    let producer = {
        let q = q.clone();
        rt.spawn(async move {
            let p = q.producer::<u64>();
            let (mut admitted, mut errors, mut n) = (Vec::new(), 0u64, 0u64);
            let t0 = Instant::now();
            let mut tick = tokio::time::interval(Duration::from_millis(2));
            while t0.elapsed() < Duration::from_secs(12) {
                tick.tick().await;
                for _ in 0..3 {
                    n += 1;
                    match p.enqueue(&n).await {
                        Ok(Admission::Admitted { .. }) => admitted.push(n),
                        Ok(Admission::Rejected { .. }) => {}
                        Err(_) => errors += 1,
                    }
                }
            }
            (admitted, errors, n)
        })
    };

    let t0 = Instant::now();
    let (mut kills, mut gap, mut restarted, mut most) = (0, None, false, 0u64);
    let mut next_kill = Duration::from_millis(300);
    while t0.elapsed() < Duration::from_secs(12) {
        std::thread::sleep(Duration::from_millis(20));
        if let Ok(s) = rt.block_on(q.stats()) {
            most = most.max(s.waiting());
        }
        if t0.elapsed() >= next_kill && kills < 24 {
            let i = kills % workers.len();
            workers[i].kill().unwrap();
            let _ = workers[i].wait();
            workers[i] = spawn(&worker, &[&url, "chaos", "4", "2"]);
            kills += 1;
            next_kill += Duration::from_millis(300);
        }
        if gap.is_none() && t0.elapsed() >= Duration::from_secs(3) {
            let leader = rt.block_on(q.grant()).unwrap().expect("a grant by 3 s").leader;
            let i = controllers.iter().position(|c| c.0 == leader).expect("the leader is ours");
            let killed = Instant::now();
            controllers[i].1.kill().unwrap();
            let _ = controllers[i].1.wait();
            loop {
                if rt.block_on(q.grant()).ok().flatten().is_some_and(|g| g.leader != leader) {
                    break;
                }
                assert!(killed.elapsed() < 5 * lease, "no takeover");
                std::thread::sleep(Duration::from_millis(5));
            }
            gap = Some(killed.elapsed());
        }
        if !restarted && t0.elapsed() >= Duration::from_secs(8) {
            redis.restart();
            restarted = true;
        }
    }
    let (admitted, errors, offered) = rt.block_on(producer).unwrap();
    // Drain: everything admitted gets done.
    let t1 = Instant::now();
    let s = loop {
        let s = rt.block_on(q.stats()).unwrap();
        if s.waiting() == 0 {
            break s;
        }
        assert!(t1.elapsed() < Duration::from_secs(30), "not drained: {s:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    for mut w in workers {
        let _ = w.kill();
        let _ = w.wait();
    }
    for (_, mut c) in controllers {
        let _ = c.kill();
        let _ = c.wait();
    }
    let done: HashSet<u64> = rt.block_on(async {
        let mut c = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
        redis::cmd("SMEMBERS").arg("done:{chaos}").query_async(&mut c).await.unwrap()
    });
    let lost: Vec<u64> = admitted.iter().copied().filter(|n| !done.contains(n)).collect();
    println!(
        "offered {offered}, admitted {} (books {}), producer errors {errors}, done {}, redelivered {}, kills {kills}, takeover {gap:?}, most waiting {most}",
        admitted.len(),
        s.admitted,
        done.len(),
        s.redelivered
    );
    assert!(s.balanced(), "{s:?}");
    assert_eq!((s.failed, s.dead, s.waiting()), (0, 0, 0), "{s:?}");
    assert!(lost.is_empty(), "{} admitted jobs never done: {:?}", lost.len(), &lost[..lost.len().min(10)]);
    // The books count each job once: an offer whose answer was lost in the restart may have
    // been admitted without the producer knowing (at most one per error).
    assert_eq!(s.completed as usize, done.len(), "{s:?}");
    assert!(s.admitted >= admitted.len() as u64 && s.admitted <= admitted.len() as u64 + errors, "{s:?}");
    assert!(kills >= 20 && restarted);
    assert!(s.redelivered > 0, "no kill caught a job in flight: {s:?}");
    let gap = gap.unwrap();
    assert!(gap <= 2 * lease, "takeover after {gap:?}");
    assert!(most <= cap, "{most} waiting, cap {cap}");
}
