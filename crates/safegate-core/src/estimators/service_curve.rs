//! An online estimate of the service curve μ(n, H): throughput as a function of the number of
//! busy executors `n`, per unit of downstream health `H`.
//!
//! The seed's pool has `μ(n, H) = H·s·n·min(1, (C/n)²)`: linear up to the contention knee
//! `C`, then falling as `s·C²/n` (seed, the executor-pool model; docs/model.md §The pool), so throughput
//! peaks at `n = C` (150 req/s at 4 busy for s = 37.5, C = 4) and *falls* beyond it. A
//! concurrency actuator that caps the pool at the argmax of the curve keeps the pool on the
//! rising side; the curve's shape is the one the universal scalability law describes
//! (Gunther, "Guerrilla Capacity Planning", 2007, ch. 4). Health multiplies the curve, so a
//! sample `(n, H, rate)` with `H` known is stored as `rate/H`, an estimate of `μ(n, 1)`.
//!
//! Each `n` has its own bin holding an exponentially weighted mean with weight
//! `w = max(α, 1/count)`: the running mean of the first `1/α` samples, an EWMA of weight `α`
//! after (so an early sample is not over-weighted and a slow drift is still followed).

/// Per-`n` exponentially weighted estimates of `μ(n, 1)`.
///
/// # Examples
///
/// ```
/// use safegate_core::estimators::ServiceCurve;
///
/// // The seed's pool: μ(n, H) = H·37.5·n·min(1, (4/n)²), 8 executors.
/// let mu = |n: usize, h: f64| h * 37.5 * n as f64 * (16.0 / (n * n) as f64).min(1.0);
/// let mut curve = ServiceCurve::new(8, 0.1).unwrap();
/// for n in 1..=8 {
///     curve.observe(n, Some(0.5), mu(n, 0.5)); // measured at half health
/// }
/// assert_eq!(curve.peak(), Some((4, 150.0))); // at unit health
/// assert!((curve.predict(6, Some(0.2)).unwrap() - mu(6, 0.2)).abs() < 1e-9);
/// ```
#[derive(Debug, Clone)]
pub struct ServiceCurve {
    /// `(mean of rate/H, samples)` for `n = 1..=max_n` at index `n − 1`.
    bins: Vec<(f64, u64)>,
    alpha: f64,
    min_samples: u64,
}

