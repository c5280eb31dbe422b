//! BBR's bandwidth filter: the maximum delivered rate over a sliding window of rounds.
//!
//! It is deliberately slow to revise downward, so a transient dip does not cause needless
//! under-estimation (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue
//! 14(5), 2016; the seed, "When the Probe Causes the Cliff It Is Measuring For"). The window
//! is counted in rounds (BBR uses 10 round trips; the seed's worked cycle uses one 8-round
//! ProbeBW cycle). Uses the three-sample running maximum of the Linux kernel's
//! `win_minmax`, so memory is constant and an update is O(1).

/// Windowed maximum of samples indexed by a non-decreasing round number.
///
/// # Examples
///
/// ```
/// use safegate_core::estimators::WindowedMax;
///
/// let mut bw = WindowedMax::new(8);
/// bw.update(0, 1.0);
/// bw.update(3, 0.5); // capacity fell: the estimate holds at 1.0 …
/// assert_eq!(bw.get(), 1.0);
/// bw.update(8, 0.5); // … until the window has passed the old maximum.
/// assert_eq!(bw.get(), 0.5);
/// ```
#[derive(Debug, Clone)]
pub struct WindowedMax {
    window: u64,
    /// Best, second-best and third-best (round, value), newest-dominating order.
    s: [(u64, f64); 3],
    empty: bool,
}

impl WindowedMax {
    /// A filter whose samples expire after `window` rounds (at least 1).
    pub fn new(window: u64) -> Self {
        Self { window: window.max(1), s: [(0, 0.0); 3], empty: true }
    }

    /// The current windowed maximum (0 before any sample).
    pub fn get(&self) -> f64 {
        if self.empty {
            0.0
        } else {
            self.s[0].1
        }
    }

    /// Add a sample at round `round` (non-decreasing); non-finite samples are ignored.
    pub fn update(&mut self, round: u64, value: f64) -> f64 {
        if !value.is_finite() {
            return self.get();
        }
        let fresh = (round, value);
        if self.empty || value >= self.s[0].1 || round.saturating_sub(self.s[2].0) >= self.window {
            self.s = [fresh; 3];
            self.empty = false;
            return value;
        }
        if value >= self.s[1].1 {
            self.s[1] = fresh;
            self.s[2] = fresh;
        } else if value >= self.s[2].1 {
            self.s[2] = fresh;
        }
        // Expire the best (and then the second) when they fall out of the window.
        let dt = round.saturating_sub(self.s[0].0);
        if dt >= self.window {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = fresh;
            if round.saturating_sub(self.s[0].0) >= self.window {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
            }
        } else if self.s[1].0 == self.s[0].0 && dt > self.window / 4 {
            self.s[1] = fresh;
            self.s[2] = fresh;
        } else if self.s[2].0 == self.s[1].0 && dt > self.window / 2 {
            self.s[2] = fresh;
        }
        self.s[0].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against the brute-force maximum over the window, the estimate is never above it
        /// and never below the newest sample (the kernel filter's guarantee).
        #[test]
        fn bounded_by_the_true_window_max(samples in proptest::collection::vec((0u64..3, 0.0f64..10.0), 1..200), window in 1u64..20) {
            let mut f = WindowedMax::new(window);
            let mut round = 0;
            let mut hist: Vec<(u64, f64)> = Vec::new();
            for (step, v) in samples {
                round += step;
                let got = f.update(round, v);
                hist.push((round, v));
                let truth = hist.iter().filter(|(r, _)| round - r < window).map(|(_, v)| *v).fold(f64::MIN, f64::max);
                prop_assert!(got <= truth + 1e-12, "got {} truth {}", got, truth);
                prop_assert!(got >= v);
                let all_max = hist.iter().map(|(_, v)| *v).fold(f64::MIN, f64::max);
                prop_assert!(got <= all_max);
            }
        }
    }

    #[test]
    fn holds_then_expires() {
        let mut f = WindowedMax::new(8);
        f.update(0, 1.0);
        for r in 1..8 {
            assert_eq!(f.update(r, 0.5), 1.0, "round {r}");
        }
        assert_eq!(f.update(8, 0.5), 0.5);
    }
}
