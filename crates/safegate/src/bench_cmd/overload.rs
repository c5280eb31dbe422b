//! `safegate bench overload`: flags, a [`Plan`], and a table per scenario or one JSON
//! document (docs/bench-overload.md).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use clap::{Args, ValueEnum};
use safegate_bench::overload::{
    rounds, sweep, text, Arrivals, Event, Isolation, OverloadSpec, PgSpec, Plan, PlanEvent, Progress,
};

use super::flags::flagged;

/// Flags of `safegate bench overload`.
#[derive(Debug, Args)]
pub(super) struct OverloadArgs {
    /// Scenarios, comma-separated [default: all; pg-* only with --pg-url]: collapse-1.5x,
    /// collapse-3x, queueing-1.5x, fast-max, bursts, health-step, pg-1.5x, pg-3x.
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
    /// Run every bench this many times, round after round (round 1 with --seed, each later
    /// round's Poisson seed one more), and sum up each stack's goodput ÷ its round's oracle
    /// as medians.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(rounds::MAX_ROUNDS)))]
    rounds: u32,
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
    /// PostgreSQL scenarios (pg-1.5x, pg-3x): the database's URL, postgres://… [default:
    /// the environment's SAFEGATE_PG_URL]. Its table safegate_bench_hot is dropped and
    /// refilled by every run. Without it the pg-* scenarios are not run.
    #[arg(long, value_name = "URL")]
    pg_url: Option<String>,
    /// PostgreSQL: hot rows; each transaction updates two of them.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pg_rows: u32,
    /// PostgreSQL: time a transaction holds its first row lock before its second update.
    #[arg(long, default_value_t = 2.0, value_name = "MS")]
    pg_hold_ms: f64,
    /// PostgreSQL: isolation level (serializable, repeatable-read, read-committed).
    #[arg(long, default_value = "serializable", value_name = "LEVEL", value_parser = str::parse::<Isolation>)]
    pg_isolation: Isolation,
    /// PostgreSQL: connections in the application's pool.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pg_pool: usize,
    /// PostgreSQL: retries of a transaction that failed to serialize or deadlocked.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pg_retries: u32,
    /// PostgreSQL: seconds of each point of the service curve measured before the runs.
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    pg_curve_secs: f64,
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
    /// The PostgreSQL backend, when a URL is given (flag, or SAFEGATE_PG_URL).
    fn postgres(&self) -> Option<PgSpec> {
        PgSpec::url_or_env(self.pg_url.as_deref()).map(|url| PgSpec {
            url,
            rows: self.pg_rows,
            hold_ms: self.pg_hold_ms,
            isolation: self.pg_isolation,
            pool: self.pg_pool,
            retries: self.pg_retries,
        })
    }

    /// The bench these flags ask for, at `knee` and `base_ms` (a [`Plan`] sets each pair's,
    /// and each round's seed).
    fn spec(&self, (knee, base_ms): (usize, f64)) -> OverloadSpec {
        let scenarios = if self.sweep && self.scenarios.is_empty() {
            sweep::SWEEP_SCENARIOS.iter().map(|s| s.to_string()).collect()
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
            postgres: self.postgres(),
            pg_curve_secs: self.pg_curve_secs,
        }
    }
}

/// `safegate bench overload …`: one bench, or one per (knee, base) pair of a sweep, each
/// run `--rounds` times (round after round), every bench checked before the first runs.
pub(super) fn run(a: &OverloadArgs) -> Result<ExitCode> {
    let pairs = sweep::pairs(&a.knee, &a.base_ms, a.sweep).map_err(flagged)?;
    let plan = Plan::new(&a.spec(pairs[0]), &pairs, a.rounds).map_err(flagged)?;
    // Progress: tenths of a second of planned load, over every run of every bench.
    let pb = crate::progress::bar(plan.progress_total(), "overload", !a.json && std::io::stderr().is_terminal());
    let tick: Progress = {
        let pb = pb.clone();
        Arc::new(move |position| pb.set_position(position))
    };
    let outcome = plan
        .run(crate::runtime::runtime, tick, |event| match event {
            PlanEvent::RoundStarted { round, rounds } => {
                if !a.json {
                    pb.suspend(|| println!("# round {round} of {rounds}\n"));
                }
            }
            PlanEvent::Bench(Event::CurveStarted { scenario }) => pb.set_message(format!("{scenario}: measuring X(n)")),
            PlanEvent::Bench(Event::RunStarted { scenario, stack }) => pb.set_message(format!("{scenario} {stack}")),
            PlanEvent::Bench(Event::RunDone { position }) => pb.set_position(position),
            PlanEvent::Bench(Event::ScenarioDone(report)) => {
                if !a.json {
                    pb.suspend(|| print!("{}", text::table(report)));
                }
            }
        })
        .map_err(flagged)?;
    pb.finish_and_clear();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&outcome.to_json()?)?);
    } else {
        print!("{}", outcome.tail_text());
    }
    Ok(ExitCode::SUCCESS)
}
