//! A producer, a worker and a controller of one queue, in one program:
//! `cargo run -p safegate-queue --example quickstart [redis://127.0.0.1:6379/]`.
use std::time::Duration;

use safegate_core::boundary::Boundary;
use safegate_queue::{Admission, Controller, Job, JobError, Queue, Worker};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

/// The backlog stays at or below 0.7 of its capacity, except with probability 1 % over
/// 10 minutes.
const BOUNDARY: &str = r#"
[barrier]
threshold = 0.7
[probability]
epsilon = 0.01
horizon = 600
"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1).unwrap_or_else(|| "redis://127.0.0.1:6379/".into());
    let queue = Queue::connect(&url, "emails").await?;
    let (stop, stopped) = watch::channel(false);
    let until_stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };

    // The controller: `peak` on the workers' concurrency, under the boundary's filter, for
    // a backlog of 1,000 jobs worked by about 8 workers.
    let boundary = Boundary::from_toml(BOUNDARY, &[])?;
    let (controller, bounds) = Controller::with_boundary(&queue, &boundary, "peak+pool", 1_000, 8)?;
    queue.set_bounds(bounds).await?;
    let control = tokio::spawn(controller.run(until_stopped(stopped.clone())));

    // The worker: your handler, at most 8 jobs at once.
    let send = |job: Job<Email>| async move {
        tokio::time::sleep(Duration::from_millis(5)).await; // deliver the email
        println!("sent to {} (attempt {})", job.payload.to, job.attempt);
        Ok::<(), JobError>(())
    };
    let work = tokio::spawn(Worker::new(&queue).lanes(8).run(send, until_stopped(stopped.clone())));

    // The producer: each offer is admitted or turned away at once.
    let producer = queue.producer::<Email>();
    for i in 0..100 {
        match producer.enqueue(&Email { to: format!("user{i}@example.com") }).await? {
            Admission::Admitted { .. } => {}
            Admission::Rejected { reason, retry_after, .. } => {
                eprintln!("user{i}: turned away ({reason:?}), retry after {retry_after:?}");
            }
        }
    }

    // Wait for the backlog to drain, then stop the worker (it finishes what it holds) and
    // the controller (it gives its lease up).
    while queue.stats().await?.waiting() > 0 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.send(true)?;
    let report = work.await??;
    control.await??;
    let s = queue.stats().await?;
    println!(
        "admitted {}, completed {} ({} by this worker); the books balance: {}",
        s.admitted,
        s.completed,
        report.completed,
        s.balanced()
    );
    Ok(())
}
