//! Fleet gates in one process against a private coordination Redis: the price splits the
//! capacity, and a coordinator outage keeps the fleet within its bound under the hybrid
//! policy (the core's `GrantKeeper`: freeze until the lease expires, then bound / N̂).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use safegate_core::fleet::lease::LossPolicy;
use safegate_live::coord::{Coordinator, PriceConfig};
use safegate_live::fleet_gate::{run_gate, GateConfig, GateStats, Keeper};
use safegate_live::redis_server::RedisServer;
use tokio::sync::watch;

const CAPACITY: f64 = 150.0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_gates_share_the_capacity_and_stay_within_it_while_the_coordinator_is_down() {
    let mut redis = RedisServer::start(false).expect("redis-server on PATH");
    let cfg = PriceConfig { capacity: CAPACITY, gamma: 1e-3, lease_ms: 400, max_step_ms: 100 };
    let (stop_tx, stop) = watch::channel(false);
    let mut stats = Vec::new();
    let mut tasks = Vec::new();
    for i in 0..8 {
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
            seed: i,
        };
        let p = Box::new(Keeper::new(LossPolicy::Hybrid, CAPACITY, CAPACITY, 0.4, 0.3, 8).unwrap());
        tasks.push(tokio::spawn(run_gate(coord, gc, p, s, stop.clone())));
    }
    let admitted =
        |stats: &[Arc<GateStats>]| stats.iter().map(|s| s.admitted.load(Ordering::Relaxed)).collect::<Vec<_>>();
    // Warm up 3 s, then measure 2 s with the coordinator up.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let a0 = admitted(&stats);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let a1 = admitted(&stats);
    let up: Vec<f64> = a0.iter().zip(&a1).map(|(a, b)| (b - a) as f64 / 2.0).collect();
    let total_up: f64 = up.iter().sum();
    let jain = safegate_studies::fleet::jain(&up);
    eprintln!("up: {up:?} total {total_up:.1} req/s, Jain {jain:.3}");
    // The coordinator goes away for 3 s.
    redis.stop();
    let down_start = Instant::now();
    let mut worst: f64 = 0.0;
    let mut prev = admitted(&stats);
    while down_start.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = admitted(&stats);
        let rate: f64 = now.iter().zip(&prev).map(|(a, b)| (a - b) as f64).sum::<f64>() / 0.5;
        worst = worst.max(rate);
        prev = now;
    }
    let unpriced: u64 = stats.iter().map(|s| s.unpriced_decisions.load(Ordering::Relaxed)).sum();
    eprintln!("down: worst 0.5-s aggregate {worst:.1} req/s; {unpriced} decisions without a fresh price");
    redis.start_again().unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _ = stop_tx.send(true);
    for t in tasks {
        let _ = t.await;
    }
    assert!(jain >= 0.95, "Jain {jain}");
    assert!(total_up <= 1.1 * CAPACITY, "{total_up}");
    assert!(worst <= 1.2 * CAPACITY, "aggregate {worst} req/s while the coordinator was down");
    assert!(unpriced > 0);
}
