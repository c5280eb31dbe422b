//! grafana/safegate-dashboard.json: a valid Grafana dashboard (schema 39, a datasource
//! variable, panels placed on the 24-column grid) whose every PromQL expression names only
//! metrics the tower layer or the live system publishes, read from their source at test
//! time, and returns data from a real Prometheus scraping a live run and a fleet
//! (docs/grafana.md).

#[allow(dead_code)]
mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn dashboard() -> Value {
    let text = std::fs::read_to_string(root().join("grafana/safegate-dashboard.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Where the published names are used: the tower layer's and the live system's
/// `metrics.rs`, and the fleet's gates (`safegate fleet --metrics`); the shared names are
/// defined in `safegate_core::names`.
const TOWER: &str = "crates/safegate-tower/src/metrics.rs";
const LIVE: &str = "crates/safegate-live/src/metrics.rs";
const FLEET: &str = "crates/safegate-live/src/fleet/prometheus.rs";

/// The names of `safegate_core::names`: each constant's identifier and its value.
const NAMES: &str = "crates/safegate-core/src/names.rs";

fn named_constants() -> Vec<(String, String)> {
    let src = std::fs::read_to_string(root().join(NAMES)).unwrap();
    src.lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("pub const ")?;
            let (ident, value) = rest.split_once(": &str = \"")?;
            Some((ident.to_string(), value.split('"').next()?.to_string()))
        })
        .filter(|(_, v)| v.starts_with("safegate_"))
        .collect()
}

/// The `safegate_*` names `files` publish, written as string literals or as
/// `names::CONSTANT`, and which of them are histograms (whose `_bucket`, `_sum` and `_count`
/// series are published too).
fn published_in(files: &[&str]) -> (BTreeSet<String>, BTreeSet<String>) {
    let constants = named_constants();
    let mut names = BTreeSet::new();
    let mut histograms = BTreeSet::new();
    for file in files {
        let src = std::fs::read_to_string(root().join(file)).unwrap();
        for (i, _) in src.match_indices("\"safegate_") {
            let name: String = src[i + 1..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if src[..i].ends_with("histogram!(") {
                histograms.insert(name.clone());
            }
            names.insert(name);
        }
        for (i, _) in src.match_indices("names::") {
            let ident: String = src[i + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if let Some((_, value)) = constants.iter().find(|(k, _)| *k == ident) {
                if src[..i].ends_with("histogram!(") {
                    histograms.insert(value.clone());
                }
                names.insert(value.clone());
            }
        }
    }
    (names, histograms)
}

/// Every name safegate publishes, and the histograms among them.
fn exported() -> (BTreeSet<String>, BTreeSet<String>) {
    published_in(&[TOWER, LIVE, FLEET])
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

/// `GET path` from `127.0.0.1:port` over HTTP/1.0: the status and the body.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n").ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let code = raw.split_whitespace().nth(1)?.parse().ok()?;
    let body = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string();
    Some((code, body))
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64()
}

/// Waits for `child` to exit within `limit`; kills it and fails otherwise.
fn wait_for(child: &mut Child, what: &str, limit: Duration, log: &Path) {
    let t = Instant::now();
    while t.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            let err = std::fs::read_to_string(log).unwrap_or_default();
            assert!(status.success(), "{what} failed ({status}):\n{err}");
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("{what} did not end within {limit:?}");
}

/// The board against a real Prometheus (Debian's `prometheus`, installed by `scripts/test`;
/// `SAFEGATE_PROMETHEUS` names another binary): it scrapes a short `safegate live` run
/// under a boundary and a `safegate fleet` run through a coordinator outage every 0.5 s,
/// then every expression of the board is evaluated over the runs' time with its HTTP API.
/// Each must be valid PromQL, and each that names a metric the live system or the fleet
/// publishes must return data; only the tower layer's own series (its request duration,
/// dry-run and cancelled requests) may come back empty here.
#[test]
fn every_expression_returns_data_from_a_real_prometheus() {
    let bin = std::env::var("SAFEGATE_PROMETHEUS").unwrap_or_else(|_| "prometheus".into());
    assert!(
        Command::new(&bin).arg("--version").output().is_ok_and(|o| o.status.success()),
        "{bin} is not installed: apt-get install -y prometheus (scripts/test installs it)"
    );
    let dir = std::env::temp_dir().join(format!("safegate-prometheus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (prom, live, fleet) = (free_port(), free_port(), free_port());
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global: {{ scrape_interval: 500ms, scrape_timeout: 400ms }}\nscrape_configs:\n  \
             - {{ job_name: live, static_configs: [{{ targets: ['127.0.0.1:{live}'] }}] }}\n  \
             - {{ job_name: fleet, static_configs: [{{ targets: ['127.0.0.1:{fleet}'] }}] }}\n"
        ),
    )
    .unwrap();
    let log = |name: &str| std::fs::File::create(dir.join(name)).unwrap();
    let _prometheus = common::Server(
        Command::new(&bin)
            .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{prom}"))
            .stdout(Stdio::null())
            .stderr(log("prometheus.log"))
            .spawn()
            .unwrap(),
    );
    let t = Instant::now();
    while http_get(prom, "/-/ready").is_none_or(|(c, _)| c != 200) {
        let log = std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default();
        assert!(t.elapsed() < Duration::from_secs(30), "prometheus not ready within 30 s:\n{log}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Prometheus applies its targets up to 5 s after it starts: the runs wait for both to be
    // listed, so that every second of theirs is scraped.
    let listed = || {
        http_get(prom, "/api/v1/targets").map_or(0, |(_, body)| {
            serde_json::from_str::<Value>(&body)
                .map_or(0, |v| v["data"]["activeTargets"].as_array().map_or(0, Vec::len))
        })
    };
    while listed() < 2 {
        assert!(t.elapsed() < Duration::from_secs(30), "prometheus listed no targets within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }

    let start = unix_now();
    let safegate = |args: &[&str], err: &str| {
        common::Server(
            Command::new(env!("CARGO_BIN_EXE_safegate"))
                .args(args)
                .stdout(Stdio::null())
                .stderr(log(err))
                .spawn()
                .unwrap(),
        )
    };
    let boundary = root().join("boundaries/seed-80.toml");
    // The gate's θ (0.9) differs from the boundary's (0.7): the margin is the boundary's.
    let mut live_run = safegate(
        &[
            "live",
            "--duration",
            "60",
            "--boundary",
            boundary.to_str().unwrap(),
            "--set",
            "gate.threshold=0.9",
            "--no-sim",
            "--no-svg",
            "--metrics",
            &format!("127.0.0.1:{live}"),
        ],
        "live.log",
    );
    let mut fleet_run = safegate(
        &["fleet", "--nodes", "3", "--secs", "6", "--outage", "2:2", "--metrics", &format!("127.0.0.1:{fleet}")],
        "fleet.log",
    );
    wait_for(&mut fleet_run.0, "safegate fleet", Duration::from_secs(60), &dir.join("fleet.log"));
    wait_for(&mut live_run.0, "safegate live", Duration::from_secs(60), &dir.join("live.log"));
    std::thread::sleep(Duration::from_secs(1));
    let end = unix_now();

    let query = |expr: &str| -> Vec<Value> {
        let path = format!(
            "/api/v1/query_range?query={}&start={start}&end={end}&step=0.5",
            percent_encode(&expr.replace("$job", ".*").replace("$__rate_interval", "2s"))
        );
        let (code, body) = http_get(prom, &path).expect("prometheus answers");
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{expr}: {e}: {body}"));
        assert!(code == 200 && v["status"] == "success", "{expr}: not valid PromQL here: {body}");
        v["data"]["result"].as_array().unwrap().clone()
    };
    let values = |series: &[Value]| -> Vec<f64> {
        series
            .iter()
            .flat_map(|s| s["values"].as_array().unwrap().iter().map(|p| p[1].as_str().unwrap().parse().unwrap()))
            .collect()
    };
    let (_, histograms) = exported();
    let (ours, _) = published_in(&[LIVE, FLEET]);
    let base = |m: &str| {
        ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| m.strip_suffix(s).filter(|b| histograms.contains(*b)))
            .unwrap_or(m)
            .to_string()
    };
    let d = dashboard();
    let (mut empty, mut with_data) = (Vec::new(), 0);
    for p in panels(&d) {
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().unwrap();
            let points = values(&query(expr)).len();
            let tower_only = metrics_in(expr).iter().all(|m| !ours.contains(&base(m)));
            eprintln!("{points:>5} points  {}: {expr}", p["title"].as_str().unwrap_or(""));
            if points > 0 {
                with_data += 1;
            } else if !tower_only {
                empty.push(format!("{}: {expr}", p["title"]));
            }
        }
    }
    assert!(empty.is_empty(), "expressions with no data from the live system or the fleet:\n{}", empty.join("\n"));
    assert!(with_data >= 20, "{with_data} expressions returned data");

    // What the series say: nothing lost, the margin measured against the boundary's line
    // (θ·cap = 0.7·200), and the outage seen in the gates' modes.
    let lost = values(&query(r#"max(safegate_jobs_lost{job="live"})"#));
    assert!(!lost.is_empty() && lost.iter().all(|&x| x == 0.0), "{lost:?}");
    let margin = values(&query(r#"safegate_barrier_margin{job="live"}"#));
    assert!(margin.iter().all(|&m| m <= 140.0) && margin.iter().any(|&m| m < 140.0), "{margin:?}");
    let unpriced = values(&query(r#"sum(safegate_fleet_gate_mode{job="fleet", mode=~"frozen|held-expired|share"})"#));
    assert!(unpriced.iter().any(|&n| n > 0.0), "no gate left the granted modes in the outage: {unpriced:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
