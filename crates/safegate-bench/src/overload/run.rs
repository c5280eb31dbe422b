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

use super::load::{self, Progress};
use super::report::{self, Document, RunReport, ScenarioReport};
use super::settings::{OverloadSpec, Scenario, Settings};
use super::stacks::{self, StackKind, NOT_BUILT};
use crate::error::{Error, Result};

/// What [`Overload::run`] reports as it goes.
#[derive(Debug)]
pub enum Event<'a> {
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
        let scenarios = Scenario::chosen(&spec.scenarios)?;
        let stacks = stacks::chosen(&spec.stacks)?;
        for &s in &scenarios {
            settings.check_budget(s)?;
        }
        Ok(Overload { settings, scenarios, stacks })
    }

    fn planned_tenths(&self, s: Scenario) -> u64 {
        (self.settings.plan(s).0.end() * 10.0).ceil() as u64
    }

    /// Tenths of a second of planned load over every run this build has.
    pub fn progress_total(&self) -> u64 {
        let runnable = self.stacks.iter().filter(|k| k.is_built()).count() as u64;
        self.scenarios.iter().map(|&s| self.planned_tenths(s) * runnable).sum()
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
        let set = &self.settings;
        let mut done = 0u64;
        let mut out = Vec::new();
        for &s in &self.scenarios {
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
            for &k in &self.stacks {
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
            report::compare(&mut rep, &StackKind::TowerOracle.name(), |n| {
                StackKind::parse(n).is_some_and(StackKind::is_peer)
            });
            on(Event::ScenarioDone(&rep));
            out.push(rep);
        }
        Ok(Document { settings: set.to_json(), scenarios: out })
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
    let (backend, health) = set.backend(b);
    let (plan, shape, _) = set.plan(s);
    let stack = {
        // Built inside the runtime: a limiter may look for it.
        let _guard = rt.enter();
        kind.build(backend, set.oracle_limit(b))?
    };
    let Some(stack) = stack else { return Ok(None) };
    let segments: Vec<(f64, f64)> = plan.segments.iter().map(|g| (g.start, g.end)).collect();
    // The generator is a task on the runtime's workers, like the requests it spawns.
    let generator = rt.spawn(load::drive(stack, plan, set.client, health, progress, progress_base));
    let measured = rt.block_on(generator).map_err(|e| Error::failed("the load generator panicked", e))?;
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(Some(report::figures(&measured, shape, &segments)))
}

/// A progress callback that ignores every call.
pub fn no_progress() -> Progress {
    Arc::new(|_| {})
}
