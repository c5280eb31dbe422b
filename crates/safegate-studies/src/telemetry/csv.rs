//! The CSV reader (docs/boundary-check.md §Telemetry formats).

use super::{
    counter_to_rate, counts_to_rate, first_above, Signal, Telemetry, TelemetryError, MAX_LEVEL, MAX_RATE, MAX_ROWS,
};

/// A column's role, with the names it may go by (case-insensitive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Time,
    Queue,
    InFlight,
    Latency,
    Throughput,
    ThroughputTotal,
    Offered,
    OfferedTotal,
    Health,
    Rejections,
    RejectionsTotal,
    Retries,
    RetriesTotal,
    Limit,
    Capacity,
}

const NAMES: &[(Role, &[&str])] = &[
    (Role::Time, &["time", "t", "time_s", "timestamp", "seconds"]),
    (Role::Queue, &["queue", "queue_depth", "backlog", "q", "waiting"]),
    (Role::InFlight, &["in_flight", "inflight", "concurrency"]),
    (Role::Latency, &["latency", "latency_s", "rtt"]),
    (Role::Throughput, &["throughput", "completions", "goodput"]),
    (Role::ThroughputTotal, &["throughput_total", "completed_total", "completions_total"]),
    (Role::Offered, &["offered", "arrivals", "offered_rate"]),
    (Role::OfferedTotal, &["offered_total", "arrivals_total"]),
    (Role::Health, &["health", "h"]),
    (Role::Rejections, &["rejections", "rejected", "shed"]),
    (Role::RejectionsTotal, &["rejections_total", "rejected_total"]),
    (Role::Retries, &["retries", "retried"]),
    (Role::RetriesTotal, &["retries_total", "retried_total"]),
    (Role::Limit, &["limit", "concurrency_limit"]),
    (Role::Capacity, &["capacity", "queue_capacity"]),
];

fn role_of(name: &str) -> Option<Role> {
    let n = name.trim().trim_matches('"').to_ascii_lowercase();
    NAMES.iter().find(|(_, names)| names.contains(&n.as_str())).map(|(r, _)| *r)
}

fn expected(role: Role) -> String {
    NAMES.iter().find(|(r, _)| *r == role).map(|(_, n)| n.join(", ")).unwrap_or_default()
}

