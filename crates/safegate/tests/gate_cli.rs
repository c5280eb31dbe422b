//! `safegate gate`: a queue's controller from outside. It leads, publishes a grant under
//! the boundary's filter, refuses bad flags with exit 2, never prints a password, and a
//! second one follows and takes over when the first dies.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use safegate_live::redis_server::{free_port, RedisServer};

fn safegate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_safegate")).args(args).output().expect("run safegate")
}

fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli").arg("-p").arg(port.to_string()).args(args).output().expect("redis-cli");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    let dead = format!("redis://127.0.0.1:{}/", free_port().unwrap());
    for (args, says) in [
        (vec!["--queue", "a b"], "queue name"),
        (vec!["--queue", "q", "--capacity", "0"], "--capacity"),
        (vec!["--queue", "q", "--lease-ms", "5"], "--lease-ms"),
        (vec!["--queue", "q", "--duration", "NaN"], "--duration"),
        (vec!["--queue", "q", "--boundary", "/nonexistent.toml"], "/nonexistent.toml"),
        (vec!["--queue", "q", "--policy", "nonsense"], "nonsense"),
        (vec!["--queue", "q", "--duration", "1"], "connecting"),
        (vec!["--queue", "q", "--tls-ca", "/nonexistent-ca.pem"], "/nonexistent-ca.pem"),
        (vec!["--queue", "q", "--tls-cert", "/tmp/c.pem"], "--tls-key"),
        (vec!["--queue", "q", "--tls-ca", "/etc/hostname"], "rediss://"),
        (vec!["--queue", "q", "--redis", "redis://127.0.0.1:1/,redis://127.0.0.1:2/"], "--cluster"),
    ] {
        let mut all = vec!["gate"];
        if !args.contains(&"--redis") {
            all.extend(["--redis", &dead]);
        }
        all.extend(args.iter());
        let out = safegate(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {err}");
        assert!(err.contains(says), "{all:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn it_leads_publishes_and_a_second_one_takes_over() {
    let redis = RedisServer::start_with(false, Some("s3cret")).unwrap();
    let url = format!("redis://:s3cret@127.0.0.1:{}/", redis.port());
    let port = redis.port().to_string();
    let gate = |id: &str, secs: &str| {
        Command::new(env!("CARGO_BIN_EXE_safegate"))
            .args([
                "gate",
                "--redis",
                &url,
                "--queue",
                "jobs",
                "--lease-ms",
                "500",
                "--json",
                "--id",
                id,
                "--duration",
                secs,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut a = gate("a", "30");
    let t0 = Instant::now();
    let cli = |args: &[&str]| {
        let mut all = vec!["-a", "s3cret", "--no-auth-warning"];
        all.extend_from_slice(args);
        redis_cli(redis.port(), &all)
    };
    while cli(&["HGET", "sg:{jobs}:gate", "leader"]) != "a" {
        assert!(t0.elapsed() < Duration::from_secs(15), "a never published");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The embedded seed-80 boundary: the fallback bound is the line 0.7 · 1000.
    assert_eq!(cli(&["HGET", "sg:{jobs}:config", "fallback"]), "700");
    assert_eq!(cli(&["HGET", "sg:{jobs}:config", "cap"]), "1000");
    let b = gate("b", "4");
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(cli(&["HGET", "sg:{jobs}:gate", "leader"]), "a");
    let killed = Instant::now();
    a.kill().unwrap();
    let _ = a.wait();
    while cli(&["HGET", "sg:{jobs}:gate", "leader"]) != "b" {
        assert!(killed.elapsed() < Duration::from_secs(3), "b did not take over");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(killed.elapsed() <= Duration::from_millis(1000), "{:?}", killed.elapsed());
    let out = b.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.iter().any(|l| l["leading"] == false), "{stdout}");
    assert!(lines.iter().any(|l| l["leading"] == true), "{stdout}");
    let last = lines.last().unwrap();
    assert_eq!(last["takeovers"], 1, "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("s3cret") && !stdout.contains("s3cret"), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
}
