//! Windowed mean and variance of a scalar stream (the filter's disturbance estimate).
//!
//! The seed's barrier is calibrated against a disturbance model; here the model is learned
//! online from one-step queue surprises (observed minus predicted change), so σ follows the
//! system instead of being a constant ("The Cycle Finds Drift, the Barrier Has to Watch the
//! Cliff"). O(1) per sample with running sums, re-summed every window to stop drift.

/// Mean and variance over the last `window` samples.
///
/// # Examples
///
/// ```
/// use safegate_core::estimators::WindowedMoments;
///
/// let mut m = WindowedMoments::new(4);
/// for x in [1.0, 2.0, 3.0, 4.0, 5.0] {
///     m.push(x);
/// }
/// assert_eq!(m.len(), 4);
/// assert!((m.mean() - 3.5).abs() < 1e-12);
/// assert!((m.variance() - 1.25).abs() < 1e-12); // population variance of 2, 3, 4, 5
/// ```
#[derive(Debug, Clone)]
pub struct WindowedMoments {
    buf: Vec<f64>,
    next: usize,
    filled: usize,
    sum: f64,
    sum_sq: f64,
    since_resum: usize,
    /// `1 / filled`, kept with `filled`.
    inv_n: f64,
}

impl WindowedMoments {
    /// A window of `window` samples (at least 1). Allocates once, here.
    pub fn new(window: usize) -> Self {
        let window = window.max(1);
        Self { buf: vec![0.0; window], next: 0, filled: 0, sum: 0.0, sum_sq: 0.0, since_resum: 0, inv_n: 0.0 }
    }

    /// Add a sample; non-finite samples are ignored.
    #[inline]
    pub fn push(&mut self, x: f64) {
        if !crate::finite(x) {
            return;
        }
        let old = self.buf[self.next];
        if self.filled == self.buf.len() {
            self.sum -= old;
            self.sum_sq -= old * old;
        } else {
            self.filled += 1;
            self.inv_n = 1.0 / self.filled as f64;
        }
        self.buf[self.next] = x;
        self.sum += x;
        self.sum_sq += x * x;
        self.next += 1;
        if self.next == self.buf.len() {
            self.next = 0;
        }
        self.since_resum += 1;
        if self.since_resum >= self.buf.len() {
            self.since_resum = 0;
            let live = &self.buf[..self.filled];
            self.sum = live.iter().sum();
            self.sum_sq = live.iter().map(|v| v * v).sum();
        }
    }

    /// Samples held.
    pub fn len(&self) -> usize {
        self.filled
    }

    /// Whether no sample is held.
    pub fn is_empty(&self) -> bool {
        self.filled == 0
    }

    /// Mean (0 when empty).
    #[inline]
    pub fn mean(&self) -> f64 {
        if self.filled == 0 {
            0.0
        } else {
            self.sum * self.inv_n
        }
    }

    /// Population variance (0 with fewer than two samples), never negative.
    #[inline]
    pub fn variance(&self) -> f64 {
        if self.filled < 2 {
            return 0.0;
        }
        let m = self.sum * self.inv_n;
        (self.sum_sq * self.inv_n - m * m).max(0.0)
    }
}

/// An exponentially weighted rate from a cumulative counter, time passed in.
///
/// `rate ← rate + (1 − e^{−Δt/τ})·(Δcount/Δt − rate)`.
#[derive(Debug, Clone, Copy)]
pub struct EwmaRate {
    tau: f64,
    rate: f64,
    last_count: f64,
    last_t: Option<f64>,
    /// Cached `(Δt, 1 − e^{−Δt/τ}, 1/Δt)` for the common fixed decision period.
    cached: (f64, f64, f64),
}

impl EwmaRate {
    /// A rate with time constant `tau` \[s\] starting at `initial` [per s].
    pub fn new(tau: f64, initial: f64) -> Self {
        Self { tau: tau.max(1e-9), rate: initial, last_count: 0.0, last_t: None, cached: (f64::NAN, 0.0, 0.0) }
    }

    /// Feed the cumulative `count` at time `now`; returns the rate.
    #[inline]
    pub fn update(&mut self, now: f64, count: f64) -> f64 {
        if let Some(t0) = self.last_t {
            let dt = now - t0;
            if (dt > 0.0) & (dt <= f64::MAX) & crate::finite(count) {
                // Decision periods recur: reuse the weight when Δt matches to rounding.
                if !((dt - self.cached.0).abs() <= 1e-9 * dt) {
                    self.cached = (dt, 1.0 - (-dt / self.tau).exp(), 1.0 / dt);
                }
                let (_, w, inv) = self.cached;
                self.rate += w * ((count - self.last_count) * inv - self.rate);
            }
        }
        if crate::finite(count) {
            self.last_count = count;
        }
        if crate::finite(now) {
            self.last_t = Some(now);
        }
        self.rate
    }

    /// The current rate.
    pub fn get(&self) -> f64 {
        self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_streams_do_not_drift() {
        let mut m = WindowedMoments::new(50);
        for i in 0..1_000_000u64 {
            m.push(1e6 + (i % 7) as f64);
        }
        // Last 50 of a period-7 pattern: mean ≈ 1e6 + 3, variance ≈ 4.
        assert!((m.mean() - 1e6 - 3.0).abs() < 0.2);
        assert!((m.variance() - 4.0).abs() < 0.2, "{}", m.variance());
    }

    #[test]
    fn ewma_converges_to_the_rate() {
        let mut r = EwmaRate::new(1.0, 0.0);
        for k in 0..=400 {
            let t = k as f64 * 0.05;
            r.update(t, 80.0 * t);
        }
        assert!((r.get() - 80.0).abs() < 1e-6);
        r.update(f64::NAN, f64::NAN);
        assert!((r.get() - 80.0).abs() < 1e-6);
    }
}
