//! One filter decision (the closed-form projection), and one SafetyFilter step (estimators
//! + nominal + filter), clock excluded: `cargo bench -p safegate-core --bench filter`.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use safegate_core::boundary::{Boundary, MagnitudeSection};
use safegate_core::filter::{Barrier, Constraint, Filter, FilterState};
use safegate_core::safety::SafetyFilter;
use safegate_core::{Observation, Open, Policy};

/// States along a slowly varying trajectory, as consecutive decisions see them: the queue
/// swings between 60 and 146 (crossing the point where the filter binds and where it is
/// infeasible) over 1024 decisions, with noisy drift and σ.
fn states() -> Vec<FilterState> {
    (0..1024)
        .map(|i| {
            let phase = i as f64 / 1024.0 * std::f64::consts::TAU;
            FilterState {
                queue: 103.0 + 43.0 * phase.sin(),
                dt: 0.05,
                drift: -75.0 + (i % 13) as f64,
                sigma: 2.5 + (i % 7) as f64 * 0.1,
                var0: 3.6 + (i % 5) as f64 * 0.4,
                prev_admit: 80.0,
                prev_drift: -75.0,
            }
        })
        .collect()
}

fn decision(c: &mut Criterion) {
    let barrier = Barrier::new(0.7, 200.0).unwrap();
    let xs = states();
    let seed80 = Filter::new(
        barrier,
        &[
            Constraint::bernstein(0.01 * 0.05 / 600.0, 0.0).unwrap(),
            Constraint::cvar_worst_case(0.05, 0.05, 200.0).unwrap(),
            Constraint::BackupSet { depth: 140.0 },
        ],
    )
    .unwrap();
    let mut i = 0usize;
    // The harness's own cost: pick a state, read one field through black_box.
    c.bench_function("baseline (harness: pick a state, read it)", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            black_box(black_box(&xs[i]).queue * 0.5)
        })
    });
    c.bench_function("filter decision (seed-80: bernstein + cvar + backup set)", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            black_box(seed80.decide(black_box(&xs[i]), 80.0, 80.0)).admit_rate
        })
    });
    // The same decisions as a consumer makes them: back to back over 1,024 states, every field
    // of each record used (admitted rate, bound, throughput given up, binding constraint,
    // feasibility), reported per decision. The single-call figure above also pays for
    // black_box forcing the 48-byte record through memory on every call.
    let mut g = c.benchmark_group("filter decisions, batch of 1024");
    g.throughput(Throughput::Elements(xs.len() as u64));
    g.bench_function("seed-80, every field consumed", |b| {
        b.iter(|| {
            let mut sum = 0.0;
            let mut bound = 0u32;
            for x in black_box(&xs).iter() {
                let d = seed80.decide(x, 80.0, 80.0);
                sum += d.admit_rate + d.upper.min(1e9) + d.given_up;
                bound += u32::from(d.bound_by.is_some()) + u32::from(d.feasible);
            }
            black_box((sum, bound))
        })
    });
    g.finish();
    let cvar_only = Filter::new(barrier, &[Constraint::cvar_worst_case(0.05, 0.05, 200.0).unwrap()]).unwrap();
    c.bench_function("filter decision (one linear constraint)", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            black_box(cvar_only.decide(black_box(&xs[i]), 80.0, 80.0)).admit_rate
        })
    });
    let all = Filter::new(
        barrier,
        &[
            Constraint::gaussian(1e-6, 0.0).unwrap(),
            Constraint::poisson(1e-6, 0.0).unwrap(),
            Constraint::bernstein(1e-6, 0.0).unwrap(),
            Constraint::cvar_worst_case(0.05, 0.05, 200.0).unwrap(),
            Constraint::expectation(5.0, 0.05).unwrap(),
            Constraint::slew_rate_of_closure(0.2, 0.5).unwrap(),
            Constraint::BackupSet { depth: 130.0 },
        ],
    )
    .unwrap();
    c.bench_function("filter decision (all seven constraint kinds)", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            black_box(all.decide(black_box(&xs[i]), 80.0, 80.0)).admit_rate
        })
    });
    let boundary = Boundary {
        magnitude: Some(MagnitudeSection { rho: 0.05, ..MagnitudeSection::default() }),
        ..Boundary::default()
    };
    let mut f = SafetyFilter::new(boundary.safety_config(200.0).unwrap(), Open).unwrap();
    let mut k = 0u64;
    c.bench_function("SafetyFilter step (estimators + nominal + filter)", |b| {
        b.iter(|| {
            k += 1;
            let t = k as f64 * 0.05;
            let mut o = Observation::new(t, 100.0 + (k % 31) as f64, 200.0);
            o.offered_rate = 80.0;
            o.completed = 75.0 * t;
            black_box(f.decide(black_box(&o))).admit
        })
    });
}

criterion_group!(benches, decision);
criterion_main!(benches);
