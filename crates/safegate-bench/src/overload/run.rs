//! The bench's one call: every (scenario, stack) run in turn, each on a fresh runtime the
//! caller builds, and the report of every scenario.
//!
//! Each run builds a fresh backend, wraps it in the stack, and drives it from the run's own
//! runtime, dropped after it, so no run inherits another's tasks, timers or limiter state.
//! The stacks of a scenario run one after the other, never together (they would share the
//! cores), with a short pause between.

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;

use super::backend::{Backend, Health};
use super::load::{self, Progress};
use super::report::{self, Document, RunReport, ScenarioReport};
use super::settings::{BackendKind, OverloadSpec, Scenario, Settings};
use super::stacks::{self, StackKind, NOT_BUILT};
use crate::error::{Error, Result};
use safegate_live::pg::{self, CurvePoint, Pg};

/// What [`Overload::run`] reports as it goes.
#[derive(Debug)]
pub enum Event<'a> {
    /// The PostgreSQL scenario's service curve is being measured.
    CurveStarted {
        /// The scenario's name.
        scenario: &'a str,
    },
    /// A run starts.
    RunStarted {
        /// The scenario's name.
        scenario: &'a str,
        /// The stack's name.
        stack: &'a str,
    },
    /// A run ended; `position` is the planned load of every run so far, in tenths of a
    /// second (out of [`Overload::progress_total`]).
    RunDone {
        /// Tenths of a second of planned load done.
        position: u64,
    },
    /// Every run of a scenario is in.
    ScenarioDone(&'a ScenarioReport),
}

/// A checked overload bench, ready to run.
#[derive(Debug, Clone)]
pub struct Overload {
    settings: Settings,
    scenarios: Vec<Scenario>,
    stacks: Vec<StackKind>,
}

impl Overload {
    /// Check `spec`: an input out of range, an unknown scenario or stack, a peer this build
    /// lacks, or a run that would offer too many requests is an error naming the field.
    pub fn new(spec: &OverloadSpec) -> Result<Overload> {
        let settings = Settings::new(spec)?;
        let scenarios = Scenario::chosen(&spec.scenarios, spec.postgres.is_some())?;
        let stacks = stacks::chosen(&spec.stacks)?;
        for &s in &scenarios {
            settings.check_budget(s)?;
        }
        Ok(Overload { settings, scenarios, stacks })
    }

    fn planned_tenths(&self, s: Scenario) -> u64 {
        (self.settings.plan(s).0.end() * 10.0).ceil() as u64
    }

    /// Tenths of a second of planned load over every run this build has (a PostgreSQL
    /// scenario's oracle counted as its most fixed limits, and its curve's time).
    pub fn progress_total(&self) -> u64 {
        let runnable = self.stacks.iter().filter(|k| k.is_built()).count() as u64;
        let oracle = self.stacks.contains(&StackKind::TowerOracle);
        self.scenarios
            .iter()
            .map(|&s| {
                if s.backend() != BackendKind::Postgres {
                    return self.planned_tenths(s) * runnable;
                }
                let extra = if oracle { MAX_FIXED as u64 - 1 } else { 0 };
                self.planned_tenths(s) * (runnable + extra) + self.curve_tenths()
            })
            .sum()
    }

    fn curve_tenths(&self) -> u64 {
        (self.settings.pg_curve.as_secs_f64() * 10.0 * CURVE_CLIENTS.len() as f64).ceil() as u64
    }

    /// Scenario `s` on PostgreSQL: measure the service curve X(n), offer a multiple of its
    /// top (`set.pg_measured`), and put the fixed limits around the top in the oracle's place
    /// in `stacks`. Returns the curve.
    fn measure_pg(
        &self,
        s: Scenario,
        set: &mut Settings,
        stacks: &mut Vec<StackKind>,
        rt: &Runtime,
    ) -> Result<Vec<CurvePoint>> {
        let points = measure_curve(set, rt)?;
        let (peak, knee) = top(&points);
        if !(peak > 0.0) {
            return Err(Error::failed(
                "measuring PostgreSQL's service curve",
                "no transaction committed at any number of clients: no peak to offer a multiple of",
            ));
        }
        set.pg_measured = Some((peak, knee));
        set.check_budget(s)?;
        // The oracle: the best of a sweep of fixed limits around the curve's top, each run
        // under the scenario's own load.
        let pool = set.pg.as_ref().map_or(1, |p| p.pool);
        if let Some(at) = stacks.iter().position(|&k| k == StackKind::TowerOracle) {
            let fixed = fixed_limits(&points, pool).into_iter().map(StackKind::TowerFixed);
            stacks.splice(at..=at, fixed);
        }
        Ok(points)
    }

