//! `safegate bench overload`, driven as a user drives it: the JSON's shape, a property
//! of the collapse backend that holds only if the generator, the backend and the limits
//! work (a fixed limit at the knee keeps most of the peak; no limit collapses), and bad
//! flags refused with exit 2 naming the flag.

use std::process::{Command, Output};

fn safegate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_safegate")).args(args).output().expect("runs")
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

fn run<'a>(scenario: &'a serde_json::Value, stack: &str) -> &'a serde_json::Value {
    scenario["runs"].as_array().and_then(|r| r.iter().find(|r| r["stack"] == stack)).expect(stack)
}

#[test]
fn collapse_run_has_every_figure_and_the_oracle_beats_no_limit() {
    let v = json(&safegate(&[
        "bench",
        "overload",
        "--secs",
        "1",
        "--scenarios",
        "collapse-1.5x",
        "--stacks",
        "none,tower-limit-oracle,safegate",
        "--pause-ms",
        "50",
        "--json",
    ]));
    assert_eq!(v["settings"]["secs"], 1.0);
    let scenarios = v["scenarios"].as_array().expect("scenarios");
    assert_eq!(scenarios.len(), 1);
    let s = &scenarios[0];
    assert_eq!(s["name"], "collapse-1.5x");
    assert_eq!(s["oracle"], "tower-limit-oracle");
    assert_eq!(s["oracle_limit"], 32);
    let peak = s["peak_rps"].as_f64().expect("peak");
    assert_eq!(peak, 3200.0);
    let stacks: Vec<&str> = s["runs"].as_array().expect("runs").iter().map(|r| r["stack"].as_str().unwrap()).collect();
    assert_eq!(stacks, ["none", "tower-limit-oracle", "safegate"]);
    for name in stacks {
        let r = run(s, name);
        assert_eq!(r["built"], true, "{r}");
        for key in ["offered_rps", "goodput_rps", "goodput_vs_oracle", "shed_share", "p50_ms", "p99_ms"] {
            assert!(r[key].is_number(), "{name}.{key}: {r}");
        }
        for key in ["sent", "ok", "good", "rejected", "timeouts", "failed"] {
            assert!(r[key].is_u64(), "{name}.{key}: {r}");
        }
        assert_eq!(r["failed"], 0, "{r}");
        assert_eq!(r["goodput_timeline"].as_array().map(Vec::len), Some(1), "{r}");
        let offered = r["offered_rps"].as_f64().unwrap();
        assert!((offered - 1.5 * peak).abs() < 0.15 * peak, "{name} offered {offered}");
    }
    let good = |n: &str| run(s, n)["goodput_rps"].as_f64().unwrap();
    assert!(good("tower-limit-oracle") > 0.5 * peak, "oracle {}", good("tower-limit-oracle"));
    assert!(good("none") < good("tower-limit-oracle"), "none {} oracle {}", good("none"), good("tower-limit-oracle"));
    assert_eq!(run(s, "tower-limit-oracle")["goodput_vs_oracle"], 1.0);
    assert!(run(s, "tower-limit-oracle")["shed_reasons"]["load-shed"].as_u64().unwrap() > 0);
}

#[test]
fn bursts_report_each_burst_against_the_first() {
    let v = json(&safegate(&[
        "bench",
        "overload",
        "--scenarios",
        "bursts",
        "--burst-secs",
        "0.5",
        "--burst-gap",
        "0.2",
        "--stacks",
        "tower-limit-oracle",
        "--json",
    ]));
    let r = run(&v["scenarios"][0], "tower-limit-oracle");
    let bursts = r["bursts"].as_array().expect("bursts");
    assert_eq!(bursts.len(), 3);
    assert_eq!(bursts[0]["vs_first"], 1.0);
    for b in bursts {
        assert!(b["goodput_rps"].as_f64().unwrap() > 1600.0, "{b}");
    }
}

#[test]
fn rounds_repeat_the_bench_and_sum_up_each_stack_as_medians() {
    let v = json(&safegate(&[
        "bench",
        "overload",
        "--secs",
        "0.5",
        "--scenarios",
        "collapse-3x",
        "--stacks",
        "none,tower-limit-oracle",
        "--pause-ms",
        "20",
        "--rounds",
        "3",
        "--json",
    ]));
    let rounds = v["rounds"].as_array().expect("rounds");
    assert_eq!(rounds.len(), 3);
    // Round 1 is seeded --seed (1 by default), each later round one more.
    let seeds: Vec<u64> = rounds.iter().map(|r| r["document"]["settings"]["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds, [1, 2, 3]);
    assert_eq!(rounds[2]["round"], 3);
    let summary = v["summary"].as_array().expect("summary");
    assert_eq!(summary.len(), 1);
    let s = &summary[0];
    assert_eq!(s["scenario"], "collapse-3x");
    assert_eq!(s["rounds_run"], 3);
    assert_eq!(s["counted_rounds"], serde_json::json!([1, 2, 3]));
    // The oracle is the reference, not a row of its own; no limit is the one stack left.
    let stacks = s["stacks"].as_array().expect("stacks");
    assert_eq!(stacks.len(), 1);
    let none = &stacks[0];
    assert_eq!(none["stack"], "none");
    let ratios: Vec<f64> =
        none["vs_oracle"].as_array().unwrap().iter().map(|x| x.as_f64().expect("a ratio every round")).collect();
    let each: Vec<f64> = rounds
        .iter()
        .map(|r| run(&r["document"]["scenarios"][0], "none")["goodput_vs_oracle"].as_f64().unwrap())
        .collect();
    assert_eq!(ratios, each);
    let mut sorted = each.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(none["median"].as_f64(), Some(sorted[1]));
    assert_eq!(none["least"].as_f64(), Some(sorted[0]));
    // No peer ran: nothing to be ahead of.
    assert!(none["ahead_of_peers"].is_null());
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&["--secs", "0"], "--secs"),
        (&["--secs", "nan"], "--secs"),
        (&["--secs", "601"], "--secs"),
        (&["--slo-ms", "2000"], "--slo-ms"),
        (&["--scenarios", "collapse-9x"], "--scenarios"),
        (&["--stacks", "nope"], "--stacks"),
        (&["--rounds", "0"], "--rounds"),
        (&["--rounds", "51"], "--rounds"),
        // 3 × 10⁷ req/s (C = 100,000 at 10 ms) for 600 s is 1.8e10 requests.
        (&["--secs", "600", "--knee", "100000", "--scenarios", "collapse-3x"], "--secs"),
    ];
    for (flags, named) in cases {
        let mut args = vec!["bench", "overload"];
        args.extend_from_slice(flags);
        let out = safegate(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.starts_with("error:") && err.contains(named), "{flags:?}: {err}");
    }
    let out = safegate(&["bench", "overload", "--stacks", "acc-vegas", "--secs", "1", "--scenarios", "fast-max"]);
    if cfg!(feature = "peers") {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("--stacks") && err.contains("--features peers"), "{err}");
    }
}
