//! `safegate gate`: a queue's controller as a daemon (the safegate-queue crate). Run two or
//! more: one leads through a lease in Redis, the others follow and take over when it dies.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use clap::Args;
use safegate_core::controllers::PolicySpec;
use safegate_queue::{redact, Controller, Queue};

/// Flags of `safegate gate`.
#[derive(Debug, Args)]
pub(crate) struct GateArgs {
    /// The queue's Redis: `redis://[user:password@]host:port/db`, or `rediss://…` for TLS
    /// (the password is never printed). With `--cluster`: one or more cluster nodes, comma
    /// separated.
    #[arg(long, value_name = "URL")]
    redis: String,
    /// The URL names nodes of a Redis Cluster (the others are discovered).
    #[arg(long)]
    cluster: bool,
    /// TLS: the certificate authority to trust (PEM) instead of the system's roots.
    #[arg(long, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// TLS: this process's certificate (PEM), for servers that ask for one (mutual TLS).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS: the private key of `--tls-cert` (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// The queue's name (1 to 64 of A-Z a-z 0-9 _ . -).
    #[arg(long, value_name = "NAME")]
    queue: String,
    /// The boundary whose safety filter the policy runs under [default: the embedded
    /// seed-80: backlog ≤ 0.7·Q, ε = 1 % over 600 s].
    #[arg(long, value_name = "FILE")]
    boundary: Option<PathBuf>,
    /// The nominal policy, a registry spec (`+pool`: it sets the workers' concurrency).
    #[arg(long, value_name = "SPEC", value_parser = crate::policy_arg::PolicyParser, default_value = "peak+pool")]
    policy: PolicySpec,
    /// The backlog's capacity Q in jobs: the queue's cap; the boundary's line is θ·Q, the
    /// bound when no controller publishes.
    #[arg(long, default_value_t = 1000, value_name = "JOBS")]
    capacity: u64,
    /// About how many workers serve the queue (the policy's setting).
    #[arg(long, default_value_t = 8, value_name = "N")]
    workers: u32,
    /// The lease in milliseconds: a grant stays in force this long without renewal, and a
    /// follower takes over this long after the leader's last renewal.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    lease_ms: u64,
    /// This controller's id in the lease [default: unique to the process].
    #[arg(long, value_name = "ID")]
    id: Option<String>,
    /// Stop after this many seconds [default: at Ctrl-C or SIGTERM].
    #[arg(long, value_name = "S")]
    duration: Option<f64>,
    /// One JSON object per second on stdout instead of a text line on stderr.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &GateArgs) -> Result<ExitCode> {
    if !(1..=1 << 40).contains(&args.capacity) {
        bail!("--capacity {}: expected 1 to 2^40 jobs", args.capacity);
    }
    if !(1..=100_000).contains(&args.workers) {
        bail!("--workers {}: expected 1 to 100000", args.workers);
    }
    if !(10..=3_600_000).contains(&args.lease_ms) {
        bail!("--lease-ms {}: expected 10 to 3600000", args.lease_ms);
    }
    if let Some(d) = args.duration {
        if !(d > 0.0 && d <= 1e7) {
            bail!("--duration {d}: expected more than 0 and at most 1e7 seconds");
        }
    }
    let (boundary, origin) = match &args.boundary {
        Some(p) => (safegate_sim::scenario::load_boundary(p)?, p.display().to_string()),
        None => (crate::calls::default_boundary()?, "the embedded seed-80".to_string()),
    };
    let rt = crate::runtime::runtime()?;
    rt.block_on(async {
        let queue = connect(args).await?;
        let (controller, bounds) =
            Controller::with_boundary(&queue, &boundary, &args.policy.to_string(), args.capacity, args.workers)
                .map_err(|e| anyhow!("{origin}: {e}"))?;
        let lease = Duration::from_millis(args.lease_ms);
        let mut controller = controller.lease(lease);
        if let Some(id) = &args.id {
            controller = controller.id(id.clone());
        }
        queue.set_bounds(bounds).await?;
        eprintln!(
            "safegate gate: queue {} at {}, {} under {origin} (Q = {}, line {}), lease {} ms",
            args.queue,
            redact(&args.redis),
            args.policy,
            args.capacity,
            bounds.fallback,
            args.lease_ms
        );
        let signalled = crate::stop::signal()?;
        let duration = args.duration;
        let stop = async move {
            let limit = duration.map_or(Duration::MAX, Duration::from_secs_f64);
            let _ = tokio::time::timeout(limit, signalled).await;
        };
        let mut last = Instant::now() - Duration::from_secs(2);
        let json = args.json;
        let line = bounds.fallback;
        let report = controller
            .run_with(stop, |s| {
                if last.elapsed() >= Duration::from_secs(1) {
                    last = Instant::now();
                    say(json, &safegate_render::gate::status(s, line, json));
                }
            })
            .await?;
        say(json, &safegate_render::gate::report(&report, json));
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The queue on one server or a cluster, over TLS when any TLS file is given.
async fn connect(args: &GateArgs) -> Result<Queue> {
    if args.redis.contains(',') && !args.cluster {
        bail!("--redis {}: several URLs name cluster nodes: add --cluster", redact(&args.redis));
    }
    let files = [&args.tls_ca, &args.tls_cert, &args.tls_key];
    Ok(if files.iter().any(|f| f.is_some()) {
        let tls =
            safegate_queue::Tls::from_files(args.tls_ca.as_deref(), args.tls_cert.as_deref(), args.tls_key.as_deref())?;
        Queue::connect_to_tls(&args.redis, args.cluster, &args.queue, &tls).await?
    } else {
        Queue::connect_to(&args.redis, args.cluster, &args.queue).await?
    })
}

/// JSON to stdout, text to stderr.
fn say(json: bool, text: &str) {
    if json {
        println!("{text}");
    } else {
        eprintln!("{text}");
    }
}