    /// On PostgreSQL the oracle is the fixed limit with the most goodput in this run (when
    /// the oracle was asked for): its name, with `rep.oracle_limit` set to its limit.
    fn pg_oracle(&self, rep: &mut ScenarioReport) -> String {
        let best = rep
            .runs
            .iter()
            .filter_map(|r| match (StackKind::parse(&r.stack), &r.figures) {
                (Some(StackKind::TowerFixed(n)), Some(f)) if self.stacks.contains(&StackKind::TowerOracle) => {
                    Some((f.goodput_rps, n, r.stack.clone()))
                }
                _ => None,
            })
            .max_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((_, n, _)) = &best {
            rep.oracle_limit = *n;
        }
        best.map_or_else(|| StackKind::TowerOracle.name(), |b| b.2)
    }

    /// Run every scenario with every stack. `new_runtime` builds each run's runtime (a
    /// multi-threaded one with time enabled; the figures assume two workers); `progress`
    /// gets the tenths of a second of planned load done, from the runtime's threads;
    /// `on` hears of each run and each finished scenario.
    pub fn run<E>(
        &self,
        mut new_runtime: impl FnMut() -> std::result::Result<Runtime, E>,
        progress: Progress,
        mut on: impl FnMut(Event<'_>),
    ) -> Result<Document>
    where
        E: Into<Box<dyn StdError + Send + Sync>>,
    {
        let mut done = 0u64;
        let mut out = Vec::new();
        for &s in &self.scenarios {
            let b = s.backend();
            let mut set = self.settings.clone();
            let mut stacks = self.stacks.clone();
            let mut curve = None;
            if b == BackendKind::Postgres {
                on(Event::CurveStarted { scenario: s.name() });
                let rt = new_runtime().map_err(|e| Error::failed("building the curve's tokio runtime", e))?;
                curve = Some(self.measure_pg(s, &mut set, &mut stacks, &rt)?);
                rt.shutdown_timeout(Duration::from_secs(1));
                done += self.curve_tenths();
                progress(done);
            }
            let set = &set;
            let (_, _, load) = set.plan(s);
            let mut rep = ScenarioReport {
                name: s.name().into(),
                backend: set.describe_backend(b),
                peak_rps: set.peak(b),
                oracle_limit: set.oracle_limit(b),
                load,
                oracle: None,
                best_anchor: None,
                curve,
                runs: Vec::new(),
            };
            let mut first = true;
            for &k in &stacks {
                if !k.is_built() {
                    rep.runs.push(RunReport {
                        stack: k.name(),
                        built: false,
                        note: Some(NOT_BUILT.into()),
                        figures: None,
                    });
                    continue;
                }
                if !first {
                    std::thread::sleep(set.pause);
                }
                first = false;
                on(Event::RunStarted { scenario: s.name(), stack: &k.name() });
                let rt = new_runtime().map_err(|e| Error::failed("building the run's tokio runtime", e))?;
                let figures = run_one(set, s, k, rt, progress.clone(), done)?;
                done += self.planned_tenths(s);
                on(Event::RunDone { position: done });
                let note = figures.is_none().then(|| NOT_BUILT.to_string());
                rep.runs.push(RunReport { stack: k.name(), built: figures.is_some(), note, figures });
            }
            let oracle =
                if b == BackendKind::Postgres { self.pg_oracle(&mut rep) } else { StackKind::TowerOracle.name() };
            report::compare(&mut rep, &oracle, |n| StackKind::parse(n).is_some_and(StackKind::is_peer));
            on(Event::ScenarioDone(&rep));
            out.push(rep);
        }
        Ok(Document { settings: self.settings.to_json(), scenarios: out })
    }
}

/// One (scenario, stack) run on its own runtime `rt`, shut down after it.
fn run_one(
    set: &Settings,
    s: Scenario,
    kind: StackKind,
    rt: Runtime,
    progress: Progress,
    progress_base: u64,
) -> Result<Option<report::Figures>> {
    let b = s.backend();
    let (backend, health) = match (b, &set.pg) {
        (BackendKind::Postgres, Some(spec)) => (Backend::Postgres(rt.block_on(Pg::connect(spec))?), Health::new(1.0)),
        _ => set.backend(b),
    };
    let (plan, shape, _) = set.plan(s);
    let stack = {
        // Built inside the runtime: a limiter may look for it.
        let _guard = rt.enter();
        kind.build(backend, set.oracle_limit(b))?
    };
    let Some((stack, probe)) = stack else { return Ok(None) };
    let segments: Vec<(f64, f64)> = plan.segments.iter().map(|g| (g.start, g.end)).collect();
    // safegate's limit, every tenth of a second of the run (a thread of its own, so that
    // sampling never waits behind the runtime's work).
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = probe.map(|probe| {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut limits = Vec::new();
            let start = std::time::Instant::now();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && limits.len() < MAX_LIMIT_SAMPLES {
                limits.push(probe());
                let next = start + LIMIT_SAMPLE * limits.len() as u32;
                std::thread::sleep(next.saturating_duration_since(std::time::Instant::now()));
            }
            limits
        })
    });
    // The generator is a task on the runtime's workers, like the requests it spawns.
    let generator = rt.spawn(load::drive(stack, plan, set.client, health, progress, progress_base));
    let measured = rt.block_on(generator).map_err(|e| Error::failed("the load generator panicked", e));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let limits = sampler.and_then(|t| t.join().ok());
    let measured = measured?;
    rt.shutdown_timeout(Duration::from_secs(1));
    let mut f = report::figures(&measured, shape, &segments);
    f.limit_timeline = limits;
    Ok(Some(f))
}

