//! `safegate`: admission control whose safety is a reviewable boundary.
//!
//! The binary is a thin shell over `safegate-core` (decisions) and `safegate-sim` (the
//! seed's model): it parses flags into a validated scenario, runs it and prints the result
//! as a table, JSON or an SVG chart.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench_cmd;
mod bound_cmd;
mod boundary_cmd;
mod calls;
mod chart_to;
mod compare_cmd;
mod detect_cmd;
mod executor_cmd;
mod falsify_cmd;
mod fleet_cmd;
mod fleet_sim_render;
mod gate_cmd;
mod live_cmd;
mod out_dir;
mod pg_cmd;
mod policy_arg;
mod progress;
mod report_cmd;
mod reproduce_cmd;
mod run_cmd;
mod runtime;
mod serve_cmd;
mod set_arg;
mod stop;
mod verify_cmd;

/// Admission control whose safety is a reviewable boundary.
///
/// With no command, runs the seed's headline scenario (λ = 80 on the health cycle) in four
/// arms side by side (no gate, the seed's gate, the safety filter, the filter with the
/// concurrency cap), and writes a chart (`safegate run`).
#[derive(Debug, Parser)]
#[command(name = "safegate", version, about, long_about = None, propagate_version = true, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Without a command, the flags of `run`.
    #[command(flatten)]
    run: run_cmd::RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a scenario of the seed's executor-pool model (default: the embedded λ = 80 band).
    Run(Box<run_cmd::RunArgs>),
    /// Run every worked result of the seed and check ours against it (exit 1 on a failure).
    Reproduce(reproduce_cmd::ReproduceArgs),
    /// Check a boundary file against the model by Monte Carlo over its envelope.
    Verify(verify_cmd::VerifyArgs),
    /// Horizon bounds (Freedman, Ville) and the inverse design for given margins and noise.
    Bound(bound_cmd::BoundArgs),
    /// The seed's boundary checklist on your own telemetry: `boundary check FILE`.
    Boundary(boundary_cmd::BoundaryArgs),
    /// Test the seed's falsification criteria F10–F19 in the model, each with a verdict
    /// (holds, falsified or inconclusive) and the numbers behind it.
    Falsify(falsify_cmd::FalsifyArgs),
    /// Run the two-mode IMM regime detector over a series of values (posterior and alarms).
    Detect(detect_cmd::DetectArgs),
    /// Every nominal controller, with and without the filter, on the seed's scenarios.
    Compare(Box<compare_cmd::CompareArgs>),
    /// Benchmarks on this machine: `bench overhead`, the tower layer's cost per request;
    /// `bench overload`, limiters side by side under overload; `bench plumbing`, jobs/s
    /// through the Redis backlog and executors.
    Bench(bench_cmd::BenchArgs),
    /// Play a scenario on a real Redis-backed worker pool on loopback: a backlog with
    /// admission at the enqueue, executors, a downstream emulator, load and retries.
    Live(Box<live_cmd::LiveArgs>),
    /// The seed's system on PostgreSQL: `pg curve` measures and fits the database's
    /// service curve; `pg arms` plays the seed's arms on it beside the model.
    Pg(pg_cmd::PgArgs),
    /// Run executors as a separate process against a live run's Redis (see `live
    /// --external-executors`).
    Executor(executor_cmd::ExecutorArgs),
    /// A queue's controller (safegate-queue): reads the queue's books, decides with a
    /// registry policy under a boundary's filter, publishes the grant; run several, one
    /// leads through a lease.
    Gate(gate_cmd::GateArgs),
    /// A fleet of gate processes sharing one downstream, coordinated by a price over
    /// Redis; `--outage START:LEN` stops the coordinator for a while.
    Fleet(fleet_cmd::FleetArgs),
    /// Reproduce, compare, verify and falsify in one self-contained HTML file with every
    /// figure inline (`--out DIR`, `--quick` for small samples).
    Report(report_cmd::ReportArgs),
    /// One gate of a fleet (started by `safegate fleet`).
    #[command(hide = true)]
    FleetGate(fleet_cmd::FleetGateArgs),
    /// A local page whose controls drive the simulator (chart redrawn as they move), and
    /// its JSON API: `POST /api/run`.
    Serve(serve_cmd::ServeArgs),
}

/// `println!` panics when standard output fails: "failed printing to stdout: Broken pipe"
/// under `safegate run --json | head`, "No space left on device" on a full disk. Neither is
/// a bug of the command. A closed pipe ends the program quietly with the status a
/// `SIGPIPE` would give (141), as a filter's writer ends; any other failure is an error
/// naming standard output, exit 2. A failing standard error ends it with 2 and no word
/// (there is nowhere to say it). Every other panic keeps the default report.
fn output_failures_are_errors() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if let Some(cause) = msg.strip_prefix("failed printing to stdout: ") {
            if cause.contains("Broken pipe") {
                std::process::exit(141);
            }
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "error: cannot write to standard output: {cause}");
            std::process::exit(2);
        }
        if msg.starts_with("failed printing to stderr: ") {
            std::process::exit(2);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    output_failures_are_errors();
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Run(args)) => run_cmd::run(&args),
        Some(Command::Reproduce(args)) => reproduce_cmd::run(&args),
        Some(Command::Verify(args)) => verify_cmd::run(&args),
        Some(Command::Bound(args)) => bound_cmd::run(&args),
        Some(Command::Boundary(args)) => boundary_cmd::run(&args),
        Some(Command::Detect(args)) => detect_cmd::run(&args),
        Some(Command::Falsify(args)) => falsify_cmd::run(&args),
        Some(Command::Compare(args)) => compare_cmd::run(&args),
        Some(Command::Bench(args)) => bench_cmd::run(&args),
        Some(Command::Live(args)) => live_cmd::run(&args),
        Some(Command::Executor(args)) => executor_cmd::executor(&args),
        Some(Command::Pg(args)) => pg_cmd::run(&args),
        Some(Command::Gate(args)) => gate_cmd::run(&args),
        Some(Command::Fleet(args)) => fleet_cmd::run(&args),
        Some(Command::Report(args)) => report_cmd::run(&args),
        Some(Command::FleetGate(args)) => fleet_cmd::gate(&args),
        Some(Command::Serve(args)) => serve_cmd::run(&args),
        // No command: `safegate run` with the flags given.
        None => run_cmd::run(&cli.run),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
