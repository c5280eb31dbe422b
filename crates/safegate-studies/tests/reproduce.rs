//! The seed's worked results: every row passes on the seed's model, and changing a model
//! constant breaks the rows that depend on it (so the checks can fail) and only those.

use std::collections::BTreeMap;

use safegate_studies::experiments::{row_belongs, Setup, Verdict, ALL};

fn verdicts(setup: &Setup) -> BTreeMap<String, Verdict> {
    let mut out = BTreeMap::new();
    for e in ALL {
        for row in (e.run)(setup).rows {
            assert!(out.insert(row.id.clone(), row.verdict).is_none(), "duplicate row id {}", row.id);
            // `reproduce --only ROW` finds the experiment of a row by its prefix.
            let owners: Vec<&str> = ALL.iter().filter(|o| row_belongs(&row.id, o.id)).map(|o| o.id).collect();
            assert_eq!(owners, [e.id], "row {}", row.id);
        }
    }
    out
}

#[test]
fn every_row_passes_on_the_seeds_model() {
    let v = verdicts(&Setup::default());
    let failed: Vec<&String> = v.iter().filter(|(_, v)| **v == Verdict::Fail).map(|(k, _)| k).collect();
    assert!(failed.is_empty(), "failed: {failed:?}");
    assert!(v.len() >= 40, "{} rows", v.len());
    // The informational rows are the ones that cannot be matched by construction.
    let info: Vec<&String> = v.iter().filter(|(_, v)| **v == Verdict::Info).map(|(k, _)| k).collect();
    assert!(
        info.iter().all(|k| k.starts_with("severity-worst")
            || ["severity-gap", "imm-heavy-tail-ratio", "starvation-split"].contains(&k.as_str())),
        "{info:?}"
    );
}

#[test]
fn a_slower_executor_breaks_the_model_rows_and_only_those() {
    // s = 36 instead of 37.5: the ceiling becomes 72 req/s.
    let mut setup = Setup { severity_trials: 200_000, worst_runs: 1000, imm_trials: 30_000, ..Setup::default() };
    setup.base.pool.rate = 36.0;
    let v = verdicts(&setup);
    for id in [
        "ceiling",
        "recovery-55",
        "recovery-74.5",
        "recovery-sweep",
        "poa-76",
        "poa-120",
        "band-80-floor",
        "band-80-top",
        "band-80-floor-analytic",
    ] {
        assert_eq!(v[id], Verdict::Fail, "{id} should notice the slower executor");
    }
    for id in [
        "frontier-epsilon",
        "frontier-severity",
        "stag-hunt-nash",
        "stag-hunt-regret",
        "fleet-threshold",
        "probebw-drain-table",
        "probebw-cycles",
        "imm-false-alarm-t1.5",
        "severity-mean-median-1.1",
    ] {
        assert_eq!(v[id], Verdict::Pass, "{id} does not depend on the pool");
    }
}

#[test]
fn a_shallower_dip_breaks_the_health_rows() {
    let mut setup = Setup { severity_trials: 1000, worst_runs: 10, imm_trials: 1000, ..Setup::default() };
    if let safegate_sim::HealthSchedule::Cycle(shape) = &mut setup.base.health.schedule {
        shape.low = 0.3;
    }
    let v = verdicts(&setup);
    for id in ["recovery-55", "band-80-top", "poa-76"] {
        assert_eq!(v[id], Verdict::Fail, "{id} should notice the dip");
    }
    // The ceiling does not depend on health; nor does the 386.1 s at λ = 74.5, which is set
    // by the cap: any dip fills the queue to 200, and it drains from there at 75 − 74.5.
    assert_eq!(v["ceiling"], Verdict::Pass);
    assert_eq!(v["recovery-74.5"], Verdict::Pass);
}
