//! Counters and per-interval counts as per-second rates, for the readers.

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
