//! The generator's latency histogram: log-linear in microseconds, counts in atomics, so
//! memory does not grow with the number of requests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Latency histogram: log-linear in microseconds, 64 buckets per octave above 128 µs
/// (relative error under 1.6 %), exact below.
#[derive(Debug)]
pub(crate) struct Histogram {
    buckets: Vec<AtomicU64>,
}

const LINEAR: u64 = 128;
const PER_OCTAVE: u64 = 64;

impl Histogram {
    pub(crate) fn new() -> Self {
        let n = Self::index(u64::MAX) + 1;
        Histogram { buckets: (0..n).map(|_| AtomicU64::new(0)).collect() }
    }

    fn index(us: u64) -> usize {
        if us < LINEAR {
            return us as usize;
        }
        let e = 63 - u64::from(us.leading_zeros()); // ≥ 7
        let m = us >> (e - 6); // in [64, 128)
        (LINEAR + (e - 7) * PER_OCTAVE + (m - PER_OCTAVE)) as usize
    }

    /// The middle of bucket `i` \[µs\].
    fn value(i: usize) -> f64 {
        let i = i as u64;
        if i < LINEAR {
            return i as f64;
        }
        let e = 7 + (i - LINEAR) / PER_OCTAVE;
        let m = PER_OCTAVE + (i - LINEAR) % PER_OCTAVE;
        let lo = (m << (e - 6)) as f64;
        lo + (1u64 << (e - 6)) as f64 / 2.0
    }

    pub(crate) fn record(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.buckets[Self::index(us)].fetch_add(1, Ordering::Relaxed);
    }

    /// The `p`-quantile \[ms\], `None` when empty.
    pub(crate) fn quantile_ms(&self, p: f64) -> Option<f64> {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = ((p * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(Self::value(i) / 1e3);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_round_trip_within_two_percent() {
        for us in [0u64, 1, 127, 128, 129, 1000, 12_345, 999_999, 60_000_000] {
            let v = Histogram::value(Histogram::index(us));
            assert!((v - us as f64).abs() <= 0.016 * us as f64 + 0.5, "{us} → {v}");
        }
        let h = Histogram::new();
        for ms in 1..=100 {
            h.record(Duration::from_millis(ms));
        }
        let p50 = h.quantile_ms(0.5).expect("recorded");
        let p99 = h.quantile_ms(0.99).expect("recorded");
        assert!((p50 - 50.0).abs() < 1.0 && (p99 - 99.0).abs() < 2.0, "{p50} {p99}");
        assert_eq!(Histogram::new().quantile_ms(0.5), None);
    }
}
