//! Numbers as the commands print them: in a bounded width (no 320-digit `1e-320`), no share
//! of a denominator of 0, no NaN or ∞ as a result, and an error naming the real rule for a
//! value refused (a subnormal one) or one whose derived values overflow.

use std::process::{Command, Output};

fn safegate(args: &[&str]) -> Output {
    let dir = std::env::temp_dir().join(format!("safegate-numbers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Command::new(env!("CARGO_BIN_EXE_safegate")).args(args).current_dir(&dir).output().expect("runs")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// No run of 25 digits (a float printed with `{}` past its magnitude: `1e-320` as
/// `0.000…01`, `1e300` as 301 digits), no NaN, no ∞ as a number, no `-0`.
fn readable(t: &str) {
    let mut run = 0;
    for c in t.chars() {
        run = if c.is_ascii_digit() { run + 1 } else { 0 };
        assert!(run < 25, "a number 25 digits long or more:\n{t}");
    }
    for bad in ["NaN", "= inf", "= -inf", "≤ inf", " -0 ", "= -0", "-0.0 "] {
        assert!(!t.contains(bad), "{bad:?} in:\n{t}");
    }
}

/// A file in the test's directory holding `text`.
fn file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("safegate-numbers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// `run --traffic 1e-320` printed "100 % of the physical limit 0.0 req/s" and a λ 330
/// digits long; `--traffic -0` printed `λ = -0`.
#[test]
fn a_run_with_next_to_no_traffic_has_no_share_of_its_limit() {
    for (traffic, lambda) in
        [("1e-320", "λ = 1e-320 req/s"), ("-0", "λ = 0 req/s"), ("0", "λ = 0 req/s"), ("5e-324", "λ = 5e-324 req/s")]
    {
        let out = safegate(&["run", "--traffic", traffic, "--duration", "40", "--no-svg"]);
        let t = text(&out);
        assert!(out.status.success(), "{traffic}: {t}");
        readable(&t);
        assert!(t.contains(lambda), "{traffic}: {t}");
        let verdicts = &t[t.find("verdicts (").expect("verdicts")..];
        let lines: Vec<&str> = verdicts.lines().skip(1).filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 4, "{verdicts}");
        for l in lines {
            assert!(l.contains(" n/a of the physical limit "), "{traffic}: {l}");
        }
    }
    // With traffic the share is a percentage, as before.
    let out = safegate(&["run", "--traffic", "55", "--duration", "40", "--no-svg"]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    readable(&t);
    assert!(t.contains("% of the physical limit") && !t.contains("n/a of"), "{t}");
}

/// Every scenario value the run header echoes is short, whatever its magnitude.
#[test]
fn the_run_header_echoes_values_in_a_bounded_width() {
    let out = safegate(&[
        "run",
        "--traffic",
        "1e7",
        "--set",
        "health.noise=1e-300",
        "--duration",
        "20",
        "--no-svg",
        "--baseline",
    ]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    readable(&t);
    assert!(t.contains("λ = 10000000 req/s"), "{t}");
    assert!(t.contains("noise 1e-300"), "{t}");
}

/// `bound --sigma 1e308 --delta 1e308` printed `s² = NaN`, `--sigma 1e200` `s² = inf`:
/// every result is a finite number, or the input is refused naming its flag.
#[test]
fn bound_never_prints_an_overflow() {
    let ok = |args: &[&str]| {
        let mut all = vec!["bound", "--h0", "0.35", "--steps", "100"];
        all.extend_from_slice(args);
        safegate(&all)
    };
    let out = ok(&["--sigma", "1e308", "--delta", "1e308"]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    readable(&t);
    assert!(t.contains("s² = 100.0000"), "{t}");
    for (sigma, delta) in [("1e200", "0.05"), ("1e200", "1"), ("1e160", "1e-3"), ("1e300", "1e-5")] {
        let out = ok(&["--sigma", sigma, "--delta", delta]);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{sigma} {delta}: {t}");
        assert!(t.contains(&format!("--sigma = {sigma} is out of range")) && t.contains("overflow"), "{t}");
        assert!(out.stdout.is_empty(), "{t}");
    }
    let out = safegate(&["bound", "--h0", "1e300", "--sigma", "0", "--delta", "1e-300", "--steps", "10"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("--h0 = 1e300 is out of range") && t.contains("overflow"), "{t}");
    // Magnitudes at both ends, with every bound asked: finite results, or a refusal.
    for sigma in ["0", "1e-320", "1e-300", "0.01", "1e150", "1e308"] {
        for delta in ["2.3e-308", "1e-150", "0.05", "1e150", "1e308"] {
            for h0 in ["-0", "1e-320", "0.35", "1e300"] {
                let out = safegate(&[
                    "bound",
                    "--h0",
                    h0,
                    "--sigma",
                    sigma,
                    "--delta",
                    delta,
                    "--steps",
                    "1000",
                    "--alpha",
                    "0.999",
                    "--upper",
                    "1e308",
                    "--epsilon",
                    "0.01",
                ]);
                let t = text(&out);
                readable(&t);
                match out.status.code() {
                    Some(0) => {
                        assert!(t.contains("λ = ") && t.contains("s² = "), "{t}");
                        assert!(!t.contains("inf") && !t.contains('∞'), "{h0} {sigma} {delta}: {t}");
                    }
                    Some(2) => assert!(t.contains("--") && t.contains("out of range"), "{t}"),
                    c => panic!("{c:?}: {t}"),
                }
            }
        }
    }
}

/// `bound --delta 1e-320` said "out of range: allowed (0, ∞)" of a value inside it: the
/// rule refused is that it is subnormal, and the message says so, for every field.
#[test]
fn a_subnormal_value_is_refused_as_subnormal() {
    const RULE: &str = "a normal float (≥ 2.2e-308)";
    for (flag, args) in [
        ("--delta", ["--h0", "0.35", "--sigma", "0.01", "--delta", "1e-320", "--steps", "10"]),
        ("--alpha", ["--h0", "0.35", "--sigma", "0.01", "--delta", "0.05", "--steps", "10"]),
        ("--epsilon", ["--h0", "0.35", "--sigma", "0.01", "--delta", "0.05", "--steps", "10"]),
    ] {
        let mut all = vec!["bound"];
        all.extend_from_slice(&args);
        if flag != "--delta" {
            all.extend_from_slice(&[flag, "4e-310"]);
        }
        let out = safegate(&all);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{t}");
        let v = if flag == "--delta" { "1e-320" } else { "4e-310" };
        assert!(t.contains(&format!("{flag} = {v} is out of range")), "{t}");
        assert!(t.contains(RULE) && t.contains(&format!("{v} is subnormal")), "{t}");
    }
    // Through a boundary file: the same rule, at the field's path.
    let seed =
        std::fs::read_to_string(format!("{}/../../boundaries/seed-80.toml", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let mut replaced = false;
    let text_b: String = seed
        .lines()
        .map(|l| {
            if !replaced && l.trim_start().starts_with("threshold") {
                replaced = true;
                "threshold = 1e-320".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(replaced);
    let path = file("subnormal-threshold.toml", &text_b);
    let out = safegate(&["run", "--boundary", &path, "--no-svg", "--duration", "10"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("barrier.threshold = 1e-320 is out of range"), "{t}");
    assert!(t.contains(RULE) && t.contains("1e-320 is subnormal"), "{t}");
}

/// `boundary check`'s options echoed in its errors: short, and the subnormal rule named.
#[test]
fn boundary_check_echoes_its_options_in_a_bounded_width() {
    let out = safegate(&["boundary", "sample", "--duration", "120"]);
    assert!(out.status.success(), "{}", text(&out));
    let csv = file("sample.csv", &String::from_utf8(out.stdout).unwrap());
    for (flag, value, shown) in [
        ("--horizon", "1e-320", "--horizon 1e-320: "),
        ("--horizon", "1e300", "--horizon 1e300: "),
        ("--threshold", "1e-320", "--threshold 1e-320: "),
    ] {
        let out = safegate(&["boundary", "check", &csv, "--no-draft", flag, value]);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{t}");
        readable(&t);
        assert!(t.contains(shown), "{t}");
    }
    let out = safegate(&["boundary", "check", &csv, "--no-draft", "--threshold", "1e-320"]);
    assert!(text(&out).contains("1e-320 is subnormal"), "{}", text(&out));
}
