//! Simulator throughput: fluid steps per second and stochastic events per second, one core.
//!
//! `cargo bench -p safegate-sim --bench sim`. Figures go in BENCHMARKS.md.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use safegate_core::boundary::{Boundary, MagnitudeSection};
use safegate_core::safety::SafetyFilter;
use safegate_core::{Open, SeedGate};
use safegate_sim::{run_fluid, run_stepped, run_stochastic, Config, RunOptions};

fn fluid(c: &mut Criterion) {
    // The seed's band scenario (λ = 80, health cycle, gate on), 100,000 s = 2,000,000 steps.
    let cfg = Config { duration: 100_000.0, ..Config::default() };
    let mut g = c.benchmark_group("fluid");
    g.throughput(Throughput::Elements(cfg.steps()));
    g.sample_size(20);
    g.bench_function("band-80 gate on, steps", |b| {
        b.iter(|| {
            run_fluid(black_box(&cfg), &mut SeedGate::new(0.7, 1.0).unwrap(), RunOptions::default())
                .unwrap()
                .summary
                .backlog_time
        })
    });
    g.bench_function("band-80 gate off, steps", |b| {
        b.iter(|| run_fluid(black_box(&cfg), &mut Open, RunOptions::default()).unwrap().summary.backlog_time)
    });
    g.finish();
}

fn stochastic(c: &mut Criterion) {
    // Same scenario, stochastic, 20,000 s: about 3.1 million arrivals and completions.
    let cfg = Config { duration: 20_000.0, ..Config::default() };
    let events =
        run_stochastic(&cfg, &mut SeedGate::new(0.7, 1.0).unwrap(), RunOptions::default()).unwrap().summary.events;
    let mut g = c.benchmark_group("stochastic");
    g.throughput(Throughput::Elements(events));
    g.sample_size(10);
    g.bench_function("band-80 gate on, events", |b| {
        b.iter(|| {
            run_stochastic(black_box(&cfg), &mut SeedGate::new(0.7, 1.0).unwrap(), RunOptions::default())
                .unwrap()
                .summary
                .events
        })
    });
    g.finish();
}

fn stepped(c: &mut Criterion) {
    // One 600 s trajectory at dt 0.05 (12,000 steps) of the band scenario, as `verify` runs
    // it: open, and under the seed-80 boundary's filter.
    let cfg = Config { duration: 600.0, ..Config::default() };
    let boundary = Boundary {
        magnitude: Some(MagnitudeSection { rho: 0.05, ..MagnitudeSection::default() }),
        ..Boundary::default()
    };
    let safety = boundary.safety_config(200.0).unwrap();
    let mut g = c.benchmark_group("stepped");
    g.throughput(Throughput::Elements(cfg.steps()));
    g.sample_size(30);
    let mut seed = 0;
    g.bench_function("band-80 open, trajectory-steps", |b| {
        b.iter(|| {
            seed += 1;
            run_stepped(&Config { seed, ..cfg.clone() }, &mut Open, RunOptions::default()).unwrap().summary.queue_max
        })
    });
    g.bench_function("band-80 filtered (seed-80), trajectory-steps", |b| {
        b.iter(|| {
            seed += 1;
            let mut f = SafetyFilter::new(safety.clone(), Open).unwrap();
            run_stepped(&Config { seed, ..cfg.clone() }, &mut f, RunOptions::default()).unwrap().summary.queue_max
        })
    });
    g.finish();
}

criterion_group!(benches, fluid, stochastic, stepped);
criterion_main!(benches);
