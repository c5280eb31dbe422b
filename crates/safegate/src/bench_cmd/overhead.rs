//! `safegate bench overhead`: flags, `safegate_bench::overhead::overhead`, and the table
//! or JSON of its figures.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use safegate_bench::overhead::{overhead, OverheadSpec};

use super::flags::flagged;

/// Flags of `safegate bench overhead`.
#[derive(Debug, Args)]
pub(super) struct OverheadArgs {
    /// Requests per thread per round.
    #[arg(long, default_value_t = 400_000, value_name = "N")]
    requests: u64,
    /// Rounds; each figure is the median over them.
    #[arg(long, default_value_t = 9, value_name = "N")]
    rounds: usize,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
}

/// `safegate bench overhead`.
pub(super) fn run(a: &OverheadArgs) -> Result<ExitCode> {
    let report = overhead(&OverheadSpec { requests: a.requests, rounds: a.rounds }).map_err(flagged)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "safegate bench overhead: {} requests per thread, median of {} rounds (ns per request)",
        a.requests, a.rounds
    );
    println!();
    println!("{:<44} {:>12} {:>16}", "stack", "1 thread", "2 threads");
    let row = |name: &str, x: f64, y: f64| println!("{name:<44} {x:>12.1} {y:>16.1}");
    let (s, c) = (&report.single, &report.contended);
    row("no-op service", s.noop_ns, c.noop_ns);
    row("tower ConcurrencyLimit", s.concurrency_limit_ns, c.concurrency_limit_ns);
    row("tower LoadShed + ConcurrencyLimit", s.load_shed_concurrency_limit_ns, c.load_shed_concurrency_limit_ns);
    row("safegate Admission (default controller)", s.admission_ns, c.admission_ns);
    match (s.tower_acc_ns, c.tower_acc_ns) {
        (Some(x), Some(y)) => row("tower-acc ConcurrencyLimit (Gradient2)", x, y),
        _ => println!("{:<44} {:>12} {:>16}", "tower-acc", "not built", "(--features tower-acc)"),
    }
    println!();
    println!(
        "ratio admission / ConcurrencyLimit, median of per-round ratios: {:.2} (1 thread, rounds {:.2}–{:.2}), \
         {:.2} (2 threads, rounds {:.2}–{:.2})",
        s.ratio, s.ratio_range[0], s.ratio_range[1], c.ratio, c.ratio_range[0], c.ratio_range[1]
    );
    if let (Some(x), Some(y)) = (s.tower_acc_ratio, c.tower_acc_ratio) {
        println!("ratio tower-acc / ConcurrencyLimit:  {x:.2} (1 thread), {y:.2} (2 threads)");
    }
    Ok(ExitCode::SUCCESS)
}
