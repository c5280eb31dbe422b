//! `safegate bench plumbing`: flags, `safegate_bench::plumbing::plumbing` on the
//! binary's runtime, and the table or JSON of its figures (docs/bench-plumbing.md).

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use safegate_bench::plumbing::{plumbing, PlumbingSpec, Report, OURS};

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
        print_table(&report);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(r: &Report) {
    println!(
        "safegate bench plumbing: {} no-op jobs per round and stack, {} producers, {} executors, median of {} rounds",
        r.jobs, r.producers, r.executors, r.rounds
    );
    println!("redis: {}", r.redis);
    println!("measured: {}", r.measured);
    println!();
    let head = format!("jobs/s (median of {})", r.rounds);
    println!("{:<15} {:>22}   rounds (jobs/s; enqueue done at s / last ack at s)", "stack", head);
    for s in &r.stacks {
        match (s.jobs_per_s, &s.error) {
            (Some(x), _) => {
                let rounds: Vec<String> = s
                    .rounds
                    .iter()
                    .map(|q| format!("{:.0} ({:.2}/{:.2})", q.jobs_per_s, q.enqueue_secs, q.secs))
                    .collect();
                println!("{:<15} {:>22.0}   {}", s.stack, x, rounds.join(", "));
            }
            (None, Some(e)) => println!("{:<15} {:>22}   {e}", s.stack, "-"),
            (None, None) => println!("{:<15} {:>22}", s.stack, "-"),
        }
    }
    for s in &r.stacks {
        let ms = |f: fn(&safegate_bench::plumbing::Round) -> Option<f64>| {
            let v: Vec<String> = s.rounds.iter().filter_map(f).map(|x| format!("{x:.2}")).collect();
            (!v.is_empty()).then(|| v.join(", "))
        };
        if let (Some(p50), Some(p99)) = (ms(|q| q.admitted_p50_ms), ms(|q| q.admitted_p99_ms)) {
            println!("{}: enqueue latency, admitted: p50 {p50} ms, p99 {p99} ms (per round)", s.stack);
        }
        if let Some(p99) = ms(|q| q.rejected_p99_ms) {
            println!("{}: enqueue latency, turned away at a full bound: p99 {p99} ms (per round)", s.stack);
        }
    }
    println!();
    println!("per job:");
    for s in &r.stacks {
        println!("  {}: {}", s.stack, s.path);
    }
    println!();
    let ours = r.stacks.iter().find(|s| s.stack == OURS).and_then(|s| s.jobs_per_s).unwrap_or(f64::NAN);
    if r.meets_target {
        println!(
            "target: ≥ {:.0} jobs/s for our plumbing: met ({ours:.0} jobs/s, median of {} rounds)",
            r.target_jobs_per_s, r.rounds
        );
    } else {
        println!(
            "target: ≥ {:.0} jobs/s for our plumbing: NOT met ({ours:.0} jobs/s, median of {} rounds)",
            r.target_jobs_per_s, r.rounds
        );
    }
}
