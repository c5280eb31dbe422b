//! `safegate detect`, driven as a user drives it.

use std::path::PathBuf;
use std::process::{Command, Output};

fn safegate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_safegate")).args(args).output().expect("runs")
}

fn example() -> String {
    format!("{}/../../scenarios/detect-example.csv", env!("CARGO_MANIFEST_DIR"))
}

/// A file with these contents in a per-test temporary directory.
fn input(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("safegate-detect-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn alarms(v: &serde_json::Value) -> Vec<u64> {
    v["alarms"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

#[test]
fn a_shift_alarms_once_its_run_completes() {
    let mut text = "0\n".repeat(30);
    text.push_str(&"3\n".repeat(10));
    let path = input("shift.txt", &text);
    let v = json(&safegate(&["detect", "--input", path.to_str().unwrap(), "--json"]));
    assert_eq!(v["steps"], 40);
    assert_eq!(v["posterior"].as_array().unwrap().len(), 40);
    // The posterior crosses 0.5 at the first shifted value (step 30); five steps make a run.
    assert_eq!(alarms(&v), [34]);
    assert_eq!(v["alarm_periods"], serde_json::json!([[30, 39]]));
    assert!(v["posterior"][29].as_f64().unwrap() < 0.05 && v["posterior"][30].as_f64().unwrap() > 0.5);
    assert_eq!(v["config"]["likelihood"], "gaussian");
}

#[test]
fn the_example_file_shows_the_robust_variant_ignoring_outliers() {
    let ex = example();
    let plain = json(&safegate(&["detect", "--input", &ex, "--column", "signal", "--json"]));
    let robust = json(&safegate(&["detect", "--input", &ex, "--column", "signal", "--robust", "--json"]));
    assert_eq!(plain["steps"], 200);
    // The shift is at step 120; the plain filter also alarms on heavy-tailed noise before it
    // and flaps after it, the robust one alarms once.
    assert_eq!(alarms(&plain), [9, 125, 138, 170]);
    assert_eq!(alarms(&robust), [125]);
    assert_eq!(robust["config"]["likelihood"]["student_t"]["nu"], 3.0);
    let nu1 = json(&safegate(&["detect", "--input", &ex, "--column", "signal", "--robust", "--nu", "1", "--json"]));
    assert_eq!(nu1["config"]["likelihood"]["student_t"]["nu"], 1.0);
}

#[test]
fn text_output_summarises_long_inputs_and_tabulates_short_ones() {
    let out = safegate(&["detect", "--input", &example(), "--column", "signal"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("alarms: 4 (steps, 0-based, at which a run completes: 9, 125, 138, 170)"), "{text}");
    assert!(text.lines().count() < 20, "{text}");
    let all = safegate(&["detect", "--input", &example(), "--column", "signal", "--all"]);
    let all = String::from_utf8(all.stdout).unwrap();
    assert!(all.lines().count() > 200);
    assert!(all.lines().any(|l| l.trim_start().starts_with("125 ") && l.ends_with("ALARM")), "{all}");

    let path = input("short.txt", "0\n0.2\n-0.1\n");
    // (Three values can hold an alarm run of three, not the default five: see
    // a_series_shorter_than_the_run_is_inconclusive.)
    let out = safegate(&["detect", "--input", path.to_str().unwrap(), "--run", "3"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("posterior") && text.contains("alarms: none"), "{text}");
    assert!(text.lines().any(|l| l.trim_start().starts_with("2 ")), "one line per step: {text}");
}

#[test]
fn means_and_scale_move_the_detector() {
    let mut text = String::from("latency\n");
    for i in 0..40 {
        text.push_str(if i < 20 { "100\n" } else { "120\n" });
    }
    let path = input("latency.csv", &text);
    let p = path.to_str().unwrap();
    // With the defaults (0 / 3) every value is far on the alternate's side: alarm at step 4.
    assert_eq!(alarms(&json(&safegate(&["detect", "--input", p, "--json"]))), [4]);
    let v = json(&safegate(&["detect", "--input", p, "--means", "100,120", "--sd", "5", "--json"]));
    assert_eq!(alarms(&v), [24]);
    assert_eq!(v["column"], "latency");
    let neg = json(&safegate(&["detect", "--input", p, "--means=-100,120", "--json"]));
    assert_eq!(neg["config"]["means"], serde_json::json!([-100.0, 120.0]));
}

#[test]
fn errors_name_the_problem() {
    let missing = safegate(&["detect", "--input", "/nonexistent/values.csv"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("cannot read /nonexistent/values.csv"), "{}", stderr(&missing));

    let bad = input("bad.csv", "t,v\n0,1.5\n1,oops\n");
    let out = safegate(&["detect", "--input", bad.to_str().unwrap(), "--column", "v"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("line 3: \"oops\" is not a number (column \"v\")"), "{}", stderr(&out));

    let two = input("two.csv", "t,v\n0,1\n");
    let out = safegate(&["detect", "--input", two.to_str().unwrap()]);
    assert!(stderr(&out).contains("2 columns (t, v): choose one with --column"), "{}", stderr(&out));
    // A header of 100,000 columns is named by its count and its first twelve.
    let header: Vec<String> = (0..100_000).map(|i| format!("c{i}")).collect();
    let wide = input("wide.csv", &format!("{}\n", header.join(",")));
    let out = safegate(&["detect", "--input", wide.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("100000 columns (c0, c1,") && err.contains("… 99988 more"), "{}", &err[..err.len().min(400)]);
    assert!(err.len() < 1000, "{} characters", err.len());
    let out = safegate(&["detect", "--input", two.to_str().unwrap(), "--column", "x"]);
    assert!(stderr(&out).contains("unknown column \"x\" (columns: t, v)"), "{}", stderr(&out));

    let out = safegate(&["detect", "--input", two.to_str().unwrap(), "--column", "v", "--means", "1,2,3"]);
    assert!(stderr(&out).contains("--means takes two values"), "{}", stderr(&out));
    let out = safegate(&["detect", "--input", two.to_str().unwrap(), "--column", "v", "--robust", "--nu", "0"]);
    assert!(stderr(&out).contains("likelihood.nu = 0"), "{}", stderr(&out));
    // --nu without --robust is refused by the parser.
    let out = safegate(&["detect", "--input", two.to_str().unwrap(), "--nu", "2"]);
    assert!(!out.status.success() && stderr(&out).contains("--robust"), "{}", stderr(&out));
}

#[test]
fn no_finite_observation_is_no_verdict() {
    let p = input("all-nan.txt", "NaN\nNaN\nnan\n");
    let out = safegate(&["detect", "--input", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("all-nan.txt") && err.contains("no observation"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn infinite_values_are_refused_with_their_line() {
    for (name, text, want) in [
        ("inf.txt", "1\n2\ninf\n", "inf.txt: line 3"),
        ("neginf.csv", "t,v\n0,1\n1,-inf\n", "neginf.csv: line 3"),
        ("overflow.txt", "1\n1e999\n", "overflow.txt: line 2"),
    ] {
        let p = input(name, text);
        let out = safegate(&["detect", "--input", p.to_str().unwrap(), "--column", "v"]);
        let out = if name.ends_with(".txt") { safegate(&["detect", "--input", p.to_str().unwrap()]) } else { out };
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = stderr(&out);
        assert!(err.contains(want) && err.contains("infinite"), "{name}: {err}");
    }
}

#[test]
fn a_series_shorter_than_the_run_is_inconclusive() {
    let p = input("short.txt", "0\n5\n6\n");
    let out = safegate(&["detect", "--input", p.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("alarms: inconclusive") && !text.contains("alarms: none"), "{text}");
    let v = json(&safegate(&["detect", "--input", p.to_str().unwrap(), "--json"]));
    assert_eq!(v["verdict"], "inconclusive");
    // Long enough for the run: a real "none".
    let v = json(&safegate(&["detect", "--input", p.to_str().unwrap(), "--json", "--run", "3", "--means", "0,100"]));
    assert_eq!(v["verdict"], "none");
}

#[test]
fn inputs_are_bounded_in_bytes_and_values() {
    // A device is read up to the byte cap, then refused (not read until memory runs out).
    let out = safegate(&["detect", "--input", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("/dev/zero") && err.contains("more than 128 MiB"), "{err}");
    // More values than --json prints.
    let p = input("long.txt", &"0\n".repeat(1_000_001));
    let out = safegate(&["detect", "--input", p.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("long.txt") && err.contains("--json") && err.contains("1000000"), "{err}");
    // The summary reads it.
    let out = safegate(&["detect", "--input", p.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
}
