//! A worker as its own process, with an idempotent handler: each job adds its payload to a
//! Redis set, so a job delivered twice (at-least-once: its worker died before the
//! acknowledgement) has its effect once.
//!
//! `cargo run -p safegate-queue --example worker_process -- URL QUEUE [LANES] [SLEEP_MS]`
//! (stops at Ctrl-C, draining what it holds). The set is `done:{QUEUE}`.
use std::time::Duration;

use safegate_queue::{Job, JobError, Queue, Worker};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(url), Some(name)) = (args.get(1), args.get(2)) else {
        return Err("usage: worker_process URL QUEUE [LANES] [SLEEP_MS]".into());
    };
    let lanes: usize = args.get(3).map_or(Ok(4), |s| s.parse())?;
    let sleep = Duration::from_millis(args.get(4).map_or(Ok(2), |s| s.parse())?);
    let queue = Queue::connect(url, name).await?;
    let client = redis::Client::open(url.as_str())?;
    let cfg = redis::aio::ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_secs(2)));
    let done = redis::aio::ConnectionManager::new_with_config(client, cfg).await?;
    let set = format!("done:{{{name}}}");
    let handler = move |job: Job<u64>| {
        let (mut done, set) = (done.clone(), set.clone());
        async move {
            tokio::time::sleep(sleep).await;
            let _: () = redis::cmd("SADD").arg(&set).arg(job.payload).query_async(&mut done).await?;
            Ok::<(), JobError>(())
        }
    };
    let report = Worker::new(&queue)
        .lanes(lanes)
        .heartbeat(Duration::from_millis(500))
        .run(handler, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    eprintln!("{report:?}");
    Ok(())
}
