use super::*;

#[test]
fn empty_file_is_the_seed() {
    let s = Scenario::from_toml("", "t").unwrap();
    let c = s.config("t").unwrap();
    assert_eq!(c.pool, Pool::default());
    assert_eq!(c.traffic, 80.0);
    assert_eq!(c.steps(), 8000);
}

#[test]
fn unknown_keys_fail_with_their_name() {
    // Also in [health], whose shape keys are DipShape's.
    let e = Scenario::from_toml("[health]\nlowest = 0.2\n", "t").unwrap_err().to_string();
    assert!(e.contains("lowest"), "{e}");
    let s = Scenario::from_toml("[health]\nlow = 0.2\nkind = \"dip\"\n", "t").unwrap();
    assert_eq!((s.health.shape.low, s.health.kind), (0.2, HealthKind::Dip));
    let e = Scenario::from_toml("[model]\nexecutor = 8\n", "t").unwrap_err().to_string();
    assert!(e.contains("executor"), "{e}");
    let e = Scenario::from_toml("[modle]\n", "t").unwrap_err().to_string();
    assert!(e.contains("modle"), "{e}");
    // `[health]` holds the dip's shape keys beside its own, and refuses the rest too.
    let e = Scenario::from_toml("[health]\nlowest = 0.2\n", "t").unwrap_err().to_string();
    assert!(e.contains("lowest"), "{e}");
    let e = Scenario::from_toml_with("", "t", &[("health.nope".into(), "1".into())]).unwrap_err().to_string();
    assert!(e.contains("nope"), "{e}");
    let s = Scenario::from_toml("[health]\nkind = \"dip\"\nstart = 30\nlow = 0.2\nramp_up = 4\n", "t").unwrap();
    assert_eq!((s.health.kind, s.health.start, s.health.noise_period), (HealthKind::Dip, 30.0, 1.0));
    assert_eq!((s.health.shape.low, s.health.shape.ramp_up, s.health.shape.high), (0.2, 4.0, 1.0));
}

#[test]
fn out_of_range_values_name_path_value_and_range() {
    let cases = [
        ("[gate]\nthreshold = 1.2", "gate.threshold", "1.2"),
        ("[health]\nlow = 2.0", "health.low", "2"),
        ("[run]\ndt = 0", "run.dt", "0"),
        ("[model]\nexecutors = 0", "model.executors", "0"),
        ("[traffic]\nrate = -1", "traffic.rate", "-1"),
        ("[traffic]\nrate = nan", "traffic.rate", "NaN"),
        ("[service]\ndistribution = \"pareto\"\nshape = 0.9", "service.shape", "0.9"),
        ("[health]\nkind = \"trace\"", "health.file", "(missing)"),
    ];
    for (text, field, value) in cases {
        let e = Scenario::from_toml(text, "t").unwrap().config("t").unwrap_err();
        match &e {
            ScenarioError::Invalid { error, .. } => {
                assert_eq!(error.field, field);
                assert_eq!(error.value, value);
                assert!(!error.allowed.is_empty());
            }
            other => panic!("{text}: {other}"),
        }
    }
}

#[test]
fn overrides_set_nested_keys_and_fail_like_files() {
    let ov = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
    let s = Scenario::from_toml_with("[traffic]\nrate = 55", "t", &ov("traffic.rate", "74.5")).unwrap();
    assert_eq!(s.traffic.rate, 74.5);
    let s = Scenario::from_toml_with("", "t", &ov("health.kind", "dip")).unwrap();
    assert_eq!(s.health.kind, HealthKind::Dip);
    let e = Scenario::from_toml_with("", "t", &ov("gate.treshold", "0.5")).unwrap_err().to_string();
    assert!(e.contains("treshold"), "{e}");
    let e = Scenario::from_toml_with("", "t", &ov("run.seed", "-3")).unwrap_err().to_string();
    assert!(e.contains("seed") || e.contains("-3"), "{e}");
}

#[test]
fn wrong_types_fail_with_the_key() {
    let e = Scenario::from_toml("[model]\nexecutors = \"eight\"", "t").unwrap_err().to_string();
    assert!(e.contains("model.executors"), "{e}");
    let e = Scenario::from_toml("[model]\nexecutors = -1", "t").unwrap_err().to_string();
    assert!(e.contains("model.executors") && e.contains("-1"), "{e}");
}
