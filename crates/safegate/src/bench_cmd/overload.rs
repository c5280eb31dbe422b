//! `safegate bench overload`: flags, [`Overload`], and a table per scenario or one JSON
//! document (docs/bench-overload.md).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use clap::{Args, ValueEnum};
use safegate_bench::overload::{Arrivals, Event, Figures, Overload, OverloadSpec, Progress, ScenarioReport};

use super::flags::flagged;

/// Flags of `safegate bench overload`.
#[derive(Debug, Args)]
pub(super) struct OverloadArgs {
    /// Scenarios, comma-separated [default: all]: collapse-1.5x, collapse-3x, queueing-1.5x,
    /// fast-max, bursts, health-step.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    scenarios: Vec<String>,
    /// Stacks, comma-separated [default: all]: none, tower-limit-oracle, tower-limit-loose,
    /// acc-vegas, acc-gradient2, acc-aimd, resilience-vegas (--features peers), safegate,
    /// safegate-NAME for every controller NAME.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    stacks: Vec<String>,
    /// Seconds of load per run (health-step: the step is at half).
    #[arg(long, default_value_t = 15.0, value_name = "SECONDS")]
    secs: f64,
    /// Seconds of each of the three bursts.
    #[arg(long, default_value_t = 5.0, value_name = "SECONDS")]
    burst_secs: f64,
    /// Seconds of no load between bursts.
    #[arg(long, default_value_t = 5.0, value_name = "SECONDS")]
    burst_gap: f64,
    /// Client timeout: a request not answered this long after its scheduled arrival is
    /// abandoned (its future dropped).
    #[arg(long, default_value_t = 1000.0, value_name = "MS")]
    timeout_ms: f64,
    /// A success counts toward goodput when answered within this long of its arrival.
    #[arg(long, default_value_t = 100.0, value_name = "MS")]
    slo_ms: f64,
    /// Collapse backend: the knee C (requests inside at peak throughput; its best limit).
    #[arg(long, default_value_t = 32, value_name = "N")]
    knee: usize,
    /// Collapse and queueing backends: base service time at full health.
    #[arg(long, default_value_t = 10.0, value_name = "MS")]
    base_ms: f64,
    /// Queueing backend: workers W (its best limit).
    #[arg(long, default_value_t = 32, value_name = "N")]
    workers: usize,
    /// Every backend's starting health (service times are divided by it).
    #[arg(long, default_value_t = 1.0, value_name = "H")]
    health: f64,
    /// Arrival spacing of the fixed-rate scenarios.
    #[arg(long, value_enum, default_value_t = ArrivalsArg::Poisson)]
    arrivals: ArrivalsArg,
    /// Seed of the Poisson arrivals (the same for every stack).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// fast-max: most requests the as-fast-as-possible generator offers in a run.
    #[arg(long, default_value_t = 10_000_000, value_name = "N")]
    fast_cap: u64,
    /// fast-max: most requests outstanding (spawned, not finished). The default, under the
    /// 256 every limiter allows, means a fixed limit of 256 can never bind: any shedding
    /// is the controller's own choice. Raise it past 256 to make the limits bind.
    #[arg(long, default_value_t = 128, value_name = "N")]
    fast_outstanding: u64,
    /// Pause between runs.
    #[arg(long, default_value_t = 500, value_name = "MS")]
    pause_ms: u64,
    /// Print one JSON document (every figure, and each run's per-second goodput).
    #[arg(long)]
    json: bool,
}

/// How arrivals are spaced within a segment of constant rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ArrivalsArg {
    /// Exponential gaps (a Poisson process), seeded.
    Poisson,
    /// Evenly spaced, `1/rate` apart.
    Even,
}

impl OverloadArgs {
    fn spec(&self) -> OverloadSpec {
        OverloadSpec {
            scenarios: self.scenarios.clone(),
            stacks: self.stacks.clone(),
            secs: self.secs,
            burst_secs: self.burst_secs,
            burst_gap: self.burst_gap,
            timeout_ms: self.timeout_ms,
            slo_ms: self.slo_ms,
            knee: self.knee,
            base_ms: self.base_ms,
            workers: self.workers,
            health: self.health,
            arrivals: match self.arrivals {
                ArrivalsArg::Poisson => Arrivals::Poisson,
                ArrivalsArg::Even => Arrivals::Even,
            },
            seed: self.seed,
            fast_cap: self.fast_cap,
            fast_outstanding: self.fast_outstanding,
            pause_ms: self.pause_ms,
        }
    }
}

