//! The coordination price script against a real redis-server on a free loopback port.

use std::time::{Duration, Instant};

use safegate_live::coord::{Coordinator, Grant, PriceConfig};
use safegate_live::redis_server::RedisServer;

fn cfg(lease_ms: u64) -> PriceConfig {
    PriceConfig { capacity: 150.0, gamma: 1e-3, lease_ms, max_step_ms: 100 }
}

/// Every gate refreshes every 10 ms for `secs`; returns each gate's last grant.
async fn run(c: &Coordinator, demands: &[f64], has: &mut [f64], secs: f64) -> Vec<Grant> {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut last = Vec::new();
    while Instant::now() < end {
        last.clear();
        for (i, &d) in demands.iter().enumerate() {
            let g = c.refresh(&format!("g{i}"), d, 1.0, has[i]).await.unwrap();
            has[i] = g.rate;
            last.push(g);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    last
}

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    s * s / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_price_splits_the_capacity_fairly_and_members_leave_after_their_lease() {
    let server = RedisServer::start(false).expect("redis-server on PATH");
    let c = Coordinator::connect(&server.url(), "f1", cfg(300)).await.unwrap();
    // Saturated gates: the equal split of 150.
    let mut has = vec![1000.0; 4];
    let g = run(&c, &[100.0; 4], &mut has, 2.0).await;
    let rates: Vec<f64> = g.iter().map(|g| g.rate).collect();
    eprintln!("equal demands: {rates:?}, price {}", g[0].price);
    assert!(rates.iter().all(|r| (r - 37.5).abs() <= 0.1 * 37.5), "{rates:?}");
    assert!(jain(&rates) >= 0.99);
    assert_eq!(g[0].members, 4);
    assert!(!g[3].learning, "learning ends after one lease");
    // A small gate keeps its demand; the others share what is left.
    let g = run(&c, &[10.0, 100.0, 100.0, 100.0], &mut has, 2.0).await;
    let rates: Vec<f64> = g.iter().map(|g| g.rate).collect();
    eprintln!("one small gate: {rates:?}");
    assert!((rates[0] - 10.0).abs() < 1e-9, "{rates:?}");
    for r in &rates[1..] {
        assert!((r - 140.0 / 3.0).abs() <= 0.1 * 140.0 / 3.0, "{rates:?}");
    }
    // Gate 3 goes silent: after a lease it leaves, and the others share its part.
    let mut has3 = has[..3].to_vec();
    let g = run(&c, &[100.0; 3], &mut has3, 2.0).await;
    let rates: Vec<f64> = g.iter().map(|g| g.rate).collect();
    eprintln!("three gates: {rates:?}");
    assert_eq!(g[0].members, 3);
    assert!(rates.iter().all(|r| (r - 50.0).abs() <= 0.1 * 50.0), "{rates:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_coordinator_learns_for_one_lease_before_handing_out_more() {
    let server = RedisServer::start(false).expect("redis-server on PATH");
    let c = Coordinator::connect(&server.url(), "f2", cfg(500)).await.unwrap();
    // Four gates that held 20 each before the coordinator lost its state.
    let mut has = vec![20.0; 4];
    let t0 = Instant::now();
    let g = run(&c, &[100.0; 4], &mut has, 0.3).await;
    assert!(g.iter().all(|g| g.learning && g.rate <= 20.0 + 1e-9), "{g:?}");
    assert!(t0.elapsed() < Duration::from_millis(500));
    let g = run(&c, &[100.0; 4], &mut has, 1.5).await;
    assert!(g.iter().all(|g| !g.learning), "{g:?}");
    assert!(g.iter().all(|g| (g.rate - 37.5).abs() <= 0.1 * 37.5), "{g:?}");
}

#[tokio::test]
async fn bad_settings_and_an_unreachable_redis_are_errors() {
    let port = safegate_live::redis_server::free_port().unwrap();
    let e = Coordinator::connect(&format!("redis://127.0.0.1:{port}/"), "f", cfg(300)).await.unwrap_err();
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    let e = Coordinator::connect("redis://127.0.0.1:6379/", "f", PriceConfig { gamma: f64::NAN, ..cfg(300) })
        .await
        .unwrap_err();
    assert!(e.to_string().contains("gamma"), "{e}");
    let e = Coordinator::connect("redis://127.0.0.1:6379/", "f*", cfg(300)).await.unwrap_err();
    assert!(e.to_string().contains("namespace"), "{e}");
}

/// A demand far beyond the capacity does not throw the price past every clearing value:
/// the update is projected under `Σ w / c`, so the grants add up to `c` within a second
/// rather than collapsing to almost nothing (0.06 req/s a gate before the ceiling).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demand_far_beyond_the_capacity_still_gets_the_capacity() {
    let server = RedisServer::start(false).expect("redis-server on PATH");
    let cfg = PriceConfig { capacity: 60.0, gamma: 22.5 / 3600.0, lease_ms: 300, max_step_ms: 250 };
    let c = Coordinator::connect(&server.url(), "f4", cfg).await.unwrap();
    let mut has = vec![0.0; 2];
    let g = run(&c, &[5e5, 5e5], &mut has, 1.0).await;
    let rates: Vec<f64> = g.iter().map(|g| g.rate).collect();
    eprintln!("two gates at 5e5 req/s against 60: {rates:?}, price {}", g[0].price);
    assert!(g[0].price <= 2.0 / 60.0 + 1e-12, "price {} above Σw/c", g[0].price);
    let total: f64 = rates.iter().sum();
    assert!((total - 60.0).abs() <= 0.05 * 60.0, "{rates:?}");
    assert!(jain(&rates) >= 0.99, "{rates:?}");
}

/// Three cluster-enabled redis-servers on free loopback ports, joined by `redis-cli --cluster
/// create` (no replicas); stopped and removed when dropped.
struct Cluster {
    nodes: Vec<(std::process::Child, u16)>,
    dir: std::path::PathBuf,
}

impl Cluster {
    fn start() -> Self {
        let bin = safegate_live::redis_server::find_redis_server().expect("redis-server on PATH");
        let dir = std::env::temp_dir().join(format!("sg-coord-cluster-{}", std::process::id()));
        let mut nodes = Vec::new();
        for _ in 0..3 {
            let port = safegate_live::redis_server::free_port().unwrap();
            let d = dir.join(port.to_string());
            std::fs::create_dir_all(&d).unwrap();
            let child = std::process::Command::new(&bin)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .args(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--dir"])
                .arg(&d)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            nodes.push((child, port));
        }
        let c = Cluster { nodes, dir };
        for (_, port) in &c.nodes {
            let t0 = Instant::now();
            while std::net::TcpStream::connect(("127.0.0.1", *port)).is_err() {
                assert!(t0.elapsed() < Duration::from_secs(10), "redis-server on {port} did not start");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let addrs: Vec<String> = c.nodes.iter().map(|(_, p)| format!("127.0.0.1:{p}")).collect();
        let mut create = std::process::Command::new("redis-cli");
        create.arg("--cluster").arg("create").args(&addrs).args(["--cluster-replicas", "0", "--cluster-yes"]);
        let mut child = create.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
        let t0 = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(status.success(), "redis-cli --cluster create failed");
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "redis-cli --cluster create took over 60 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        // Every node must see the cluster as ok before clients route to it.
        for (_, port) in &c.nodes {
            let t0 = Instant::now();
            loop {
                let out = std::process::Command::new("redis-cli")
                    .args(["-p", &port.to_string(), "CLUSTER", "INFO"])
                    .output()
                    .unwrap();
                if String::from_utf8_lossy(&out.stdout).contains("cluster_state:ok") {
                    break;
                }
                assert!(t0.elapsed() < Duration::from_secs(20), "cluster not ok on {port}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        c
    }

    fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(|(_, p)| format!("redis://127.0.0.1:{p}/")).collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for (child, _) in &mut self.nodes {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The price on a 3-primary Redis Cluster: the fleet's keys share its namespace's slot,
/// and three fleets, one on each primary, each split their capacity fairly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_price_runs_on_a_redis_cluster() {
    let cluster = Cluster::start();
    let urls = cluster.urls();
    let nodes: Vec<&str> = urls.iter().map(String::as_str).collect();
    // Their slots (218, 9379, 10965) fall in the three primaries' ranges.
    let mut epochs = Vec::new();
    for ns in ["west", "south", "east"] {
        let c = Coordinator::connect_cluster(&nodes[..1], ns, cfg(300)).await.unwrap();
        let mut has = vec![1000.0; 4];
        let g = run(&c, &[100.0; 4], &mut has, 1.5).await;
        let rates: Vec<f64> = g.iter().map(|g| g.rate).collect();
        eprintln!("{ns} on the cluster: {rates:?}, price {}", g[0].price);
        assert!(rates.iter().all(|r| (r - 37.5).abs() <= 0.1 * 37.5), "{ns}: {rates:?}");
        assert_eq!(g[0].members, 4);
        epochs.push(g[0].epoch);
    }
    // `connect` on one node finds the cluster by itself (as `safegate fleet --redis URL` does),
    // and on the nodes' list.
    for url in [urls[1].clone(), urls.join(",")] {
        let c = Coordinator::connect(&url, "west", cfg(300)).await.unwrap();
        let g = c.refresh("g0", 100.0, 1.0, 37.5).await.unwrap();
        assert_eq!(g.epoch, epochs[0], "{url}: the same coordinator state as the loop's: {g:?}");
    }
    let e = Coordinator::connect_cluster(&["redis://127.0.0.1:1/"], "f", cfg(300)).await.unwrap_err().to_string();
    assert!(e.contains("127.0.0.1:1"), "{e}");
}
