//! Every worked result of the seed, as an experiment that measures it in this model.
//!
//! Each experiment is a function of a [`Setup`] (the model's constants, trial counts and a
//! seed) returning [`Row`]s (claim, the seed's figure, ours, the tolerance, a verdict) and
//! [`Figure`]s (plain data; the binary renders them). `safegate reproduce` runs them all.
//! Where the seed's figure cannot be matched by construction (a worst case from an unknown
//! random stream) the row is informational and says why; where a measurement disagrees,
//! the verdict says so.

use serde::Serialize;

use safegate_sim::config::Config;
use safegate_sim::scenario::{Scenario, ScenarioError};

pub mod band;
pub mod ceiling;
pub mod frontier;
pub mod game;
pub mod imm;
pub mod pinned;
pub mod poa;
pub mod probebw;
pub mod recovery;
mod run_many;
mod selection;
pub mod severity;

pub use run_many::run_many;
pub use selection::{row_belongs, select, Selection, UnknownExperiment};

/// What the experiments run on.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The model: pool, health shape (its `hold_*`/`ramp_*`/`low`), dt. Traffic, schedule
    /// kind and duration are set by each experiment as the seed's setup requires.
    pub base: Config,
    /// Severity trials per design (the seed: 2,000,000).
    pub severity_trials: u64,
    /// Repeated runs for the distribution of worst severities.
    pub worst_runs: u64,
    /// IMM trials per noise law (the seed: 30,000).
    pub imm_trials: u64,
    /// Seed of every random draw.
    pub seed: u64,
}

impl Default for Setup {
    fn default() -> Self {
        Self { base: Config::default(), severity_trials: 2_000_000, worst_runs: 10_000, imm_trials: 30_000, seed: 1 }
    }
}

/// A row's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Within tolerance of the seed's figure.
    Pass,
    /// Outside tolerance: the measurement disagrees with the seed.
    Fail,
    /// Reported for reading, not checked (e.g. a worst case from an unknown random stream).
    Info,
}

/// One checked claim.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Stable identifier (`recovery-74.5`).
    pub id: String,
    /// The claim, in words.
    pub claim: String,
    /// The seed's figure, as printed.
    pub seed: String,
    /// Ours, formatted like the seed's.
    pub ours: String,
    /// The tolerance, in words.
    pub tolerance: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Whether the row passes (`Info` rows count as passing).
    pub pass: bool,
    /// The seed's figure as a number, where there is one.
    pub seed_value: Option<f64>,
    /// Our figure as a number, where there is one.
    pub value: Option<f64>,
    /// Anything a reader needs to read the row right.
    pub note: Option<String>,
}

impl Row {
    /// A row with a verdict decided by the caller.
    pub fn new(
        id: &str,
        claim: &str,
        seed: impl Into<String>,
        ours: impl Into<String>,
        tolerance: &str,
        ok: bool,
    ) -> Self {
        let verdict = if ok { Verdict::Pass } else { Verdict::Fail };
        Row {
            id: id.to_string(),
            claim: claim.to_string(),
            seed: seed.into(),
            ours: ours.into(),
            tolerance: tolerance.to_string(),
            verdict,
            pass: ok,
            seed_value: None,
            value: None,
            note: None,
        }
    }

    /// A numeric row that passes when `|ours − seed| ≤ tol`, both shown with `decimals`.
    pub fn close(id: &str, claim: &str, seed: f64, ours: f64, tol: f64, decimals: usize) -> Self {
        let ok = (ours - seed).abs() <= tol + 1e-9 && ours.is_finite();
        let tol_text = if tol < 1e-3 { format!("±{tol:e}") } else { format!("±{tol}") };
        let mut r = Row::new(id, claim, format!("{seed:.decimals$}"), format!("{ours:.decimals$}"), &tol_text, ok);
        r.seed_value = Some(seed);
        r.value = Some(ours);
        r
    }

