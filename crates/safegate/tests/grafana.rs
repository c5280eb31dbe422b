//! grafana/safegate-dashboard.json: a valid Grafana dashboard (schema 39, a datasource
//! variable, panels placed on the 24-column grid) whose every PromQL expression names only
//! metrics the tower layer or the live system publishes, read from their source at test
//! time (docs/grafana.md).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn dashboard() -> Value {
    let text = std::fs::read_to_string(root().join("grafana/safegate-dashboard.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The `safegate_*` names in string literals of the two metrics.rs files and of the fleet's
/// gates (`safegate fleet --metrics`), and which of them
/// are histograms (whose `_bucket`, `_sum` and `_count` series are published too).
fn exported() -> (BTreeSet<String>, BTreeSet<String>) {
    let mut names = BTreeSet::new();
    let mut histograms = BTreeSet::new();
    for file in [
        "crates/safegate-tower/src/metrics.rs",
        "crates/safegate-live/src/metrics.rs",
        "crates/safegate/src/fleet_cmd.rs",
    ] {
        let src = std::fs::read_to_string(root().join(file)).unwrap();
        for (i, _) in src.match_indices("\"safegate_") {
            let name: String = src[i + 1..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if src[..i].ends_with("histogram!(") {
                histograms.insert(name.clone());
            }
            names.insert(name);
        }
    }
    (names, histograms)
}

/// Metric names in a PromQL expression: every identifier followed by `{` or `[` (a selector)
/// and every identifier starting with `safegate_`. Quoted label values are skipped.
fn metrics_in(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let after = chars[i..].iter().find(|c| !c.is_whitespace());
            // `sum by (x)` and `{job=~"…"}`: label names sit inside (…) or before `=`.
            let selector = matches!(after, Some('{') | Some('['));
            if word.starts_with("safegate_") || selector {
                out.push(word);
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Every panel, those inside collapsed rows too.
fn panels(d: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        out.push(p);
        if let Some(inner) = p["panels"].as_array() {
            out.extend(inner);
        }
    }
    out
}

#[test]
fn every_expression_names_only_metrics_we_publish() {
    let (names, histograms) = exported();
    // The reading itself must see the metrics, or the check below would pass on nothing.
    for n in
        ["safegate_barrier_margin", "safegate_backlog_bound", "safegate_jobs_lost", "safegate_requests_rejected_total"]
    {
        assert!(names.contains(n), "{n} not read from the sources: {names:?}");
    }
    assert!(histograms.contains("safegate_request_duration_seconds"), "{histograms:?}");

    let d = dashboard();
    let mut used = BTreeSet::new();
    let mut exprs = 0;
    for p in panels(&d) {
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().unwrap_or_else(|| panic!("a target of {} has no expr", p["title"]));
            exprs += 1;
            let found = metrics_in(expr);
            assert!(!found.is_empty(), "{expr}: names no metric");
            for m in found {
                let base = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|s| m.strip_suffix(s).filter(|b| histograms.contains(*b)))
                    .unwrap_or(&m);
                assert!(names.contains(base), "panel {}: {m} is not published by safegate", p["title"]);
                used.insert(base.to_string());
            }
        }
    }
    assert!(exprs >= 20, "{exprs} expressions");
    // The board covers what the brief asks of it.
    for m in [
        "safegate_backlog",
        "safegate_backlog_bound",
        "safegate_waiting",
        "safegate_in_flight",
        "safegate_limit",
        "safegate_barrier_margin",
        "safegate_admit_share",
        "safegate_requests_offered_total",
        "safegate_requests_admitted_total",
        "safegate_requests_rejected_total",
        "safegate_requests_failed_total",
        "safegate_filter_interventions_total",
        "safegate_backup_activations_total",
        "safegate_observed_exit_frequency",
        "safegate_request_duration_seconds",
        "safegate_jobs_completed_total",
        "safegate_jobs_retried_total",
        "safegate_jobs_redelivered_total",
        "safegate_jobs_lost",
        "safegate_fleet_gate_mode",
        "safegate_fleet_grants_total",
        "safegate_fleet_silences_total",
        "safegate_fleet_decisions_without_price_total",
    ] {
        assert!(used.contains(m), "no panel shows {m}");
    }
}

#[test]
fn the_checker_catches_a_metric_we_do_not_publish() {
    assert_eq!(
        metrics_in(r#"sum by (reason) (rate(safegate_nope_total{job=~"a{b"}[5m])) / up{x="safegate_y"}"#),
        ["safegate_nope_total", "up"]
    );
    let (names, _) = exported();
    assert!(!names.contains("safegate_nope_total"));
}

#[test]
fn the_dashboard_is_valid_grafana_with_a_datasource_variable() {
    let d = dashboard();
    assert_eq!(d["schemaVersion"], 39);
    assert!(d["uid"].is_string() && d["title"].is_string());
    let vars = d["templating"]["list"].as_array().unwrap();
    let ds = vars.iter().find(|v| v["type"] == "datasource").expect("a datasource variable");
    assert_eq!(ds["query"], "prometheus");
    let var = format!("${{{}}}", ds["name"].as_str().unwrap());
    let mut ids = BTreeSet::new();
    for p in panels(&d) {
        assert!(ids.insert(p["id"].as_u64().unwrap()), "duplicate panel id {}", p["id"]);
        let g = &p["gridPos"];
        let (x, w, h) = (g["x"].as_u64().unwrap(), g["w"].as_u64().unwrap(), g["h"].as_u64().unwrap());
        assert!(g["y"].is_u64() && w > 0 && h > 0 && x + w <= 24, "{}: gridPos {g}", p["title"]);
        if p["type"] == "row" {
            continue;
        }
        assert!(["timeseries", "stat"].contains(&p["type"].as_str().unwrap()), "{}", p["type"]);
        assert_eq!(p["datasource"]["uid"], var.as_str(), "{}", p["title"]);
        let targets = p["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{}", p["title"]);
        let refs: BTreeSet<&str> = targets.iter().map(|t| t["refId"].as_str().unwrap()).collect();
        assert_eq!(refs.len(), targets.len(), "{}: refIds repeat", p["title"]);
    }
}
