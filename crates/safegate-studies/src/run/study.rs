//! Which runs a scenario plays, playing them, and the document `safegate run --json`
//! prints.

use safegate_core::boundary::Boundary;
use safegate_core::safety::FilterStats;
use safegate_core::{Policy, RangeError};
use safegate_sim::variants::{arms, variants, Variant, VariantError};
use safegate_sim::{Config, Outcome, RunOptions, Scenario, ScenarioError};
use serde::Serialize;

use super::verdict::{physical_limit, verdict_with_limit, Verdict};

/// The embedded default scenario: the seed's λ = 80 band.
pub const DEFAULT_SCENARIO: &str = include_str!("../../../../scenarios/band-80.toml");
/// How errors name the embedded default scenario.
pub const DEFAULT_ORIGIN: &str = "<embedded band-80>";
/// The boundary of the third arm: the seed's running case, admission only.
pub const FILTER_BOUNDARY: &str = include_str!("../../../../boundaries/seed-80.toml");
/// The boundary of the fourth arm: the same, with the concurrency cap as a second input.
pub const POOL_BOUNDARY: &str = include_str!("../../../../boundaries/seed-80-pool.toml");

/// Why a study could not be set up or played.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The scenario does not resolve to a configuration.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A value of the configuration out of range.
    #[error(transparent)]
    Range(#[from] RangeError),
    /// The scenario's gate or boundary could not be built.
    #[error(transparent)]
    Variant(#[from] VariantError),
    /// The boundary from `origin` (a file, or the scenario's table) could not be built.
    #[error("{origin}: {error}")]
    Boundary {
        /// Where the boundary came from.
        origin: String,
        /// What is wrong with it.
        error: VariantError,
    },
    /// The four arms asked for on a scenario that has a `[boundary]` table of its own.
    #[error(
        "{origin}: the four arms bring their own boundaries (seed-80, seed-80-pool); run a scenario with a [boundary] table without them"
    )]
    OwnBoundaries {
        /// The scenario's origin.
        origin: String,
    },
    /// An embedded boundary file did not parse.
    #[error("embedded boundaries/{name}.toml: {message}")]
    Embedded {
        /// The file's stem (`seed-80`).
        name: &'static str,
        /// The parser's message.
        message: String,
    },
}

/// A float as TOML writes it (`nan`, `inf` and `-inf` included), so that an override of
/// `nan` reaches the range check as a number and is refused as one.
pub fn toml_float(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{v:?}")
    }
}

/// One labelled run, as printed and serialised.
#[derive(Debug, Serialize)]
pub struct RunReport {
    /// The run's label (`gate on (θ 0.7, sens 1)`).
    pub label: String,
    /// The policy's name.
    pub policy: &'static str,
    /// The scenario the run played.
    pub scenario: Scenario,
    /// The run's summary and series.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The safety filter's counters, when the run had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<FilterStats>,
    /// Goodput, share of the physical limit and time beyond θ·cap (`None` without a series).
    pub verdict: Option<Verdict>,
}

/// Which runs a study plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// No gate, the seed's gate, the filter over it (`boundaries/seed-80.toml`) and the
    /// filter with the concurrency cap (`boundaries/seed-80-pool.toml`).
    FourArms,
    /// The scenario's gate (under its boundary's filter, if it has one), after the gate off
    /// (or the gate alone under a filter) when `baseline`.
    Variants {
        /// Also run the baseline.
        baseline: bool,
    },
}

/// A scenario ready to play: its configuration, its runs and the safe line of their
/// verdicts.
#[derive(Debug)]
pub struct Study {
    /// The scenario.
    pub scenario: Scenario,
    /// Its resolved configuration.
    pub cfg: Config,
    /// The runs, in order (the last is the primary).
    pub variants: Vec<Variant>,
    /// The safe line θ·cap of the verdicts: the first boundary's θ, else the gate's.
    pub line: f64,
}

