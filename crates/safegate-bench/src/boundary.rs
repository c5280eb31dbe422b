//! Seconds the telemetry checklist (`safegate_studies::telemetry::check`) takes on a
//! generated telemetry file: write the file, then per round read, parse and check it,
//! timed as one. The target: 10⁶ rows in at most 5 s.

use std::path::Path;
use std::time::Instant;

use safegate_core::stats::{median, quantile_sorted};
use safegate_core::RangeError;
use safegate_studies::telemetry::traces::{generate, Fault, TraceSpec};
use safegate_studies::telemetry::{self, CheckOptions, CheckReport, Format};
use serde::Serialize;

use crate::error::{Error, Result};

/// The target: seconds for 10⁶ rows.
pub const TARGET_SECONDS: f64 = 5.0;
/// Fewest rows.
pub const MIN_ROWS: u64 = 1_000;
/// Most rows of the Prometheus series: the text of a row is about 400 bytes, so 10⁶ rows
/// stay under its byte cap.
pub const MAX_PROMETHEUS_ROWS: u64 = 1_000_000;
/// Most rounds.
pub const MAX_ROUNDS: usize = 50;

/// What to time.
#[derive(Debug, Clone, Copy)]
pub struct BoundarySpec {
    /// Rows of telemetry (one every 0.1 s of the model): at least [`MIN_ROWS`], at most
    /// `telemetry::MAX_ROWS` (CSV) or [`MAX_PROMETHEUS_ROWS`] (with `prometheus`).
    pub rows: u64,
    /// Timed rounds: `[1, MAX_ROUNDS]`; the figure is their median.
    pub rounds: usize,
    /// Also time the Prometheus scrape series of the same telemetry.
    pub prometheus: bool,
}

/// The timing of one format.
#[derive(Debug, Serialize)]
pub struct Row {
    /// `csv` or `prometheus`.
    pub format: &'static str,
    /// Rows checked.
    pub rows: usize,
    /// Bytes of the file.
    pub bytes: u64,
    /// Median seconds of a round (read, parse, check).
    pub median_seconds: f64,
    /// Fastest round \[s\].
    pub min_seconds: f64,
    /// Rows per second at the median.
    pub rows_per_second: f64,
    /// [`TARGET_SECONDS`] scaled to the rows, for 10⁶ rows or more.
    pub target_seconds: Option<f64>,
    /// Whether the median meets the target, when there is one.
    pub meets_target: Option<bool>,
}

/// Check `spec`: an error names the field (`rows`, `rounds`).
pub fn check(a: &BoundarySpec) -> Result<()> {
    let most = if a.prometheus { MAX_PROMETHEUS_ROWS } else { telemetry::MAX_ROWS as u64 };
    if !(MIN_ROWS..=most).contains(&a.rows) {
        let why = if a.prometheus { " (with the Prometheus series: its text stays under its byte cap)" } else { "" };
        return Err(RangeError::new("rows", a.rows, format!("[{MIN_ROWS}, {most}]{why}")).into());
    }
    if !(1..=MAX_ROUNDS).contains(&a.rounds) {
        return Err(RangeError::new("rounds", a.rounds, format!("[1, {MAX_ROUNDS}]")).into());
    }
    Ok(())
}

/// Read, parse (the format sniffed, a CSV held to its byte cap) and check the file at `path`.
fn read_parse_check(path: &Path) -> Result<CheckReport> {
    let source = path.display().to_string();
    let text = safegate_sim::input::read_text(path, telemetry::MAX_PROMETHEUS_BYTES)
        .map_err(|e| Error::failed(format!("{source}: cannot read"), e))?;
    let format = telemetry::sniff(&text);
    if format == Format::Csv && text.len() as u64 > telemetry::MAX_CSV_BYTES {
        return Err(Error::Message(format!(
            "{source}: {} bytes of CSV, more than {} MiB (the most a CSV telemetry file may hold)",
            text.len(),
            telemetry::MAX_CSV_BYTES >> 20
        )));
    }
    let tel = telemetry::parse_as(&source, &text, format).map_err(|e| Error::failed("parsing", e))?;
    drop(text);
    telemetry::check(&tel, &CheckOptions { capacity: None, ..CheckOptions::default() }, &source)
        .map_err(|e| Error::failed("checking", e))
}

/// Generate `spec.rows` rows of telemetry (the model with a heavy-tailed fault, seed 1),
/// write it as CSV (and as Prometheus scrapes) to a temporary directory, and time
/// `spec.rounds` rounds of reading, parsing and checking each file.
pub fn boundary(spec: &BoundarySpec) -> Result<Vec<Row>> {
    check(spec)?;
    let trace = TraceSpec { duration: spec.rows as f64 * 0.1, dt: 0.1, ..TraceSpec::new(Fault::HeavyTail, 1) };
    let tel = generate(&trace);
    let dir = std::env::temp_dir().join(format!("safegate-bench-boundary-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::failed(format!("creating {}", dir.display()), e))?;
    let mut formats = vec![("csv", dir.join("telemetry.csv"), tel.to_csv())];
    if spec.prometheus {
        formats.push(("prometheus", dir.join("telemetry.prom"), tel.to_prometheus()));
    }
    drop(tel);
    let mut rows = Vec::new();
    for (name, path, text) in formats {
        std::fs::write(&path, &text).map_err(|e| Error::failed(format!("writing {}", path.display()), e))?;
        let bytes = text.len() as u64;
        drop(text);
        let mut times = Vec::with_capacity(spec.rounds);
        let mut n = 0;
        for _ in 0..spec.rounds {
            let t0 = Instant::now();
            let report = read_parse_check(&path)?;
            times.push(t0.elapsed().as_secs_f64());
            n = report.rows;
            std::hint::black_box(report);
        }
        times.sort_unstable_by(f64::total_cmp);
        let median = median(&times).unwrap_or(f64::NAN);
        let target = (n >= 1_000_000).then_some(TARGET_SECONDS * n as f64 / 1e6);
        rows.push(Row {
            format: name,
            rows: n,
            bytes,
            median_seconds: median,
            min_seconds: quantile_sorted(&times, 0.0).unwrap_or(f64::NAN),
            rows_per_second: n as f64 / median,
            target_seconds: target,
            meets_target: target.map(|t| median <= t),
        });
        let _ = std::fs::remove_file(&path);
    }
    let _ = std::fs::remove_dir(&dir);
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_file_is_timed_in_both_formats() {
        let rows = boundary(&BoundarySpec { rows: 2_000, rounds: 2, prometheus: true }).expect("timed");
        let formats: Vec<&str> = rows.iter().map(|r| r.format).collect();
        assert_eq!(formats, ["csv", "prometheus"]);
        for r in &rows {
            assert_eq!(r.rows, 2_000, "{r:?}");
            assert!(r.min_seconds <= r.median_seconds && r.median_seconds > 0.0, "{r:?}");
            assert_eq!(r.target_seconds, None, "the target is for 10⁶ rows");
        }
    }

    #[test]
    fn bad_inputs_name_the_field() {
        let field = |rows, rounds, prometheus| {
            check(&BoundarySpec { rows, rounds, prometheus }).unwrap_err().field().map(String::from)
        };
        assert_eq!(field(999, 3, false).as_deref(), Some("rows"));
        assert_eq!(field(MAX_PROMETHEUS_ROWS + 1, 3, true).as_deref(), Some("rows"));
        assert_eq!(field(1_000, 0, false).as_deref(), Some("rounds"));
    }
}
