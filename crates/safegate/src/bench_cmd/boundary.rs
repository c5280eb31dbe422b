//! `safegate bench boundary`: flags, `safegate_bench::boundary::boundary`, and the table
//! or JSON of its timings.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use safegate_bench::boundary::{boundary, check, BoundarySpec};

use super::flags::flagged;

/// Flags of `safegate bench boundary`.
#[derive(Debug, Args)]
pub(super) struct BenchBoundaryArgs {
    /// Rows of telemetry (one every 0.1 s of the model).
    #[arg(long, default_value_t = 1_000_000, value_name = "N")]
    rows: u64,
    /// Timed rounds; the figure is their median.
    #[arg(long, default_value_t = 3, value_name = "N")]
    rounds: usize,
    /// Also time the Prometheus scrape series of the same telemetry.
    #[arg(long)]
    prometheus: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `safegate bench boundary`.
pub(super) fn run(a: &BenchBoundaryArgs) -> Result<ExitCode> {
    let spec = BoundarySpec { rows: a.rows, rounds: a.rounds, prometheus: a.prometheus };
    check(&spec).map_err(flagged)?;
    eprintln!("generating {} rows of telemetry …", a.rows);
    let rows = boundary(&spec).map_err(flagged)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        println!(
            "safegate bench boundary: read, parse and check a generated telemetry file (median of {} rounds)\n",
            a.rounds
        );
        println!("| format | rows | MB | median [s] | min [s] | rows/s | target |");
        println!("|---|---|---|---|---|---|---|");
        for r in &rows {
            println!(
                "| {} | {} | {:.1} | {:.3} | {:.3} | {:.0} | {} |",
                r.format,
                r.rows,
                r.bytes as f64 / 1e6,
                r.median_seconds,
                r.min_seconds,
                r.rows_per_second,
                match (r.target_seconds, r.meets_target) {
                    (Some(t), Some(true)) => format!("≤ {t:.1} s: met"),
                    (Some(t), _) => format!("≤ {t:.1} s: NOT met"),
                    _ => "(the target is for 10⁶ rows)".into(),
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
