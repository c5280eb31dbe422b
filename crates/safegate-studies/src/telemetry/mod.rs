//! A user's telemetry, and the seed's checklist run on it ("Compute Your Own Boundary, a
//! Checklist"): `safegate boundary check`.
//!
//! Two formats are read (docs/boundary-check.md §Telemetry formats):
//!
//! - **CSV** with a header: `time` \[s\], `queue` (or `in_flight`), and optionally `latency`
//!   \[s\], `throughput` and `offered` \[req/s\], `health`, `rejections`, `retries` (counts in
//!   the interval ending at the row; `*_total` columns are cumulative counters), `limit`
//!   and `capacity`.
//! - **Prometheus text format**, a series of scrapes of safegate's own metrics (the live
//!   system's or the tower layer's `/metrics`), one after another, with sample timestamps or
//!   `safegate_model_time_seconds` giving each scrape's time.
//!
//! Either becomes a [`Telemetry`]: one row per sample, every column a rate or a level, so
//! the checks ([`check`]) need not care where it came from. Malformed input is an error
//! naming the line, never a panic.

mod check;
mod csv;
mod prom;
pub mod traces;

use std::fmt;

pub use check::{
    check, Cell, CheckOptions, CheckReport, Excursions, ExitCheck, Feasibility, Finding, FindingKind, Margin, Severity,
};

/// Most rows (CSV rows, Prometheus scrapes) a telemetry file may have: a month at one
/// sample per second is 2.6 M. Every row is held in memory (8 bytes per column read) while
/// the checks run; at this cap the largest accepted file peaks under 700 MB resident
/// (docs/boundary-check.md §Telemetry formats, its "Limits" paragraph).
pub const MAX_ROWS: usize = 3_000_000;
/// Most bytes of a CSV telemetry file (the text is held while it is parsed).
pub const MAX_CSV_BYTES: u64 = 256 << 20;
/// Most bytes of a Prometheus scrape series (about ten lines per scrape, each read metric
/// costing 8 bytes per scrape besides its text).
pub const MAX_PROMETHEUS_BYTES: u64 = 448 << 20;
/// Largest queue depth, in-flight count or limit read: the capacity budget (1e8).
pub const MAX_LEVEL: f64 = safegate_core::error::check::MAX_CAPACITY;
/// Largest rate read \[req/s\] (a counter's increase per second included): what a boundary's
/// envelope accepts (1e7).
pub const MAX_RATE: f64 = safegate_sim::limits::MAX_RATE;

/// The signal the barrier reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// Queue depth (the seed's backlog occupancy).
    Queue,
    /// Requests in flight.
    InFlight,
}

impl Signal {
    /// `queue` or `in_flight`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Queue => "queue",
            Signal::InFlight => "in_flight",
        }
    }
}

/// One telemetry series, one row per sample. Every optional column has the length of `t`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Telemetry {
    /// Time \[s\], strictly increasing.
    pub t: Vec<f64>,
    /// Which signal `x` is.
    pub signal: Option<Signal>,
    /// The barrier's signal: queue depth or requests in flight.
    pub x: Vec<f64>,
    /// Mean latency over the interval \[s\].
    pub latency: Option<Vec<f64>>,
    /// Completions per second.
    pub throughput: Option<Vec<f64>>,
    /// Offered requests per second.
    pub offered: Option<Vec<f64>>,
    /// Downstream health in \[0, 1\].
    pub health: Option<Vec<f64>>,
    /// Rejections per second.
    pub rejections: Option<Vec<f64>>,
    /// Retries per second.
    pub retries: Option<Vec<f64>>,
    /// The concurrency limit a controller published.
    pub limit: Option<Vec<f64>>,
    /// The queue's capacity, if the data says.
    pub capacity: Option<f64>,
    /// Columns read but not used, for the report.
    pub ignored: Vec<String>,
}

impl Telemetry {
    /// Rows.
    pub fn len(&self) -> usize {
        self.t.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.t.is_empty()
    }

