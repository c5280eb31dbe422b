//! Writing a [`Telemetry`] back out: as the CSV [`parse`](super::parse) reads, and as a series
//! of Prometheus scrapes of safegate's metrics.

use super::{Signal, Telemetry};

impl Telemetry {
    /// Write as the CSV [`parse`](super::parse) reads (counts per interval for rejections and retries;
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