    /// An informational row (never fails).
    pub fn info(id: &str, claim: &str, seed: impl Into<String>, ours: impl Into<String>, note: &str) -> Self {
        let mut r = Row::new(id, claim, seed, ours, "report only", true);
        r.verdict = Verdict::Info;
        r.note = Some(note.to_string());
        r
    }

    /// Attach a note.
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// Attach numeric values.
    pub fn values(mut self, seed: Option<f64>, ours: Option<f64>) -> Self {
        self.seed_value = seed;
        self.value = ours;
        self
    }
}

/// One line of a figure.
#[derive(Debug, Clone, Serialize)]
pub struct FigureLine {
    /// Legend text.
    pub name: String,
    /// x values.
    pub x: Vec<f64>,
    /// y values.
    pub y: Vec<f64>,
}

/// A figure as plain data: lines over a shared x-axis, optional horizontal rules.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// File stem (`recovery-sweep`).
    pub id: String,
    /// Title.
    pub title: String,
    /// x-axis label.
    pub x_label: String,
    /// y-axis label.
    pub y_label: String,
    /// The lines.
    pub lines: Vec<FigureLine>,
    /// Horizontal reference lines `(y, label)`.
    pub rules: Vec<(f64, String)>,
}

impl Figure {
    /// A figure with no lines yet.
    pub fn new(id: &str, title: &str, x_label: &str, y_label: &str) -> Self {
        Figure {
            id: id.into(),
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            lines: vec![],
            rules: vec![],
        }
    }

    /// Add a line.
    pub fn line(mut self, name: &str, x: Vec<f64>, y: Vec<f64>) -> Self {
        self.lines.push(FigureLine { name: name.into(), x, y });
        self
    }

    /// Add a horizontal rule.
    pub fn rule(mut self, y: f64, label: &str) -> Self {
        self.rules.push((y, label.into()));
        self
    }
}

/// What one experiment produced.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The experiment's id.
    pub experiment: &'static str,
    /// Its checked claims.
    pub rows: Vec<Row>,
    /// Its figures.
    pub figures: Vec<Figure>,
}

/// An experiment: an id, what it measures, and the function that runs it.
#[derive(Debug, Clone, Copy)]
pub struct Experiment {
    /// Stable id (`recovery`).
    pub id: &'static str,
    /// One line on what it measures and where in the seed.
    pub title: &'static str,
    /// Run it.
    pub run: fn(&Setup) -> Report,
    /// How its rows' ids begin (rows are named after their subject: `recovery-74.5`,
    /// `band-80-floor`, `critical-slowing`); see [`row_belongs`].
    pub row_prefixes: &'static [&'static str],
}

/// Every experiment, in the order the seed makes its claims.
pub const ALL: &[Experiment] = &[
    Experiment {
        id: "ceiling",
        title: "joint ceiling s·C²/P, USL at n = 8, no drain at any health",
        run: ceiling::run,
        row_prefixes: &["ceiling", "usl", "no-drain"],
    },
    Experiment {
        id: "recovery",
        title: "recovery delay after one dip, and its divergence as λ → 75",
        run: recovery::run,
        row_prefixes: &["recovery", "critical"],
    },
    Experiment {
        id: "pinned", title: "λ ≥ 75 pins the queue at its cap", run: pinned::run, row_prefixes: &["pinned"]
    },
    Experiment { id: "poa", title: "price of anarchy of the ungated pool", run: poa::run, row_prefixes: &["poa"] },
    Experiment { id: "band", title: "the gate's oscillation band at λ = 80", run: band::run, row_prefixes: &["band"] },
    Experiment {
        id: "severity",
        title: "probability is not magnitude: Pareto severities at equal ε",
        run: severity::run,
        row_prefixes: &["severity"],
    },
    Experiment { id: "imm", title: "IMM false alarms under heavy-tailed noise", run: imm::run, row_prefixes: &["imm"] },
    Experiment {
        id: "frontier",
        title: "achievable region of ε against the severity bound",
        run: frontier::run,
        row_prefixes: &["frontier"],
    },
    Experiment {
        id: "probebw",
        title: "ProbeBW drain failure and the backlog scar",
        run: probebw::run,
        row_prefixes: &["probebw"],
    },
    Experiment {
        id: "game",
        title: "freeze/fallback Stag Hunt and the fleet tipping point",
        run: game::run,
        row_prefixes: &["stag", "fleet", "starvation"],
    },
];

