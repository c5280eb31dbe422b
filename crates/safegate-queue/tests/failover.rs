//! Components that die without a word (their runtime dropped mid-flight, as a `kill -9`
//! leaves them): a worker's jobs come back, a follower controller takes the lead.

mod common;

use std::future::pending;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use safegate_queue::{Job, Queue, Worker};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

#[test]
fn a_dead_workers_jobs_are_given_back_and_done_once() {
    let r = common::Redis::start(false);
    let main = runtime();
    let q = main.block_on(Queue::connect(&r.url(), "reaped")).unwrap();
    main.block_on(async {
        let p = q.producer::<u32>();
        for n in 0..20 {
            assert!(p.enqueue(&n).await.unwrap().is_admitted());
        }
    });
    // A worker that takes 4 jobs and hangs on them, then dies with its runtime.
    let doomed = runtime();
    let q2 = q.clone();
    doomed.spawn(async move {
        Worker::new(&q2)
            .name("doomed")
            .lanes(4)
            .heartbeat(Duration::from_millis(300))
            .run(|_: Job<u32>| pending::<Result<(), safegate_queue::JobError>>(), pending())
            .await
    });
    main.block_on(async {
        let t0 = Instant::now();
        while q.stats().await.unwrap().in_service < 4 {
            assert!(t0.elapsed() < Duration::from_secs(10), "the doomed worker took no jobs");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    doomed.shutdown_background();
    let done = Arc::new(AtomicU32::new(0));
    let d = done.clone();
    let report = main.block_on(async {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let w = tokio::spawn(Worker::new(&q).name("rescuer").lanes(2).heartbeat(Duration::from_millis(300)).run(
            move |_: Job<u32>| {
                let d = d.clone();
                async move {
                    d.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                }
            },
            async move {
                let _ = stopped.await;
            },
        ));
        let t0 = Instant::now();
        while q.stats().await.unwrap().completed < 20 {
            assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", q.stats().await.unwrap());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        stop.send(()).unwrap();
        w.await.unwrap().unwrap()
    });
    let s = main.block_on(q.stats()).unwrap();
    assert!(s.balanced(), "{s:?}");
    assert_eq!((s.completed, s.redelivered, report.completed), (20, 4, 20), "{s:?}");
    assert_eq!(done.load(Ordering::Relaxed), 20);
}

/// Two controllers: the leader dies; the follower leads within twice the lease.
#[test]
fn a_follower_takes_over_within_twice_the_lease() {
    let r = common::Redis::start(false);
    // The connection's driver runs on the runtime that made it: it stays up.
    let rt = runtime();
    let q = rt.block_on(Queue::connect(&r.url(), "led")).unwrap();
    let lease = Duration::from_millis(400);
    let gap = common::takeover_gap(&q, lease);
    println!("takeover after kill: {gap:?} (lease {lease:?})");
    assert!(gap <= 2 * lease, "{gap:?}");
}
