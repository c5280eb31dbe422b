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
