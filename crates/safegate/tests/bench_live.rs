//! `safegate bench plumbing`, driven as a user drives it: a short run on a private
//! redis-server (redis-server must be on PATH) whose JSON shows our stack's figure and
//! balanced books, and bad inputs refused with exit 2 naming the input.

use std::process::{Command, Output};

fn safegate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_safegate")).args(args).output().expect("runs")
}

#[test]
fn plumbing_run_reports_our_figure_and_balanced_books() {
    let out = safegate(&["bench", "plumbing", "--jobs", "2000", "--rounds", "1", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["jobs"], 2000);
    assert_eq!(v["rounds"], 1);
    assert_eq!(v["executors"], 8);
    assert_eq!(v["target_jobs_per_s"], 14000.0);
    assert!(v["meets_target"].is_boolean(), "{v}");
    let stacks = v["stacks"].as_array().expect("stacks");
    let ours = stacks.iter().find(|s| s["stack"] == "safegate").expect("our stack");
    assert_eq!(ours["built"], true);
    assert!(ours["error"].is_null(), "{ours}");
    assert!(ours["jobs_per_s"].as_f64().expect("jobs/s") > 0.0, "{ours}");
    let rounds = ours["rounds"].as_array().expect("rounds");
    assert_eq!(rounds.len(), 1);
    assert_eq!(rounds[0]["completed"], 2000, "{ours}");
    assert_eq!(rounds[0]["lost"], 0, "{ours}");
    assert!(rounds[0]["secs"].as_f64().unwrap() >= rounds[0]["enqueue_secs"].as_f64().unwrap());
    // The peer is listed either way: measured with `--features peers`, else not built.
    let peer = stacks.iter().find(|s| s["stack"] == "apalis-redis").expect("the peer's row");
    if peer["built"] == true {
        assert!(peer["error"].is_null(), "{peer}");
        assert_eq!(peer["rounds"][0]["completed"], 2000, "{peer}");
        assert_eq!(peer["rounds"][0]["lost"], 0, "{peer}");
    } else {
        assert!(peer["error"].as_str().unwrap().contains("--features peers"), "{peer}");
    }
}

#[test]
fn plumbing_refuses_zero_jobs_naming_the_flag() {
    let out = safegate(&["bench", "plumbing", "--jobs", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--jobs"), "{err}");
    let out = safegate(&["bench", "plumbing", "--jobs", "1000001"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--jobs"));
}

#[test]
fn plumbing_names_an_unreachable_redis() {
    let out = safegate(&["bench", "plumbing", "--jobs", "10", "--redis", "redis://127.0.0.1:1/"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("redis://127.0.0.1:1/"), "{err}");
    // A cluster needs its nodes; several URLs are a cluster's, and need --cluster.
    let out = safegate(&["bench", "plumbing", "--jobs", "10", "--cluster"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--redis"));
    let out = safegate(&["bench", "plumbing", "--jobs", "10", "--redis", "redis://127.0.0.1:1/,redis://127.0.0.1:2/"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cluster"), "{err}");
}
