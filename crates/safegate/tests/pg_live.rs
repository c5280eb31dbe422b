//! The seed's system on a real PostgreSQL (a server of the test's own, `pg/mod.rs`):
//! `safegate pg curve` measures and fits X(n) and writes the scenarios and boundary it
//! implies, `safegate live` runs jobs as transactions, and `safegate pg arms` plays every arm
//! beside the model. Short runs on a small pool: the figures themselves are measured by the
//! commands in BENCHMARKS.md, not asserted here.

mod pg;

use std::path::Path;
use std::process::{Command, Output};

fn safegate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_safegate")).args(args).env_remove("SAFEGATE_PG_URL").output().expect("runs")
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.display().to_string()
}

#[test]
fn the_curve_the_live_run_and_the_arms_on_a_real_database() {
    let server = pg::PgServer::start();
    let dir = tempdir();
    let workload = write(&dir, "workload.toml", "[postgres]\nrows = 16\nhold_ms = 1\npool = 8\nretries = 2\n");
    let out_dir = dir.join("out");
    let out_s = out_dir.display().to_string();

    // The curve: one level per client count up to the pool, fitted; the files written.
    let v = json(&safegate(&[
        "pg",
        "curve",
        &workload,
        "--pg-url",
        server.url(),
        "--secs",
        "0.3",
        "--passes",
        "1",
        "--out",
        &out_s,
        "--duration",
        "3",
        "--json",
    ]));
    let levels = v["curve"]["levels"].as_array().expect("levels");
    let ns: Vec<u64> = levels.iter().map(|p| p["n"].as_u64().unwrap()).collect();
    assert_eq!(ns, [1, 2, 3, 4, 5, 6, 8]);
    assert!(levels[0]["rate"].as_f64().unwrap() > 10.0, "one client commits transactions: {levels:?}");
    assert_eq!(v["curve"]["spec"]["pool"], 8);
    let knee = v["curve"]["fit"]["contention"]["comfortable"].as_f64().expect("a fitted knee");
    assert!((1.0..=8.0).contains(&knee), "{knee}");
    for f in ["curve.svg", "pg-1.5x.toml", "pg-3x.toml", "boundary.toml"] {
        assert!(out_dir.join(f).is_file(), "{f} written");
    }
    let scenario = std::fs::read_to_string(out_dir.join("pg-1.5x.toml")).unwrap();
    assert!(scenario.contains("[postgres]") && scenario.contains("pool = 8"), "{scenario}");
    assert!(std::fs::read_to_string(out_dir.join("curve.svg")).unwrap().starts_with("<svg"));

    // The written scenario runs on the database as a live run: jobs are transactions,
    // the books balance, and the model column is the fitted curve.
    let s15 = out_dir.join("pg-1.5x.toml").display().to_string();
    let v = json(&safegate(&[
        "live",
        &s15,
        "--pg-url",
        server.url(),
        "--duration",
        "4",
        "--policy",
        "cycle+pool",
        "--boundary",
        &out_dir.join("boundary.toml").display().to_string(),
        "--no-metrics",
        "--scrapes",
        &out_dir.join("telemetry.prom").display().to_string(),
        "--json",
    ]));
    let acc = &v["report"]["accounting"];
    assert_eq!(v["report"]["lost"], 0, "{acc}");
    assert!(acc["completed"].as_u64().unwrap() > 0, "transactions committed: {acc}");
    assert_eq!(v["report"]["speed"], 1.0, "model time is wall time");

    // The run's own telemetry drafts a boundary, which verify checks on the fitted model.
    let draft = out_dir.join("drafted.toml").display().to_string();
    let v = json(&safegate(&[
        "boundary",
        "check",
        &out_dir.join("telemetry.prom").display().to_string(),
        "--horizon",
        "2",
        "--draft",
        &draft,
        "--json",
    ]));
    assert!(v["rows"].as_u64().is_some_and(|r| r >= 2), "the scrapes are read: {v}");
    let out = safegate(&["verify", "--boundary", &draft, "--scenario", &s15, "--trials", "2", "--json"]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));

    // Every arm, each live and in the model.
    let v = json(&safegate(&[
        "pg",
        "arms",
        &s15,
        "--boundary",
        &out_dir.join("boundary.toml").display().to_string(),
        "--pg-url",
        server.url(),
        "--duration",
        "1.5",
        "--fixed",
        "2",
        "--json",
    ]));
    let arms = v["arms"].as_array().expect("arms");
    let labels: Vec<&str> = arms.iter().map(|a| a["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["gate off", "seed gate", "filter", "filter + cap", "fixed 2"]);
    for a in arms {
        assert_eq!(a["lost"], 0, "{a}");
        assert!(a["live"]["goodput"].as_f64().unwrap() > 0.0, "{a}");
        assert!(a["model"]["goodput"].as_f64().unwrap() > 0.0, "{a}");
    }
    assert!(arms[3]["interventions"].is_array(), "the filtered arm reports its filter: {}", arms[3]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn postgres_inputs_are_checked_and_name_themselves() {
    let dir = tempdir();
    // Nothing listens on port 1: a run that got past its checks would fail to connect.
    let url = "postgres://u:secret@127.0.0.1:1/db";
    let mut cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["live".into(), "--pg-url".into(), url.into(), "--speed".into(), "10".into()], "--speed"),
        (vec!["live".into(), write(&dir, "a.toml", "[postgres]\npool = 0\n")], "postgres.pool"),
        (vec!["live".into(), write(&dir, "b.toml", "[postgres]\nisolation = \"snapshot\"\n")], "isolation"),
        (vec!["live".into(), write(&dir, "c.toml", "[postgres]\nrows = 16\n")], "--pg-url"),
        (
            vec![
                "live".into(),
                write(&dir, "d.toml", "[postgres]\nrows = 16\n"),
                "--set".into(),
                "health.low=0.5".into(),
            ],
            "health.low",
        ),
        (vec!["run".into(), "--set".into(), "postgres.rows=4".into()], "postgres.rows"),
        (
            vec![
                "pg".into(),
                "arms".into(),
                write(&dir, "e.toml", "[traffic]\nrate = 5\n"),
                "--boundary".into(),
                "x".into(),
            ],
            "[postgres]",
        ),
        (vec!["pg".into(), "curve".into(), "--pg-url".into(), url.into(), "--secs".into(), "0".into()], "--secs"),
        (
            vec![
                "pg".into(),
                "curve".into(),
                write(&dir, "p2.toml", "[postgres]\npool = 2\n"),
                "--pg-url".into(),
                url.into(),
            ],
            "postgres.pool",
        ),
        (
            vec![
                "live".into(),
                write(&dir, "f.toml", "[postgres]\nrows = 8\n"),
                "--downstream".into(),
                "http://127.0.0.1:1".into(),
            ],
            "--downstream",
        ),
        (vec!["live".into(), "--pg-url".into(), url.into(), "--set".into(), "health.low=0.5".into()], "health.low"),
        (vec!["pg".into(), "curve".into(), "--pg-url".into(), url.into(), "--passes".into(), "0".into()], "--passes"),
        (
            vec![
                "pg".into(),
                "curve".into(),
                "--pg-url".into(),
                url.into(),
                "--out".into(),
                dir.join("o").display().to_string(),
            ],
            "127.0.0.1:1",
        ),
    ];
    let arms_scenario = write(&dir, "g.toml", "[model]\nexecutors = 16\n[postgres]\npool = 8\n");
    let boundary = write(&dir, "bound.toml", "[barrier]\nthreshold = 0.7\n");
    for (fixed, needle) in [("0", "--fixed 0"), ("9", "--fixed 9: expected 1 to 8")] {
        cases.push((
            ["pg", "arms", &arms_scenario, "--boundary", &boundary, "--pg-url", url, "--fixed", fixed]
                .map(String::from)
                .to_vec(),
            needle,
        ));
    }
    for (args, needle) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = safegate(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?} should name {needle}: {err}");
        assert!(!err.contains("secret"), "{args:?}: the password is shown: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempdir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "safegate-pg-live-{}-{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}