/// `safegate bench overload …`.
pub(super) fn run(a: &OverloadArgs) -> Result<ExitCode> {
    let bench = Overload::new(&a.spec()).map_err(flagged)?;
    // Progress: tenths of a second of planned load, over every run this binary has.
    let pb = crate::progress::bar(bench.progress_total(), "overload", !a.json && std::io::stderr().is_terminal());
    let tick: Progress = {
        let pb = pb.clone();
        Arc::new(move |position| pb.set_position(position))
    };
    let document = bench
        .run(crate::runtime::runtime, tick, |event| match event {
            Event::RunStarted { scenario, stack } => pb.set_message(format!("{scenario} {stack}")),
            Event::RunDone { position } => pb.set_position(position),
            Event::ScenarioDone(report) => {
                if !a.json {
                    pb.suspend(|| print_table(report));
                }
            }
        })
        .map_err(flagged)?;
    pb.finish_and_clear();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&document)?);
    }
    Ok(ExitCode::SUCCESS)
}

fn opt(x: Option<f64>, prec: usize) -> String {
    x.map_or_else(|| "—".to_string(), |v| format!("{v:.prec$}"))
}

/// The reason behind most rejections, `-` when none.
fn main_reason(f: &Figures) -> &'static str {
    f.shed_reasons.iter().max_by_key(|(_, n)| **n).map_or("-", |(r, _)| r)
}

/// One scenario's table.
fn print_table(s: &ScenarioReport) {
    println!("## {}: {}; {}", s.name, s.backend, s.load);
    let extra = match s.runs.iter().find_map(|r| r.figures.as_ref()) {
        Some(f) if f.bursts.is_some() => "  burst goodput/s (÷ first)",
        Some(f) if f.step.is_some() => "  before/s  after/s",
        _ => "",
    };
    println!(
        "{:<24} {:>9} {:>9} {:>7} {:>6} {:<9} {:>8} {:>8} {:>8} {:>7}{extra}",
        "stack", "offered/s", "goodput/s", "÷oracle", "shed%", "shed by", "timeouts", "p50 ms", "p99 ms", "settle"
    );
    for r in &s.runs {
        let mark = if s.oracle.as_deref() == Some(&r.stack) {
            " [oracle]"
        } else if s.best_anchor.as_deref() == Some(&r.stack) {
            " [anchor]"
        } else {
            ""
        };
        let Some(f) = &r.figures else {
            println!("{:<24} {}", r.stack, r.note.as_deref().unwrap_or("no figures"));
            continue;
        };
        let mut tail = String::new();
        if let Some(b) = &f.bursts {
            let parts: Vec<String> = b
                .iter()
                .map(|b| match b.vs_first {
                    Some(v) => format!("{:.0} ({v:.2})", b.goodput_rps),
                    None => format!("{:.0}", b.goodput_rps),
                })
                .collect();
            tail = format!("  {}", parts.join(" / "));
        }
        if let Some(st) = &f.step {
            tail = format!("  {:>8.0} {:>8.0}", st.goodput_before_rps, st.goodput_after_rps);
        }
        println!(
            "{:<24} {:>9.0} {:>9.0} {:>7} {:>6.1} {:<9} {:>8} {:>8} {:>8} {:>7}{tail}{mark}",
            r.stack,
            f.offered_rps,
            f.goodput_rps,
            opt(f.goodput_vs_oracle, 2),
            100.0 * f.shed_share,
            main_reason(f),
            f.timeouts,
            opt(f.p50_ms, 1),
            opt(f.p99_ms, 1),
            opt(f.settle_s, 0),
        );
    }
    let name_good = |n: &Option<String>| {
        n.as_ref().and_then(|n| {
            s.runs.iter().find(|r| &r.stack == n).and_then(|r| r.figures.as_ref()).map(|f| (n.clone(), f))
        })
    };
    match name_good(&s.oracle) {
        Some((n, f)) => println!("best fixed limit (oracle): {n} at {}, {:.0} good/s", s.oracle_limit, f.goodput_rps),
        None => println!("best fixed limit (oracle, {}): not run", s.oracle_limit),
    }
    match name_good(&s.best_anchor) {
        Some((n, f)) => println!(
            "best anchor (peers): {n}, {:.0} good/s ({} of the oracle)",
            f.goodput_rps,
            opt(f.goodput_vs_oracle, 2)
        ),
        None => println!("best anchor (peers): none run"),
    }
    println!();
}