/// Run one experiment by id.
pub fn find(id: &str) -> Option<&'static Experiment> {
    ALL.iter().find(|e| e.id == id)
}

impl Setup {
    /// The default setup on the seed's model changed by `key = value` overrides of scenario
    /// keys (`model.rate = 36`, as `safegate reproduce --set` gives them), with `seed`. An
    /// unknown key or a value out of range is the error, as in a scenario file.
    pub fn with_overrides(overrides: &[(String, String)], seed: u64) -> Result<Self, ScenarioError> {
        let origin = "<reproduce>";
        let base = Scenario::from_toml_with("", origin, overrides)?.config(origin)?;
        // The experiments run hundreds of fluid runs of up to 1200 s each at this step: at
        // 1e-5 s one of them needed 960 MB and the sweep ran for minutes.
        if base.dt < MIN_REPRODUCE_DT {
            let error = safegate_core::RangeError::new("run.dt", base.dt, format!("at least {MIN_REPRODUCE_DT} s in reproduce (the seed's is 0.05; its experiments run hundreds of runs of up to 1200 s at this step)"));
            return Err(ScenarioError::Invalid { origin: origin.into(), error });
        }
        Ok(Setup { base, seed, ..Setup::default() })
    }
}

/// The finest `run.dt` `reproduce --set` takes \[s\].
pub const MIN_REPRODUCE_DT: f64 = 1e-3;

/// The dip shape of the setup's health schedule (the seed's when it has none).
pub(crate) fn dip_shape(setup: &Setup) -> safegate_sim::DipShape {
    match &setup.base.health.schedule {
        safegate_sim::HealthSchedule::Cycle(s) | safegate_sim::HealthSchedule::Dip { shape: s, .. } => *s,
        _ => safegate_sim::DipShape::default(),
    }
}

/// Fluid run helper shared by the experiments: queue series at every step.
pub(crate) fn fluid_series(cfg: &Config, sensitivity: f64, threshold: f64) -> safegate_sim::Series {
    let mut gate = safegate_core::SeedGate::new(threshold, sensitivity).expect("experiment gate parameters are valid");
    safegate_sim::fluid::simulate(cfg, &mut gate, safegate_sim::RunOptions { record_every: Some(1), progress: None })
        .series
        .expect("recorded")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_change_the_setups_model_and_bad_ones_are_errors() {
        let s = Setup::with_overrides(&[], 7).unwrap();
        assert_eq!((s.base.pool.rate, s.seed, s.imm_trials), (Setup::default().base.pool.rate, 7, 30_000));
        let s = Setup::with_overrides(&[("model.rate".into(), "36".into())], 1).unwrap();
        assert_eq!(s.base.pool.rate, 36.0);
        let unknown = Setup::with_overrides(&[("model.nope".into(), "1".into())], 1).unwrap_err();
        assert!(matches!(unknown, ScenarioError::Parse { .. }), "{unknown}");
        assert!(unknown.to_string().starts_with("<reproduce>: "), "{unknown}");
        let fine = Setup::with_overrides(&[("run.dt".into(), "1e-5".into())], 1).unwrap_err();
        assert!(matches!(&fine, ScenarioError::Invalid { error, .. } if error.field == "run.dt"), "{fine}");
        let range = Setup::with_overrides(&[("model.rate".into(), "-1".into())], 1).unwrap_err();
        match range {
            ScenarioError::Invalid { error, .. } => assert_eq!(error.field, "model.rate"),
            other => panic!("{other}"),
        }
    }
}
