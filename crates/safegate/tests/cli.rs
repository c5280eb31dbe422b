//! The binary, driven as a user drives it.

use std::process::Command;

fn safegate(args: &[&str]) -> std::process::Output {
    let dir = std::env::temp_dir().join(format!("safegate-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Command::new(env!("CARGO_BIN_EXE_safegate")).args(args).current_dir(&dir).output().expect("runs")
}

fn scenario(name: &str) -> String {
    format!("{}/../../scenarios/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn default_run_prints_both_variants_and_the_seed_band() {
    let out = safegate(&["--no-svg"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("gate off") && text.contains("gate on (θ 0.7, sens 1)"), "{text}");
    assert!(text.contains("143.8–193.9 (t ≥ 100 s)"), "{text}");
    assert!(text.contains("200.0–200.0 (t ≥ 100 s)"), "{text}");
}

#[test]
fn json_has_scenario_summary_and_one_sample_per_step() {
    let out = safegate(&["run", "--json", "--no-svg"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["scenario"]["traffic"]["rate"], 80.0);
    assert_eq!(v["scenario"]["gate"]["threshold"], 0.7);
    let series = &v["series"];
    for key in ["t", "queue", "health", "admit_fraction"] {
        assert_eq!(series[key].as_array().unwrap().len(), 8000, "{key}");
    }
    assert!((v["summary"]["settled_min"].as_f64().unwrap() - 143.75).abs() < 0.01);
    assert_eq!(v["baseline"]["summary"]["queue_final"], 200.0);
    let strided = safegate(&["run", "--json", "--no-svg", "--every", "10"]);
    let v: serde_json::Value = serde_json::from_slice(&strided.stdout).unwrap();
    assert_eq!(v["series"]["t"].as_array().unwrap().len(), 800);
}

#[test]
fn flags_override_the_scenario_file() {
    let path = scenario("recovery-55.toml");
    let out = safegate(&["run", &path, "--traffic", "74.5", "--json", "--no-svg", "--every", "1000"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let delay = v["summary"]["recovery_after_dip"].as_f64().unwrap();
    assert!((delay - 386.1).abs() < 0.1, "{delay}");
    assert!(v["baseline"].is_null());
}

#[test]
fn every_shipped_scenario_runs() {
    let dir = format!("{}/../../scenarios", env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let out = safegate(&["run", path.to_str().unwrap(), "--no-svg", "--duration", "60"]);
        assert!(out.status.success(), "{}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
        n += 1;
    }
    assert!(n >= 6);
}

#[test]
fn bad_input_fails_cleanly_with_the_field() {
    let out = safegate(&["run", "--threshold", "1.5", "--no-svg"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("gate.threshold") && err.contains("1.5") && err.contains("[0, 1)"), "{err}");
    let out = safegate(&["run", "--set", "health.lowest=0.2", "--no-svg"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lowest"));
    let out = safegate(&["run", "/nonexistent/x.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));
}

#[test]
fn writes_the_chart() {
    let dir = std::env::temp_dir().join(format!("safegate-chart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("c.svg");
    let out = safegate(&["run", "--svg", svg.to_str().unwrap(), "--duration", "50"]);
    assert!(out.status.success());
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains("queue depth q") && text.contains("gate off"));
}

#[test]
fn reproduce_passes_and_a_changed_constant_fails_it() {
    let out = safegate(&["reproduce", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert!(rows.len() >= 40);
    for r in rows {
        for key in ["id", "claim", "seed", "ours", "tolerance", "pass"] {
            assert!(!r[key].is_null(), "{key} missing in {r}");
        }
        assert_eq!(r["pass"], true, "{r}");
    }
    let out = safegate(&["reproduce", "--only", "ceiling,band-80-floor", "--set", "model.rate=36"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("FAIL") && text.contains("model changed from the seed's: model.rate = 36"), "{text}");
    assert!(!text.contains("band-80-top"), "--only keeps just the named row: {text}");
}

#[test]
fn reproduce_writes_figures_and_rejects_unknown_ids() {
    let dir = std::env::temp_dir().join(format!("safegate-figs-{}", std::process::id()));
    let out = safegate(&["reproduce", "--only", "recovery,game", "--figures", dir.to_str().unwrap()]);
    assert!(out.status.success());
    for f in ["recovery-sweep.svg", "fleet-threshold.svg"] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(text.starts_with("<svg"), "{f}");
    }
    let out = safegate(&["reproduce", "--only", "nonsense"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such experiment"));
}