/// A played study: the scenario, its configuration, the safe line and every run.
#[derive(Debug)]
pub struct Played {
    /// The scenario.
    pub scenario: Scenario,
    /// Its resolved configuration.
    pub cfg: Config,
    /// The safe line θ·cap of the verdicts.
    pub line: f64,
    /// Every run, in order.
    pub reports: Vec<RunReport>,
}

impl Study {
    /// The study of `scenario` (from `origin`, which errors name) in `runs`; a boundary
    /// error names `boundary_origin` (a boundary file, or `origin` for the scenario's
    /// table).
    pub fn new(scenario: Scenario, origin: &str, boundary_origin: &str, runs: Runs) -> Result<Self, RunError> {
        let cfg = scenario.config(origin)?;
        let variants = match runs {
            Runs::FourArms => four_arms(&scenario, origin)?,
            Runs::Variants { baseline } => variants(&scenario, baseline).map_err(|e| match e {
                VariantError::Boundary(_) => RunError::Boundary { origin: boundary_origin.to_string(), error: e },
                other => other.into(),
            })?,
        };
        let theta = variants
            .iter()
            .find_map(|v| v.scenario.boundary.as_ref().map(|b| b.barrier.threshold))
            .unwrap_or(scenario.gate.threshold);
        let line = theta * cfg.pool.capacity;
        // The runs play one after the other: their budget is counted together.
        cfg.check_runs(scenario.run.mode, variants.len())?;
        Ok(Self { scenario, cfg, variants, line })
    }

    /// Plays every run, recording every `stride`-th sample; `progress` hears the run's
    /// index and its fraction done.
    pub fn play(self, stride: usize, progress: &mut dyn FnMut(usize, f64)) -> Result<Played, RunError> {
        let Self { scenario, cfg, variants, line } = self;
        let reports = run_variants(&cfg, variants, stride, line, progress)?;
        Ok(Played { scenario, cfg, line, reports })
    }
}

/// The four arms of [`arms`] on `scenario`, with the embedded seed-80 boundaries.
fn four_arms(scenario: &Scenario, origin: &str) -> Result<Vec<Variant>, RunError> {
    if scenario.boundary.is_some() {
        return Err(RunError::OwnBoundaries { origin: origin.to_string() });
    }
    let parse = |text: &str, name: &'static str| {
        Boundary::from_toml(text, &[]).map_err(|e| RunError::Embedded { name, message: e.0 })
    };
    let (filter, pool) = (parse(FILTER_BOUNDARY, "seed-80")?, parse(POOL_BOUNDARY, "seed-80-pool")?);
    arms(scenario, &filter, &pool).map_err(|error| RunError::Boundary { origin: origin.to_string(), error })
}

/// The sampling stride of a JSON series: every `every`-th of `steps` samples, thinned
/// further so that at most [`MAX_SERIES_POINTS`](safegate_sim::limits::MAX_SERIES_POINTS)
/// are kept (a 1e6-s run would print 1.9 GB).
pub fn json_stride(steps: u64, every: usize) -> usize {
    let fit = steps.div_ceil(safegate_sim::limits::MAX_SERIES_POINTS as u64) as usize;
    every.max(fit)
}

/// Runs each variant of a scenario on `cfg`, recording every `stride`-th sample, each with
/// its verdict against the safe line `line` (θ·cap); `progress` hears the variant's index
/// and its fraction done.
pub fn run_variants(
    cfg: &Config,
    variants: Vec<Variant>,
    stride: usize,
    line: f64,
    progress: &mut dyn FnMut(usize, f64),
) -> Result<Vec<RunReport>, RunError> {
    let mut reports = Vec::new();
    // One configuration, one limit: every arm is measured against the same ideal pool.
    let limit = physical_limit(cfg);
    for (i, Variant { label, scenario: sc, mut policy }) in variants.into_iter().enumerate() {
        let mut cb = |f: f64| progress(i, f);
        let outcome = safegate_sim::run(
            sc.run.mode,
            cfg,
            &mut policy,
            RunOptions { record_every: Some(stride), progress: Some(&mut cb) },
        )?;
        let filter = policy.filter_stats();
        let verdict = verdict_with_limit(&outcome, line, limit);
        reports.push(RunReport { label, policy: policy.name(), scenario: sc, outcome, filter, verdict });
    }
    Ok(reports)
}