    /// The optional columns present, by name.
    pub fn columns(&self) -> Vec<&'static str> {
        let mut c = vec!["time", self.signal.unwrap_or(Signal::Queue).name()];
        for (name, present) in [
            ("latency", self.latency.is_some()),
            ("throughput", self.throughput.is_some()),
            ("offered", self.offered.is_some()),
            ("health", self.health.is_some()),
            ("rejections", self.rejections.is_some()),
            ("retries", self.retries.is_some()),
            ("limit", self.limit.is_some()),
        ] {
            if present {
                c.push(name);
            }
        }
        c
    }

    /// Write as the CSV [`parse`] reads (counts per interval for rejections and retries;
    /// the capacity, when known, as a constant column).
    pub fn to_csv(&self) -> String {
        use std::fmt::Write;
        let mut names = self.columns();
        if self.capacity.is_some() {
            names.push("capacity");
        }
        let mut o = String::with_capacity(self.len() * 48);
        let _ = writeln!(o, "{}", names.join(","));
        for i in 0..self.len() {
            let dt = if i == 0 { self.t.get(1).map_or(0.0, |t1| t1 - self.t[0]) } else { self.t[i] - self.t[i - 1] };
            let _ = write!(o, "{},{}", fmt_num(self.t[i]), fmt_num(self.x[i]));
            for (col, per_interval) in [
                (&self.latency, false),
                (&self.throughput, false),
                (&self.offered, false),
                (&self.health, false),
                (&self.rejections, true),
                (&self.retries, true),
                (&self.limit, false),
            ] {
                if let Some(v) = col {
                    let x = if per_interval { (v[i] * dt).round() } else { v[i] };
                    let _ = write!(o, ",{}", fmt_num(x));
                }
            }
            if let Some(c) = self.capacity {
                let _ = write!(o, ",{}", fmt_num(c));
            }
            o.push('\n');
        }
        o
    }
}

impl Telemetry {
    /// Write as a series of Prometheus text-format scrapes of safegate's metrics, one per
    /// row, each sample stamped with the row's time in milliseconds (counters accumulate the
    /// rates). What the tower layer and the live system expose, under the same names.
    pub fn to_prometheus(&self) -> String {
        use std::fmt::Write;
        let mut o = String::with_capacity(self.len() * 400);
        let (mut completed, mut offered, mut rejected, mut retried, mut lat_sum) = (0.0, 0.0, 0.0, 0.0, 0.0);
        let queue_name = match self.signal.unwrap_or(Signal::Queue) {
            Signal::Queue => "safegate_backlog",
            Signal::InFlight => "safegate_in_flight",
        };
        for i in 0..self.len() {
            let dt = if i == 0 { 0.0 } else { self.t[i] - self.t[i - 1] };
            let ms = (self.t[i] * 1000.0).round() as i64;
            let done = self.throughput.as_ref().map_or(0.0, |v| (v[i] * dt).round());
            completed += done;
            offered += self.offered.as_ref().map_or(0.0, |v| (v[i] * dt).round());
            rejected += self.rejections.as_ref().map_or(0.0, |v| (v[i] * dt).round());
            retried += self.retries.as_ref().map_or(0.0, |v| (v[i] * dt).round());
            lat_sum += self.latency.as_ref().map_or(0.0, |v| v[i] * done);
            let _ = writeln!(o, "{queue_name} {} {ms}", fmt_num(self.x[i]));
            if let Some(c) = self.capacity {
                let _ = writeln!(o, "safegate_backlog_bound {} {ms}", fmt_num(c));
            }
            if let Some(l) = &self.limit {
                let _ = writeln!(o, "safegate_limit {} {ms}", fmt_num(l[i]));
            }
            if self.throughput.is_some() {
                let _ = writeln!(o, "safegate_jobs_completed_total {} {ms}", fmt_num(completed));
            }
            if self.latency.is_some() {
                let _ = writeln!(o, "safegate_request_duration_seconds_sum {} {ms}", fmt_num(lat_sum));
                let _ = writeln!(o, "safegate_request_duration_seconds_count {} {ms}", fmt_num(completed));
            }
            if self.offered.is_some() {
                let _ = writeln!(o, "safegate_requests_offered_total {} {ms}", fmt_num(offered));
            }
            if self.rejections.is_some() {
                let _ = writeln!(o, "safegate_requests_rejected_total{{reason=\"full\"}} {} {ms}", fmt_num(rejected));
            }
            if self.retries.is_some() {
                let _ = writeln!(o, "safegate_jobs_retried_total {} {ms}", fmt_num(retried));
            }
        }
        o
    }
}

