//! `safegate bench overload`: admission-control stacks side by side under open-loop
//! overload, on in-process backends (docs/bench-overload.md).
//!
//! Each (scenario, stack) run builds a fresh backend, wraps it in the stack, and drives it
//! from a dedicated two-worker tokio runtime built for the run and dropped after it, so no
//! run inherits another's tasks, timers or limiter state. The stacks of a scenario run one
//! after the other, never together (they would share the two cores), with a short pause
//! between.

mod backend;
mod load;
mod report;
mod stacks;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use safegate_core::RangeError;

use backend::{Backend, Collapse, Fast, Health, Queueing};
use load::{Arrivals, Client, Plan, Rate, Segment};
use report::{Document, RunReport, ScenarioReport, Shape};
use stacks::{StackKind, LOOSE_LIMIT, NOT_BUILT};

/// Most requests one run may offer (`rate × seconds`, or `--fast-cap`).
const MAX_REQUESTS: f64 = 1e7;
/// Longest load of one run \[s\].
const MAX_SECS: f64 = 600.0;
/// The overload factor of the scenarios that are not named for theirs.
const OVERLOAD: f64 = 1.5;

/// Flags of `safegate bench overload`.
#[derive(Debug, Args)]
pub(crate) struct OverloadArgs {
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
    #[arg(long, value_enum, default_value_t = Arrivals::Poisson)]
    arrivals: Arrivals,
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

/// The scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    Collapse15,
    Collapse3,
    Queueing15,
    FastMax,
    Bursts,
    HealthStep,
}

/// Which backend a scenario drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BackendKind {
    Collapse,
    Queueing,
    Fast,
}

impl Scenario {
    const ALL: [Scenario; 6] = [
        Scenario::Collapse15,
        Scenario::Collapse3,
        Scenario::Queueing15,
        Scenario::FastMax,
        Scenario::Bursts,
        Scenario::HealthStep,
    ];

    fn name(self) -> &'static str {
        match self {
            Scenario::Collapse15 => "collapse-1.5x",
            Scenario::Collapse3 => "collapse-3x",
            Scenario::Queueing15 => "queueing-1.5x",
            Scenario::FastMax => "fast-max",
            Scenario::Bursts => "bursts",
            Scenario::HealthStep => "health-step",
        }
    }

    fn backend(self) -> BackendKind {
        match self {
            Scenario::Queueing15 => BackendKind::Queueing,
            Scenario::FastMax => BackendKind::Fast,
            _ => BackendKind::Collapse,
        }
    }
}

/// The checked settings.
#[derive(Debug, Clone)]
struct Settings {
    secs: f64,
    burst_secs: f64,
    burst_gap: f64,
    client: Client,
    knee: usize,
    base: Duration,
    workers: usize,
    health: f64,
    fast_cap: u64,
    fast_outstanding: u64,
    pause: Duration,
}

/// `Err` naming `flag` unless `v` is in `(0, max]` (NaN is not).
fn positive(flag: &str, v: f64, max: f64) -> Result<f64> {
    if v > 0.0 && v <= max {
        Ok(v)
    } else {
        Err(RangeError::new(flag, safegate_core::error::number(v), format!("(0, {max}]")).into())
    }
}

fn count(flag: &str, v: usize, max: usize) -> Result<usize> {
    if (1..=max).contains(&v) {
        Ok(v)
    } else {
        Err(RangeError::new(flag, v, format!("[1, {max}]")).into())
    }
}

impl Settings {
    fn from_args(a: &OverloadArgs) -> Result<Settings> {
        let timeout_ms = positive("--timeout-ms", a.timeout_ms, 60_000.0)?;
        let slo_ms = positive("--slo-ms", a.slo_ms, timeout_ms)
            .context("the SLO is at most the client timeout (a later answer is never seen)")?;
        let fast_cap = a.fast_cap;
        if !(1..=MAX_REQUESTS as u64).contains(&fast_cap) {
            bail!(RangeError::new("--fast-cap", fast_cap, format!("[1, {MAX_REQUESTS:e}]")));
        }
        let base_ms = positive("--base-ms", a.base_ms, 10_000.0)?;
        Ok(Settings {
            secs: positive("--secs", a.secs, MAX_SECS)?,
            burst_secs: positive("--burst-secs", a.burst_secs, MAX_SECS)?,
            burst_gap: positive("--burst-gap", a.burst_gap, MAX_SECS)?,
            client: Client {
                timeout: Duration::from_secs_f64(timeout_ms / 1e3),
                slo: Duration::from_secs_f64(slo_ms / 1e3),
                arrivals: a.arrivals,
                seed: a.seed,
            },
            knee: count("--knee", a.knee, 100_000)?,
            base: Duration::from_secs_f64(base_ms / 1e3),
            workers: count("--workers", a.workers, 100_000)?,
            health: positive("--health", a.health, 100.0)?,
            fast_cap,
            fast_outstanding: count(
                "--fast-outstanding",
                a.fast_outstanding.try_into().unwrap_or(usize::MAX),
                1_000_000,
            )? as u64,
            pause: Duration::from_millis(if a.pause_ms <= 60_000 {
                a.pause_ms
            } else {
                bail!(RangeError::new("--pause-ms", a.pause_ms, "[0, 60000]"))
            }),
        })
    }