/// The document `safegate run --json` prints: every run under `arms` with its verdict; the
/// last run is the primary, the first (when there are more) its baseline. `chart` is where
/// the chart went, if anywhere.
pub fn json_doc(mut reports: Vec<RunReport>, chart: Option<String>) -> serde_json::Value {
    let arms: Vec<serde_json::Value> = reports
        .iter()
        .map(|r| {
            serde_json::json!({
                "label": r.label,
                "policy": r.policy,
                "summary": r.outcome.summary,
                "filter": r.filter,
                "verdict": r.verdict,
            })
        })
        .collect();
    let primary = reports.pop().expect("at least one run");
    let baseline = (!reports.is_empty()).then(|| reports.swap_remove(0));
    serde_json::json!({
        "scenario": primary.scenario,
        "policy": primary.policy,
        "label": primary.label,
        "summary": primary.outcome.summary,
        "series": primary.outcome.series,
        "baseline": baseline,
        "arms": arms,
        "chart": chart,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_study_is_four_arms_on_the_band() {
        let sc = Scenario::from_toml(DEFAULT_SCENARIO, DEFAULT_ORIGIN).unwrap();
        let study = Study::new(sc, DEFAULT_ORIGIN, DEFAULT_ORIGIN, Runs::FourArms).unwrap();
        assert_eq!(study.variants.len(), 4);
        assert!((study.line - 140.0).abs() < 1e-9, "{}", study.line);
        let played = study.play(json_stride(8000, 1), &mut |_, _| {}).unwrap();
        assert!(played.reports.iter().all(|r| r.verdict.is_some()));
        let doc = json_doc(played.reports, None);
        assert_eq!(doc["arms"].as_array().unwrap().len(), 4);
        assert_eq!(doc["scenario"]["name"], "band-80");
    }

    #[test]
    fn four_arms_refuse_a_scenario_with_its_own_boundary() {
        let mut sc = Scenario::from_toml(DEFAULT_SCENARIO, DEFAULT_ORIGIN).unwrap();
        sc.boundary = Some(Boundary::from_toml(FILTER_BOUNDARY, &[]).unwrap());
        let e = Study::new(sc, "x.toml", "x.toml", Runs::FourArms).unwrap_err();
        assert!(matches!(e, RunError::OwnBoundaries { .. }), "{e}");
    }

    #[test]
    fn toml_floats_keep_nan_and_infinities() {
        assert_eq!(
            (toml_float(f64::NAN), toml_float(f64::INFINITY), toml_float(-f64::INFINITY)),
            ("nan".into(), "inf".into(), "-inf".into())
        );
        assert_eq!(toml_float(80.0), "80.0");
        assert_eq!(json_stride(10, 3), 3);
    }

    /// The four arms play one after the other, so their steps share one budget: a duration
    /// one arm could afford (1e8 steps at 5e6 s) but four could not is refused at once,
    /// naming the input and the count of runs, instead of running for minutes in silence.
    #[test]
    fn the_arms_share_the_step_budget() {
        let study = |d: f64| {
            let mut sc = Scenario::from_toml(DEFAULT_SCENARIO, DEFAULT_ORIGIN).unwrap();
            sc.run.duration = d;
            Study::new(sc, DEFAULT_ORIGIN, DEFAULT_ORIGIN, Runs::FourArms)
        };
        let e = study(5e6).unwrap_err().to_string();
        assert!(e.contains("run.duration = 5000000") && e.contains("4 runs ×") && e.contains("at most 1e8"), "{e}");
        assert!(study(1e6).is_ok());
        // One run alone keeps the single-run budget.
        let mut sc = Scenario::from_toml(DEFAULT_SCENARIO, DEFAULT_ORIGIN).unwrap();
        sc.run.duration = 5e6;
        assert!(Study::new(sc, DEFAULT_ORIGIN, DEFAULT_ORIGIN, Runs::Variants { baseline: false }).is_ok());
    }
}