/// The numbers of closed-loop clients of a PostgreSQL curve (those up to the pool's size,
/// and the pool's size).
pub(crate) const CURVE_CLIENTS: [usize; 12] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];

/// How often safegate's limit is sampled in a run.
const LIMIT_SAMPLE: Duration = Duration::from_millis(100);
/// Most samples of the limit a run keeps (an hour of them; runs are at most 600 s).
const MAX_LIMIT_SAMPLES: usize = 36_000;

/// Most fixed limits the PostgreSQL oracle's sweep runs.
const MAX_FIXED: usize = 5;

/// PostgreSQL's service curve, on its own pool (a fresh table) in `rt`.
fn measure_curve(set: &Settings, rt: &Runtime) -> Result<Vec<CurvePoint>> {
    let Some(spec) = &set.pg else { return Ok(Vec::new()) };
    let mut ns: Vec<usize> = CURVE_CLIENTS.iter().copied().filter(|&n| n <= spec.pool).collect();
    if ns.last() != Some(&spec.pool) && spec.pool <= CURVE_CLIENTS[CURVE_CLIENTS.len() - 1] {
        ns.push(spec.pool);
    }
    rt.block_on(async {
        let pg = Pg::connect(spec).await?;
        Ok(pg::curve(&pg, &ns, set.pg_curve).await)
    })
}

/// The curve's top: its highest rate and the fewest clients that reached it.
pub(crate) fn top(points: &[CurvePoint]) -> (f64, usize) {
    points.iter().fold((0.0, 1), |(r, n), p| if p.rate > r { (p.rate, p.n) } else { (r, n) })
}

/// The fixed limits the oracle's sweep tries: half the top's clients, the fewest and the
/// most clients within 80 % of the top, the top itself, and twice it (at most the pool),
/// at most [`MAX_FIXED`] of them.
pub(crate) fn fixed_limits(points: &[CurvePoint], pool: usize) -> Vec<usize> {
    let (peak, knee) = top(points);
    let near = points.iter().filter(|p| p.rate >= 0.8 * peak).map(|p| p.n);
    let (lo, hi) = near.fold((knee, knee), |(a, b), n| (a.min(n), b.max(n)));
    let mut v = vec![(knee / 2).max(1), lo, knee, hi, (2 * knee).min(pool.max(1))];
    v.sort_unstable();
    v.dedup();
    v.truncate(MAX_FIXED);
    v
}

/// A progress callback that ignores every call.
pub fn no_progress() -> Progress {
    Arc::new(|_| {})
}
