//! A live run beside the model, as `safegate live` shows them: the stochastic simulator's
//! column on the same scenario and policy ([`model_column`]), the live run's own column
//! ([`LiveReport::column`]), and the JSON document of both ([`json_document`]).

use safegate_core::{Policy as _, RangeError};
use safegate_sim::{Config, Outcome, Scenario};
use safegate_studies::run::{verdict, verdict_of_series, RunReport};
use serde_json::{json, Value};

use super::{LivePolicy, LiveReport};

/// Most samples the model's series keeps (its stride is the steps over this, at least 1).
const MODEL_SAMPLES: u64 = 20_000;

/// `cfg` played by the stochastic simulator under `policy`, its series kept at most
/// [`MODEL_SAMPLES`] samples long: the model's prediction of a live run. A configuration
/// the simulator refuses is the error.
pub(crate) fn stochastic(cfg: &Config, policy: &mut LivePolicy) -> Result<Outcome, RangeError> {
    let stride = (cfg.steps() / MODEL_SAMPLES).max(1) as usize;
    safegate_sim::run(
        safegate_sim::Mode::Stochastic,
        cfg,
        policy,
        safegate_sim::RunOptions { record_every: Some(stride), progress: None },
    )
}

/// The model's column beside a live run of `scenario` (its configuration `cfg`) under the
/// policy labelled `label`: the stochastic simulator under `policy` (a fresh one, built as
/// the live run's is), labelled `model: {label}`, with its verdict against the safe line
/// `line`. A configuration the simulator refuses is the error.
pub fn model_column(
    label: &str,
    scenario: &Scenario,
    cfg: &Config,
    mut policy: LivePolicy,
    line: f64,
) -> Result<RunReport, RangeError> {
    let outcome = stochastic(cfg, &mut policy)?;
    Ok(RunReport {
        label: format!("model: {label}"),
        policy: policy.name(),
        scenario: scenario.clone(),
        verdict: verdict(cfg, &outcome, line),
        outcome,
        filter: policy.filter_stats(),
    })
}

impl LiveReport {
    /// This run as a column beside the model's: labelled `live: {label}`, of `scenario`
    /// (its configuration `cfg`), with its verdict against the safe line `line`, read from
    /// the run's own series (the physical limit of the health it met).
    pub fn column(&self, label: &str, scenario: &Scenario, cfg: &Config, line: f64) -> RunReport {
        let outcome = Outcome { summary: self.summary.clone(), series: Some(self.series.clone()) };
        RunReport {
            label: format!("live: {label}"),
            policy: self.policy,
            scenario: scenario.clone(),
            verdict: verdict_of_series(cfg, &outcome, line),
            outcome,
            filter: self.filter,
        }
    }
}

/// The JSON document of a live run: its scenario and label (from the `live` column), the
/// whole `report`, the model's label and summary (`null` without a `model` column), each
/// column's verdict (the model's first), and where the chart went (`chart`, as shown).
pub fn json_document(report: &LiveReport, model: Option<&RunReport>, live: &RunReport, chart: Option<String>) -> Value {
    let verdicts: Vec<Value> = model
        .into_iter()
        .chain(std::iter::once(live))
        .map(|r| json!({ "label": r.label, "verdict": r.verdict }))
        .collect();
    json!({
        "scenario": live.scenario,
        "label": live.label,
        "report": report,
        "model": model.map(|r| json!({ "label": r.label, "summary": r.outcome.summary })),
        "verdicts": verdicts,
        "chart": chart,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{LiveSeries, LoadSummary};
    use safegate_sim::variants::variants;
    use safegate_studies::run::DEFAULT_SCENARIO;

    /// The embedded band-80, 60 s of it, and its gate's policy.
    fn band() -> (Scenario, Config, LivePolicy) {
        let s = Scenario::from_toml_with(DEFAULT_SCENARIO, "band", &[("run.duration".into(), "60.0".into())]).unwrap();
        let cfg = s.config("band").unwrap();
        let v = variants(&s, false).unwrap().pop().unwrap();
        (v.scenario.clone(), cfg, v.policy.into())
    }

    /// A live report whose summary and series are the model's `outcome`.
    fn report(outcome: &Outcome) -> LiveReport {
        LiveReport {
            policy: "seed-gate",
            speed: 10.0,
            wall_seconds: 6.0,
            redis: "redis://127.0.0.1:1/".into(),
            summary: outcome.summary.clone(),
            series: outcome.series.clone().unwrap(),
            live: LiveSeries::default(),
            accounting: Default::default(),
            lost: 0,
            load: LoadSummary::default(),
            filter: None,
            downstream: None,
            decisions: 1200,
            planned_decisions: 1200,
            controller_errors: 0,
            scrapes: None,
        }
    }

    #[test]
    fn the_model_and_the_live_run_are_columns_of_the_same_scenario_and_one_document() {
        let (scenario, cfg, policy) = band();
        let line = scenario.safe_threshold() * cfg.pool.capacity;
        let model = model_column("seed gate", &scenario, &cfg, policy, line).unwrap();
        assert_eq!(model.label, "model: seed gate");
        assert!(model.verdict.is_some() && model.outcome.series.as_ref().is_some_and(|s| !s.is_empty()));
        let live_report = report(&model.outcome);
        let live = live_report.column("seed gate", &scenario, &cfg, line);
        assert_eq!((live.label.as_str(), live.policy), ("live: seed gate", "seed-gate"));
        assert!(live.verdict.is_some());
        let doc = json_document(&live_report, Some(&model), &live, Some("c.svg".into()));
        assert_eq!(doc["label"], "live: seed gate");
        assert_eq!(doc["model"]["label"], "model: seed gate");
        let labels: Vec<&str> =
            doc["verdicts"].as_array().unwrap().iter().map(|v| v["label"].as_str().unwrap()).collect();
        assert_eq!(labels, ["model: seed gate", "live: seed gate"]);
        assert_eq!(doc["chart"], "c.svg");
        assert_eq!(doc["report"]["decisions"], 1200);
        // Without the model: no model, one verdict, no chart.
        let doc = json_document(&live_report, None, &live, None);
        assert!(doc["model"].is_null() && doc["chart"].is_null());
        assert_eq!(doc["verdicts"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn a_configuration_the_simulator_refuses_is_the_error() {
        let (scenario, mut cfg, policy) = band();
        cfg.duration = -1.0;
        assert!(model_column("x", &scenario, &cfg, policy, 140.0).is_err());
    }
}