    /// Peak throughput of the collapse or queueing backend at the starting health.
    fn peak(&self, b: BackendKind) -> Option<f64> {
        let per = self.health / self.base.as_secs_f64();
        match b {
            BackendKind::Collapse => Some(self.knee as f64 * per),
            BackendKind::Queueing => Some(self.workers as f64 * per),
            BackendKind::Fast => None,
        }
    }

    /// The backend's best fixed concurrency limit (256 for the fast one).
    fn oracle_limit(&self, b: BackendKind) -> usize {
        match b {
            BackendKind::Collapse => self.knee,
            BackendKind::Queueing => self.workers,
            BackendKind::Fast => LOOSE_LIMIT,
        }
    }

    fn backend(&self, b: BackendKind) -> (Backend, Health) {
        let h = Health::new(self.health);
        let backend = match b {
            BackendKind::Collapse => Backend::Collapse(Collapse::new(self.knee, self.base, h.clone())),
            BackendKind::Queueing => Backend::Queueing(Queueing::new(self.workers, self.base, h.clone())),
            BackendKind::Fast => Backend::Fast(Fast),
        };
        (backend, h)
    }

    fn describe_backend(&self, b: BackendKind) -> String {
        let ms = self.base.as_secs_f64() * 1e3;
        let h = self.health;
        match b {
            BackendKind::Collapse => format!(
                "collapse backend (C = {}, base {ms} ms, health {h}: peak {:.0} req/s)",
                self.knee,
                self.peak(b).unwrap_or(0.0)
            ),
            BackendKind::Queueing => format!(
                "queueing backend (W = {}, base {ms} ms, health {h}: peak {:.0} req/s)",
                self.workers,
                self.peak(b).unwrap_or(0.0)
            ),
            BackendKind::Fast => "fast backend (answers after one yield)".into(),
        }
    }

    /// The scenario's schedule, what its figures look like, and its load in words.
    fn plan(&self, s: Scenario) -> (Plan, Shape, String) {
        let peak = self.peak(s.backend()).unwrap_or(0.0);
        let one =
            |rate: Rate| Plan { segments: vec![Segment { start: 0.0, end: self.secs, rate }], health_steps: vec![] };
        match s {
            Scenario::Collapse15 | Scenario::Queueing15 => (
                one(Rate::PerSec(OVERLOAD * peak)),
                Shape::Plain,
                format!("open loop at 1.5× peak ({:.0} req/s) for {} s", OVERLOAD * peak, self.secs),
            ),
            Scenario::Collapse3 => (
                one(Rate::PerSec(3.0 * peak)),
                Shape::Plain,
                format!("open loop at 3× peak ({:.0} req/s) for {} s", 3.0 * peak, self.secs),
            ),
            Scenario::FastMax => (
                one(Rate::Max { cap: self.fast_cap, outstanding: self.fast_outstanding }),
                Shape::Plain,
                format!(
                    "as fast as the generator can for {} s (at most {} requests, {} outstanding)",
                    self.secs, self.fast_cap, self.fast_outstanding
                ),
            ),
            Scenario::Bursts => {
                let period = self.burst_secs + self.burst_gap;
                let segments = (0..3)
                    .map(|k| {
                        let start = k as f64 * period;
                        Segment { start, end: start + self.burst_secs, rate: Rate::PerSec(OVERLOAD * peak) }
                    })
                    .collect();
                (
                    Plan { segments, health_steps: vec![] },
                    Shape::Bursts,
                    format!(
                        "3 bursts of {} s at 1.5× peak ({:.0} req/s), {} s apart, through one stack instance",
                        self.burst_secs,
                        OVERLOAD * peak,
                        self.burst_gap
                    ),
                )
            }
            Scenario::HealthStep => {
                let at = self.secs / 2.0;
                let rate = Rate::PerSec(OVERLOAD * peak);
                let segments = vec![Segment { start: 0.0, end: at, rate }, Segment { start: at, end: self.secs, rate }];
                (
                    Plan { segments, health_steps: vec![(at, self.health * 0.5)] },
                    Shape::Step { at },
                    format!(
                        "open loop at 1.5× peak ({:.0} req/s) for {} s; health {} → {} at {at} s",
                        OVERLOAD * peak,
                        self.secs,
                        self.health,
                        self.health * 0.5
                    ),
                )
            }
        }
    }

    /// Refuse a scenario whose run would offer more than [`MAX_REQUESTS`].
    fn check_budget(&self, s: Scenario) -> Result<()> {
        let (plan, _, _) = self.plan(s);
        let requests: f64 = plan
            .segments
            .iter()
            .map(|g| match g.rate {
                Rate::PerSec(r) => r * (g.end - g.start),
                Rate::Max { cap, .. } => cap as f64,
            })
            .sum();
        let flag = if s == Scenario::Bursts { "--burst-secs" } else { "--secs" };
        let value = if s == Scenario::Bursts { self.burst_secs } else { self.secs };
        safegate_sim::limits::budget(
            flag,
            value,
            requests,
            MAX_REQUESTS,
            &format!("requests offered by one {} run (rate × seconds)", s.name()),
        )?;
        Ok(())
    }
}

