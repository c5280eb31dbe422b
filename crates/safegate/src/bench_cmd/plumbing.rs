//! `safegate bench plumbing`: flags, `safegate_bench::plumbing::plumbing` on the
//! binary's runtime, and the table or JSON of its figures (docs/bench-plumbing.md).

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use safegate_bench::plumbing::{plumbing, PlumbingSpec};

use super::flags::flagged;

/// Flags of `safegate bench plumbing`.
#[derive(Debug, Args)]
pub(super) struct PlumbingArgs {
    /// Jobs per round and stack (at most 1000000).
    #[arg(long, default_value_t = 20_000, value_name = "N")]
    jobs: u64,
    /// Executors (consumers) per stack: our pool's executors, apalis's worker concurrency.
    #[arg(long, default_value_t = 8, value_name = "P")]
    executors: u32,
    /// Rounds; each stack's figure is the median over them.
    #[arg(long, default_value_t = 3, value_name = "R")]
    rounds: usize,
    /// A running Redis (`redis://[:PASSWORD@]HOST:PORT/`); without it a private
    /// redis-server is started on a free loopback port and stopped after.
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    /// --redis lists the nodes of a running Redis Cluster (comma-separated); our stack runs
    /// on it, the peer does not.
    #[arg(long, requires = "redis")]
    cluster: bool,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
}

/// `safegate bench plumbing`.
pub(super) fn run(a: &PlumbingArgs) -> Result<ExitCode> {
    let spec = PlumbingSpec {
        jobs: a.jobs,
        executors: a.executors,
        rounds: a.rounds,
        redis: a.redis.clone(),
        cluster: a.cluster,
    };
    let report = plumbing(&spec, crate::runtime::runtime()?).map_err(flagged)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.table());
    }
    Ok(ExitCode::SUCCESS)
}