fn fmt_num(x: f64) -> String {
    if x == x.round() && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{:.6}", x).trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Why telemetry could not be read: the file, the line (1-based) where it applies, what.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetryError {
    /// The input's name (its path).
    pub source: String,
    /// The line, when one is to blame.
    pub line: Option<usize>,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for TelemetryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}: {}", self.source, l, self.what),
            None => write!(f, "{}: {}", self.source, self.what),
        }
    }
}

impl std::error::Error for TelemetryError {}

/// Which format a text is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// CSV with a header.
    Csv,
    /// Prometheus text exposition format, a series of scrapes.
    Prometheus,
}

/// Guess the format: Prometheus when the first meaningful line is a `# HELP`/`# TYPE`
/// comment or a `name value` sample without commas; CSV otherwise.
pub fn sniff(text: &str) -> Format {
    for line in text.lines() {
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        if l.starts_with("# HELP") || l.starts_with("# TYPE") {
            return Format::Prometheus;
        }
        if l.starts_with('#') {
            continue;
        }
        let first = l.split(|c: char| c.is_whitespace() || c == '{').next().unwrap_or("");
        let metric_like = !first.is_empty()
            && first.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            && first.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        // `name{a="1",b="x"} value`: the commas are the labels', not a CSV's.
        let labelled = metric_like
            && l[first.len()..].starts_with('{')
            && l.find('}').is_some_and(|close| !l[close + 1..].trim().is_empty());
        if labelled {
            return Format::Prometheus;
        }
        return if !l.contains(',') && metric_like && l.split_whitespace().count() >= 2 {
            Format::Prometheus
        } else {
            Format::Csv
        };
    }
    Format::Csv
}

/// Read telemetry from `text`; `source` names it in errors. The format is sniffed.
pub fn parse(source: &str, text: &str) -> Result<(Telemetry, Format), TelemetryError> {
    let format = sniff(text);
    Ok((parse_as(source, text, format)?, format))
}

/// Read telemetry from `text` as `format`.
pub fn parse_as(source: &str, text: &str, format: Format) -> Result<Telemetry, TelemetryError> {
    match format {
        Format::Csv => csv::parse(source, text),
        Format::Prometheus => prom::parse(source, text),
    }
}

/// Turn a cumulative counter into a per-second rate per row; a decrease is a reset (the
/// counter restarted from 0, so the increase is the new value). The first row, which has
/// no interval of its own, takes the second's rate.
pub(crate) fn counter_to_rate(t: &[f64], c: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(c.len());
    out.push(0.0);
    for i in 1..c.len() {
        let d = if c[i] >= c[i - 1] { c[i] - c[i - 1] } else { c[i] };
        out.push(d / (t[i] - t[i - 1]));
    }
    if out.len() > 1 {
        out[0] = out[1];
    }
    out
}

/// The first row whose rate is above `most`: row 0 last, since a counter's first row only
/// copies the second's rate (the row to blame is the second).
pub(crate) fn first_above(v: &[f64], most: f64) -> Option<usize> {
    (1..v.len()).find(|&i| v[i] > most).or_else(|| v.first().is_some_and(|x| *x > most).then_some(0))
}

/// Turn counts per interval (ending at each row) into per-second rates; the first row's
/// interval is taken as the second row's.
pub(crate) fn counts_to_rate(t: &[f64], c: &[f64]) -> Vec<f64> {
    let first = if t.len() > 1 { t[1] - t[0] } else { 1.0 };
    (0..c.len()).map(|i| c[i] / if i == 0 { first } else { t[i] - t[i - 1] }).collect()
}

#[cfg(test)]
mod tests;
