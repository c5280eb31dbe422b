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

/// The four arms of the main job, in the order of its story.
const ARMS: [&str; 4] =
    ["no gate", "seed gate (θ 0.7, sens 1)", "filter (seed-80)", "filter + concurrency cap (seed-80-pool)"];

/// The verdict line of `label` in a printed run.
fn verdict_of<'a>(text: &'a str, label: &str) -> &'a str {
    let start = text.find("verdicts (").expect("a verdict block");
    text[start..].lines().find(|l| l.trim_start().starts_with(label)).unwrap_or_else(|| panic!("{label}: {text}"))
}

/// The seconds beyond θ·cap a verdict line states.
fn seconds_beyond(line: &str) -> f64 {
    let (head, _) = line.split_once(" s (").expect("seconds beyond");
    head.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn default_run_tells_the_story_in_four_arms() {
    let out = safegate(&["--no-svg"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    // The table's header lists the arms in order, and so do the verdict lines.
    let header = text.lines().find(|l| l.contains("no gate")).unwrap();
    let at: Vec<usize> = ARMS.iter().map(|a| header.find(a).unwrap_or_else(|| panic!("{a}: {header}"))).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{header}");
    let verdicts = &text[text.find("verdicts (").unwrap()..];
    let at: Vec<usize> = ARMS.iter().map(|a| verdicts.find(&format!("  {a} ")).unwrap()).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{verdicts}");
    // No gate pins at the cap, the seed's gate holds its band above θ·cap = 140 ...
    assert!(text.contains("200.0–200.0 (t ≥ 100 s)") && text.contains("143.8–193.9 (t ≥ 100 s)"), "{text}");
    for arm in &ARMS[..2] {
        let line = verdict_of(&text, arm);
        assert!(line.contains("beyond θ·cap = 140") && seconds_beyond(line) > 350.0, "{line}");
    }
    // ... and both filtered arms stay under it the whole run.
    for arm in &ARMS[2..] {
        let line = verdict_of(&text, arm);
        assert_eq!(seconds_beyond(line), 0.0, "{line}");
        assert!(line.contains("goodput "), "{line}");
    }
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
    // The primary is the last arm (the filter with the concurrency cap), the baseline the first.
    assert_eq!(v["label"], ARMS[3]);
    assert_eq!(v["baseline"]["label"], ARMS[0]);
    assert_eq!(v["baseline"]["summary"]["queue_final"], 200.0);
    let arms = v["arms"].as_array().unwrap();
    assert_eq!(arms.iter().map(|a| a["label"].as_str().unwrap()).collect::<Vec<_>>(), ARMS);
    assert!((arms[1]["summary"]["settled_min"].as_f64().unwrap() - 143.75).abs() < 0.01);
    let num = |a: &serde_json::Value, k: &str| a["verdict"][k].as_f64().unwrap_or_else(|| panic!("{k}: {a}"));
    let limit = num(&arms[0], "physical_limit");
    for a in arms {
        assert_eq!(num(a, "line"), 140.0);
        assert_eq!(num(a, "physical_limit"), limit, "one scenario, one limit");
        let (g, share) = (num(a, "goodput"), num(a, "share_of_limit"));
        assert!((share - g / limit).abs() < 1e-12 && share <= 1.0, "{a}");
        assert!((num(a, "time_beyond") - 400.0 * num(a, "share_beyond")).abs() < 1e-9, "{a}");
    }
    assert!(num(&arms[0], "share_beyond") > 0.9, "the open pool pins above θ·cap");
    for a in &arms[2..] {
        assert_eq!(num(a, "time_beyond"), 0.0, "{a}");
        assert!(a["summary"]["queue_max"].as_f64().unwrap() <= 140.0, "{a}");
        assert!(a["filter"]["decisions"].as_u64().unwrap() > 0, "{a}");
    }
    // The concurrency cap clears more than admission alone: at least 5 req/s.
    assert!(num(&arms[3], "goodput") > num(&arms[2], "goodput") + 5.0, "{arms:?}");
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
    assert!(err.contains("gate.threshold") && err.contains("1.5") && err.contains("(0, 1)"), "{err}");
    let out = safegate(&["run", "--set", "health.lowest=0.2", "--no-svg"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lowest"));
    let out = safegate(&["run", "/nonexistent/x.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot read"), "{err}");
    // The OS's reason once, not repeated by the error chain.
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
    // A benchmark too long to finish is refused with what fits.
    let out = safegate(&["bench", "overhead", "--requests", "1000000000000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at most 2e8"));
}

#[test]
fn writes_the_chart() {
    let dir = std::env::temp_dir().join(format!("safegate-chart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("c.svg");
    let out = safegate(&["run", "--svg", svg.to_str().unwrap(), "--duration", "50"]);
    assert!(out.status.success());
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains("queue depth q"));
    for arm in ARMS {
        assert!(text.contains(&format!(">{arm}</text>")), "{arm} in the legend");
    }
}

#[test]
fn flags_and_files_that_would_run_on_nothing_are_errors() {
    // An empty scenario file ran every default silently.
    let dir = std::env::temp_dir().join(format!("safegate-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.toml");
    std::fs::write(&empty, "\n  \n").unwrap();
    let out = safegate(&["run", empty.to_str().unwrap(), "--no-svg"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the file is empty"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A file of comments only ran every default too, where `serve` refused it.
    let comments = dir.join("comments.toml");
    std::fs::write(&comments, "# band-80, I meant\n\n  # (nothing else)\n").unwrap();
    let out = safegate(&["run", comments.to_str().unwrap(), "--no-svg"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the file is only comments"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `bound --steps 0` gave a probability over no step.
    let out = safegate(&["bound", "--h0", "0.3", "--sigma", "0.1", "--delta", "0.1", "--steps", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--steps"));
    // `--capacity` takes the scenario files' forms (`1e3`), and a fraction is refused.
    let out = safegate(&["run", "--capacity", "1e3", "--no-svg", "--duration", "10"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = safegate(&["run", "--capacity", "200.5", "--no-svg", "--duration", "10"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("model.capacity"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn svg_dash_is_standard_output() {
    // `--svg -` puts the chart alone on stdout (the table goes to stderr) and writes no file "-".
    let out = safegate(&["run", "--svg", "-", "--duration", "20"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let svg = String::from_utf8(out.stdout).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no gate"));
    let dir = std::env::temp_dir().join(format!("safegate-cli-{}", std::process::id()));
    assert!(!dir.join("-").exists(), "a file named - was written");
    // With --json, stdout is taken: a clear error, exit 2.
    let out = safegate(&["run", "--json", "--svg", "-", "--duration", "20"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--svg -"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn explicit_scenarios_keep_their_runs_and_take_the_arms_on_request() {
    let path = scenario("stochastic-80.toml");
    let plain = safegate(&["run", &path, "--no-svg", "--duration", "60"]);
    let text = String::from_utf8(plain.stdout).unwrap();
    assert!(text.contains("gate on (θ 0.7, sens 1)") && !text.contains("no gate"), "{text}");
    let arms = safegate(&["run", &path, "--arms", "--json", "--duration", "60"]);
    assert!(arms.status.success(), "{}", String::from_utf8_lossy(&arms.stderr));
    let v: serde_json::Value = serde_json::from_slice(&arms.stdout).unwrap();
    let labels: Vec<&str> = v["arms"].as_array().unwrap().iter().map(|a| a["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ARMS);
    assert_eq!(v["scenario"]["run"]["mode"], "stochastic");
    // The embedded scenario with --baseline keeps the two-run comparison.
    let two = safegate(&["--baseline", "--json", "--duration", "20"]);
    let v: serde_json::Value = serde_json::from_slice(&two.stdout).unwrap();
    assert_eq!(v["arms"].as_array().unwrap().len(), 2);
    // A scenario with its own [boundary] is refused with --arms, not silently replaced.
    let own = safegate(&["run", &scenario("band-80-filtered.toml"), "--arms", "--no-svg"]);
    assert_eq!(own.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&own.stderr).contains("--arms brings its own boundaries"));
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

#[test]
fn bound_reproduces_the_worked_example() {
    let out = safegate(&[
        "bound",
        "--h0",
        "0.35",
        "--alpha",
        "1",
        "--sigma",
        "0.01",
        "--delta",
        "0.05",
        "--steps",
        "100",
        "--upper",
        "0.85",
        "--epsilon",
        "0.01",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!((v["freedman"]["lambda"].as_f64().unwrap() - 7.0).abs() < 1e-9);
    assert!((v["freedman"]["s2"].as_f64().unwrap() - 4.0).abs() < 1e-9);
    assert!((v["freedman"]["probability"].as_f64().unwrap() - 0.016).abs() < 0.0005);
    assert!((v["ville"].as_f64().unwrap() - 0.588).abs() < 0.001);
    assert!(v["inverse"]["required_h0"].as_f64().unwrap() > 0.35);
    let bad =
        safegate(&["bound", "--h0", "0.3", "--alpha", "1.5", "--sigma", "0.01", "--delta", "0.05", "--steps", "10"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--alpha"));
}

#[test]
fn verify_prints_the_headline_keys() {
    let boundary = format!("{}/../../boundaries/seed-80.toml", env!("CARGO_MANIFEST_DIR"));
    let out = safegate(&[
        "verify",
        "--boundary",
        &boundary,
        "--trials",
        "20",
        "--traffic-points",
        "1",
        "--health-points",
        "1",
        "--json",
    ]);
    // 20 trials cannot bring the 99 % upper limit under 1 %: exit status 1 (not a pass), with
    // the reason.
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in ["estimate", "ci_low", "ci_high", "trials"] {
        assert!(v["exit_probability"][key].is_number(), "{key}");
        assert!(v["unfiltered"]["exit_probability"][key].is_number(), "{key}");
    }
    assert_eq!(v["exit_probability"]["trials"], 20);
    assert_eq!(v["epsilon"], 0.01);
    assert_eq!(v["cvar"]["eta"], 0.05);
    assert_eq!(v["cvar"]["rho"], 0.05);
    assert!(v["feasible_fraction"].is_number() && v["backup_fraction"].is_number());
    let verdict = v["verdict"].as_str().unwrap();
    // No exit was seen, but 20 trials cannot show ε = 0.01 held: inconclusive, not a fail,
    // saying the trials were too few, not that ε was exceeded.
    assert!(verdict.starts_with("inconclusive"), "{verdict}");
    assert_eq!(v["outcome"], "inconclusive");
    assert_eq!(v["pass"], false);
    assert!(verdict.contains("ε not shown") && verdict.contains("528 trials"), "{verdict}");
    assert!(!verdict.contains("exit frequency above"), "{verdict}");
    assert_eq!(v["exit_probability"]["exits"], 0);
    assert_eq!(v["unfiltered"]["exit_probability"]["exits"], 20);
}

#[test]
fn run_under_a_boundary_stays_below_it() {
    let boundary = format!("{}/../../boundaries/seed-80.toml", env!("CARGO_MANIFEST_DIR"));
    let out = safegate(&["run", "--boundary", &boundary, "--json", "--no-svg"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["summary"]["queue_max"].as_f64().unwrap() <= 140.0, "{}", v["summary"]["queue_max"]);
    assert!(v["baseline"]["summary"]["queue_max"].as_f64().unwrap() > 190.0);
    assert!(v["label"].as_str().unwrap().starts_with("filtered"));
    let bad = safegate(&["run", "--boundary", "/nonexistent.toml", "--no-svg"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn compare_prints_every_arm_and_json_has_the_metrics() {
    let figs = std::env::temp_dir().join(format!("safegate-compare-figs-{}", std::process::id()));
    let out = safegate(&[
        "compare",
        "--cases",
        "dip-55,cycle-80",
        "--policies",
        "open,cycle+pool,gradient2",
        "--seeds",
        "1",
        "--duration",
        "120",
        "--figures",
        figs.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in
        ["dip-55 —", "cycle-80 —", "cycle+pool", "gradient2", "physical limit", "drain table", "goodput vs load"]
    {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    assert!(figs.join("compare-cycle-80.svg").exists());
    assert!(figs.join("compare-goodput-vs-load.svg").exists());

    let out = safegate(&[
        "compare",
        "--cases",
        "dip-55",
        "--policies",
        "open",
        "--seeds",
        "1",
        "--duration",
        "60",
        "--no-curve",
        "--json",
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let arms = v["cases"][0]["arms"].as_array().unwrap();
    assert_eq!(arms.len(), 2);
    for key in
        ["goodput", "goodput_ratio", "backlog_time", "sojourn_p99", "recovery", "beyond_boundary", "rejected_share"]
    {
        assert!(arms[0].get(key).is_some(), "{key}");
    }
    assert!(arms[1]["exit_probability"]["ci_high"].is_number());
    assert!(arms[1]["given_up_share"].is_number() && arms[0]["given_up_share"].is_null());

    let out = safegate(&["compare", "--policies", "nope", "--seeds", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown policy"));
}

#[test]
fn bench_overhead_prints_ns_per_request_and_the_ratio() {
    let out = safegate(&["bench", "overhead", "--requests", "20000", "--rounds", "1", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for figures in [&v, &v["contended"]] {
        for key in ["admission_ns", "concurrency_limit_ns", "ratio"] {
            let x = &figures[key];
            let ok = x.as_f64().is_some_and(|f| f.is_finite() && f > 0.0);
            assert!(ok, "{key}: {x}");
        }
        let (r, lo, hi) =
            (figures["ratio"].as_f64(), figures["ratio_range"][0].as_f64(), figures["ratio_range"][1].as_f64());
        assert!(matches!((r, lo, hi), (Some(r), Some(lo), Some(hi)) if lo <= r && r <= hi), "{figures}");
    }
}

/// Small things a new user met (issue "one shape"): `--json` writes no chart it was not
/// asked for, help text is plain, every mode is listed, retries print in words.
#[test]
fn json_writes_no_chart_and_help_is_plain() {
    let dir = std::env::temp_dir().join(format!("safegate-cli-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run =
        |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_safegate")).args(args).current_dir(&dir).output().unwrap();
    let out = run(&["run", "--json", "--duration", "20"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!dir.join("safegate-run.svg").exists(), "--json wrote safegate-run.svg");
    let help = String::from_utf8(run(&["run", "--help"]).stdout).unwrap();
    assert!(!help.contains("\\["), "escaped brackets in help: {help}");
    assert!(help.contains("stepped"), "{help}");
    let sc = scenario("retries-heavy-tail.toml");
    let out = run(&["run", &sc, "--no-svg", "--duration", "20"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("Constant {") && !text.contains("Health {"), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Standard output that fails is an error, not a panic: a full disk is exit 2 naming
/// standard output; a pipe closed early (`| head`) ends quietly with SIGPIPE's 141.
#[test]
fn a_failing_standard_output_is_an_error_not_a_panic() {
    use std::io::Read as _;
    use std::process::Stdio;
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_safegate"))
        .args(["run", "--no-svg", "--duration", "10"])
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot write to standard output") && !err.contains("panicked"), "{err}");

    // A reader that takes 10 bytes and closes the pipe.
    let mut child = Command::new(env!("CARGO_BIN_EXE_safegate"))
        .args(["run", "--json", "--no-svg"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Issue "`verify --trials 1` says fail (too few trials)": on evidence that thin the verdict
/// is "inconclusive", in the text and in --json, never a pass or a fail.
#[test]
fn verify_on_thin_evidence_is_inconclusive() {
    let boundary = format!("{}/../../boundaries/seed-80.toml", env!("CARGO_MANIFEST_DIR"));
    let args = ["verify", "--boundary", &boundary, "--trials", "1", "--traffic-points", "1", "--health-points", "1"];
    let out = safegate(&args);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let verdict = text.lines().find(|l| l.starts_with("verdict: ")).unwrap_or_else(|| panic!("{text}"));
    assert!(verdict.starts_with("verdict: inconclusive: "), "{verdict}");
    assert!(!verdict.contains("fail") && verdict.contains("CVaR not judged"), "{verdict}");
    let out = safegate(&[&args[..], &["--json"]].concat());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["outcome"].as_str(), v["pass"].as_bool()), (Some("inconclusive"), Some(false)), "{v}");
    assert!(v["verdict"].as_str().unwrap().starts_with("inconclusive: "), "{v}");
}

/// Issue "an override that nothing reads is accepted in silence": `reproduce --set` with a
/// key no selected experiment or row reads is refused (exit status 2), naming the key, the
/// experiments or rows and what they read; a key some rows do not read is said so.
#[test]
fn reproduce_refuses_an_override_no_selected_experiment_reads() {
    let stderr = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).to_string();
    for (only, set, named) in [
        ("", "traffic.rate=5", "(ceiling, recovery, pinned, poa, band, severity, imm, frontier, probebw, game)"),
        ("band", "gate.threshold=0.5", "(band)"),
        ("band", "health.start=30", "(band)"),
        ("severity", "model.rate=36", "(severity)"),
        ("band-80-floor-analytic", "run.dt=0.02", "(band-80-floor-analytic)"),
        ("pinned", "retries.probability=0.3", "(pinned)"),
    ] {
        let mut args = vec!["reproduce", "--set", set];
        if !only.is_empty() {
            args.extend(["--only", only]);
        }
        let out = safegate(&args);
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        let key = set.split('=').next().unwrap();
        assert!(
            e.starts_with(&format!("error: --set {key}: not read by any selected experiment or row {named}")),
            "{e}"
        );
        assert!(e.contains("what they read: "), "{e}");
        assert!(out.stdout.is_empty(), "nothing is run: {}", String::from_utf8_lossy(&out.stdout));
    }
    // Read by some rows only: run, and the rows it does not reach are named.
    let out = safegate(&["reproduce", "--only", "band,usl", "--set", "run.dt=0.02"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(text.contains("model changed from the seed's: run.dt = 0.02"), "{text}");
    assert!(text.contains("run.dt does not reach 2 of 6 rows: band-80-floor-analytic, usl"), "{text}");
    let out = safegate(&["reproduce", "--only", "band,usl", "--set", "run.dt=0.02", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for r in rows.as_array().unwrap() {
        let unread = r["overrides_not_read"].as_array().unwrap();
        let expect = ["band-80-floor-analytic", "usl"].contains(&r["id"].as_str().unwrap());
        assert_eq!(unread.len(), usize::from(expect), "{r}");
    }
}

/// Issue "a 100,000-deep TOML array gets a 200 KB error line": a parse error names the
/// input and quotes at most a bounded excerpt of it, for a scenario file, a boundary file,
/// an override's value and telemetry alike (exit status 2).
#[test]
fn parse_errors_quote_a_bounded_excerpt_of_the_input() {
    let dir = std::env::temp_dir().join(format!("safegate-cli-deep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let file = |name: &str, text: String| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let scenario = file("deep-scenario.toml", format!("[traffic]\nrate = {}\n", deep(100_000)));
    let boundary = file("deep-boundary.toml", format!("[barrier]\nthreshold = {}\n", deep(100_000)));
    let telemetry = file("long.csv", format!("time,queue\n0,1\n1,{}\n", "[".repeat(100_000)));
    // An argument is at most 128 KiB: 60,000 deep.
    let over = format!("model.rate={}", deep(60_000));
    let bad: [(Vec<&str>, &str); 5] = [
        (vec!["run", &scenario, "--no-svg"], &scenario),
        (vec!["verify", "--boundary", &boundary], &boundary),
        (vec!["reproduce", "--set", &over], "model.rate"),
        (vec!["run", "--set", &over, "--no-svg"], "model.rate"),
        (vec!["boundary", "check", &telemetry], &telemetry),
    ];
    for (args, names) in bad {
        let out = safegate(&args);
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", &e[..e.len().min(300)]);
        assert!(e.len() < 1000 && e.lines().count() == 1, "{args:?}: {} bytes: {}…", e.len(), &e[..e.len().min(300)]);
        assert!(e.contains(names) && e.contains("[[[[…"), "{args:?}: {e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue "boundary check on a directory or on binary data adds 'telemetry is read up to
/// 448 MiB (split it)' to an unrelated cause": only the cause is printed.
#[test]
fn boundary_check_names_the_cause_alone() {
    let dir = std::env::temp_dir().join(format!("safegate-cli-telemetry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let binary = dir.join("binary.csv");
    std::fs::write(&binary, b"time,queue\n0,1\n\xff\xfe\x00\x01\n").unwrap();
    for (path, cause) in [(dir.display().to_string(), "directory"), (binary.display().to_string(), "not UTF-8")] {
        let out = safegate(&["boundary", "check", &path]);
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{e}");
        assert!(e.starts_with(&format!("error: {path}: cannot read: ")) && e.contains(cause), "{e}");
        assert!(!e.contains("MiB") && !e.contains("split"), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `run` refuses an override its scenario never reads (a dip's shape on a constant health,
/// a retry setting with retries off), as `reproduce` does for its experiments.
#[test]
fn run_refuses_an_override_its_scenario_does_not_read() {
    let out = safegate(&["run", "--health", "constant", "--set", "health.low=0.3", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("health.low") && err.contains("would change nothing"), "{err}");
    // What it reads is still taken.
    let ok = safegate(&["run", "--set", "health.low=0.3", "--duration", "50", "--json"]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
}
