//! Helpers on a sampled series, for the steps and the detectors: sample intervals, time
//! blocks, trend and step fits, runs at a value, spreads, autocorrelation peaks.

use safegate_core::stats::{median, quantile};

use super::Telemetry;

/// The sample interval of row `i` (the first row takes the second's).
pub(super) fn dt_at(t: &[f64], i: usize) -> f64 {
    if i == 0 {
        t[1] - t[0]
    } else {
        t[i] - t[i - 1]
    }
}

/// The median gap between consecutive rows \[s\] (at least two rows).
pub(super) fn median_interval(tel: &Telemetry) -> f64 {
    let gaps: Vec<f64> = tel.t.windows(2).map(|w| w[1] - w[0]).collect();
    median(&gaps).unwrap_or(f64::NAN)
}

/// Spearman's rank correlation of `v` with its index.
pub(super) fn trend(v: &[f64]) -> f64 {
    let n = v.len();
    if n < 3 {
        return 0.0;
    }
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|a, b| v[*a].total_cmp(&v[*b]));
    let mut rank = vec![0.0; n];
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        for &r in &idx[i..=j] {
            rank[r] = (i + j) as f64 / 2.0;
        }
        i = j + 1;
    }
    let mean = (n - 1) as f64 / 2.0;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (k, r) in rank.iter().enumerate() {
        let (dx, dy) = (k as f64 - mean, r - mean);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx > 0.0 && syy > 0.0 {
        sxy / (sxx * syy).sqrt()
    } else {
        0.0
    }
}

/// Split rows into `parts` contiguous blocks of equal time span: the row ranges.
pub(super) fn blocks(t: &[f64], parts: usize) -> Vec<std::ops::Range<usize>> {
    let (t0, t1) = (t[0], t[t.len() - 1]);
    let span = (t1 - t0) / parts as f64;
    let mut out = Vec::with_capacity(parts);
    let mut start = 0;
    for p in 1..=parts {
        let edge = t0 + span * p as f64;
        let mut end = start;
        while end < t.len() && (t[end] < edge || p == parts) {
            end += 1;
        }
        out.push(start..end);
        start = end;
    }
    out
}

/// Whether two constant levels with one step between them fit `v` with less than half the
/// squared error of a least-squares line through it.
pub(super) fn step_fits_better(v: &[f64]) -> bool {
    let n = v.len();
    if n < 4 {
        return false;
    }
    let nf = n as f64;
    let (mx, my) = ((nf - 1.0) / 2.0, v.iter().sum::<f64>() / nf);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in v.iter().enumerate() {
        sxy += (i as f64 - mx) * (y - my);
        sxx += (i as f64 - mx) * (i as f64 - mx);
    }
    let slope = sxy / sxx;
    let ss_line: f64 = v.iter().enumerate().map(|(i, y)| (y - my - slope * (i as f64 - mx)).powi(2)).sum();
    let ss = |s: &[f64]| {
        let m = s.iter().sum::<f64>() / s.len() as f64;
        s.iter().map(|y| (y - m) * (y - m)).sum::<f64>()
    };
    let ss_step = (1..n).map(|j| ss(&v[..j]) + ss(&v[j..])).fold(f64::INFINITY, f64::min);
    ss_step < 0.5 * ss_line
}

/// The longest run of rows at `value`, as (start, end) rows.
pub(super) fn longest_run_at(v: &[f64], value: f64) -> Option<(usize, usize)> {
    let tol = 1e-9 * value.abs().max(1.0);
    let (mut best, mut start) = (None::<(usize, usize)>, None);
    for i in 0..=v.len() {
        let at = i < v.len() && (v[i] - value).abs() <= tol;
        match (at, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                if best.is_none_or(|(a, b)| i - 1 - s > b - a) {
                    best = Some((s, i - 1));
                }
                start = None;
            }
            _ => {}
        }
    }
    best
}

/// Spread of a column over rows `r`: `p90/p10` (`ratio`) or `p90 − p10`.
pub(super) fn spread(v: &[f64], r: std::ops::Range<usize>, ratio: bool) -> f64 {
    let q = |p| quantile(&v[r.clone()], p).unwrap_or(f64::NAN);
    let (lo, hi) = (q(0.1), q(0.9));
    if !ratio {
        hi - lo
    } else if lo > 0.0 {
        hi / lo
    } else if hi > 0.0 {
        f64::INFINITY
    } else {
        1.0
    }
}

/// The autocorrelation's first local maximum after its first zero crossing, over lags
/// `1..=max_lag` (at most a quarter of the length): (lag, value).
pub(super) fn acf_peak(v: &[f64], max_lag: usize) -> Option<(usize, f64)> {
    let n = v.len();
    if n < 8 {
        return None;
    }
    let mean = v.iter().sum::<f64>() / n as f64;
    let d: Vec<f64> = v.iter().map(|x| x - mean).collect();
    let var: f64 = d.iter().map(|x| x * x).sum();
    if !(var > 0.0) {
        return None;
    }
    let max_lag = max_lag.min(n / 4);
    let acf = |lag: usize| d[..n - lag].iter().zip(&d[lag..]).map(|(a, b)| a * b).sum::<f64>() / var;
    let mut crossed = false;
    let mut prev = 1.0;
    for lag in 1..=max_lag {
        let a = acf(lag);
        if !crossed {
            crossed = a < 0.0;
        } else if a < prev && prev > 0.0 {
            return Some((lag - 1, prev));
        }
        prev = a;
    }
    None
}

/// Average `v` over groups of `f`.
pub(super) fn coarsen(v: &[f64], f: usize) -> Vec<f64> {
    v.chunks(f).map(|c| c.iter().sum::<f64>() / c.len() as f64).collect()
}

/// `v` minus its centred moving average over `w` points (prefix sums, O(n)).
pub(super) fn detrend(v: &[f64], w: usize) -> Vec<f64> {
    let n = v.len();
    let mut pre = Vec::with_capacity(n + 1);
    pre.push(0.0);
    for x in v {
        pre.push(pre[pre.len() - 1] + x);
    }
    (0..n)
        .map(|i| {
            let (a, b) = (i.saturating_sub(w / 2), (i + w / 2 + 1).min(n));
            v[i] - (pre[b] - pre[a]) / (b - a) as f64
        })
        .collect()
}
