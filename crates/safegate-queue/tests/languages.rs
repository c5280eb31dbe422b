//! Any language enqueues through the gate: one `FCALL sg_enqueue` from Python (redis-py)
//! and from `redis-cli`, consumed by a Rust worker, under the same bound.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use safegate_queue::{Job, Queue, QueueConfig, Worker};
use serde::Deserialize;

#[derive(Debug, Deserialize, PartialEq)]
struct Resize {
    image: String,
    width: u32,
}

const PYTHON: &str = r#"
import json, sys, redis
r = redis.Redis.from_url(sys.argv[1])
q = sys.argv[2]
keys = [f"sg:{{{q}}}:{k}" for k in ("jobs", "gate", "config", "count", "delayed")]
codes = []
for i in range(int(sys.argv[3])):
    code, job_id, retry_after_us, mode = r.execute_command(
        "FCALL", "sg_enqueue", len(keys), *keys, json.dumps({"image": f"img{i}.png", "width": 100 + i}))
    codes.append(int(code))
print(json.dumps(codes))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_and_redis_cli_enqueue_a_rust_worker_consumes() {
    let r = common::Redis::start(false);
    let q = Queue::connect(&r.url(), "images").await.unwrap();
    q.configure(&QueueConfig { cap: 100, fallback: 30, ..QueueConfig::default() }).await.unwrap();
    // Python offers 40: the fallback bound admits 30 (code 0), turns 10 away (code 2).
    let py = common::python_with_redis();
    let out = Command::new(&py).args(["-c", PYTHON, &r.url(), "images", "40"]).output().unwrap();
    assert!(out.status.success(), "python: {}", String::from_utf8_lossy(&out.stderr));
    let codes: Vec<i64> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(codes.iter().filter(|&&c| c == 0).count(), 30, "{codes:?}");
    assert_eq!(codes.iter().filter(|&&c| c == 2).count(), 10, "{codes:?}");
    // redis-cli: full too, then admitted once a job is done.
    let cli = |payload: &str| {
        let k = |s: &str| format!("sg:{{images}}:{s}");
        let out = Command::new("redis-cli")
            .args(["-p", &r.port.to_string(), "FCALL", "sg_enqueue", "5"])
            .args([k("jobs"), k("gate"), k("config"), k("count"), k("delayed")])
            .arg(payload)
            .output()
            .unwrap();
        assert!(out.status.success(), "redis-cli: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").trim().to_string()
    };
    assert_eq!(cli(r#"{"image":"cli.png","width":7}"#), "2");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let w = tokio::spawn(Worker::new(&q).lanes(2).run(
        move |job: Job<Resize>| {
            let s2 = s2.clone();
            async move {
                s2.lock().unwrap().push(job.payload);
                Ok(())
            }
        },
        async move {
            let _ = stopped.await;
        },
    ));
    let t0 = Instant::now();
    while q.stats().await.unwrap().completed < 30 {
        assert!(t0.elapsed() < Duration::from_secs(20));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(cli(r#"{"image":"cli.png","width":7}"#), "0");
    while q.stats().await.unwrap().completed < 31 {
        assert!(t0.elapsed() < Duration::from_secs(20));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.send(()).unwrap();
    w.await.unwrap().unwrap();
    assert!(q.stats().await.unwrap().balanced());
    let seen = seen.lock().unwrap();
    assert!(seen.contains(&Resize { image: "img29.png".into(), width: 129 }));
    assert!(seen.contains(&Resize { image: "cli.png".into(), width: 7 }));
}
