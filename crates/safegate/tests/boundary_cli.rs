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

#[test]
fn a_draft_never_replaces_a_binary_file_a_device_or_anything_not_drafted() {
    let d = dir("foreign");
    let clean = sample("sim-clean.csv");
    let precious: Vec<u8> = vec![0x00, 0xff, 0xfe, b'x', 0x80];
    std::fs::write(d.join("precious.bin"), &precious).unwrap();
    std::fs::write(d.join("latin1.toml"), [b'#', b' ', 0xe9, b'\n']).unwrap();
    for target in ["precious.bin", "latin1.toml"] {
        let out = safegate_in(&d, &["boundary", "check", &clean, "--draft", target]);
        assert_eq!(out.status.code(), Some(2), "{target}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(target) && err.contains("not drafted"), "{err}");
    }
    assert_eq!(std::fs::read(d.join("precious.bin")).unwrap(), precious);
    assert_eq!(std::fs::read(d.join("latin1.toml")).unwrap(), [b'#', b' ', 0xe9, b'\n']);
    // A device is not a regular file: refused at once, not read (reading /dev/zero would
    // take a gigabyte before the byte cap, then write a draft there).
    let t = std::time::Instant::now();
    let out = safegate_in(&d, &["boundary", "check", &clean, "--draft", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/dev/zero") && err.contains("not a regular file"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("written"));
    assert!(t.elapsed().as_secs() < 30);
    // A directory, and a missing file (written).
    let out = safegate_in(&d, &["boundary", "check", &clean, "--draft", "."]);
    assert_eq!(out.status.code(), Some(2));
    assert!(safegate_in(&d, &["boundary", "check", &clean, "--draft", "new.toml"]).status.success());
    assert!(std::fs::read_to_string(d.join("new.toml")).unwrap().starts_with("# Drafted by `safegate boundary check`"));
}

#[test]
fn flags_outside_a_boundary_files_ranges_are_refused_naming_the_flag() {
    let d = dir("flags");
    let clean = sample("sim-clean.csv");
    for (flag, value) in [
        ("--capacity", "5e-324"),
        ("--capacity", "1e308"),
        ("--capacity", "0.5"),
        ("--epsilon", "1e-300"),
        ("--eta", "1e-300"),
        ("--threshold", "1"),
        ("--threshold", "0"),
    ] {
        let out = safegate_in(&d, &["boundary", "check", &clean, flag, value]);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag) && !err.contains("panicked"), "{flag} {value}: {err}");
        assert!(!d.join("boundary-draft.toml").exists(), "{flag} {value} wrote a draft");
    }
    // The edges a boundary file accepts are accepted.
    let out = safegate_in(&d, &["boundary", "check", &clean, "--capacity", "1e8", "--epsilon", "1e-12", "--no-draft"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn telemetry_beyond_the_documented_ranges_is_refused_with_its_line() {
    let d = dir("ranges");
    let head = "time,queue,offered_total,capacity\n";
    for (name, rows, want) in [
        ("bigq.csv", "0,1,0,200\n1,1e308,10,200\n2,1,20,200\n", "bigq.csv:3"),
        ("jump.csv", "0,1,0,200\n1,1,10,200\n2,1,1e305,200\n", "jump.csv:4"),
        ("rate.csv", "0,1,0,200\n1,1,2e7,200\n", "jump"),
        ("bigcap.csv", "0,1,0,200\n1,1,10,1e9\n", "bigcap.csv:3"),
    ] {
        std::fs::write(d.join(name), format!("{head}{rows}")).unwrap();
        let out = safegate_in(&d, &["boundary", "check", name]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        let want = if name == "rate.csv" { "rate.csv:3" } else { want };
        assert!(err.contains(want) && err.contains("beyond"), "{name}: {err}");
        assert!(!d.join("boundary-draft.toml").exists(), "{name} wrote a draft");
    }
    std::fs::write(d.join("big.prom"), "safegate_backlog 1 1000\nsafegate_backlog 2e8 2000\n").unwrap();
    let out = safegate_in(&d, &["boundary", "check", "big.prom", "--capacity", "200"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("big.prom:2"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_prometheus_file_with_several_labels_is_read_as_prometheus() {
    let d = dir("labels");
    let text = "safegate_backlog{a=\"1\",b=\"x\"} 1 1000\nsafegate_backlog{a=\"1\",b=\"x\"} 3 2000\nsafegate_backlog{a=\"1\",b=\"x\"} 2 3000\n";
    std::fs::write(d.join("l.prom"), text).unwrap();
    let v = json(&safegate_in(&d, &["boundary", "check", "l.prom", "--capacity", "10", "--no-draft", "--json"]));
    assert_eq!(v["format"], "prometheus");
    assert_eq!(v["rows"], 3);
}

#[test]
fn write_errors_are_reported_not_swallowed() {
    let d = dir("full");
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_safegate"))
        .current_dir(&d)
        .args(["boundary", "sample", "--duration", "60"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot write") && !err.contains("panicked"), "{err}");
}
