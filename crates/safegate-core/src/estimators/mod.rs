//! Online estimators the policies and the filter read: regime detection (IMM, with a
//! heavy-tail-robust likelihood), BBR's windowed-maximum delivered-rate filter, the latency
//! gradient and windowed minimum RTT of latency-based limiters, an online service curve
//! μ(n, H), and the Hill tail-index estimator.

pub mod hill;
pub mod imm;
pub mod latency;
pub mod moments;
pub mod service_curve;
pub mod tail;
pub mod windowed_max;

pub use hill::{hill, hill_auto, hill_k, HillEstimate};
pub use imm::{run_series, Detection, ImmConfig, Likelihood, TwoModeImm};
pub use latency::{LatencyConfig, LatencyGradient};
pub use moments::{EwmaRate, WindowedMoments};
pub use service_curve::ServiceCurve;
pub use tail::{classify, TailClass, TailReport};
pub use windowed_max::WindowedMax;

/// A tiny deterministic generator for the estimators' tests (SplitMix64: Steele, Lea &
/// Flood, "Fast Splittable Pseudorandom Number Generators", OOPSLA 2014).
#[cfg(test)]
pub(crate) mod test_rng {
    pub(crate) struct SplitMix(pub(crate) u64);

    impl SplitMix {
        pub(crate) fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        /// Uniform on [0, 1) with 53 random bits.
        pub(crate) fn next_f64(&mut self) -> f64 {
            (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
        }
    }
}
