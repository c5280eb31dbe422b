//! The closed-form filter against a general QP solver (Clarabel) on thousands of random
//! instances: `min (u − u_nom)²  s.t.  u ≤ U_i(x) for every constraint, 0 ≤ u ≤ u_max`.

use clarabel::algebra::CscMatrix;
use clarabel::solver::{DefaultSettingsBuilder, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus};
use safegate_core::filter::{Barrier, Constraint, Filter, FilterState};

/// SplitMix64: a tiny seeded generator for the instances.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
}

fn random_constraint(r: &mut Rng) -> Constraint {
    match (r.next() * 8.0) as u32 {
        0 => Constraint::Expectation { decay: r.range(0.0, 0.99) },
        1 => Constraint::Chance { kappa: r.range(0.0, 6.0), decay: r.range(0.0, 0.9) },
        2 => Constraint::PoissonChance { kappa: r.range(0.0, 6.0), decay: r.range(0.0, 0.9) },
        3 => Constraint::Bernstein { log_inv_eps: r.range(1.0, 20.0), decay: r.range(0.0, 0.9) },
        4 => Constraint::Cvar { kappa_eta: r.range(0.0, 10.0), rho_requests: r.range(0.0, 40.0) },
        5 => Constraint::RateOfClosure { gamma0: r.range(0.01, 1.0) },
        6 => Constraint::SlewRateOfClosure { gamma0: r.range(0.01, 0.5), gamma1: r.range(0.01, 0.5) },
        _ => Constraint::BackupSet { depth: r.range(0.0, 160.0) },
    }
}

/// Solve the projection as a QP; `None` if the solver finds it infeasible. Returns the
/// interior-point solution and its active-set polish: an interior-point method stops strictly
/// inside the feasible set (here within ~1e-9 relative of the optimum), so, as OSQP's polish
/// does, the constraint the solver reports active (largest dual with near-zero slack) is
/// taken as equality and the KKT system re-solved; the polish is accepted only if it is
/// primal feasible and dual feasible.
fn qp(u_nom: f64, uppers: &[f64], u_max: f64) -> Option<(f64, f64)> {
    // Scale so the solver works on numbers near 1: u = scale·v.
    let scale = u_max.max(1.0);
    let p = CscMatrix::new(1, 1, vec![0, 1], vec![0], vec![2.0]);
    let q = vec![-2.0 * u_nom / scale];
    let mut b: Vec<f64> = uppers.iter().map(|u| u / scale).collect();
    b.push(u_max / scale);
    b.push(0.0);
    let m = b.len();
    let mut vals = vec![1.0; m];
    vals[m - 1] = -1.0;
    let a = CscMatrix::new(m, 1, vec![0, m], (0..m).collect(), vals);
    let settings = DefaultSettingsBuilder::default()
        .verbose(false)
        .max_iter(400)
        // The default step fraction (0.99) cycles without converging on some of these
        // one-variable problems with many parallel inactive bounds; 0.8 converges.
        .max_step_fraction(0.8)
        .build()
        .unwrap();
    let mut solver = DefaultSolver::new(&p, &q, &a, &b, &[NonnegativeConeT(m)], settings).unwrap();
    solver.solve();
    match solver.solution.status {
        SolverStatus::Solved => {
            let raw = solver.solution.x[0] * scale;
            let (z, slack) = (&solver.solution.z, &solver.solution.s);
            let active = (0..m).filter(|&i| slack[i] < 1e-4 && z[i] > 1e-9).max_by(|&i, &j| z[i].total_cmp(&z[j]));
            let polished = match active {
                // Row m − 1 is −u ≤ 0.
                Some(i) => {
                    if i == m - 1 {
                        0.0
                    } else {
                        b[i] * scale
                    }
                }
                None => u_nom,
            };
            let primal_ok =
                uppers.iter().chain([&u_max]).all(|ub| polished <= ub + 1e-12 * scale) && polished >= -1e-12;
            let grad = 2.0 * (polished - u_nom); // dual of an upper bound must be −grad ≥ 0
            let dual_ok = match active {
                Some(i) if i == m - 1 => grad >= -1e-9 * scale,
                Some(_) => grad <= 1e-9 * scale,
                None => true,
            };
            Some((raw, if primal_ok && dual_ok { polished } else { raw }))
        }
        SolverStatus::PrimalInfeasible | SolverStatus::AlmostPrimalInfeasible => None,
        other => panic!("solver status {other:?} on nominal {u_nom}, u_max {u_max}, bounds {uppers:?}"),
    }
}

#[test]
fn closed_form_agrees_with_clarabel_on_thousands_of_instances() {
    let mut r = Rng(2026);
    let barrier = Barrier::new(0.7, 200.0).unwrap();
    let (mut feasible, mut infeasible, mut worst, mut worst_raw) = (0, 0, 0.0f64, 0.0f64);
    for i in 0..4000 {
        let n = 1 + (r.next() * 5.0) as usize;
        let cs: Vec<Constraint> = (0..n).map(|_| random_constraint(&mut r)).collect();
        let x = FilterState {
            queue: r.range(0.0, 150.0),
            dt: r.range(0.01, 0.5),
            drift: r.range(-150.0, 20.0),
            sigma: r.range(0.0, 5.0),
            var0: r.range(0.0, 25.0),
            prev_admit: r.range(0.0, 150.0),
            prev_drift: r.range(-150.0, 0.0),
        };
        let u_max = r.range(1.0, 300.0);
        let u_nom = r.range(-20.0, 350.0);
        let filter = Filter::new(barrier, &cs).unwrap();
        let d = filter.decide(&x, u_nom, u_max);
        let uppers: Vec<f64> = cs.iter().map(|c| c.upper(&x, barrier.boundary())).collect();
        // Infinite bounds (a constraint that can never be met) are infeasible by definition;
        // hand the solver a finite stand-in.
        let finite: Vec<f64> = uppers.iter().map(|u| if u.is_finite() { *u } else { -u_max }).collect();
        match qp(u_nom, &finite, u_max) {
            Some((raw, u)) => {
                assert!(
                    d.feasible,
                    "instance {i}: the solver found {u}, the filter found it infeasible ({:?})",
                    d.upper
                );
                let err = (u - d.admit_rate).abs() / u_max.max(1.0);
                worst = worst.max(err);
                worst_raw = worst_raw.max((raw - d.admit_rate).abs() / u_max.max(1.0));
                assert!(
                    (raw - d.admit_rate).abs() / u_max.max(1.0) < 1e-5,
                    "instance {i}: raw interior-point solution {raw} far from {}",
                    d.admit_rate
                );
                assert!(err <= 1e-9, "instance {i}: qp {u} vs closed form {} (rel {err:e}); nominal {u_nom}, u_max {u_max}, bounds {finite:?}", d.admit_rate);
                feasible += 1;
            }
            None => {
                assert!(!d.feasible, "instance {i}: the solver says infeasible, the filter admitted {}", d.admit_rate);
                infeasible += 1;
            }
        }
    }
    assert!(feasible > 1000 && infeasible > 100, "{feasible} feasible, {infeasible} infeasible");
    eprintln!("{feasible} feasible and {infeasible} infeasible instances; worst relative gap {worst:e} (raw interior point {worst_raw:e})");
}
