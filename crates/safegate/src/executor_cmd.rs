//! `safegate executor`: executors as a separate process against a live run's Redis (see
//! `safegate live --external-executors`).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Args;

/// Flags of `safegate executor`.
#[derive(Debug, Args)]
pub(crate) struct ExecutorArgs {
    /// The live run's Redis.
    #[arg(long, value_name = "URL")]
    redis: String,
    /// The downstream's base URL (`POST URL/work`); without it jobs are no-ops.
    #[arg(long, value_name = "URL")]
    downstream: Option<String>,
    /// The run's queue name (`safegate live --namespace`).
    #[arg(long, default_value = "safegate", value_name = "NS")]
    namespace: String,
    /// Executors in this process (how many run at once across every process is the
    /// controller's published concurrency).
    #[arg(long, default_value_t = 8)]
    executors: u32,
    /// Longest wait for one downstream call, in wall milliseconds.
    #[arg(long, default_value_t = 5000, value_name = "MS")]
    timeout_ms: u64,
    /// Heartbeat time-to-live in milliseconds (a silent executor's jobs go back after it).
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    heartbeat_ms: u64,
}

pub(crate) fn executor(args: &ExecutorArgs) -> Result<ExitCode> {
    if !(1..=1024).contains(&args.executors) {
        anyhow::bail!("--executors {}: expected 1 to 1024", args.executors);
    }
    if !(100..=600_000).contains(&args.heartbeat_ms) {
        anyhow::bail!("--heartbeat-ms {}: expected 100 to 600000", args.heartbeat_ms);
    }
    if !(1..=3_600_000).contains(&args.timeout_ms) {
        anyhow::bail!("--timeout-ms {}: expected 1 to 3600000", args.timeout_ms);
    }
    let rt = crate::runtime::runtime()?;
    rt.block_on(async {
        let queue = safegate_queue::Queue::connect(&args.redis, &args.namespace).await?;
        if let Some(d) = &args.downstream {
            safegate_live::downstream::probe(d).await?;
        }
        let pool = safegate_live::executor::Pool::start(
            queue,
            safegate_live::executor::ExecutorConfig {
                executors: args.executors,
                backend: args.downstream.as_ref().map_or(safegate_live::executor::Backend::Noop, |d| {
                    safegate_live::executor::Backend::Http(d.trim_end_matches('/').to_string())
                }),
                timeout: Duration::from_millis(args.timeout_ms),
                heartbeat: Duration::from_millis(args.heartbeat_ms),
                ..Default::default()
            },
        )
        .await?;
        eprintln!(
            "safegate executor: {} executors serving {}",
            args.executors,
            safegate_live::redis_conn::redact(&args.redis)
        );
        // Ctrl-C or SIGTERM: finish the jobs in hand and leave (SIGKILL leaves them to the
        // reaper).
        crate::stop::signal()?.await;
        let _ = pool.stop(Duration::from_secs(5)).await;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