impl ServiceCurve {
    /// A curve for `n = 1..=max_n` busy executors with EWMA weight `alpha ∈ (0, 1]`.
    pub fn new(max_n: usize, alpha: f64) -> Result<Self, &'static str> {
        if max_n == 0 {
            return Err("the service curve needs at least one executor");
        }
        if !(alpha > 0.0 && alpha <= 1.0) {
            return Err("the service-curve weight must be in (0, 1]");
        }
        Ok(Self { bins: vec![(0.0, 0); max_n], alpha, min_samples: 1 })
    }

    /// Count a bin in [`ServiceCurve::peak`] only once it holds `min_samples` samples (default
    /// 1), so a single lucky sample at a rarely visited `n` cannot win the argmax.
    pub fn with_min_samples(mut self, min_samples: u64) -> Self {
        self.min_samples = min_samples.max(1);
        self
    }

    /// The largest `n` the curve covers.
    pub fn max_n(&self) -> usize {
        self.bins.len()
    }

    /// Record a throughput `rate` measured with `n` executors busy at health `health`
    /// (`None`: unknown, taken as 1, so the bin estimates μ at whatever health prevailed).
    /// Returns whether the sample was used: `n` must be in `1..=max_n`, `rate` finite and
    /// non-negative, and a known health positive and finite.
    pub fn observe(&mut self, n: usize, health: Option<f64>, rate: f64) -> bool {
        let h = health.unwrap_or(1.0);
        if n == 0 || n > self.bins.len() || !(rate >= 0.0 && rate.is_finite()) || !(h > 0.0 && h.is_finite()) {
            return false;
        }
        let (mean, count) = &mut self.bins[n - 1];
        *count += 1;
        let w = self.alpha.max(1.0 / *count as f64);
        *mean += w * (rate / h - *mean);
        true
    }

    /// The estimate of `μ(n, 1)` held in bin `n` (no interpolation), `None` if unvisited.
    pub fn unit_rate(&self, n: usize) -> Option<f64> {
        match n {
            0 => Some(0.0),
            _ => self.bins.get(n - 1).filter(|b| b.1 > 0).map(|b| b.0),
        }
    }

    /// Samples held in bin `n`.
    pub fn samples(&self, n: usize) -> u64 {
        n.checked_sub(1).and_then(|i| self.bins.get(i)).map_or(0, |b| b.1)
    }

    /// The predicted throughput `μ(n, H) = H·μ̂(n, 1)` (`health` `None`: 1). An unvisited `n`
    /// between visited ones is interpolated linearly (with `μ(0) = 0`); beyond the largest
    /// visited `n`, or above `max_n`, there is no prediction.
    pub fn predict(&self, n: usize, health: Option<f64>) -> Option<f64> {
        let h = health.unwrap_or(1.0);
        if n > self.bins.len() {
            return None;
        }
        if let Some(r) = self.unit_rate(n) {
            return Some(h * r);
        }
        let (lo, r_lo) = (0..n).rev().find_map(|k| self.unit_rate(k).map(|r| (k, r)))?;
        let (hi, r_hi) = (n + 1..=self.bins.len()).find_map(|k| self.unit_rate(k).map(|r| (k, r)))?;
        let f = (n - lo) as f64 / (hi - lo) as f64;
        Some(h * (r_lo + f * (r_hi - r_lo)))
    }

    /// The argmax `(n, μ̂(n, 1))` over bins with at least the minimum number of samples (the
    /// smallest `n` on a tie: the same throughput with fewer busy executors); `None` if no
    /// bin qualifies. A concurrency actuator caps the pool here.
    pub fn peak(&self) -> Option<(usize, f64)> {
        let mut best: Option<(usize, f64)> = None;
        for (i, &(mean, count)) in self.bins.iter().enumerate() {
            let better = match best {
                None => true,
                Some((_, b)) => mean > b,
            };
            if count >= self.min_samples && better {
                best = Some((i + 1, mean));
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimators::test_rng::SplitMix;

    /// The seed's pool: s = 37.5, C = 4.
    fn mu(n: usize, h: f64) -> f64 {
        h * 37.5 * n as f64 * (16.0 / (n * n) as f64).min(1.0)
    }

    #[test]
    fn finds_the_seeds_peak_from_noisy_samples_at_varying_health() {
        let mut rng = SplitMix(7);
        let mut curve = ServiceCurve::new(8, 0.05).unwrap().with_min_samples(20);
        for _ in 0..4000 {
            let n = 1 + (rng.next_f64() * 8.0) as usize;
            let h = 0.1 + 0.9 * rng.next_f64();
            // ±30 % multiplicative noise, uniform.
            let rate = mu(n, h) * (1.0 + 0.6 * (rng.next_f64() - 0.5));
            assert!(curve.observe(n, Some(h), rate));
        }
        let (n, r) = curve.peak().unwrap();
        assert_eq!(n, 4, "peak at {n} ({r})");
        assert!((r - 150.0).abs() < 10.0, "{r}");
        for n in 1..=8 {
            let p = curve.predict(n, Some(0.5)).unwrap();
            assert!((p / mu(n, 0.5) - 1.0).abs() < 0.1, "n {n}: {p} vs {}", mu(n, 0.5));
        }
    }

    #[test]
    fn unknown_health_is_unit_health_and_bad_samples_are_refused() {
        let mut c = ServiceCurve::new(4, 0.5).unwrap();
        assert!(c.observe(2, None, 80.0));
        assert_eq!(c.predict(2, Some(0.5)), Some(40.0));
        for (n, h, r) in [(0, None, 1.0), (5, None, 1.0), (1, Some(0.0), 1.0), (1, None, f64::NAN), (1, None, -2.0)] {
            assert!(!c.observe(n, h, r), "({n}, {h:?}, {r})");
        }
        assert_eq!(c.samples(1), 0);
        assert!(ServiceCurve::new(0, 0.5).is_err() && ServiceCurve::new(3, 0.0).is_err());
    }

    #[test]
    fn the_first_samples_are_averaged_then_weighted() {
        let mut c = ServiceCurve::new(1, 0.25).unwrap();
        for x in [10.0, 20.0, 30.0] {
            c.observe(1, None, x);
        }
        assert!((c.unit_rate(1).unwrap() - 20.0).abs() < 1e-12, "the running mean while 1/count > α");
        c.observe(1, None, 40.0); // count 4: weight 1/4 = α
        c.observe(1, None, 40.0); // count 5: weight α
        let expect = 20.0 + 0.25 * 20.0;
        assert!((c.unit_rate(1).unwrap() - (expect + 0.25 * (40.0 - expect))).abs() < 1e-12);
    }

    #[test]
    fn unvisited_bins_are_interpolated_but_not_extrapolated() {
        let mut c = ServiceCurve::new(8, 1.0).unwrap();
        c.observe(2, None, 60.0);
        c.observe(6, None, 100.0);
        assert_eq!(c.predict(4, None), Some(80.0));
        assert_eq!(c.predict(1, None), Some(30.0), "from μ(0) = 0");
        assert_eq!(c.predict(0, None), Some(0.0));
        assert_eq!(c.predict(7, None), None);
        assert_eq!(c.predict(9, None), None);
        assert_eq!(c.peak(), Some((6, 100.0)));
    }

    #[test]
    fn peak_needs_enough_samples_and_prefers_fewer_executors_on_a_tie() {
        let mut c = ServiceCurve::new(8, 0.5).unwrap().with_min_samples(3);
        c.observe(7, None, 500.0); // one lucky sample
        for _ in 0..3 {
            c.observe(3, None, 90.0);
            c.observe(5, None, 90.0);
        }
        assert_eq!(c.peak(), Some((3, 90.0)));
        assert_eq!(ServiceCurve::new(4, 0.5).unwrap().peak(), None);
    }
}