fn chosen_scenarios(names: &[String]) -> Result<Vec<Scenario>> {
    if names.is_empty() {
        return Ok(Scenario::ALL.to_vec());
    }
    let mut out = Vec::new();
    for name in names {
        let Some(s) = Scenario::ALL.into_iter().find(|s| s.name() == name.trim()) else {
            let known: Vec<&str> = Scenario::ALL.iter().map(|s| s.name()).collect();
            bail!("--scenarios: unknown scenario {name:?}; known are {}", known.join(", "));
        };
        if !out.contains(&s) {
            out.push(s);
        }
    }
    Ok(out)
}

/// One (scenario, stack) run on its own runtime.
fn run_one(
    set: &Settings,
    s: Scenario,
    kind: StackKind,
    pb: &indicatif::ProgressBar,
    progress_base: u64,
) -> Result<Option<report::Figures>> {
    let b = s.backend();
    let (backend, health) = set.backend(b);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .context("building the run's tokio runtime")?;
    let (plan, shape, _) = set.plan(s);
    let stack = {
        // Built inside the runtime: a limiter may look for it.
        let _guard = rt.enter();
        kind.build(backend, set.oracle_limit(b))?
    };
    let Some(stack) = stack else { return Ok(None) };
    let segments: Vec<(f64, f64)> = plan.segments.iter().map(|g| (g.start, g.end)).collect();
    // The generator is a task on the runtime's workers, like the requests it spawns.
    let generator = rt.spawn(load::drive(stack, plan, set.client, health, pb.clone(), progress_base));
    let measured = rt.block_on(generator).context("the load generator panicked")?;
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(Some(report::figures(&measured, shape, &segments)))
}

/// `safegate bench overload …`.
pub(crate) fn run(a: &OverloadArgs) -> Result<ExitCode> {
    let set = Settings::from_args(a)?;
    let scenarios = chosen_scenarios(&a.scenarios)?;
    let kinds = stacks::chosen(&a.stacks)?;
    for &s in &scenarios {
        set.check_budget(s)?;
    }
    // Progress: tenths of a second of planned load, over every run this binary has.
    let runnable = kinds.iter().filter(|k| k.is_built()).count() as u64;
    let plan_ds = |s: Scenario| (set.plan(s).0.end() * 10.0).ceil() as u64;
    let total: u64 = scenarios.iter().map(|&s| plan_ds(s) * runnable).sum();
    let pb = crate::progress::bar(total, "overload", !a.json && std::io::stderr().is_terminal());
    let mut done = 0u64;
    let mut out = Vec::new();
    for &s in &scenarios {
        let b = s.backend();
        let (_, _, load) = set.plan(s);
        let mut rep = ScenarioReport {
            name: s.name().into(),
            backend: set.describe_backend(b),
            peak_rps: set.peak(b),
            oracle_limit: set.oracle_limit(b),
            load,
            oracle: None,
            best_anchor: None,
            runs: Vec::new(),
        };
        let mut first = true;
        for &k in &kinds {
            if !k.is_built() {
                rep.runs.push(RunReport { stack: k.name(), built: false, note: Some(NOT_BUILT.into()), figures: None });
                continue;
            }
            if !first {
                std::thread::sleep(set.pause);
            }
            first = false;
            pb.set_message(format!("{} {}", s.name(), k.name()));
            let figures = run_one(&set, s, k, &pb, done)?;
            done += plan_ds(s);
            pb.set_position(done);
            let note = figures.is_none().then(|| NOT_BUILT.to_string());
            rep.runs.push(RunReport { stack: k.name(), built: figures.is_some(), note, figures });
        }
        report::compare(&mut rep, &StackKind::TowerOracle.name(), |n| {
            StackKind::parse(n).is_some_and(StackKind::is_peer)
        });
        if !a.json {
            pb.suspend(|| report::print_table(&rep));
        }
        out.push(rep);
    }
    pb.finish_and_clear();
    if a.json {
        let settings = serde_json::json!({
            "secs": set.secs,
            "burst_secs": set.burst_secs,
            "burst_gap_secs": set.burst_gap,
            "timeout_ms": set.client.timeout.as_secs_f64() * 1e3,
            "slo_ms": set.client.slo.as_secs_f64() * 1e3,
            "arrivals": set.client.arrivals,
            "seed": set.client.seed,
            "knee": set.knee,
            "base_ms": set.base.as_secs_f64() * 1e3,
            "workers": set.workers,
            "health": set.health,
            "fast_cap": set.fast_cap,
            "fast_outstanding": set.fast_outstanding,
            "max_concurrency": LOOSE_LIMIT,
            "peers_built": cfg!(feature = "peers"),
        });
        println!("{}", serde_json::to_string_pretty(&Document { settings, scenarios: out })?);
    }
    Ok(ExitCode::SUCCESS)
}
