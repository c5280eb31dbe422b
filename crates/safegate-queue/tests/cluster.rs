//! The queue on a 3-primary Redis Cluster (one replica each): several queues spread over
//! the primaries, and a failover of one primary under load, with the books checked after.

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use safegate_queue::{Admission, Job, Queue, Worker};

#[test]
fn queues_spread_over_a_cluster_and_survive_a_failover_under_load() {
    let cluster = common::Cluster::start(3);
    let urls = cluster.urls();
    let entry: Vec<&str> = urls.iter().take(1).map(String::as_str).collect();
    let names = ["mail", "images", "billing", "reports", "search", "audit"];
    let owners: HashSet<u16> = names.iter().map(|n| cluster.owner(&format!("sg:{{{n}}}:jobs")).0).collect();
    assert!(owners.len() >= 2, "the queues all hash to one primary: {owners:?}");
    let (primary, replica) = cluster.owner("sg:{mail}:jobs");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let report = rt.block_on(async {
        let mut queues = Vec::new();
        for n in names {
            queues.push(Queue::connect_cluster(&entry, n).await.unwrap());
        }
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let mut workers = Vec::new();
        for q in &queues {
            let mut rx = stopped.clone();
            workers.push(tokio::spawn(Worker::new(q).lanes(2).heartbeat(Duration::from_secs(2)).run(
                |_: Job<u64>| async {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    Ok(())
                },
                async move {
                    let _ = rx.wait_for(|s| *s).await;
                },
            )));
        }
        // Producers: 400 offers per queue over ~4 s; the failover of `mail`'s primary at ~1.5 s.
        let mut producers = Vec::new();
        for q in &queues {
            let p = q.producer::<u64>();
            producers.push(tokio::spawn(async move {
                let (mut admitted, mut errors) = (0u64, 0u64);
                for n in 0..400u64 {
                    match p.enqueue(&n).await {
                        Ok(Admission::Admitted { .. }) => admitted += 1,
                        Ok(a) => panic!("{a:?}"),
                        Err(_) => errors += 1,
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                (admitted, errors)
            }));
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let out = cluster.cli(replica, &["CLUSTER", "FAILOVER"]);
        assert!(out.contains("OK"), "CLUSTER FAILOVER: {out}");
        let t0 = Instant::now();
        while !cluster.cli(replica, &["ROLE"]).starts_with("master") {
            assert!(t0.elapsed() < Duration::from_secs(20), "the replica on {replica} never became primary");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let failover = t0.elapsed();
        let mut seen = Vec::new();
        for p in producers {
            seen.push(p.await.unwrap());
        }
        let t1 = Instant::now();
        for q in &queues {
            loop {
                let s = q.stats().await;
                if s.as_ref().is_ok_and(|s| s.waiting() == 0) {
                    break;
                }
                assert!(t1.elapsed() < Duration::from_secs(30), "{}: not drained: {s:?}", q.name());
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        stop.send(true).unwrap();
        for w in workers {
            w.await.unwrap().unwrap();
        }
        let mut books = Vec::new();
        for (q, (admitted, errors)) in queues.iter().zip(seen) {
            let s = q.stats().await.unwrap();
            assert!(s.balanced(), "{}: {s:?}", q.name());
            assert_eq!((s.failed, s.dead, s.waiting()), (0, 0, 0), "{}: {s:?}", q.name());
            assert_eq!(s.completed, s.admitted, "{}: {s:?}", q.name());
            assert!(
                s.admitted >= admitted && s.admitted <= admitted + errors,
                "{}: {s:?}, producer {admitted} + {errors} errors",
                q.name()
            );
            books.push((q.name().to_string(), s.admitted, errors));
        }
        (failover, books)
    });
    println!(
        "primaries used: {}; failover of {primary} to {replica}: {:?}; books {:?}",
        owners.len(),
        report.0,
        report.1
    );
    // A controller's takeover on the cluster (the lease and the grant are routed calls to
    // the queue's slot, here on the promoted replica).
    let q = rt.block_on(Queue::connect_cluster(&entry, "mail")).unwrap();
    let lease = Duration::from_millis(400);
    let gap = common::takeover_gap(&q, lease);
    println!("takeover after kill on the cluster: {gap:?} (lease {lease:?})");
    assert!(gap <= 2 * lease, "{gap:?}");
}
