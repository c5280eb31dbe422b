//! The Prometheus text-format reader: a series of scrapes of safegate's metrics
//! (docs/boundary-check.md §Telemetry formats).
//!
//! A scrape's time is its samples' timestamp (milliseconds, the format's optional third
//! field) or, without timestamps, its `safegate_model_time_seconds` gauge. Without
//! timestamps a scrape ends where a series it already holds appears again. Series that
//! differ only in labels are summed (`safegate_requests_rejected_total{reason=…}`).

use std::collections::HashMap;

use super::{counter_to_rate, Signal, Telemetry, TelemetryError, MAX_ROWS};

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

/// One scrape: where it starts (for errors), its time, and per metric name (by id) the sum
/// of its series, NaN where absent.
struct Scrape {
    line: usize,
    time: Option<f64>,
    values: Vec<f64>,
}

pub(super) fn parse(source: &str, text: &str) -> Result<Telemetry, TelemetryError> {
    let err = |line: Option<usize>, what: String| TelemetryError { source: source.to_string(), line, what };
    // Metric names and series keys, interned: the text is scanned once, with no allocation
    // per sample.
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut keys: HashMap<&str, usize> = HashMap::new();
    let mut scrapes: Vec<Scrape> = Vec::new();
    let mut cur = Scrape { line: 0, time: None, values: Vec::new() };
    // Series keys seen in the current scrape, by key id: the scrape number that last saw it.
    let mut seen: Vec<usize> = Vec::new();
    let mut cur_empty = true;
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
        let kid = *keys.entry(key).or_insert(next_key);
        if kid >= seen.len() {
            seen.resize(kid + 1, usize::MAX);
        }
        let boundary = !cur_empty
            && match ts {
                Some(ts) => cur.time.is_some_and(|t| t != ts),
                None => seen[kid] == scrapes.len(),
            };
        if boundary {
            let values = vec![f64::NAN; names.len()];
            scrapes.push(std::mem::replace(&mut cur, Scrape { line: lineno, time: None, values }));
            if scrapes.len() >= MAX_ROWS {
                return Err(err(Some(lineno), format!("more than {MAX_ROWS} scrapes; split the file")));
            }
            cur_empty = true;
        }
        if cur_empty {
            cur.line = lineno;
            cur_empty = false;
        }
        seen[kid] = scrapes.len();
        if let Some(ts) = ts {
            cur.time = Some(ts);
        }
        if !value.is_finite() {
            // Histogram `+Inf` buckets are fine to skip; a NaN or infinite gauge we read is not.
            if !name.ends_with("_bucket") && is_read(name) {
                return Err(err(Some(lineno), format!("metric `{name}`: {vtext} is not a finite number")));
            }
            continue;
        }
        if name == TIME && ts.is_none() {
            cur.time = Some(value);
        }
        let next_name = names.len();
        let nid = *names.entry(name).or_insert(next_name);
        if nid >= cur.values.len() {
            cur.values.resize(nid + 1, f64::NAN);
        }
        let v = &mut cur.values[nid];
        *v = if v.is_nan() { value } else { *v + value };
    }
    if !cur_empty {
        scrapes.push(cur);
    }
    if scrapes.is_empty() {
        return Err(err(None, "no samples".into()));
    }
    // Times: strictly increasing.
    let mut t = Vec::with_capacity(scrapes.len());
    for s in &scrapes {
        let Some(ts) = s.time else {
            return Err(err(
                Some(s.line),
                format!("this scrape has no time: give samples timestamps or include `{TIME}`"),
            ));
        };
        if let Some(&prev) = t.last() {
            if ts <= prev {
                let what = if ts == prev {
                    format!("scrape time {ts} repeats the previous scrape's")
                } else {
                    format!("scrape time {ts} is before the previous scrape's {prev}: scrapes must be in time order")
                };
                return Err(err(Some(s.line), what));
            }
        }
        t.push(ts);
    }
    if t.len() < 2 {
        return Err(err(None, "one scrape: at least two are needed".into()));
    }
    let series = |wanted: &[&str]| -> Result<Option<Vec<f64>>, TelemetryError> {
        for n in wanted {
            let Some(&id) = names.get(n) else { continue };
            let mut v = Vec::with_capacity(scrapes.len());
            for s in &scrapes {
                match s.values.get(id) {
                    Some(x) if !x.is_nan() => v.push(*x),
                    _ => return Err(err(Some(s.line), format!("this scrape has no `{n}` (others do)"))),
                }
            }
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
        return Err(err(Some(scrapes[i].line), format!("the {} is negative ({})", signal.name(), x[i])));
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
    Ok(Telemetry {
        signal: Some(signal),
        x,
        latency,
        throughput: rate(series(COMPLETED)?),
        offered: rate(series(&[OFFERED])?),
        health: None,
        rejections: rate(series(&[REJECTED])?),
        retries: rate(series(&[RETRIED])?),
        limit: series(&[LIMIT])?,
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
