use super::*;
use crate::health::{HealthSchedule, HealthTrack};

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
    assert!((physical_limit(&cfg) - 120.0).abs() < 0.5);
    // λ = 200 > 150: it clears 150 (the peak of the service curve).
    let cfg = Config { traffic: 200.0, ..cfg };
    assert!((physical_limit(&cfg) - 150.0).abs() < 1.0, "{}", physical_limit(&cfg));
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
