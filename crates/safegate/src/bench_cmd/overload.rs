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
    /// Seconds of load per run (health-step: the step is at half) [default: 15; 5 with --sweep].
    #[arg(long, value_name = "SECONDS")]
    secs: Option<f64>,
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
    /// Several, comma-separated, run the scenarios once per knee (and per base time): a
    /// sweep, summed up in one table at the end [default: 32; with --sweep, 2,4,8,16,32,64,128].
    #[arg(long, value_delimiter = ',', value_name = "N")]
    knee: Vec<usize>,
    /// Collapse and queueing backends: base service time at full health; several,
    /// comma-separated, sweep them [default: 10; with --sweep, 2,5,10].
    #[arg(long, value_delimiter = ',', value_name = "MS")]
    base_ms: Vec<f64>,
    /// The small-knee sweep: knees 2–128 and base times 2–10 ms (unless --knee/--base-ms
    /// say otherwise), on collapse-1.5x and collapse-3x (unless --scenarios does), 5 s of
    /// load per run (unless --secs does).
    #[arg(long)]
    sweep: bool,
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

/// The knees and base times of a sweep when `--sweep` names none.
const SWEEP_KNEES: [usize; 7] = [2, 4, 8, 16, 32, 64, 128];
const SWEEP_BASES_MS: [f64; 3] = [2.0, 5.0, 10.0];
/// Most (knee, base) pairs one sweep runs.
const MAX_PAIRS: usize = 100;

impl OverloadArgs {
    /// The (knee, base) pairs to run, each one bench.
    fn pairs(&self) -> Vec<(usize, f64)> {
        let knees = match (self.knee.is_empty(), self.sweep) {
            (false, _) => self.knee.clone(),
            (true, true) => SWEEP_KNEES.to_vec(),
            (true, false) => vec![32],
        };
        let bases = match (self.base_ms.is_empty(), self.sweep) {
            (false, _) => self.base_ms.clone(),
            (true, true) => SWEEP_BASES_MS.to_vec(),
            (true, false) => vec![10.0],
        };
        bases.iter().flat_map(|&b| knees.iter().map(move |&k| (k, b))).collect()
    }

    fn spec(&self, knee: usize, base_ms: f64) -> OverloadSpec {
        let scenarios = if self.sweep && self.scenarios.is_empty() {
            vec!["collapse-1.5x".to_string(), "collapse-3x".to_string()]
        } else {
            self.scenarios.clone()
        };
        OverloadSpec {
            scenarios,
            stacks: self.stacks.clone(),
            secs: self.secs.unwrap_or(if self.sweep { 5.0 } else { 15.0 }),
            burst_secs: self.burst_secs,
            burst_gap: self.burst_gap,
            timeout_ms: self.timeout_ms,
            slo_ms: self.slo_ms,
            knee,
            base_ms,
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

/// `safegate bench overload …`: one bench, or one per (knee, base) pair of a sweep, every
/// pair checked before the first runs.
pub(super) fn run(a: &OverloadArgs) -> Result<ExitCode> {
    let pairs = a.pairs();
    if pairs.len() > MAX_PAIRS {
        anyhow::bail!(
            "--knee × --base-ms = {} benches is out of range: allowed at most {MAX_PAIRS} (each runs every scenario and stack)",
            pairs.len()
        );
    }
    let benches: Vec<(usize, f64, Overload)> = pairs
        .iter()
        .map(|&(k, b)| Overload::new(&a.spec(k, b)).map(|o| (k, b, o)).map_err(flagged))
        .collect::<Result<_>>()?;
    // Progress: tenths of a second of planned load, over every run of every pair.
    let total: u64 = benches.iter().map(|(_, _, o)| o.progress_total()).sum();
    let pb = crate::progress::bar(total, "overload", !a.json && std::io::stderr().is_terminal());
    let mut documents = Vec::new();
    let mut base = 0u64;
    for (knee, base_ms, bench) in &benches {
        let tick: Progress = {
            let pb = pb.clone();
            let offset = base;
            Arc::new(move |position| pb.set_position(offset + position))
        };
        let document = bench
            .run(crate::runtime::runtime, tick, |event| match event {
                Event::RunStarted { scenario, stack } => pb.set_message(format!("{scenario} {stack}")),
                Event::RunDone { position } => pb.set_position(base + position),
                Event::ScenarioDone(report) => {
                    if !a.json {
                        pb.suspend(|| print_table(report));
                    }
                }
            })
            .map_err(flagged)?;
        base += bench.progress_total();
        documents.push((*knee, *base_ms, document));
    }
    pb.finish_and_clear();
    if a.json {
        let doc = if let [(_, _, one)] = &documents[..] {
            serde_json::to_value(one)?
        } else {
            let sweep: Vec<serde_json::Value> =
                documents.iter().map(|(k, b, d)| serde_json::json!({"knee": k, "base_ms": b, "document": d})).collect();
            serde_json::json!({ "sweep": sweep })
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else if documents.len() > 1 {
        print_sweep(&documents);
    }
    Ok(ExitCode::SUCCESS)
}

/// The sweep in one table: per (knee, base, scenario), the oracle's goodput and every
/// stack's share of it, and the least share of each stack over the sweep.
fn print_sweep(docs: &[(usize, f64, safegate_bench::overload::Document)]) {
    let stacks: Vec<String> = docs
        .first()
        .and_then(|(_, _, d)| d.scenarios.first())
        .map(|s| s.runs.iter().filter(|r| r.figures.is_some()).map(|r| r.stack.clone()).collect())
        .unwrap_or_default();
    println!("## sweep: goodput ÷ the best fixed limit's (the oracle), per knee C and base time");
    let mut head = format!("{:>5} {:>8} {:>9} {:<14} {:>9}", "C", "base ms", "peak/s", "scenario", "oracle/s");
    for s in &stacks {
        head.push_str(&format!(" {s:>16}"));
    }
    println!("{head}");
    let mut least = vec![f64::INFINITY; stacks.len()];
    for (knee, base, d) in docs {
        for sc in &d.scenarios {
            let oracle = sc
                .oracle
                .as_ref()
                .and_then(|o| sc.runs.iter().find(|r| &r.stack == o))
                .and_then(|r| r.figures.as_ref())
                .map(|f| f.goodput_rps);
            let mut line =
                format!("{knee:>5} {base:>8} {:>9} {:<14} {:>9}", opt(sc.peak_rps, 0), sc.name, opt(oracle, 0));
            for (i, s) in stacks.iter().enumerate() {
                let share = sc
                    .runs
                    .iter()
                    .find(|r| &r.stack == s)
                    .and_then(|r| r.figures.as_ref())
                    .and_then(|f| f.goodput_vs_oracle);
                if let Some(v) = share {
                    least[i] = least[i].min(v);
                }
                line.push_str(&format!(" {:>16}", opt(share, 2)));
            }
            println!("{line}");
        }
    }
    let mut line = format!("{:<48}", "least over the sweep");
    for l in &least {
        line.push_str(&format!(" {:>16}", opt(l.is_finite().then_some(*l), 2)));
    }
    println!("{line}");
    println!();
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
