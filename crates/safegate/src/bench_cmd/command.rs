//! The `bench` subcommands and their dispatch.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};

use super::{boundary, overhead, overload, plumbing};

/// Flags of `safegate bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    #[command(subcommand)]
    what: BenchWhat,
}

#[derive(Debug, Subcommand)]
enum BenchWhat {
    /// Nanoseconds per request of the admission layer vs tower's ConcurrencyLimit and a no-op.
    Overhead(overhead::OverheadArgs),
    /// Admission-control stacks side by side under open-loop overload on in-process backends
    /// (and PostgreSQL, with --pg-url).
    Overload(Box<overload::OverloadArgs>),
    /// Jobs per second through our Redis plumbing (enqueue, execute, acknowledge; no-op
    /// job), side by side with apalis-redis (--features peers) on the same Redis.
    Plumbing(plumbing::PlumbingArgs),
    /// Seconds `boundary check` takes on a generated telemetry file of N rows (read, parse,
    /// check; the target: 10⁶ rows in at most 5 s).
    Boundary(boundary::BenchBoundaryArgs),
}

/// `safegate bench …`.
pub(crate) fn run(args: &BenchArgs) -> Result<ExitCode> {
    match &args.what {
        BenchWhat::Overhead(a) => overhead::run(a),
        BenchWhat::Overload(a) => overload::run(a),
        BenchWhat::Plumbing(a) => plumbing::run(a),
        BenchWhat::Boundary(a) => boundary::run(a),
    }
}
