//! Fleet gates in one process against a private coordination Redis: the price splits the
//! capacity, and a coordinator outage keeps the fleet within its bound under the hybrid
//! policy (the core's `GrantKeeper`: freeze until the lease expires, then bound / N̂).
//!
//! The gates talk to a real Redis, so this test runs on the wall clock: a paused tokio clock
//! would fire the refresh timeouts while Redis is still answering. Its bounds hold on a
//! loaded machine instead: rates are taken over the wall time that actually passed, and
//! the upper bounds allow what each gate's token bucket may release at once after its task
//! waited for a core (a burst of `BURST` seconds of its rate).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use safegate_core::fleet::lease::LossPolicy;
use safegate_live::coord::{Coordinator, PriceConfig};
use safegate_live::fleet_gate::{run_gate, GateConfig, GateStats, Keeper};
use safegate_live::redis_server::RedisServer;
use tokio::sync::watch;

const CAPACITY: f64 = 150.0;
const GATES: u32 = 8;
/// The gates' token-bucket burst \[s of the rate\] (`fleet_gate::BURST`).
const BURST: f64 = 0.3;

/// Most a fleet whose rates sum to `rate` may admit over `secs` of wall time: the rate over
/// the window, plus every gate's full bucket (at least one token each).
fn at_most(rate: f64, secs: f64) -> f64 {
    rate * secs + rate * BURST + f64::from(GATES)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_gates_share_the_capacity_and_stay_within_it_while_the_coordinator_is_down() {
    let mut redis = RedisServer::start(false).expect("redis-server on PATH");
    let cfg = PriceConfig { capacity: CAPACITY, gamma: 1e-3, lease_ms: 400, max_step_ms: 100 };
    let (stop_tx, stop) = watch::channel(false);
    let mut stats = Vec::new();
    let mut tasks = Vec::new();
    for i in 0..GATES {
        let coord = Coordinator::connect(&redis.url(), "fleet", cfg).await.unwrap();
        let s = Arc::new(GateStats::default());
        stats.push(s.clone());
        let gc = GateConfig {
            id: format!("g{i}"),
            demand: 2.0 * CAPACITY / 8.0,
            weight: 1.0,
            refresh: Duration::from_millis(100),
            refresh_timeout: Duration::from_millis(200),
            downstream: None,
            timeout: Duration::from_secs(1),
            seed: u64::from(i),
        };
        let p = Box::new(Keeper::new(LossPolicy::Hybrid, CAPACITY, CAPACITY, 0.4, 0.3, 8).unwrap());
        tasks.push(tokio::spawn(run_gate(coord, gc, p, s, stop.clone())));
    }
    let admitted =
        |stats: &[Arc<GateStats>]| stats.iter().map(|s| s.admitted.load(Ordering::Relaxed)).collect::<Vec<_>>();
    // Warm up 3 s, then measure 2 s with the coordinator up.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (a0, t0) = (admitted(&stats), Instant::now());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (a1, up_secs) = (admitted(&stats), t0.elapsed().as_secs_f64());
    let up: Vec<f64> = a0.iter().zip(&a1).map(|(a, b)| (b - a) as f64).collect();
    let total_up: f64 = up.iter().sum();
    let jain = safegate_studies::fleet::jain(&up);
    eprintln!("up: {up:?} admitted over {up_secs:.2} s, total {:.1} req/s, Jain {jain:.3}", total_up / up_secs);
    // The coordinator goes away for 3 s.
    redis.stop();
    let down_start = Instant::now();
    let sum = |v: &[u64]| v.iter().sum::<u64>() as f64;
    let down_from = sum(&admitted(&stats));
    // Each window: (admitted, wall seconds it lasted).
    let mut windows = Vec::new();
    let (mut prev, mut prev_t) = (down_from, Instant::now());
    while down_start.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (now, t) = (sum(&admitted(&stats)), Instant::now());
        windows.push((now - prev, (t - prev_t).as_secs_f64()));
        (prev, prev_t) = (now, t);
    }
    let (down_total, down_secs) = (prev - down_from, down_start.elapsed().as_secs_f64());
    let unpriced: u64 = stats.iter().map(|s| s.unpriced_decisions.load(Ordering::Relaxed)).sum();
    eprintln!(
        "down: {down_total} admitted over {down_secs:.2} s; windows {windows:?}; {unpriced} decisions without a fresh price"
    );
    redis.start_again().unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _ = stop_tx.send(true);
    for t in tasks {
        let _ = t.await;
    }
    // The price splits the capacity evenly among equal gates, however slow the machine.
    assert!(jain >= 0.95, "Jain {jain}");
    // Up, the grants sum to about the capacity (10 % for the price still settling).
    assert!(total_up <= at_most(1.1 * CAPACITY, up_secs), "{total_up} admitted in {up_secs} s");
    // Down, the keepers hold the fleet within its bound: the frozen grants until the lease
    // expires, then bound / N̂ each (20 % for the grants' own excess when the outage began).
    assert!(down_total <= at_most(1.2 * CAPACITY, down_secs), "{down_total} admitted in {down_secs} s while down");
    for &(n, secs) in &windows {
        assert!(n <= at_most(1.2 * CAPACITY, secs), "{n} admitted in {secs} s while the coordinator was down");
    }
    assert!(unpriced > 0);
}
