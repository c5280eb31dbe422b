//! The CLI's numeric flags under arbitrary values (issue "bad input"): the binary exits 0
//! (or 1, a failing verdict) or 2 (an error naming the input), within 60 s (the longest run
//! the budgets accept, 1e8 fluid steps for each of two variants, takes about 20 s in the test
//! profile) and 1 GiB of address space, and never panics or aborts.
//!
//! CI runs 48 cases (a few seconds: most values are refused at once); a long run on demand:
//! `FUZZ_CLI_CASES=2000 cargo test -p safegate --test fuzz_flags --release`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Any f64 a typo or a script produces, as the shell would pass it.
fn number() -> impl Strategy<Value = String> {
    let edges = prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("-inf".to_string()),
        Just("1e308".to_string()),
        Just("1e-12".to_string()),
        Just("1e12".to_string()),
        Just("18446744073709551615".to_string()),
        Just("0.5".to_string()),
        Just("3".to_string()),
    ];
    prop_oneof![
        2 => edges,
        2 => proptest::num::f64::ANY.prop_map(|x| format!("{x:e}")),
        1 => (0.0f64..200.0).prop_map(|x| format!("{x}")),
        1 => any::<u64>().prop_map(|x| x.to_string()),
    ]
}

/// A command line: a command and one to three of its numeric flags.
fn command_line() -> impl Strategy<Value = Vec<String>> {
    const RUN: &[&str] = &[
        "--traffic",
        "--threshold",
        "--sensitivity",
        "--duration",
        "--dt",
        "--seed",
        "--executors",
        "--comfortable",
        "--rate",
        "--capacity",
        "--every",
    ];
    const BOUND: &[&str] = &["--alpha", "--upper", "--epsilon"];
    let flags = |cmd: &'static [&'static str], fixed: &'static [&'static str], set: &'static [&'static str]| {
        proptest::collection::vec((proptest::sample::select(set), number()), 1..4).prop_map(move |pairs| {
            let mut v: Vec<String> = cmd.iter().chain(fixed).map(|s| s.to_string()).collect();
            for (k, x) in pairs {
                v.push(k.to_string());
                v.push(x);
            }
            v
        })
    };
    // verify's effort flags each take a fuzzed value or a small one: left at their defaults
    // (1,000 trials over 16 cells) a valid run takes tens of seconds, by design.
    let effort = |small: &'static str| prop_oneof![Just(small.to_string()), number()];
    let verify = (effort("10"), effort("1"), effort("1"), effort("1")).prop_map(|(t, p, h, s)| {
        let mut v: Vec<String> = ["verify", "--boundary", "BOUNDARY", "--json"].iter().map(|s| s.to_string()).collect();
        for (k, x) in [("--trials", t), ("--traffic-points", p), ("--health-points", h), ("--seed", s)] {
            v.push(k.to_string());
            v.push(x);
        }
        v
    });
    const CHECK: &[&str] = &["--capacity", "--threshold", "--epsilon", "--horizon", "--eta", "--retry-budget"];
    const SAMPLE: &[&str] = &["--seed", "--duration", "--dt"];
    prop_oneof![
        3 => flags(&["run"], &["--no-svg", "--json"], RUN),
        2 => verify,
        1 => flags(&["bound"], &["--h0", "0.3", "--sigma", "0.02", "--delta", "0.05", "--steps", "100"], BOUND),
        1 => flags(&["boundary", "check", "TELEMETRY"], &["--no-draft", "--json"], CHECK),
        1 => flags(&["boundary", "sample"], &[], SAMPLE),
    ]
}

fn boundary() -> String {
    format!("{}/../../boundaries/seed-80.toml", env!("CARGO_MANIFEST_DIR"))
}

/// Run the binary under a 1 GiB address-space limit with a 60 s deadline.
fn run(args: &[String]) -> Result<(i32, String), String> {
    let args: Vec<String> = args
        .iter()
        .map(|a| match a.as_str() {
            "BOUNDARY" => boundary(),
            "TELEMETRY" => format!("{}/../../telemetry/sim-heavy-tail.csv", env!("CARGO_MANIFEST_DIR")),
            _ => a.clone(),
        })
        .collect();
    let quoted: Vec<String> = args.iter().map(|a| format!("'{}'", a.replace('\'', ""))).collect();
    let script = format!("ulimit -v 1048576; exec '{}' {}", env!("CARGO_BIN_EXE_safegate"), quoted.join(" "));
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            let mut err = String::new();
            if let Some(mut s) = child.stderr.take() {
                std::io::Read::read_to_string(&mut s, &mut err).ok();
            }
            return match status.code() {
                Some(c) => Ok((c, err)),
                None => Err(format!("killed by a signal ({status}): {err}")),
            };
        }
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().ok();
            child.wait().ok();
            return Err("still running after 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn numeric_flags_exit_cleanly_within_budget() {
    let cases = std::env::var("FUZZ_CLI_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48);
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    runner
        .run(&command_line(), |args| {
            let (code, err) = run(&args).map_err(|e| TestCaseError::fail(format!("{args:?}: {e}")))?;
            if std::env::var_os("FUZZ_CLI_SHOW").is_some() {
                eprintln!("exit {code}: {}", args.join(" "));
            }
            prop_assert!(matches!(code, 0..=2), "{args:?}: exit {code}: {err}");
            prop_assert!(!err.contains("panicked"), "{args:?}: {err}");
            if code == 2 {
                // One line naming the problem.
                prop_assert!(err.starts_with("error:"), "{args:?}: {err}");
            }
            Ok(())
        })
        .unwrap();
}