pub(super) fn parse(source: &str, text: &str) -> Result<Telemetry, TelemetryError> {
    let err = |line: Option<usize>, what: String| TelemetryError { source: source.to_string(), line, what };
    let mut lines = text.lines().enumerate().filter(|(_, l)| {
        let l = l.trim();
        !l.is_empty() && !l.starts_with('#')
    });
    let Some((hline, header)) = lines.next() else {
        return Err(err(None, "empty: no header line (expected a CSV header such as `time,queue`)".into()));
    };
    let header_line = hline + 1;
    let header = header.trim_start_matches('\u{feff}');
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let mut roles: Vec<Option<Role>> = Vec::with_capacity(names.len());
    let mut ignored = Vec::new();
    for name in &names {
        let r = role_of(name);
        if let Some(r) = r {
            if roles.contains(&Some(r)) {
                return Err(err(Some(header_line), format!("column `{name}` given twice (as {})", expected(r))));
            }
        } else if name.is_empty() {
            return Err(err(Some(header_line), "an empty column name in the header".into()));
        } else if name.parse::<f64>().is_ok() {
            return Err(err(
                Some(header_line),
                format!(
                    "the first line has no header: `{name}` is a number (expected column names such as `time,queue`)"
                ),
            ));
        } else {
            ignored.push(name.to_string());
        }
        roles.push(r);
    }
    let idx = |r: Role| roles.iter().position(|x| *x == Some(r));
    let Some(i_time) = idx(Role::Time) else {
        return Err(err(Some(header_line), format!("no time column (expected one of: {})", expected(Role::Time))));
    };
    let (signal, i_x) = match (idx(Role::Queue), idx(Role::InFlight)) {
        (Some(i), _) => (Signal::Queue, i),
        (None, Some(i)) => (Signal::InFlight, i),
        (None, None) => {
            return Err(err(
                Some(header_line),
                format!(
                    "no queue or in-flight column (expected one of: {}; or: {})",
                    expected(Role::Queue),
                    expected(Role::InFlight)
                ),
            ))
        }
    };
    let ncol = names.len();
    // Columns as read, by position; only those with a role are kept (an ignored column costs
    // no memory), and the capacity column is folded into its largest value as it is read.
    // Sized from the line count, so no column grows by doubling past it.
    let rows_hint = text.bytes().filter(|&b| b == b'\n').count().min(MAX_ROWS);
    let i_cap = idx(Role::Capacity);
    let mut cols: Vec<Vec<f64>> = roles
        .iter()
        .enumerate()
        .map(|(j, r)| if r.is_some() && Some(j) != i_cap { Vec::with_capacity(rows_hint) } else { Vec::new() })
        .collect();
    let mut cap_max: Option<f64> = None;
    let mut row = vec![0.0; ncol];
    let mut nrows = 0usize;
    let mut prev_t = f64::NEG_INFINITY;
    for (li, line) in lines {
        let lineno = li + 1;
        if nrows >= MAX_ROWS {
            return Err(err(
                Some(lineno),
                format!("more than {MAX_ROWS} rows (the most a telemetry file may hold); split the file"),
            ));
        }
        let mut n = 0;
        for (j, field) in line.split(',').enumerate() {
            n = j + 1;
            if j >= ncol {
                continue;
            }
            let f = field.trim();
            row[j] = if roles[j].is_none() {
                0.0
            } else {
                match f.parse::<f64>() {
                    Ok(v) if v.is_finite() => v,
                    Ok(v) => {
                        return Err(err(Some(lineno), format!("column `{}`: {v} is not a finite number", names[j])))
                    }
                    Err(_) if f.is_empty() => return Err(err(Some(lineno), format!("column `{}` is empty", names[j]))),
                    Err(_) => return Err(err(Some(lineno), format!("column `{}`: `{f}` is not a number", names[j]))),
                }
            };
        }
        if n != ncol {
            return Err(err(Some(lineno), format!("{n} fields, the header has {ncol}")));
        }
        let t = row[i_time];
        if t <= prev_t {
            let what = if t == prev_t {
                format!("time {t} repeats the previous row's")
            } else {
                format!("time {t} is before the previous row's {prev_t}: rows must be sorted by time")
            };
            return Err(err(Some(lineno), what));
        }
        prev_t = t;
        let x = row[i_x];
        if x < 0.0 {
            return Err(err(
                Some(lineno),
                format!("column `{}`: {} is negative", names[i_x], safegate_core::error::number(x)),
            ));
        }
        for (j, r) in roles.iter().enumerate() {
            let v = row[j];
            match r {
                Some(Role::Health) if !(0.0..=1.0).contains(&v) => {
                    return Err(err(Some(lineno), format!("column `{}`: health {v} is outside [0, 1]", names[j])))
                }
                Some(Role::Time | Role::Health) | None => {}
                Some(_) if v < 0.0 => {
                    return Err(err(
                        Some(lineno),
                        format!("column `{}`: {} is negative", names[j], safegate_core::error::number(v)),
                    ))
                }
                Some(Role::Queue | Role::InFlight | Role::Limit | Role::Capacity) if v > MAX_LEVEL => {
                    return Err(err(
                        Some(lineno),
                        format!(
                            "column `{}`: {} is beyond {MAX_LEVEL:e}, the largest capacity safegate accepts",
                            names[j],
                            safegate_core::error::number(v)
                        ),
                    ))
                }
                Some(Role::Throughput | Role::Offered) if v > MAX_RATE => {
                    return Err(err(
                        Some(lineno),
                        format!(
                            "column `{}`: {} req/s is beyond {MAX_RATE:e}, the largest rate safegate accepts",
                            names[j],
                            safegate_core::error::number(v)
                        ),
                    ))
                }
                _ => {}
            }
            if r.is_some() {
                if Some(j) == i_cap {
                    cap_max = Some(cap_max.map_or(v, |m: f64| m.max(v)));
                } else {
                    cols[j].push(v);
                }
            }
        }
        nrows += 1;
    }
    let t = std::mem::take(&mut cols[i_time]);
    if t.is_empty() {
        return Err(err(None, "no data rows after the header".into()));
    }
    if t.len() < 2 {
        return Err(err(None, "one data row: at least two are needed".into()));
    }
    let mut tel = Telemetry { signal: Some(signal), x: std::mem::take(&mut cols[i_x]), ignored, ..Default::default() };
    let mut take = |r: Role| idx(r).map(|i| std::mem::take(&mut cols[i]));
    let pick = |rate: Option<Vec<f64>>, total: Option<Vec<f64>>, counts: bool, t: &[f64]| match (rate, total) {
        (Some(v), _) if counts => Some(counts_to_rate(t, &v)),
        (Some(v), _) => Some(v),
        (None, Some(c)) => Some(counter_to_rate(t, &c)),
        (None, None) => None,
    };
    tel.latency = take(Role::Latency);
    tel.throughput = pick(take(Role::Throughput), take(Role::ThroughputTotal), false, &t);
    tel.offered = pick(take(Role::Offered), take(Role::OfferedTotal), false, &t);
    tel.health = take(Role::Health);
    tel.rejections = pick(take(Role::Rejections), take(Role::RejectionsTotal), true, &t);
    tel.retries = pick(take(Role::Retries), take(Role::RetriesTotal), true, &t);
    tel.limit = take(Role::Limit);
    // Rates derived from counts and counters: a jump of a counter is a rate too.
    for (what, col) in [
        ("throughput", &tel.throughput),
        ("offered", &tel.offered),
        ("rejections", &tel.rejections),
        ("retries", &tel.retries),
    ] {
        if let Some(i) = col.as_ref().and_then(|v| first_above(v, MAX_RATE)) {
            let v = col.as_ref().map_or(0.0, |v| v[i]);
            return Err(err(
                Some(data_line(text, header_line, i)),
                format!("{what}: {v:e} per second (from the counts or counter) is beyond {MAX_RATE:e}, the largest rate safegate accepts"),
            ));
        }
    }
    if let Some(cap) = cap_max {
        if !(cap > 0.0) {
            return Err(err(None, "column `capacity` is never positive".into()));
        }
        tel.capacity = Some(cap);
    }
    if let (Some(_), Some(_)) = (idx(Role::Queue), idx(Role::InFlight)) {
        tel.ignored.push("in_flight (the queue column is the signal)".into());
    }
    tel.t = t;
    Ok(tel)
}

/// The 1-based line of data row `i` (0-based, after the header on `header_line`): found
/// again by a scan, only for an error.
fn data_line(text: &str, header_line: usize, i: usize) -> usize {
    text.lines()
        .enumerate()
        .skip(header_line)
        .filter(|(_, l)| {
            let l = l.trim();
            !l.is_empty() && !l.starts_with('#')
        })
        .nth(i)
        .map_or(header_line, |(li, _)| li + 1)
}
