use safegate_core::boundary::Boundary;
use safegate_sim::config::Config;

use super::*;
use safegate_sim::health::{HealthSchedule, HealthTrack};
use safegate_sim::Scenario;

#[test]
fn every_listed_policy_builds() {
    for n in policy_names() {
        assert!(build_policy(&n, &Config::default()).is_ok(), "{n}");
    }
    assert!(build_policy("credits+pool", &Config::default()).is_err());
    assert!(build_policy("nope", &Config::default()).is_err());
    assert!(build_policy("gradient2+retry-budget", &Config::default()).is_ok());
}

#[test]
fn the_physical_limit_is_the_ideal_pools_goodput() {
    // Constant health 1, λ = 120 < 150: the ideal pool clears everything offered.
    let cfg = Config {
        traffic: 120.0,
        duration: 200.0,
        health: HealthTrack::new(HealthSchedule::Constant { level: 1.0 }),
        ..Config::default()
    };
    assert!((physical_limit(&cfg).unwrap() - 120.0).abs() < 0.5);
    // λ = 200 > 150: it clears 150 (the peak of the service curve).
    let cfg = Config { traffic: 200.0, ..cfg };
    assert!((physical_limit(&cfg).unwrap() - 150.0).abs() < 1.0, "{}", physical_limit(&cfg).unwrap());
}

#[test]
fn the_drain_table_holds_in_the_model() {
    let rows = probe_collapse(&[0.9, 0.6]);
    for r in &rows {
        // Within one 50-ms fluid step of the round's rate.
        let step = 0.05 * 150.0 * (1.25 - r.capacity) + 0.5;
        assert!((r.probe - r.predicted[0]).abs() < step, "{r:?}");
        assert!((r.drain - r.predicted[1]).abs() < step, "{r:?}");
    }
    assert!(rows[0].drain < 0.0 && rows[1].drain > 0.0, "the drain adds below 0.75: {rows:?}");
    assert!(rows[1].probe_drain_abort < 0.5 * (rows[1].probe + rows[1].drain), "{rows:?}");
    assert!(rows[1].peak[1] < rows[1].peak[0]);
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn cases_are_chosen_by_name() {
    assert_eq!(select_cases(&[], 100.0).unwrap().len(), default_cases(100.0).len());
    let picked = select_cases(&names(&["cycle-80", " dip-55 "]), 120.0).unwrap();
    let got: Vec<&str> = picked.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(got, ["cycle-80", "dip-55"]);
    assert!(picked.iter().all(|c| c.config.duration == 120.0));
    let e = select_cases(&names(&["dip-55", "dip-56"]), 100.0).unwrap_err();
    let CompareError::UnknownCase { name, known } = &e else { panic!("{e}") };
    assert_eq!((name.as_str(), known.len()), ("dip-56", default_cases(1.0).len()));
    assert!(e.to_string().starts_with("unknown case \"dip-56\": the default cases are dip-55, dip-74.5,"), "{e}");
}

#[test]
fn the_duration_defaults_to_the_horizon_and_must_be_positive() {
    let b = Boundary::default();
    assert_eq!(run_duration(None, &b).unwrap(), b.probability.horizon);
    assert_eq!(run_duration(Some(60.0), &b).unwrap(), 60.0);
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let Err(CompareError::Setting(e)) = run_duration(Some(bad), &b) else { panic!("{bad}") };
        assert_eq!(e.field, "duration");
    }
    let mut no_horizon = Boundary::default();
    no_horizon.probability.horizon = 0.0;
    assert!(run_duration(None, &no_horizon).is_err());
}

#[test]
fn a_case_from_a_scenario_is_named_by_it_or_the_default() {
    let s = Scenario::from_toml("name = \"mine\"\ndescription = \"d\"\n[traffic]\nrate = 60\n", "f.toml").unwrap();
    let c = Case::from_scenario(&s, "f.toml", "f").unwrap();
    assert_eq!((c.name.as_str(), c.description.as_str(), c.config.traffic), ("mine", "d", 60.0));
    let s = Scenario::from_toml("[traffic]\nrate = 60\n", "g.toml").unwrap();
    let c = Case::from_scenario(&s, "g.toml", "g").unwrap();
    assert_eq!((c.name.as_str(), c.description.as_str()), ("g", ""));
    let bad = Scenario::from_toml("[traffic]\nrate = -5\n", "h.toml").unwrap();
    let e = Case::from_scenario(&bad, "h.toml", "h").unwrap_err();
    assert!(e.to_string().starts_with("h.toml: traffic.rate = -5"), "{e}");
}

fn request(cases: Vec<Case>) -> CompareRequest {
    CompareRequest {
        cases,
        boundary: Boundary::default(),
        policies: vec![],
        seeds: 1,
        exit_trials: 0,
        curve: true,
        traces: false,
    }
}

#[test]
fn a_request_builds_a_checked_config_with_the_defaults() {
    let cases = select_cases(&names(&["dip-55"]), 50.0).unwrap();
    let cc = request(cases.clone()).build().unwrap();
    assert_eq!(cc.policies, default_policies());
    assert_eq!(cc.curve_traffic, DEFAULT_CURVE_TRAFFIC);
    assert_eq!((cc.cases.len(), cc.seeds, cc.traces), (1, 1, false));
    let open: safegate_core::controllers::PolicySpec = "open".parse().unwrap();
    let cc =
        CompareRequest { policies: vec![open], curve: false, traces: true, ..request(cases.clone()) }.build().unwrap();
    assert_eq!((cc.policies, cc.curve_traffic.len(), cc.traces), (vec![open], 0, true));
    // What compare checks, build checks first.
    let e = CompareRequest { seeds: 0, ..request(cases.clone()) }.build().unwrap_err();
    assert_eq!(e, CompareError::Empty("seeds must be at least 1".into()));
    assert_eq!(request(vec![]).build().unwrap_err(), CompareError::Empty("no case to run".into()));
    let mut bad = cases[0].clone();
    bad.config.traffic = -1.0;
    assert!(matches!(request(vec![bad]).build(), Err(CompareError::Case { .. })));
}

#[test]
fn a_boundary_that_cannot_build_a_filter_names_the_case() {
    let cases = select_cases(&names(&["cycle-80"]), 50.0).unwrap();
    let mut r = request(cases);
    r.boundary.barrier.threshold = 1.5;
    r.seeds = 0; // the boundary is checked before the rest
    let e = r.build().unwrap_err();
    let CompareError::Boundary { case, message } = &e else { panic!("{e}") };
    assert_eq!(case, "cycle-80");
    assert!(message.starts_with("barrier.threshold = 1.5 is out of range"), "{message}");
}
