//! Tests of the compiled filter against the closed forms.

use super::*;
use proptest::prelude::*;

/// The constraint variants are public; one built by hand with a parameter out of range
/// is refused (a κ of −50 would loosen every bound).
#[test]
fn a_hand_built_constraint_out_of_range_is_refused() {
    let b = Barrier::new(0.7, 200.0).unwrap();
    let bad = [
        (Constraint::Chance { kappa: -50.0, decay: 0.0 }, "constraints[1].kappa"),
        (Constraint::PoissonChance { kappa: 1.0, decay: 1.0 }, "constraints[1].decay"),
        (Constraint::Bernstein { log_inv_eps: f64::NAN, decay: 0.0 }, "constraints[1].log_inv_eps"),
        (Constraint::Cvar { kappa_eta: -1.0, rho_requests: 1.0 }, "constraints[1].kappa_eta"),
        (Constraint::RateOfClosure { gamma0: 0.0 }, "constraints[1].gamma0"),
        (Constraint::SlewRateOfClosure { gamma0: 0.5, gamma1: 2.0 }, "constraints[1].gamma1"),
        (Constraint::BackupSet { depth: f64::INFINITY }, "constraints[1].depth"),
    ];
    for (c, field) in bad {
        let ok = Constraint::bernstein(1e-6, 0.0).unwrap();
        match Filter::new(b, &[ok, c]) {
            Err(FilterError::Invalid(e)) => assert_eq!(e.field, field, "{c:?}"),
            other => panic!("{c:?} accepted: {other:?}"),
        }
    }
    // Every constructor's output passes.
    for c in [
        Constraint::expectation(5.0, 0.05).unwrap(),
        Constraint::gaussian(1e-6, 0.5).unwrap(),
        Constraint::cantelli(1e-6, 0.0).unwrap(),
        Constraint::poisson(1e-6, 0.0).unwrap(),
        Constraint::bernstein(1e-6, 0.0).unwrap(),
        Constraint::cvar_worst_case(0.05, 0.1, 200.0).unwrap(),
        Constraint::cvar_gaussian(0.05, 0.1, 200.0).unwrap(),
        Constraint::rate_of_closure(0.2).unwrap(),
        Constraint::slew_rate_of_closure(0.2, 0.5).unwrap(),
        Constraint::BackupSet { depth: f64::NAN },
    ] {
        assert!(c.check().is_ok(), "{c:?}");
    }
}

fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => -500.0f64..500.0,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => proptest::num::f64::ANY,
    ]
}

fn state() -> impl Strategy<Value = FilterState> {
    (any_f64(), prop_oneof![0.001f64..1.0, any_f64()], any_f64(), any_f64(), any_f64(), any_f64(), any_f64()).prop_map(
        |(queue, dt, drift, sigma, var0, prev_admit, prev_drift)| FilterState {
            queue,
            dt,
            drift,
            sigma,
            var0,
            prev_admit,
            prev_drift,
        },
    )
}

fn finite_state() -> impl Strategy<Value = FilterState> {
    (0.0f64..140.0, 0.01f64..0.5, -150.0f64..20.0, 0.0f64..5.0, 0.0f64..5.0, 0.0f64..100.0, -100.0f64..0.0).prop_map(
        |(queue, dt, drift, sigma, var0, prev_admit, prev_drift)| FilterState {
            queue,
            dt,
            drift,
            sigma,
            var0,
            prev_admit,
            prev_drift,
        },
    )
}

fn constraint() -> impl Strategy<Value = Constraint> {
    prop_oneof![
        (0.0f64..1.0).prop_map(|decay| Constraint::Expectation { decay }),
        (0.0f64..30.0, 0.0f64..0.99).prop_map(|(kappa, decay)| Constraint::Chance { kappa, decay }),
        (0.0f64..10.0, 0.0f64..0.99).prop_map(|(kappa, decay)| Constraint::PoissonChance { kappa, decay }),
        (0.1f64..40.0, 0.0f64..0.99).prop_map(|(log_inv_eps, decay)| Constraint::Bernstein { log_inv_eps, decay }),
        (0.0f64..20.0, 0.0f64..100.0)
            .prop_map(|(kappa_eta, rho_requests)| Constraint::Cvar { kappa_eta, rho_requests }),
        (0.01f64..1.0).prop_map(|gamma0| Constraint::RateOfClosure { gamma0 }),
        (0.01f64..1.0, 0.01f64..1.0).prop_map(|(gamma0, gamma1)| Constraint::SlewRateOfClosure { gamma0, gamma1 }),
        (-50.0f64..250.0).prop_map(|depth| Constraint::BackupSet { depth }),
    ]
}

