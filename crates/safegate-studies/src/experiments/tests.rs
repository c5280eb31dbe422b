use safegate_sim::scenario::ScenarioError;

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

/// Every scenario key, each set to a value other than the seed's (a table's override as
/// one), with the keys it needs to be read.
const PERTURBED: &[&[(&str, &str)]] = &[
    &[("model.executors", "6")],
    &[("model.comfortable", "3")],
    &[("model.rate", "36")],
    &[("model.capacity", "150")],
    &[("model.busy", "\"fluid\"")],
    &[("traffic.rate", "60")],
    &[("traffic.spike", "{ start = 50, duration = 30, rate = 110 }")],
    &[("gate.threshold", "0.6")],
    &[("gate.sensitivity", "0.5")],
    &[("health.kind", "\"dip\"")],
    &[("health.kind", "\"constant\"")],
    &[("health.high", "0.9")],
    &[("health.low", "0.2")],
    &[("health.hold_high", "6")],
    &[("health.ramp_down", "2")],
    &[("health.hold_low", "4")],
    &[("health.ramp_up", "3")],
    &[("health.kind", "\"dip\""), ("health.start", "40")],
    &[("health.start", "40")],
    &[("health.noise", "0.2")],
    &[("health.noise", "0.2"), ("health.noise_period", "3")],
    &[("health.noise_period", "3")],
    &[("health.kind", "\"constant\""), ("health.low", "0.2")],
    &[("retries.kind", "\"constant\"")],
    &[("retries", "{ kind = \"constant\", probability = 0.3 }")],
    &[("retries", "{ kind = \"constant\", probability = 0.3, path = \"direct\" }")],
    &[("retries.probability", "0.3")],
    &[("service.distribution", "\"pareto\"")],
    &[("service.distribution", "\"pareto\""), ("service.shape", "1.5")],
    &[("service.sigma", "2")],
    &[("run.duration", "300")],
    &[("run.dt", "0.02")],
    &[("run.mode", "\"stochastic\"")],
    &[("run.seed", "9")],
    &[("run.initial_queue", "50")],
    &[("run.drain_level", "3")],
    &[("run.warmup", "50")],
    &[("name", "\"x\"")],
    &[("description", "\"y\"")],
    &[("boundary.barrier.threshold", "0.6")],
];

/// Each row's figures (ours, as text and as a number; not its note), by id.
fn rows_of(overrides: &[(String, String)]) -> Vec<(String, String)> {
    let setup = Setup {
        severity_trials: 2000,
        worst_runs: 50,
        imm_trials: 200,
        ..Setup::with_overrides(overrides, 1).unwrap()
    };
    let chosen: Vec<&Experiment> = ALL.iter().collect();
    run_many(&setup, &chosen, &|| {})
        .into_iter()
        .flat_map(|(r, _)| r.rows.into_iter().map(|row| (row.id.clone(), format!("{} {:?}", row.ours, row.value))))
        .collect()
}

/// Issue "an override that nothing reads is accepted in silence": what each experiment
/// says it reads ([`Experiment::reads`]) is what its rows show. Every key, set alone (or
/// with the keys it needs): a row whose figures change reads it, and a key no row's
/// figures show is refused.
#[test]
fn what_each_experiment_says_it_reads_is_what_its_rows_show() {
    let all = select(&[]).unwrap();
    let base = rows_of(&[]);
    for set in PERTURBED {
        let overrides: Vec<(String, String)> = set.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let rows = rows_of(&overrides);
        let changed: Vec<&str> = base.iter().zip(&rows).filter(|(a, b)| a != b).map(|(a, _)| a.0.as_str()).collect();
        let checked = check_overrides(&overrides, &all);
        if changed.is_empty() {
            assert!(checked.is_err(), "{set:?} changes no row but is accepted: {checked:?}");
            continue;
        }
        let keys = checked.unwrap_or_else(|e| panic!("{set:?} changes {changed:?} but is refused: {e}"));
        for row in changed {
            let e = ALL.iter().find(|e| row_belongs(row, e.id)).unwrap();
            assert!(keys.iter().any(|k| row_reads(e, row, k)), "{set:?} changes {row}, which is said not to read it");
        }
    }
}
