//! The Prometheus text-format reader: a series of scrapes of safegate's metrics
//! (docs/boundary-check.md §Telemetry formats).
//!
//! A scrape's time is its samples' timestamp (milliseconds, the format's optional third
//! field) or, without timestamps, its `safegate_model_time_seconds` gauge. Without
//! timestamps a scrape ends where a series it already holds appears again. Series that
//! differ only in labels are summed (`safegate_requests_rejected_total{reason=…}`).

use std::collections::HashMap;

use super::{counter_to_rate, first_above, Signal, Telemetry, TelemetryError, MAX_LEVEL, MAX_RATE, MAX_ROWS};

/// What the checks read, by metric name: queue (live, then tower), in flight, limit,
/// capacity, and the counters.
const QUEUE: &[&str] = &["safegate_backlog", "safegate_waiting"];
const IN_FLIGHT: &str = "safegate_in_flight";
const LIMIT: &str = "safegate_limit";
const CAPACITY: &str = "safegate_backlog_bound";
const TIME: &str = "safegate_model_time_seconds";
const COMPLETED: &[&str] = &["safegate_jobs_completed_total", "safegate_request_duration_seconds_count"];
const LAT_SUM: &str = "safegate_request_duration_seconds_sum";
const LAT_COUNT: &str = "safegate_request_duration_seconds_count";
const OFFERED: &str = "safegate_requests_offered_total";
const REJECTED: &str = "safegate_requests_rejected_total";
const RETRIED: &str = "safegate_jobs_retried_total";

/// Most distinct series (metric name and labels) a scrape series may hold: safegate
/// exposes a few dozen; each costs memory for the whole file.
pub(super) const MAX_SERIES: usize = 100_000;

/// The scrapes, by column: per scrape where it starts (for errors) and its time (NaN: none
/// yet), and per metric read (by id) the sum of its series in each scrape, NaN where absent.
/// Only the metrics the checks read are kept: 8 bytes per scrape each.
struct Scrapes {
    line: Vec<usize>,
    time: Vec<f64>,
    values: Vec<Vec<f64>>,
}

impl Scrapes {
    fn len(&self) -> usize {
        self.line.len()
    }
}

