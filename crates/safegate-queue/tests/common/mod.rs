//! A private `redis-server` on a free loopback port for the tests, stopped when dropped.

#![allow(dead_code, unreachable_pub)]

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Redis {
    child: Option<Child>,
    pub port: u16,
    dir: PathBuf,
    args: Vec<String>,
    tls: bool,
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap().local_addr().unwrap().port()
}

impl Redis {
    /// Start a server; `persistent`: an append-only file fsynced on every write.
    pub fn start(persistent: bool) -> Self {
        Self::start_with(persistent, &[])
    }

    pub fn start_with(persistent: bool, extra: &[&str]) -> Self {
        let mut all: Vec<&str> = Vec::new();
        if persistent {
            all.extend(["--appendonly", "yes", "--appendfsync", "always"]);
        }
        all.extend(extra);
        Self::start_with_port_arg("--port", &all)
    }

    /// A server that speaks only TLS on its port, with these PEM files; `auth_clients`: it
    /// asks for a client certificate signed by `ca`.
    pub fn start_tls(cert: &Path, key: &Path, ca: &Path, auth_clients: bool) -> Self {
        let path = |p: &Path| p.display().to_string();
        let mut r = Self::start_with_port_arg(
            "--tls-port",
            &[
                "--port",
                "0",
                "--tls-cert-file",
                &path(cert),
                "--tls-key-file",
                &path(key),
                "--tls-ca-cert-file",
                &path(ca),
                "--tls-auth-clients",
                if auth_clients { "yes" } else { "no" },
            ],
        );
        r.tls = true;
        r
    }

