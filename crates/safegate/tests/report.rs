//! `safegate report --quick`: the HTML holds every section, the seed's rows, verdicts and
//! inline figures, names no external resource, and stays a reasonable size; a bad `--out`
//! is exit 2.

use std::process::Command;

use serde_json::Value;

/// Every row `safegate reproduce` checks against the seed (docs/reproduce.md).
const ROWS: [&str; 46] = [
    "ceiling",
    "usl",
    "no-drain-any-health",
    "recovery-55",
    "recovery-74.5",
    "recovery-sweep",
    "critical-slowing",
    "pinned-75",
    "pinned-76+",
    "poa-76",
    "poa-120",
    "poa-trend",
    "band-80-floor",
    "band-80-top",
    "band-80-floor-analytic",
    "band-80-off",
    "band-80-no-drain",
    "severity-epsilon",
    "severity-mean-median-3",
    "severity-mean-median-1.5",
    "severity-mean-median-1.1",
    "severity-worst-3",
    "severity-worst-1.5",
    "severity-worst-1.1",
    "severity-gap",
    "imm-false-alarm-gaussian",
    "imm-false-alarm-t3",
    "imm-false-alarm-t1.5",
    "imm-heavy-tail-ratio",
    "imm-robust-false-alarm-gaussian",
    "imm-robust-false-alarm-t3",
    "imm-robust-false-alarm-t1.5",
    "imm-robust-delay",
    "frontier-epsilon",
    "frontier-severity",
    "frontier-trade",
    "probebw-drain-table",
    "probebw-drain-75",
    "probebw-cruise",
    "probebw-cycles",
    "probebw-scar",
    "stag-hunt-nash",
    "stag-hunt-regret",
    "fleet-threshold",
    "fleet-sweep",
    "starvation-split",
];

/// Attribute or CSS forms that would make a browser fetch something.
const FETCHES: [&str; 6] = ["src=\"http", "href=\"http", "src='http", "href='http", "url(http", "@import"];

#[test]
fn quick_report_holds_every_section_row_verdict_and_figure_offline() {
    let dir = std::env::temp_dir().join(format!("safegate-report-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_safegate"))
        .args(["report", "--quick", "--json", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let path = dir.join("safegate-report.html");
    assert_eq!(summary["path"], path.display().to_string());
    let html = std::fs::read_to_string(&path).unwrap();
    // Written through a partial file, renamed at the end.
    assert!(!dir.join(".safegate-report.html.partial").exists());
    assert_eq!(summary["bytes"].as_u64(), Some(html.len() as u64));
    assert_eq!(summary["effort"], "quick");

    // Every section, as a heading the table of contents links to.
    for (id, heading) in [
        ("reproduce", "Reproduce: every worked result of the seed"),
        ("compare", "Compare: every controller with and without the filter"),
        ("verify", "Verify: the boundary files over their envelopes"),
        ("falsify", "Falsify: criteria F10–F19"),
    ] {
        assert!(html.contains(&format!("<h2 id=\"{id}\">{heading}</h2>")), "section {id} missing");
        assert!(html.contains(&format!("href=\"#{id}\"")), "no link to {id}");
    }

    // Reproduce: every experiment and every row of the seed, each with a verdict.
    for e in safegate_studies::experiments::ALL {
        assert!(html.contains(&format!("<td>{}</td>", e.id)), "experiment {} missing", e.id);
    }
    for row in ROWS {
        assert!(html.contains(&format!("<tr id=\"row-{row}\">")), "row {row} missing");
    }
    let section = &html[html.find("<h2 id=\"reproduce\">").unwrap()..html.find("<h2 id=\"compare\">").unwrap()];
    let verdicts = ["pass", "fail", "info"].iter().map(|v| section.matches(&format!("class=\"{v}\">{v}</td>")).count());
    assert_eq!(verdicts.sum::<usize>(), ROWS.len(), "one verdict per reproduce row");
    assert_eq!(summary["reproduce"]["rows"].as_u64(), Some(ROWS.len() as u64));

    // Compare: the thirteen default cases, each policy with the filter off and on.
    assert_eq!(summary["compare"]["cases"], 13);
    for case in ["dip-55", "dip-80", "cycle-80", "cycle-120", "spike-105", "heavy-tail-80", "retries-70"] {
        assert!(html.contains(&format!("<h3 id=\"case-{case}\">")), "compare case {case} missing");
    }
    assert!(html.contains("holds ε") || html.contains("violates ε") || html.contains("not established"));

    // Verify: the four boundary files, each with a pass or fail.
    for b in ["seed-80.toml", "seed-80-pool.toml", "gaussian-80.toml", "cantelli-80.toml"] {
        assert!(html.contains(&format!("<code>boundaries/{b}</code>")), "boundary {b} missing");
    }
    assert_eq!(summary["verify"].as_array().map(Vec::len), Some(4));

    // Falsify: F10–F19 each with a verdict word, F19 measured (evidence rows, not a skip).
    for n in 10..=19 {
        let id = format!("F{n}");
        let has = ["holds", "falsified", "inconclusive"]
            .iter()
            .any(|v| html.contains(&format!("<h3 id=\"{id}\">{id} — <span class=\"{v}\">{v}</span></h3>")));
        assert!(has, "{id} has no verdict heading");
    }
    assert!(html.contains("measured tail exponent"), "F19's measurement is missing");
    assert_eq!(summary["falsify"]["criteria"], 10);

    // Figures inline: reproduce's, compare's (13 cases + goodput vs load) and falsify's.
    let svgs = html.matches("<svg").count();
    assert!(svgs >= 25, "{svgs} inline figures");
    assert_eq!(summary["figures"].as_u64(), Some(svgs as u64));
    assert_eq!(html.matches("</svg>").count(), svgs);
    assert!(html.contains("goodput vs load") && html.contains("compare: cycle-80"));

    // Offline: nothing to fetch, no script.
    for f in FETCHES {
        assert!(!html.contains(f), "external reference {f:?}");
    }
    assert!(!html.contains("<script"), "the page needs no JavaScript");
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));

    // A reasonable size: the traces are thinned for the page (unthinned it is 7 MB).
    assert!((200_000..4_000_000).contains(&html.len()), "{} bytes", html.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unwritable_out_is_exit_2_before_any_work() {
    // A directory cannot be created under a regular file.
    let file = std::env::temp_dir().join(format!("safegate-report-file-{}", std::process::id()));
    std::fs::write(&file, "not a directory").unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_safegate"))
        .args(["report", "--quick", "--out"])
        .arg(file.join("sub"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--out"), "{err}");
    assert!(started.elapsed().as_secs_f64() < 5.0, "it failed only after measuring");
    let _ = std::fs::remove_file(&file);
}
