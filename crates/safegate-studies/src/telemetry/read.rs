//! Reading telemetry: the input, bounded in size ([`read_input`]), which format a text is
//! in, the readers by format, and the error that names the line at fault.

use std::fmt;
use std::path::Path;

use super::{csv, prom, Telemetry};

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
        // What is wrong may quote the input (a cell, a metric name, a line): at most an
        // excerpt of it.
        let what = safegate_core::config_file::bounded_message(&self.what);
        match self.line {
            Some(l) => write!(f, "{}:{}: {what}", self.source, l),
            None => write!(f, "{}: {what}", self.source),
        }
    }
}

/// Read the telemetry at `path` (`-`: standard input), at most `limit` bytes whatever the
/// file claims (a device reports no size): its name in errors and its text. The error
/// names the input and the cause; the advice to split the file is given only when its size
/// is the cause (not for a directory, a missing file or binary data).
pub fn read_input(path: &Path, limit: u64) -> Result<(String, String), TelemetryError> {
    let name = path.display().to_string();
    let (source, read) = if name == "-" {
        ("<stdin>".to_string(), safegate_sim::input::read_bounded(std::io::stdin().lock(), limit))
    } else {
        (name, safegate_sim::input::read_text(path, limit))
    };
    match read {
        Ok(text) => Ok((source, text)),
        Err(e) => {
            let what = match safegate_sim::input::too_large(&e) {
                Some(_) => format!("cannot read: {e}; split it"),
                None => format!("cannot read: {e}"),
            };
            Err(TelemetryError { source, line: None, what })
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
