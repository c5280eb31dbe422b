use safegate_core::boundary::Boundary;
use safegate_core::safety::SafetyFilter;
use safegate_core::Open;
use safegate_sim::*;
use std::time::Instant;
fn main() {
    let cfg = Config { duration: 600.0, ..Config::default() };
    let sc = Boundary::default().safety_config(200.0).unwrap();
    let n = 200;
    let t = Instant::now();
    let mut s = 0.0;
    if std::env::var("SKIP_OPEN").is_err() { for seed in 0..n { s += run_stepped(&Config { seed, ..cfg.clone() }, &mut Open, RunOptions::default()).summary.queue_max; } }
    let a = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for seed in 0..n { let mut f = SafetyFilter::new(sc.clone(), Open).unwrap(); s += run_stepped(&Config { seed, ..cfg.clone() }, &mut f, RunOptions::default()).summary.queue_max; }
    let b = t.elapsed().as_secs_f64();
    let steps = n as f64 * 12000.0;
    println!("open: {:.1} M steps/s; filtered: {:.1} M steps/s ({s})", steps / a / 1e6, steps / b / 1e6);
}