pub(super) fn parse(source: &str, text: &str) -> Result<Telemetry, TelemetryError> {
    let err = |line: Option<usize>, what: String| TelemetryError { source: source.to_string(), line, what };
    // Metric names and series keys, interned: the text is scanned once, with no allocation
    // per sample.
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut keys: HashMap<&str, usize> = HashMap::new();
    let mut sc = Scrapes { line: Vec::new(), time: Vec::new(), values: Vec::new() };
    // Series keys seen in the current scrape, by key id: the scrape number that last saw it.
    let mut seen: Vec<usize> = Vec::new();
    let mut stamped: Option<bool> = None;
    for (li, raw) in text.lines().enumerate() {
        let lineno = li + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // name{labels} value [timestamp]
        let (key, rest) = match line.find('{') {
            Some(open) => {
                let close = line[open..]
                    .find('}')
                    .map(|c| open + c)
                    .ok_or_else(|| err(Some(lineno), "a `{` without its `}`".into()))?;
                (&line[..=close], line[close + 1..].trim())
            }
            None => match line.split_once(char::is_whitespace) {
                Some((k, r)) => (k, r.trim()),
                None => return Err(err(Some(lineno), format!("`{line}` has no value"))),
            },
        };
        let name = key.split('{').next().unwrap_or("").trim();
        if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':') {
            return Err(err(Some(lineno), format!("`{name}` is not a metric name")));
        }
        let mut fields = rest.split_ascii_whitespace();
        let vtext = fields.next().ok_or_else(|| err(Some(lineno), format!("metric `{name}` has no value")))?;
        let value: f64 = match vtext {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().map_err(|_| err(Some(lineno), format!("metric `{name}`: `{v}` is not a number")))?,
        };
        let ts = match fields.next() {
            Some(ts) => Some(
                ts.parse::<i64>().map_err(|_| {
                    err(Some(lineno), format!("metric `{name}`: timestamp `{ts}` is not an integer of milliseconds"))
                })? as f64
                    / 1000.0,
            ),
            None => None,
        };
        if fields.next().is_some() {
            return Err(err(Some(lineno), format!("metric `{name}`: more than a value and a timestamp")));
        }
        match (stamped, ts.is_some()) {
            (None, s) => stamped = Some(s),
            (Some(a), b) if a != b => {
                return Err(err(Some(lineno), "some samples have timestamps and some do not".into()));
            }
            _ => {}
        }
        let next_key = keys.len();
        if next_key >= MAX_SERIES && !keys.contains_key(key) {
            return Err(err(
                Some(lineno),
                format!("more than {MAX_SERIES} distinct series (metric names with their labels); keep safegate's metrics only"),
            ));
        }
        let kid = *keys.entry(key).or_insert(next_key);
        if kid >= seen.len() {
            seen.resize(kid + 1, usize::MAX);
        }
        // The current scrape is the last one (none before the first sample).
        let cur = sc.len().checked_sub(1);
        let boundary = match (cur, ts) {
            (None, _) => true,
            (Some(c), Some(ts)) => !sc.time[c].is_nan() && sc.time[c] != ts,
            (Some(c), None) => seen[kid] == c,
        };
        if boundary {
            if sc.len() >= MAX_ROWS {
                return Err(err(
                    Some(lineno),
                    format!("more than {MAX_ROWS} scrapes (the most a telemetry file may hold); split the file"),
                ));
            }
            sc.line.push(lineno);
            sc.time.push(f64::NAN);
        }
        let c = sc.len() - 1;
        seen[kid] = c;
        if let Some(ts) = ts {
            sc.time[c] = ts;
        }
        if !is_read(name) {
            continue;
        }
        if !value.is_finite() {
            // Histogram `+Inf` buckets are fine to skip; a NaN or infinite gauge we read is not.
            if !name.ends_with("_bucket") {
                return Err(err(Some(lineno), format!("metric `{name}`: {vtext} is not a finite number")));
            }
            continue;
        }
        if name == TIME && ts.is_none() {
            sc.time[c] = value;
        }
        let next_name = names.len();
        let nid = *names.entry(name).or_insert(next_name);
        if nid >= sc.values.len() {
            sc.values.push(Vec::new());
        }
        let col = &mut sc.values[nid];
        if col.len() <= c {
            col.resize(c + 1, f64::NAN);
        }
        let v = &mut col[c];
        *v = if v.is_nan() { value } else { *v + value };
    }
    if sc.len() == 0 {
        return Err(err(None, "no samples".into()));
    }
    // Times: strictly increasing.
    for i in 0..sc.len() {
        let ts = sc.time[i];
        if ts.is_nan() {
            return Err(err(
                Some(sc.line[i]),
                format!("this scrape has no time: give samples timestamps or include `{TIME}`"),
            ));
        }
        if i > 0 {
            let prev = sc.time[i - 1];
            if ts <= prev {
                let what = if ts == prev {
                    format!("scrape time {ts} repeats the previous scrape's")
                } else {
                    format!("scrape time {ts} is before the previous scrape's {prev}: scrapes must be in time order")
                };
                return Err(err(Some(sc.line[i]), what));
            }
        }
    }
    let t = std::mem::take(&mut sc.time);
    if t.len() < 2 {
        return Err(err(None, "one scrape: at least two are needed".into()));
    }
    let n = t.len();
    let lines = std::mem::take(&mut sc.line);
    let mut values = std::mem::take(&mut sc.values);
    // A metric's column, moved out (each is read once, but for LAT_COUNT, which COMPLETED
    // may read again).
    let mut series = |wanted: &[&str]| -> Result<Option<Vec<f64>>, TelemetryError> {
        for nm in wanted {
            let Some(&id) = names.get(nm) else { continue };
            let col = &mut values[id];
            if let Some(i) = (0..n).find(|&i| col.get(i).is_none_or(|x| x.is_nan())) {
                return Err(err(Some(lines[i]), format!("this scrape has no `{nm}` (others do)")));
            }
            let v = if *nm == LAT_COUNT { col.clone() } else { std::mem::take(col) };
            return Ok(Some(v));
        }
        Ok(None)
    };
    let (signal, x) = match (series(QUEUE)?, series(&[IN_FLIGHT])?) {
        (Some(q), _) => (Signal::Queue, q),
        (None, Some(f)) => (Signal::InFlight, f),
        (None, None) => {
            return Err(err(None, format!("no queue metric (expected one of: {}, or {IN_FLIGHT})", QUEUE.join(", "))));
        }
    };
    if let Some(i) = x.iter().position(|v| *v < 0.0) {
        return Err(err(
            Some(lines[i]),
            format!("the {} is negative ({})", signal.name(), safegate_core::error::number(x[i])),
        ));
    }
    if let Some(i) = x.iter().position(|v| *v > MAX_LEVEL) {
        return Err(err(
            Some(lines[i]),
            format!("the {} is {:e}, beyond {MAX_LEVEL:e}, the largest capacity safegate accepts", signal.name(), x[i]),
        ));
    }
    let rate = |c: Option<Vec<f64>>| c.map(|c| counter_to_rate(&t, &c));
    let latency = match (series(&[LAT_SUM])?, series(&[LAT_COUNT])?) {
        (Some(sum), Some(count)) => {
            let (ds, dc) = (counter_to_rate(&t, &sum), counter_to_rate(&t, &count));
            // Mean latency in each interval; an interval without completions carries the last.
            let mut last = 0.0;
            Some(
                ds.iter()
                    .zip(&dc)
                    .map(|(s, c)| {
                        if *c > 0.0 {
                            last = s / c;
                        }
                        last
                    })
                    .collect(),
            )
        }
        _ => None,
    };
    let capacity = series(&[CAPACITY])?
        .and_then(|c| c.into_iter().fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v)))));
    let throughput = rate(series(COMPLETED)?);
    let offered = rate(series(&[OFFERED])?);
    let rejections = rate(series(&[REJECTED])?);
    let retries = rate(series(&[RETRIED])?);
    let limit = series(&[LIMIT])?;
    for (what, col, most) in [
        (LIMIT, &limit, MAX_LEVEL),
        ("completions (per second)", &throughput, MAX_RATE),
        ("offered requests (per second)", &offered, MAX_RATE),
        ("rejections (per second)", &rejections, MAX_RATE),
        ("retries (per second)", &retries, MAX_RATE),
    ] {
        if let Some(i) = col.as_ref().and_then(|v| first_above(v, most)) {
            let v = col.as_ref().map_or(0.0, |v| v[i]);
            return Err(err(Some(lines[i]), format!("{what}: {v:e} is beyond {most:e}, the most safegate accepts")));
        }
    }
    if let Some(c) = capacity.filter(|c| *c > MAX_LEVEL) {
        return Err(err(
            None,
            format!("{CAPACITY}: {c:e} is beyond {MAX_LEVEL:e}, the largest capacity safegate accepts"),
        ));
    }
    Ok(Telemetry {
        signal: Some(signal),
        x,
        latency,
        throughput,
        offered,
        health: None,
        rejections,
        retries,
        limit,
        capacity: capacity.filter(|c| *c > 0.0),
        ignored: Vec::new(),
        t,
    })
}

fn is_read(name: &str) -> bool {
    QUEUE.contains(&name)
        || COMPLETED.contains(&name)
        || [IN_FLIGHT, LIMIT, CAPACITY, TIME, LAT_SUM, LAT_COUNT, OFFERED, REJECTED, RETRIED].contains(&name)
}
