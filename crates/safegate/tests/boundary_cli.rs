//! `safegate boundary check` and `sample`, driven as a user drives them, on the samples in
//! `telemetry/` (whose findings docs/boundary-check.md quotes) and on broken inputs.

use std::path::PathBuf;
use std::process::{Command, Output};

fn safegate_in(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_safegate")).current_dir(dir).args(args).output().expect("runs")
}

/// A fresh per-test directory (the check writes its draft into the working directory).
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("safegate-boundary-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn sample(name: &str) -> String {
    format!("{}/../../telemetry/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn flagged(v: &serde_json::Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["flagged"].as_bool().unwrap())
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_samples_give_the_findings_the_guide_shows() {
    let d = dir("samples");
    for (file, want) in [
        ("sim-clean.csv", vec![]),
        ("sim-heavy-tail.csv", vec!["heavy-tail"]),
        ("sim-oscillation.csv", vec!["oscillation"]),
        ("live-band-80.prom", vec![]),
    ] {
        let out = safegate_in(&d, &["boundary", "check", &sample(file), "--json", "--no-draft", "--horizon", "60"]);
        let v = json(&out);
        assert_eq!(flagged(&v), want, "{file}");
        assert!(v["rows"].as_u64().unwrap() > 300, "{file}");
    }
    // The heavy-tailed sample: a heavy verdict with a Hill interval, exits beyond ε.
    let v = json(&safegate_in(&d, &["boundary", "check", &sample("sim-heavy-tail.csv"), "--json", "--no-draft"]));
    assert_eq!(v["excursions"]["tail"]["class"], "heavy");
    assert!(v["excursions"]["tail"]["alpha_interval"].is_array());
    assert_eq!(v["exits"]["verdict"], "violates");
    // The live sample reads its capacity from safegate_backlog_bound.
    let v = json(&safegate_in(&d, &["boundary", "check", &sample("live-band-80.prom"), "--json", "--no-draft"]));
    assert_eq!(v["format"], "prometheus");
    assert_eq!(v["margin"]["capacity"], 200.0);
}

#[test]
fn it_writes_a_draft_that_verify_reads_and_never_overwrites_a_foreign_file() {
    let d = dir("draft");
    let out = safegate_in(&d, &["boundary", "check", &sample("sim-heavy-tail.csv")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("1. Barrier") && text.contains("5. Feasibility") && text.contains("FLAG heavy-tail"),
        "{text}"
    );
    let draft = std::fs::read_to_string(d.join("boundary-draft.toml")).unwrap();
    assert!(draft.contains("[magnitude]") && draft.contains("capacity = 200.0"), "{draft}");
    // The draft is a boundary `verify` accepts (a tiny run, just to read it).
    let v = safegate_in(
        &d,
        &[
            "verify",
            "--boundary",
            "boundary-draft.toml",
            "--trials",
            "4",
            "--traffic-points",
            "2",
            "--health-points",
            "2",
            "--json",
        ],
    );
    assert!(v.status.code() != Some(2), "verify refused the draft: {}", String::from_utf8_lossy(&v.stderr));
    // A second check overwrites its own draft …
    assert!(safegate_in(&d, &["boundary", "check", &sample("sim-clean.csv")]).status.success());
    // … but not a file someone else wrote.
    std::fs::write(d.join("mine.toml"), "name = \"mine\"\n").unwrap();
    let out = safegate_in(&d, &["boundary", "check", &sample("sim-clean.csv"), "--draft", "mine.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mine.toml"));
    assert_eq!(std::fs::read_to_string(d.join("mine.toml")).unwrap(), "name = \"mine\"\n");
}

#[test]
fn figures_and_strict_mode() {
    let d = dir("figures");
    let out = safegate_in(
        &d,
        &["boundary", "check", &sample("sim-heavy-tail.csv"), "--no-draft", "--figures", "figs", "--strict"],
    );
    // Heavy tail flagged and ε violated: --strict exits 1.
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    for f in ["boundary-signal.svg", "boundary-hill.svg"] {
        let svg = std::fs::read_to_string(d.join("figs").join(f)).unwrap();
        assert!(svg.starts_with("<svg"), "{f}");
    }
}

#[test]
fn sample_writes_telemetry_the_check_reads() {
    let d = dir("sample");
    for (args, file) in [
        (vec!["--fault", "retry-storm", "--duration", "1200", "--dt", "0.5"], "s.csv"),
        (vec!["--prometheus", "--duration", "600"], "s.prom"),
    ] {
        let mut a = vec!["boundary", "sample"];
        a.extend(args);
        let out = safegate_in(&d, &a);
        assert!(out.status.success());
        std::fs::write(d.join(file), &out.stdout).unwrap();
        let v = json(&safegate_in(&d, &["boundary", "check", file, "--json", "--no-draft"]));
        if file == "s.csv" {
            assert_eq!(flagged(&v), ["retry-storm"]);
        }
    }
    let out = safegate_in(&d, &["boundary", "sample", "--fault", "nope"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn broken_telemetry_is_a_clear_error_naming_the_line() {
    let d = dir("broken");
    for (name, text, want) in [
        ("empty.csv", "", "empty"),
        ("cols.csv", "time,latency\n0,1\n1,2\n", "no queue or in-flight column"),
        ("nan.csv", "time,queue,capacity\n0,1,10\n1,NaN,10\n", "nan.csv:3"),
        ("text.csv", "time,queue,capacity\n0,1,10\n1,many,10\n", "nan"),
        ("order.csv", "time,queue,capacity\n0,1,10\n2,1,10\n1,1,10\n", "order.csv:4"),
        ("dup.csv", "time,queue,capacity\n0,1,10\n0,1,10\n", "dup.csv:3"),
        ("ragged.csv", "time,queue,capacity\n0,1,10\n1,1\n", "ragged.csv:3"),
        ("nocap.csv", "time,queue\n0,1\n1,1\n", "--capacity"),
        ("bin.csv", "\u{0}\u{1}\u{2}", "bin.csv:1: no time column"),
    ] {
        std::fs::write(d.join(name), text).unwrap();
        let out = safegate_in(&d, &["boundary", "check", name, "--no-draft"]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        let want = if name == "text.csv" { "text.csv:3" } else { want };
        assert!(err.contains(want) && !err.contains("panicked"), "{name}: {err}");
    }
    std::fs::write(d.join("latin1.csv"), [b't', b'\n', 0xff, b'\n']).unwrap();
    let out = safegate_in(&d, &["boundary", "check", "latin1.csv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not UTF-8"));
    for args in [
        vec!["boundary", "check", "missing.csv"],
        vec!["boundary", "check", "."],
        vec!["boundary", "check", &sample("sim-clean.csv"), "--epsilon", "2"],
        vec!["boundary", "check", &sample("sim-clean.csv"), "--threshold", "-1"],
    ] {
        let out = safegate_in(&d, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
}
