//! The filter on the seed's model: at λ = 80 with health dips, the boundary θ = 0.7,
//! ε = 0.01 over 600 s holds (99 % upper limit of the exit frequency ≤ ε, CVaR ≤ ρ) while the
//! unfiltered pool leaves the safe set in nearly every trajectory.

use safegate_core::boundary::{Boundary, MagnitudeSection};
use safegate_sim::Config;
use safegate_studies::verify::{verify, Nominal, VerifyConfig};

fn seed_boundary() -> Boundary {
    Boundary {
        magnitude: Some(MagnitudeSection { eta: 0.05, rho: 0.05, ..MagnitudeSection::default() }),
        ..Boundary::default()
    }
}

#[test]
fn the_seed_boundary_holds_at_lambda_80_and_the_open_pool_does_not() {
    // 700 trajectories: with no exit the 99 % Clopper–Pearson upper limit is 0.0075 ≤ 0.01.
    let vc = VerifyConfig {
        base: Config::default(),
        boundary: seed_boundary(),
        nominal: Nominal::Open,
        trials: 700,
        traffic_points: 1,
        health_points: 1,
        seed: 3,
    };
    let r = verify(&vc, &|_| {}).unwrap();
    let f = &r.scenario.filtered;
    assert_eq!((r.scenario.traffic, r.scenario.health_low), (80.0, 0.1));
    assert!(f.exit_probability.ci_high <= 0.01, "filtered: {:?}", f.exit_probability);
    assert!(f.cvar.estimate <= 0.05, "CVaR {}", f.cvar.estimate);
    let u = &r.scenario.unfiltered;
    assert!(u.exit_probability.ci_low > 0.9, "unfiltered: {:?}", u.exit_probability);
    assert!(u.cvar.estimate > 0.05);
    assert!(r.pass, "{}", r.verdict);
    // The filter gives up throughput (it rejects at the door what the open pool drops), but
    // clears as much: the pool, not admission, is the bottleneck.
    assert!(f.throughput_given_up > 0.0);
    assert!((f.goodput - u.goodput).abs() < 0.05 * u.goodput, "{} vs {}", f.goodput, u.goodput);
    assert!(f.feasible_fraction > 0.8 && f.backup_fraction > 0.0);
}

#[test]
fn under_the_seed_gate_too() {
    let vc = VerifyConfig {
        base: Config::default(),
        boundary: seed_boundary(),
        nominal: Nominal::SeedGate { threshold: 0.7, sensitivity: 1.0 },
        trials: 200,
        traffic_points: 1,
        health_points: 1,
        seed: 4,
    };
    let r = verify(&vc, &|_| {}).unwrap();
    assert_eq!(r.scenario.filtered.exit_probability.exits, 0);
    // The seed's gate alone only starts rejecting at θ, so it lives above the boundary.
    assert!(r.scenario.unfiltered.exit_probability.estimate > 0.9);
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let vc = VerifyConfig {
        base: Config { traffic: 100.0, ..Config::default() },
        boundary: seed_boundary(),
        nominal: Nominal::Open,
        trials: 16,
        traffic_points: 1,
        health_points: 1,
        seed: 9,
    };
    let a = verify(&vc, &|_| {}).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let b = pool.install(|| verify(&vc, &|_| {}).unwrap());
    assert_eq!(a.scenario.filtered.mean_queue, b.scenario.filtered.mean_queue);
    assert_eq!(a.scenario.filtered.cvar.estimate, b.scenario.filtered.cvar.estimate);
}

#[test]
fn corollary_3_adding_the_cvar_bound_never_gives_up_less() {
    // A tight magnitude bound (η = 0.001, ρ = 0) binds where the default one does not.
    let tight = Boundary {
        magnitude: Some(MagnitudeSection { eta: 0.001, rho: 0.0, ..MagnitudeSection::default() }),
        ..Boundary::default()
    };
    let vc = VerifyConfig {
        base: Config::default(),
        boundary: tight,
        nominal: Nominal::Open,
        trials: 60,
        traffic_points: 1,
        health_points: 1,
        seed: 5,
    };
    let r = verify(&vc, &|_| {}).unwrap();
    let c = r.cost_floor.expect("the boundary has a CVaR bound");
    assert!(c.holds && c.joint > c.probability_only, "{c:?}");
    // It holds the queue much lower than the probability constraint alone (≈ 117).
    assert!(r.scenario.filtered.mean_queue < 80.0, "{}", r.scenario.filtered.mean_queue);
    // With the default ρ the CVaR constraint never binds here (F16's condition, "costs nothing", is met at this ρ).
    let vc = VerifyConfig { boundary: seed_boundary(), trials: 30, ..vc };
    let c = verify(&vc, &|_| {}).unwrap().cost_floor.unwrap();
    assert!(c.holds && (c.joint - c.probability_only).abs() < 1e-9, "{c:?}");
}
