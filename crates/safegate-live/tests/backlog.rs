//! The backlog's scripts against a real redis-server on a free loopback port.

use std::time::Duration;

use safegate_live::backlog::{Admission, Backlog};
use safegate_live::redis_server::RedisServer;

async fn fresh(ns: &str) -> (RedisServer, Backlog) {
    let server = RedisServer::start(false).expect("redis-server on PATH (scripts/test installs it)");
    let b = Backlog::connect(&server.url(), ns).await.unwrap();
    b.reset().await.unwrap();
    (server, b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_producers_never_push_the_backlog_past_its_bound() {
    let (_s, b) = fresh("t1").await;
    b.publish(1.0, None, 50).await.unwrap();
    let mut tasks = Vec::new();
    for p in 0..8 {
        let b = b.clone();
        tasks.push(tokio::spawn(async move {
            let mut admitted = 0;
            for i in 0..40 {
                if b.offer(0.0, &format!("{p}-{i}"), false).await.unwrap() == Admission::Admitted {
                    admitted += 1;
                }
            }
            admitted
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    let a = b.accounting().await.unwrap();
    assert_eq!(total, 50);
    assert_eq!(a.admitted, 50);
    assert_eq!(a.in_backlog, 50);
    assert_eq!(a.offered, 320);
    assert_eq!(a.rejected_full, 270);
    assert_eq!(a.lost(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_share_rejects_and_an_ack_counts_once() {
    let (_s, b) = fresh("t2").await;
    b.publish(0.5, Some(3), 100).await.unwrap();
    assert_eq!(b.concurrency().await.unwrap(), Some(3));
    assert_eq!(b.offer(0.7, "a", false).await.unwrap(), Admission::Rejected);
    assert_eq!(b.offer(0.2, "b", false).await.unwrap(), Admission::Admitted);
    assert_eq!(b.offer(0.1, "c", true).await.unwrap(), Admission::Admitted);
    let mut r = b.reader().await.unwrap();
    let d = b.fetch(&mut r, "c1", Duration::from_millis(50)).await.unwrap().unwrap();
    assert_eq!(d.job, "b");
    assert_eq!(b.accounting().await.unwrap().in_service, 1);
    assert!(b.ack(&d.id, true, Duration::from_micros(10)).await.unwrap());
    assert!(!b.ack(&d.id, true, Duration::from_micros(10)).await.unwrap(), "a second ack counts nothing");
    let d = b.fetch(&mut r, "c1", Duration::from_millis(50)).await.unwrap().unwrap();
    assert!(b.ack(&d.id, false, Duration::ZERO).await.unwrap());
    assert_eq!(b.take_failed(10).await.unwrap(), vec!["c".to_string()]);
    let a = b.accounting().await.unwrap();
    assert_eq!((a.offered, a.offered_retries, a.admitted, a.admitted_retries), (3, 1, 2, 1));
    assert_eq!((a.rejected, a.completed, a.failed, a.in_backlog, a.in_service), (1, 1, 1, 0, 0));
    assert_eq!(a.lost(), 0);
    assert!(b.fetch(&mut r, "c1", Duration::from_millis(20)).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_consumers_jobs_go_back_and_are_counted() {
    let (_s, b) = fresh("t3").await;
    for i in 0..3 {
        b.offer(0.0, &format!("j{i}"), false).await.unwrap();
    }
    let mut r = b.reader().await.unwrap();
    let ttl = Duration::from_millis(200);
    // A live consumer and a dead one, each holding a job.
    assert!(b.beat("alive", None, Duration::from_secs(5)).await.unwrap());
    assert!(b.beat("dead", None, ttl).await.unwrap());
    let held_alive = b.fetch(&mut r, "alive", Duration::from_millis(50)).await.unwrap().unwrap();
    let held_dead = b.fetch(&mut r, "dead", Duration::from_millis(50)).await.unwrap().unwrap();
    assert_eq!(b.reap(100).await.unwrap(), 0, "heartbeats are fresh");
    tokio::time::sleep(ttl * 2).await;
    assert_eq!(b.reap(100).await.unwrap(), 1, "only the dead consumer's job");
    let a = b.accounting().await.unwrap();
    assert_eq!((a.redelivered, a.in_backlog, a.in_service), (1, 3, 1));
    // The given-back job is delivered again, with its count; the dead one's late ack counts nothing.
    let mut seen = Vec::new();
    while let Some(d) = b.fetch(&mut r, "alive", Duration::from_millis(20)).await.unwrap() {
        seen.push(d);
    }
    assert!(seen.iter().any(|d| d.job == held_dead.job && d.redeliveries == 1), "{seen:?}");
    assert!(!b.ack(&held_dead.id, true, Duration::ZERO).await.unwrap());
    assert!(b.ack(&held_alive.id, true, Duration::ZERO).await.unwrap());
    for d in &seen {
        assert!(b.ack(&d.id, true, Duration::ZERO).await.unwrap());
    }
    let a = b.accounting().await.unwrap();
    assert_eq!((a.admitted, a.completed, a.in_backlog), (3, 3, 0));
    assert_eq!(a.lost(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slots_are_leased_one_consumer_each() {
    let (_s, b) = fresh("t4").await;
    let ttl = Duration::from_millis(300);
    assert_eq!(b.take_slot("a", 2, ttl).await.unwrap(), Some(0));
    assert_eq!(b.take_slot("b", 2, ttl).await.unwrap(), Some(1));
    assert_eq!(b.take_slot("c", 2, ttl).await.unwrap(), None);
    assert!(b.beat("a", Some(0), ttl).await.unwrap());
    assert!(!b.beat("c", Some(0), ttl).await.unwrap(), "not c's slot");
    b.release("b", Some(1)).await.unwrap();
    assert_eq!(b.take_slot("c", 2, ttl).await.unwrap(), Some(1));
}

#[tokio::test]
async fn unreachable_and_protected_redis_are_clear_errors() {
    let port = safegate_live::redis_server::free_port().unwrap();
    let e = Backlog::connect(&format!("redis://127.0.0.1:{port}/"), "x").await.unwrap_err();
    let m = e.to_string();
    assert!(m.contains(&format!("127.0.0.1:{port}")) && m.contains("connecting"), "{m}");
    let e = Backlog::connect("not a url", "x").await.unwrap_err();
    assert!(e.to_string().contains("parsing the URL"), "{e}");
}
