//! The falsification lab: one experiment per falsification criterion of the seed (F10–F18)
//! that could meet the criterion's condition in this model.
//!
//! Each criterion states a *condition* which, if met, falsifies one of the seed's claims. An
//! experiment measures whether the condition is met in the model and returns a
//! [`Criterion`]: the condition in one line, the setup in one line, the measured numbers
//! ([`Evidence`]) and a [`Verdict`]:
//! - [`Verdict::Falsified`]: the condition is met in the model, so the seed's claim fails;
//! - [`Verdict::Holds`]: the condition is not met, so the seed's claim stands;
//! - [`Verdict::Inconclusive`]: the measurement cannot tell (too few events, an interval
//!   straddling the threshold, or a parameter the model does not pin down); the reason says
//!   which.
//!
//! This is the convention of `fleet::stag::verdicts`, whose F13–F15 rows are taken over
//! unchanged. Everything is seeded and deterministic whatever the thread count. F19 (the
//! throughput-collapse shape, fitted to a live downstream) is not a model experiment: the
//! binary adds its row. Long-form: docs/falsify.md.

use serde::Serialize;

pub use crate::experiments::{Figure, FigureLine};

pub mod bootstrap;
pub mod feasibility;
pub mod filter_runs;
pub mod fleet;
mod measure;
pub mod probe;
pub mod regime;
pub mod severity;
pub mod severity_loop;
#[cfg(test)]
mod tests;

pub use bootstrap::f18;
pub use feasibility::{f16, f17};
pub use filter_runs::{FilterArm, FilterRuns};
pub use measure::{measure, selected, Measured, UnknownCriterion, ALL_IDS};
pub use probe::f11;
pub use regime::f12;
pub use severity::f10;

/// What a criterion's measurement shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The criterion's condition is not met in the model: the seed's claim stands.
    Holds,
    /// The criterion's condition is met in the model: the seed's claim fails.
    Falsified,
    /// The measurement cannot tell; the reason says why.
    Inconclusive,
}

impl Verdict {
    /// `holds`, `falsified`, `inconclusive` (as serialised).
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Falsified => "falsified",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// One measured number.
#[derive(Debug, Clone, Serialize)]
pub struct Evidence {
    /// What it is, in words.
    pub name: String,
    /// The value (non-finite values serialise as `null`).
    pub value: f64,
    /// Its unit, or a short note on how to read it.
    pub unit: String,
}

impl Evidence {
    /// A number with its unit.
    pub fn new(name: impl Into<String>, value: f64, unit: impl Into<String>) -> Self {
        Evidence { name: name.into(), value, unit: unit.into() }
    }
}

/// One criterion's row.
#[derive(Debug, Clone, Serialize)]
pub struct Criterion {
    /// `F10` … `F19`.
    pub id: String,
    /// The seed's condition, in one line.
    pub claim: String,
    /// The experiment's setup, in one line.
    pub experiment: String,
    /// The measured numbers.
    pub evidence: Vec<Evidence>,
    /// What they show.
    pub verdict: Verdict,
    /// Why, and which way it goes.
    pub reason: String,
}

impl Criterion {
    /// The evidence named `name`, if present.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.evidence.iter().find(|e| e.name == name).map(|e| e.value)
    }
}

/// How hard the experiments work.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Effort {
    /// Replicates per sample size in F10's severity convergence.
    pub severity_replicates: u64,
    /// Largest sample of excursions in F10 (sizes are the powers of ten up to it).
    pub severity_max_sample: u64,
    /// Trajectories per tail index and arm in F10's filter-in-the-loop run.
    pub loop_trials: u64,
    /// IMM trials per noise law in F12 and F18.
    pub imm_trials: u64,
    /// Trajectories per envelope cell and filter arm in F16–F17.
    pub filter_trials: u64,
    /// Traffic levels of the envelope grid in F16–F17 (end points included).
    pub traffic_points: usize,
    /// Health levels of the envelope grid in F16–F17 (end points included).
    pub health_points: usize,
    /// Gates in F15's tipping-share fleet.
    pub fleet_size: usize,
    /// Seed of every random draw.
    pub seed: u64,
}

impl Effort {
    /// The default run: well under a minute on two cores in release.
    pub fn standard(seed: u64) -> Self {
        Effort {
            severity_replicates: 40,
            severity_max_sample: 1_000_000,
            loop_trials: 1_000,
            imm_trials: 30_000,
            filter_trials: 200,
            traffic_points: 3,
            health_points: 3,
            fleet_size: 9,
            seed,
        }
    }

    /// A few seconds, for tests: the same experiments with small samples (verdicts may be
    /// inconclusive where the default run's are not).
    pub fn quick(seed: u64) -> Self {
        Effort {
            severity_replicates: 8,
            severity_max_sample: 10_000,
            loop_trials: 20,
            imm_trials: 2_000,
            filter_trials: 6,
            traffic_points: 2,
            health_points: 1,
            fleet_size: 3,
            seed,
        }
    }
}

/// What one experiment produced: one or more criteria, and its figures.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// The rows.
    pub criteria: Vec<Criterion>,
    /// Plain-data figures (the binary renders them).
    pub figures: Vec<Figure>,
}

/// Every criterion the model can test, in order, with the experiment that tests it.
pub const IDS: &[&str] = &["F10", "F11", "F12", "F13", "F14", "F15", "F16", "F17", "F18"];

/// An experiment and the criteria it answers.
#[derive(Debug, Clone, Copy)]
pub struct Experiment {
    /// Its criteria.
    pub ids: &'static [&'static str],
    /// Run it (`progress` is told the fraction done, in `[0, 1]`).
    pub run: fn(&Effort, &(dyn Fn(f64) + Sync)) -> Outcome,
}

/// The experiments, in criterion order.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment { ids: &["F10"], run: |e, _| f10(e) },
    Experiment { ids: &["F11"], run: |_, _| f11() },
    Experiment { ids: &["F12"], run: |e, _| f12(e) },
    Experiment { ids: &["F13", "F14", "F15"], run: |e, _| fleet::f13_f15(e) },
    Experiment { ids: &["F16", "F17"], run: feasibility::run },
    Experiment { ids: &["F18"], run: |e, _| f18(e) },
];

/// The experiments that answer any of `ids` (all of them for an empty list), each once, in
/// order. Ids must be from [`IDS`] (the caller normalises case).
pub fn experiments_for(ids: &[String]) -> Vec<&'static Experiment> {
    EXPERIMENTS.iter().filter(|e| ids.is_empty() || e.ids.iter().any(|id| ids.iter().any(|x| x == id))).collect()
}
