//! Acceptance of `safegate compare`: the concurrency actuator drains where
//! admission cannot, and the filter holds ε for every policy inside the envelope.

use safegate_core::boundary::Boundary;
use safegate_studies::compare::{compare, default_cases, CompareConfig, CompareReport};

fn seed80() -> Boundary {
    Boundary::from_toml(include_str!("../../../boundaries/seed-80.toml"), &[]).unwrap()
}

/// A boundary out of range is an error before any run, not a panic in a worker (it used
/// to panic with "boundary validated up front").
#[test]
fn a_bad_boundary_is_an_error_not_a_panic() {
    let mut boundary = seed80();
    boundary.probability.epsilon = 2.0;
    let cc = CompareConfig {
        cases: default_cases(20.0).into_iter().take(1).collect(),
        policies: vec!["open".parse().unwrap()],
        seeds: 1,
        exit_trials: 0,
        boundary,
        curve_traffic: vec![],
        traces: false,
    };
    let e = compare(&cc, &|_| {}).unwrap_err().to_string();
    assert!(e.contains("probability.epsilon = 2 is out of range"), "{e}");
    // A case the simulator cannot run is named.
    let mut cc = CompareConfig { boundary: seed80(), ..cc };
    cc.cases[0].config.dt = 0.0;
    let e = compare(&cc, &|_| {}).unwrap_err().to_string();
    assert!(e.contains("run.dt") && e.contains(&cc.cases[0].name), "{e}");
}

/// compare and verify give one verdict for one interval (`stats::Verdict`).
#[test]
fn compare_verdicts_are_the_shared_verdict() {
    let r = run("cycle-80", &["open"], 2, 0);
    for c in &r.cases {
        for a in &c.arms {
            let expected =
                if c.inside_envelope { a.exit_probability.verdict(r.epsilon).label() } else { "outside envelope" };
            assert_eq!(a.verdict, expected, "{} {}", c.name, a.policy);
        }
    }
}

fn run(case: &str, policies: &[&str], seeds: u32, exit_trials: u32) -> CompareReport {
    let cases = default_cases(600.0).into_iter().filter(|c| c.name == case).collect();
    let cc = CompareConfig {
        cases,
        policies: policies.iter().map(|s| s.parse().unwrap()).collect(),
        seeds,
        exit_trials,
        boundary: seed80(),
        curve_traffic: Vec::new(),
        traces: false,
    };
    compare(&cc, &|_| {}).unwrap()
}

/// λ = 80 on the health cycle: admission alone stays pinned above θ·cap; capping the
/// executors at C brings the queue back below θ·cap in every cycle, at ≥ 0.9 of the
/// physical limit (the ideal pool's goodput).
#[test]
fn the_concurrency_actuator_drains_every_cycle_where_admission_cannot() {
    let r = run("cycle-80", &["open", "seed-gate", "cycle+pool"], 2, 0);
    let c = &r.cases[0];
    assert!((c.physical_limit - 75.3).abs() < 1.0, "{}", c.physical_limit);
    let arm = |p: &str, f: bool| c.arms.iter().find(|a| a.policy == p && a.filtered == f).unwrap();
    for f in [false, true] {
        let pool = arm("cycle+pool", f);
        assert_eq!(pool.recovery.below_boundary, pool.recovery.dips, "filter {f}: {:?}", pool.recovery);
        assert!(pool.recovery.dips >= 60);
        assert!(pool.goodput_ratio >= 0.9, "filter {f}: {}", pool.goodput_ratio);
    }
    let open = arm("open", false);
    assert!(open.beyond_boundary > 0.9, "{}", open.beyond_boundary);
    assert!(open.recovery.below_boundary * 10 < open.recovery.dips, "{:?}", open.recovery);
    assert!(open.goodput_ratio < 0.75);
    // The seed's gate admits less but clears no more: the pool's ceiling, not admission.
    assert!(arm("seed-gate", false).goodput_ratio < 0.75);
}

/// Under the filter, each policy's exit frequency over the 600-s horizon has a 99 % upper
/// limit ≤ ε = 0.01 (528 trials with no exit suffice); without it, the open pool and
/// AIMD violate ε.
#[test]
fn the_filter_holds_epsilon_under_every_policy() {
    let r = run("cycle-80", &["open", "aimd", "gradient2+pool", "cycle"], 1, 530);
    let c = &r.cases[0];
    assert!(c.inside_envelope);
    for a in &c.arms {
        if a.filtered {
            assert!(a.exit_probability.trials >= 530);
            assert!(a.exit_probability.ci_high <= 0.01, "{}: {:?}", a.policy, a.exit_probability);
            assert_eq!(a.verdict, "holds ε", "{}", a.policy);
            assert!(a.cvar.estimate <= a.cvar.rho.unwrap());
        } else if a.policy == "open" || a.policy == "aimd" {
            assert_eq!(a.verdict, "violates ε", "{}: {:?}", a.policy, a.exit_probability);
        }
    }
}