    fn start_with_port_arg(port_arg: &str, extra: &[&str]) -> Self {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("sgq-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut args: Vec<String> =
            ["--bind", "127.0.0.1", "--save", "", "--daemonize", "no", "--logfile", "redis.log"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        args.extend([port_arg.into(), port.to_string(), "--dir".into(), dir.display().to_string()]);
        let mut r = Self { child: None, port, dir, args, tls: false };
        r.spawn();
        r
    }

    fn spawn(&mut self) {
        let bin = std::env::var("SAFEGATE_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let child = Command::new(&bin)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {bin} (scripts/test installs it): {e}"));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        while TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_err() {
            assert!(Instant::now() < deadline, "redis-server on port {} did not start", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn url(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}/", self.port)
    }

    /// Stop (SIGTERM, flushing the append-only file) and start again on the same port.
    pub fn restart(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill").arg("-TERM").arg(c.id().to_string()).status();
            let _ = c.wait();
        }
        self.spawn();
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A Python interpreter that imports redis-py: `$SAFEGATE_PYTHON`, `python3`, or
/// `/usr/bin/python3` (scripts/test installs Debian's python3-redis when none does).
pub fn python_with_redis() -> String {
    let candidates =
        std::env::var("SAFEGATE_PYTHON").into_iter().chain(["python3".to_string(), "/usr/bin/python3".to_string()]);
    for p in candidates {
        let ok =
            Command::new(&p).args(["-c", "import redis"]).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
        if ok {
            return p;
        }
    }
    panic!("no Python interpreter imports redis-py (scripts/test installs python3-redis; or set SAFEGATE_PYTHON)");
}

/// A Redis Cluster of `masters` primaries with one replica each, on free loopback ports.
pub struct Cluster {
    pub nodes: Vec<Redis>,
    tls_ca: Option<PathBuf>,
    replicas: usize,
}

impl Cluster {
    pub fn start(masters: usize) -> Self {
        Self::start_inner(masters, 1, None)
    }

    /// A cluster that speaks only TLS (clients, and the cluster bus), `masters` primaries
    /// without replicas; `pki`: the server's certificate, its key, the CA.
    pub fn start_tls(masters: usize, pki: (&Path, &Path, &Path)) -> Self {
        Self::start_inner(masters, 0, Some(pki))
    }

    fn start_inner(masters: usize, replicas: usize, pki: Option<(&Path, &Path, &Path)>) -> Self {
        let base = ["--cluster-enabled", "yes", "--cluster-node-timeout", "2000", "--appendonly", "no"];
        let nodes: Vec<Redis> = (0..masters * (1 + replicas))
            .map(|_| match pki {
                None => Redis::start_with(false, &base),
                Some((cert, key, ca)) => {
                    let path = |p: &Path| p.display().to_string();
                    let (cert, key, ca) = (path(cert), path(key), path(ca));
                    let mut extra: Vec<&str> = base.to_vec();
                    extra.extend([
                        "--port",
                        "0",
                        "--tls-cluster",
                        "yes",
                        "--tls-replication",
                        "yes",
                        "--tls-cert-file",
                        &cert,
                        "--tls-key-file",
                        &key,
                        "--tls-ca-cert-file",
                        &ca,
                        "--tls-auth-clients",
                        "no",
                    ]);
                    let mut r = Redis::start_with_port_arg("--tls-port", &extra);
                    r.tls = true;
                    r
                }
            })
            .collect();
        let c = Self { nodes, tls_ca: pki.map(|(_, _, ca)| ca.to_path_buf()), replicas: masters * replicas };
        let addrs: Vec<String> = c.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let mut create = c.redis_cli();
        create.arg("--cluster").arg("create").args(&addrs).args([
            "--cluster-replicas",
            &replicas.to_string(),
            "--cluster-yes",
        ]);
        let out = output_within(create, Duration::from_secs(60));
        assert!(out.status.success(), "cluster create: {}", String::from_utf8_lossy(&out.stdout));
        c.wait_ok();
        c
    }

    /// `redis-cli`, with `--tls --cacert` on a TLS cluster.
    fn redis_cli(&self) -> Command {
        let mut cmd = Command::new("redis-cli");
        if let Some(ca) = &self.tls_ca {
            cmd.arg("--tls").arg("--cacert").arg(ca);
        }
        cmd
    }

    pub fn cli(&self, port: u16, args: &[&str]) -> String {
        let out = self.redis_cli().arg("-p").arg(port.to_string()).args(args).output().expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Every node says the cluster is ok and knows every slot's owner.
    pub fn wait_ok(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        for n in &self.nodes {
            while !self.cli(n.port, &["CLUSTER", "INFO"]).contains("cluster_state:ok") {
                assert!(Instant::now() < deadline, "cluster not ok on port {}", n.port);
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        // And the first node knows every replica.
        let want = self.replicas;
        while self.cli(self.nodes[0].port, &["CLUSTER", "NODES"]).lines().filter(|l| l.contains("slave")).count() < want
        {
            assert!(Instant::now() < deadline, "replicas not known");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.url()).collect()
    }

    /// The port of the primary serving `key`, and of its replica.
    pub fn owner(&self, key: &str) -> (u16, u16) {
        let slot: u64 = self.cli(self.nodes[0].port, &["CLUSTER", "KEYSLOT", key]).trim().parse().unwrap();
        let nodes = self.cli(self.nodes[0].port, &["CLUSTER", "NODES"]);
        let mut primary = None;
        for l in nodes.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 8 || !f[2].contains("master") {
                continue;
            }
            for r in &f[8..] {
                let (a, b) = r.split_once('-').unwrap_or((r, r));
                if let (Ok(a), Ok(b)) = (a.parse::<u64>(), b.parse::<u64>()) {
                    if (a..=b).contains(&slot) {
                        primary = Some((f[0].to_string(), port_of(f[1])));
                    }
                }
            }
        }
        let (id, port) = primary.expect("an owner");
        let replica = nodes
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() > 3 && f[2].contains("slave") && f[3] == id)
            .map(|f| port_of(f[1]))
            .expect("a replica");
        (port, replica)
    }
}

/// Run `cmd` to its end, or kill it and fail after `limit` (`redis-cli --cluster create`
/// waits for ever on nodes that cannot reach each other).
fn output_within(mut cmd: Command, limit: Duration) -> std::process::Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("redis-cli");
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("waiting for redis-cli").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("redis-cli");
            panic!("{cmd:?}: not done within {limit:?}: {}", String::from_utf8_lossy(&out.stdout));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("redis-cli")
}

fn port_of(addr: &str) -> u16 {
    addr.split('@').next().unwrap().rsplit(':').next().unwrap().parse().unwrap()
}

/// A policy that always admits the same share.
struct FixedShare(f64);

impl safegate_core::Policy for FixedShare {
    fn decide(&mut self, _: &safegate_core::Observation) -> safegate_core::Action {
        safegate_core::Action::admit(self.0)
    }
    fn name(&self) -> &'static str {
        "fixed"
    }
}

fn one_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

/// Two controllers of `q` on a `lease`: "a" leads, "b" follows; "a" dies without a word
/// (its runtime dropped mid-flight, as `kill -9` leaves it). Returns the time from the
/// death to b's first grant (b must follow while a leads, and take over within 4 leases).
pub fn takeover_gap(q: &safegate_queue::Queue, lease: Duration) -> Duration {
    use safegate_queue::Controller;
    let main = one_thread();
    let period = Duration::from_millis(20);
    let leader_rt = one_thread();
    let ql = q.clone();
    leader_rt.spawn(async move {
        Controller::new(&ql, Box::new(FixedShare(0.5)), 100)
            .id("a")
            .period(period)
            .lease(lease)
            .run(std::future::pending())
            .await
    });
    main.block_on(async {
        let t0 = Instant::now();
        while q.grant().await.unwrap().is_none_or(|g| g.leader != "a") {
            assert!(t0.elapsed() < Duration::from_secs(5), "a never led");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let qf = q.clone();
    let follower = main.spawn(async move {
        Controller::new(&qf, Box::new(FixedShare(0.7)), 100)
            .id("b")
            .period(period)
            .lease(lease)
            .run(std::future::pending())
            .await
    });
    std::thread::sleep(Duration::from_millis(200));
    let before = main.block_on(q.grant()).unwrap().unwrap();
    assert_eq!(before.leader, "a", "b must follow while a leads");
    let killed = Instant::now();
    leader_rt.shutdown_background();
    let gap = main.block_on(async {
        loop {
            let g = q.grant().await.unwrap().unwrap();
            if g.leader == "b" {
                assert_eq!((g.share, g.epoch), (0.7, before.epoch + 1));
                return killed.elapsed();
            }
            assert!(killed.elapsed() < 4 * lease, "b did not take over");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    follower.abort();
    gap
}
