//! The learned curve: the grid of limits ([`grid`]), one [`Bin`] of delivered rate and
//! service time per grid point, and [`CurvePoint`], a bin as [`Peak::curve`] reports it.

use super::Peak;

/// One grid point's learned throughput and service time.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(super) struct Bin {
    /// Delivered rate \[req/s\] (EWMA over trials).
    pub(super) rate: f64,
    /// Mean service time \[s\] (EWMA; NaN while unknown).
    pub(super) service: f64,
    /// Measured periods in the estimate.
    pub(super) samples: u32,
    /// Trials in the estimate.
    pub(super) trials: u32,
    /// Time of the last sample \[s\].
    pub(super) at: f64,
    /// Variance of one period's rate \[(req/s)²\] (EWMA over trials; NaN while unknown).
    pub(super) var: f64,
    /// The rate estimate's variance in units of one period's: `1/n` for a plain mean of `n`
    /// periods; an EWMA of trials keeps its exact factor (`(1−w)²·f + w²/m` per trial of
    /// `m` periods), so the estimate's standard error is `√(var·factor)`.
    pub(super) factor: f64,
}

/// A point of the learned curve, as [`Peak::curve`] reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CurvePoint {
    /// The limit.
    pub limit: u32,
    /// Delivered rate there while saturated \[req/s\].
    pub rate: f64,
    /// Mean service time there \[s\] (NaN if unknown).
    pub service: f64,
    /// Measured periods in the estimate.
    pub samples: u32,
}

impl Peak {
    /// The learned curve: every grid point with at least one capacity sample.
    pub fn curve(&self) -> impl Iterator<Item = CurvePoint> + '_ {
        self.grid.iter().zip(&self.bins).filter(|(_, b)| b.samples > 0).map(|(&limit, b)| CurvePoint {
            limit,
            rate: b.rate,
            service: b.service,
            samples: b.samples,
        })
    }

    /// Bin `i`'s rate if it can be compared at `now`: enough samples, not stale.
    pub(super) fn usable(&self, i: usize, now: f64) -> Option<f64> {
        let b = &self.bins[i];
        (b.samples >= self.cfg.min_samples && now - b.at <= self.cfg.max_age).then_some(b.rate)
    }

    /// The standard error of bin `i`'s rate \[req/s\] (0 while its spread is unknown).
    pub(super) fn rate_error(&self, i: usize) -> f64 {
        let b = &self.bins[i];
        let se = (b.var * b.factor).sqrt();
        if se.is_finite() {
            se
        } else {
            0.0
        }
    }

    pub(super) fn record(&mut self, i: usize, now: f64) {
        let t = self.trial;
        let m = f64::from(t.periods.max(1));
        let v = t.period_variance();
        let rate = t.good / t.elapsed;
        if !(rate.is_finite() && rate >= 0.0) {
            return;
        }
        let service = if t.completed > 0.0 { t.busy / t.completed } else { f64::NAN };
        let service = if service.is_finite() && service > 0.0 { service } else { f64::NAN };
        let c = self.cfg;
        let b = &mut self.bins[i];
        let fresh = b.samples > 0 && now - b.at <= c.max_age && now >= b.at;
        let shifted = (rate - b.rate).abs() > c.shift * rate.max(b.rate);
        if !fresh || shifted {
            *b = Bin { rate, service, samples: t.periods, trials: 1, at: now, var: v, factor: 1.0 / m };
            return;
        }
        b.trials += 1;
        let w = c.weight.max(1.0 / f64::from(b.trials));
        b.rate += w * (rate - b.rate);
        b.factor = (1.0 - w).powi(2) * b.factor + w * w / m;
        b.var = match (b.var.is_nan(), v.is_nan()) {
            (_, true) => b.var,
            (true, false) => v,
            (false, false) => b.var + w * (v - b.var),
        };
        b.service = match (b.service.is_nan(), service.is_nan()) {
            (_, true) => b.service,
            (true, false) => service,
            (false, false) => b.service + w * (service - b.service),
        };
        b.samples = b.samples.saturating_add(t.periods);
        b.at = now;
    }
}

/// The grid of limits from `lo` to `hi` (each at least 1): every point is
/// `max(g + 1, round(g·(1 + step)))` of the one below, the last one `hi`.
pub(super) fn grid(lo: u32, hi: u32, step: f64) -> Vec<u32> {
    let lo = lo.max(1);
    let hi = hi.max(lo);
    let mut g = vec![lo];
    let mut x = lo;
    while x < hi {
        let next = (f64::from(x) * (1.0 + step)).round().min(f64::from(hi)) as u32;
        x = next.max(x + 1).min(hi);
        g.push(x);
    }
    // The top step is cut short by `hi`; one much shorter than a step (256 after 254) would
    // make the probe below the top a probe of nothing. Drop the point below the top then.
    if let [.., a, b] = g[..] {
        if g.len() > 2 && f64::from(b - a) < 0.5 * step * f64::from(a) && b - a > 0 && a > lo {
            g.remove(g.len() - 2);
        }
    }
    g
}
