//! Simulator throughput: fluid steps per second and stochastic events per second, one core.
//!
//! `cargo bench -p safegate-sim --bench sim`. Figures go in BENCHMARKS.md.
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use safegate_core::{Open, SeedGate};
use safegate_sim::{run_fluid, run_stochastic, Config, RunOptions};

fn fluid(c: &mut Criterion) {
    // The seed's band scenario (λ = 80, health cycle, gate on), 100,000 s = 2,000,000 steps.
    let cfg = Config { duration: 100_000.0, ..Config::default() };
    let mut g = c.benchmark_group("fluid");
    g.throughput(Throughput::Elements(cfg.steps()));
    g.sample_size(20);
    g.bench_function("band-80 gate on, steps", |b| {
        b.iter(|| {
            run_fluid(black_box(&cfg), &mut SeedGate::new(0.7, 1.0).unwrap(), RunOptions::default())
                .summary
                .backlog_time
        })
    });
    g.bench_function("band-80 gate off, steps", |b| {
        b.iter(|| run_fluid(black_box(&cfg), &mut Open, RunOptions::default()).summary.backlog_time)
    });
    g.finish();
}

fn stochastic(c: &mut Criterion) {
    // Same scenario, stochastic, 20,000 s: about 3.1 million arrivals and completions.
    let cfg = Config { duration: 20_000.0, ..Config::default() };
    let events = run_stochastic(&cfg, &mut SeedGate::new(0.7, 1.0).unwrap(), RunOptions::default()).summary.events;
    let mut g = c.benchmark_group("stochastic");
    g.throughput(Throughput::Elements(events));
    g.sample_size(10);
    g.bench_function("band-80 gate on, events", |b| {
        b.iter(|| {
            run_stochastic(black_box(&cfg), &mut SeedGate::new(0.7, 1.0).unwrap(), RunOptions::default()).summary.events
        })
    });
    g.finish();
}

criterion_group!(benches, fluid, stochastic);
criterion_main!(benches);