fn filter(cs: &[Constraint]) -> Filter {
    Filter::new(Barrier::new(0.7, 200.0).unwrap(), cs).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn action_is_finite_and_in_range(x in state(), cs in proptest::collection::vec(constraint(), 0..6), nom in any_f64(), umax in prop_oneof![0.0f64..500.0, any_f64()]) {
        let d = filter(&cs).decide(&x, nom, umax);
        let cap = if umax.is_finite() && umax > 0.0 { umax } else { 0.0 };
        prop_assert!(d.admit_rate.is_finite());
        prop_assert!(d.admit_rate >= 0.0 && d.admit_rate <= cap);
        prop_assert!(d.given_up.is_finite() && d.given_up >= 0.0);
    }

    #[test]
    fn a_safe_nominal_passes_unchanged(x in finite_state(), cs in proptest::collection::vec(constraint(), 0..6), frac in 0.0f64..=1.0, umax in 0.0f64..500.0) {
        let f = filter(&cs);
        let (upper, _) = f.upper(&x);
        prop_assume!(upper >= 0.0);
        let nom = frac * upper.min(umax);
        let d = f.decide(&x, nom, umax);
        prop_assert_eq!(d.admit_rate, nom);
        prop_assert_eq!(d.bound_by, None);
        prop_assert_eq!(d.given_up, 0.0);
    }

    #[test]
    fn adding_a_constraint_never_raises_the_action(x in state(), cs in proptest::collection::vec(constraint(), 0..5), extra in constraint(), nom in any_f64(), umax in 0.0f64..500.0) {
        let f = filter(&cs);
        let g = f.with(extra).unwrap();
        let (a, b) = (f.decide(&x, nom, umax), g.decide(&x, nom, umax));
        prop_assert!(b.admit_rate <= a.admit_rate);
        prop_assert!(b.given_up >= a.given_up);
    }

    /// The compiled rows agree with each constraint's own closed form (the reference the
    /// QP cross-check also uses) on every finite state, bound and binding kind alike.
    #[test]
    fn compiled_rows_agree_with_the_closed_forms(x in finite_state(), cs in proptest::collection::vec(constraint(), 1..8), depth in 0.0f64..200.0) {
        let mut f = filter(&cs);
        f.set_backup_depth(depth);
        let boundary = f.barrier().boundary();
        let each: Vec<f64> = f.constraints().map(|c| c.upper(&x, boundary).max(f64::NEG_INFINITY)).collect();
        let want = each.iter().copied().fold(f64::INFINITY, f64::min);
        let (got, kind) = f.upper(&x);
        let tol = 1e-9 * (1.0 + want.abs());
        prop_assert!(got == want || (got - want).abs() <= tol, "compiled {got}, closed forms {want} ({each:?})");
        if want < f64::INFINITY {
            // The kind reported attains the minimum (ties: any of them).
            let kind = kind.expect("a finite bound names its constraint");
            prop_assert!(f.constraints().zip(&each).any(|(c, u)| c.kind() == kind && (*u == want || (*u - want).abs() <= tol)));
        }
    }

    #[test]
    fn the_filter_is_idempotent(x in state(), cs in proptest::collection::vec(constraint(), 0..6), nom in any_f64(), umax in 0.0f64..500.0) {
        let f = filter(&cs);
        let once = f.decide(&x, nom, umax);
        let twice = f.decide(&x, once.admit_rate, umax);
        prop_assert_eq!(once.admit_rate, twice.admit_rate);
    }
}

/// Found by review: the slew row's folded `dt·(u₋ + d̄₋)` overflowed to `+∞` and admitted
/// where the closed form refused; and an all-NaN state named a kind the filter lacks.
#[test]
fn overflow_and_nan_states_refuse_and_name_their_own_constraint() {
    let slew = filter(&[Constraint::SlewRateOfClosure { gamma0: 0.01, gamma1: 0.01 }]);
    let x = FilterState { queue: 100.0, dt: 10.0, drift: 1e308, prev_admit: 1e308, ..Default::default() };
    let d = slew.decide(&x, 50.0, 100.0);
    assert!(!d.feasible && d.admit_rate == 0.0, "{d:?}");
    let backup = filter(&[Constraint::BackupSet { depth: 100.0 }]);
    let x = FilterState { queue: f64::NEG_INFINITY, dt: 0.05, drift: f64::INFINITY, ..Default::default() };
    assert_eq!(backup.upper(&x).1, Some(ConstraintKind::BackupSet));
    let cvar = filter(&[Constraint::Cvar { kappa_eta: 0.0, rho_requests: 0.0 }]);
    let x = FilterState { queue: f64::NEG_INFINITY, dt: 0.0, ..Default::default() };
    let d = cvar.decide(&x, 50.0, 100.0);
    assert!(!d.feasible);
    assert_eq!(cvar.upper(&x).1, Some(ConstraintKind::Cvar));
}

#[test]
fn too_many_constraints_is_an_error() {
    let cs = [Constraint::Expectation { decay: 0.5 }; MAX_CONSTRAINTS + 1];
    assert!(Filter::new(Barrier::new(0.7, 200.0).unwrap(), &cs).is_err());
}
