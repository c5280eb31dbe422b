//! Fleet gates in one process against a private coordination Redis: the price splits the
//! capacity, and a coordinator outage keeps the fleet within its bound under a policy that
//! freezes, then takes bound / N̂ (a test-local stand-in; the core's keepers replace it).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use safegate_live::coord::{Coordinator, Grant, PriceConfig};
use safegate_live::fleet_gate::{run_gate, GateConfig, GateStats, LossPolicy};
use safegate_live::redis_server::RedisServer;
use tokio::sync::watch;

const CAPACITY: f64 = 150.0;

struct Hybrid {
    grant: f64,
    expiry: f64,
    members: u32,
    fresh_until: f64,
}

impl LossPolicy for Hybrid {
    fn on_grant(&mut self, now: f64, g: &Grant, lease: f64) {
        self.grant = g.rate;
        self.expiry = now + lease;
        self.members = self.members.max(g.members);
        self.fresh_until = now + lease;
    }
    fn on_silence(&mut self, _now: f64) {}
    fn limit(&mut self, now: f64) -> (f64, bool) {
        if now < self.expiry {
            (self.grant, now < self.fresh_until)
        } else {
            (CAPACITY / f64::from(self.members.max(1)), false)
        }
    }
    fn name(&self) -> &'static str {
        "test-hybrid"
    }
}

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
        let p = Box::new(Hybrid { grant: 0.0, expiry: 0.0, members: 0, fresh_until: 0.0 });
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
    let jain = total_up * total_up / (8.0 * up.iter().map(|x| x * x).sum::<f64>());
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
