//! Tests of the registry and the policy specs.

use super::super::{RetryBudget, RetryBudgetConfig, NAMES};
use super::*;
use crate::Observation;

#[test]
fn build_knows_every_name_and_only_those() {
    let s = Setting::default();
    for name in NAMES {
        for act in [Actuator::InFlight, Actuator::Executors] {
            let p = build(name, act, &s).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(&p.name(), name);
        }
    }
    let e = build("cycle", Actuator::InFlight, &s).err().unwrap();
    assert_eq!(e.name, "cycle");
    assert!(e.to_string().contains("gradient2"));
}

#[test]
fn build_survives_a_garbage_setting() {
    let bad = Setting { capacity: f64::NAN, executors: 0, period: -1.0 };
    assert_eq!(bad.sanitized(), Setting::default());
    for name in NAMES {
        let mut p = build(name, Actuator::Executors, &bad).unwrap();
        let a = p.decide(&Observation::new(0.0, 1.0, 200.0));
        assert!((0.0..=1.0).contains(&a.admit));
    }
}

#[test]
fn every_adapted_config_is_valid() {
    for s in [
        Setting::default(),
        Setting { capacity: 1.0, executors: 1, period: 1e-3 },
        Setting { capacity: 1e6, executors: 512, period: 10.0 },
    ] {
        for &k in ControllerKind::ALL {
            for act in [Actuator::InFlight, Actuator::Executors] {
                k.adapted(act, &s).unwrap_or_else(|e| panic!("{k}/{}: {e}", act.name()));
            }
        }
        assert!(RetryBudget::new(RetryBudgetConfig::for_setting(&s), crate::Open).is_ok());
    }
}

#[test]
fn kinds_parse_print_and_list_in_table_order() {
    assert_eq!(ControllerKind::ALL.len(), NAMES.len());
    for (&k, name) in ControllerKind::ALL.iter().zip(NAMES) {
        assert_eq!(k.name(), *name);
        assert_eq!(name.parse::<ControllerKind>(), Ok(k));
        assert_eq!(ControllerKind::try_from(*name), Ok(k));
        assert_eq!(k.to_string(), *name);
        assert_eq!(k.build(Actuator::Executors, &Setting::default()).name(), *name);
    }
    // The controllers of the original table keep their order and kinds (a new row may
    // come anywhere).
    let limits: Vec<&str> = ControllerKind::ALL.iter().filter(|k| k.holds_limit()).map(|k| k.name()).collect();
    assert!(in_order(&["gradient2", "vegas", "aimd", "envoy-gradient", "static"], &limits), "{limits:?}");
    let others: Vec<&str> = ControllerKind::ALL.iter().filter(|k| !k.holds_limit()).map(|k| k.name()).collect();
    assert!(in_order(&["credits", "priority-levels", "sre-throttle"], &others), "{others:?}");
    assert!("Vegas".parse::<ControllerKind>().unwrap_err().to_string().contains("sre-throttle"));
}

#[test]
fn a_limit_controller_on_executors_caps_concurrency_and_the_others_do_not() {
    let obs = Observation::new(0.0, 1.0, 200.0);
    for &k in ControllerKind::ALL {
        let a = k.build(Actuator::Executors, &Setting::default()).decide(&obs);
        assert_eq!(a.concurrency.is_some(), k.holds_limit(), "{k}");
    }
}

/// Whether `want` appears in `have` in its order (other items may come between).
fn in_order<S: AsRef<str>>(want: &[&str], have: &[S]) -> bool {
    let mut have = have.iter();
    want.iter().all(|w| have.any(|h| h.as_ref() == *w))
}

#[test]
fn specs_round_trip_and_keep_the_old_grammar() {
    let names: Vec<String> = PolicySpec::all().iter().map(PolicySpec::to_string).collect();
    // Everything the simulator listed before the registry, in the same order.
    assert!(in_order(
        &[
            "open",
            "seed-gate",
            "cycle",
            "cycle+pool",
            "gradient2",
            "gradient2+pool",
            "vegas",
            "vegas+pool",
            "aimd",
            "aimd+pool",
            "envoy-gradient",
            "envoy-gradient+pool",
            "static",
            "static+pool",
            "credits",
            "priority-levels",
            "sre-throttle",
        ],
        &names
    ));
    assert_eq!(&names[..4], ["open", "seed-gate", "cycle", "cycle+pool"]);
    for spec in PolicySpec::all() {
        for s in [spec, spec.with_retry_budget()] {
            assert_eq!(s.to_string().parse::<PolicySpec>(), Ok(s));
            s.build(&Setting::default(), 4).unwrap();
        }
    }
    for ok in ["cycle+pool+retry-budget", "open+retry-budget", "static+pool+retry-budget"] {
        assert_eq!(ok.parse::<PolicySpec>().unwrap().to_string(), ok);
    }
    let err = |s: &str| s.parse::<PolicySpec>().unwrap_err();
    for bad in
        ["credits+pool", "open+pool", "seed-gate+pool", "nope+pool", "gradient2+pool+pool", "vegas+retry-budget+pool"]
    {
        assert!(matches!(err(bad), PolicySpecError::PoolNotApplicable { .. }), "{bad}");
        assert!(err(bad).to_string().contains("+pool applies to cycle, gradient2"), "{bad}");
    }
    for bad in ["nope", "", "+retry-budget", "vegas+retry-budget+retry-budget", " vegas", "Vegas"] {
        assert!(matches!(err(bad), PolicySpecError::Unknown { .. }), "{bad}");
        assert!(err(bad).to_string().starts_with("unknown policy"), "{bad}");
    }
}

#[test]
fn no_controller_is_named_like_a_fixed_base() {
    for name in ["open", "seed-gate", "cycle"] {
        assert!(name.parse::<ControllerKind>().is_err(), "{name}");
    }
}

#[test]
fn cycle_pool_caps_at_the_comfortable_concurrency() {
    let spec: PolicySpec = "cycle+pool".parse().unwrap();
    let mut p = spec.build(&Setting::default(), 4).unwrap();
    assert_eq!(p.decide(&Observation::new(0.0, 50.0, 200.0)).concurrency, Some(4));
    let mut p = "cycle".parse::<PolicySpec>().unwrap().build(&Setting::default(), 4).unwrap();
    assert_eq!(p.decide(&Observation::new(0.0, 50.0, 200.0)).concurrency, None);
}
