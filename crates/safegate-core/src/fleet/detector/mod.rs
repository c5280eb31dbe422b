//! Failure detectors for the coordinator's heartbeats.
//!
//! Two detectors behind one trait, [`FailureDetector`]:
//!
//! - [`PhiAccrual`]: the φ accrual failure detector of N. Hayashibara, X. Défago, R. Yared
//!   and T. Katayama, "The φ Accrual Failure Detector" (SRDS 2004). It keeps a window of
//!   inter-arrival times and reports a suspicion level `φ(t) = −log₁₀(1 − F(t − t_last))`,
//!   `F` the normal CDF with the window's mean and standard deviation. As in Akka's
//!   `PhiAccrualFailureDetector`, the standard deviation is floored (`min_std`) and an
//!   `acceptable_pause` is added to the mean.
//! - [`Timeout`]: suspect after a fixed time `T` without a heartbeat.
//!
//! Files:
//!
//! - `failure_detector.rs`: the trait, [`FailureDetector`], and the elapsed time since the
//!   last heartbeat that both detectors read.
//! - `normal_tail.rs`: φ of a standard score, [`phi_of_score`], and its inverse,
//!   [`score_of_phi`].
//! - `phi.rs`: [`PhiConfig`] (Akka's defaults) and [`PhiAccrual`].
//! - `timeout.rs`: [`Timeout`].
//!
//! What a threshold buys (false suspicions against detection time, on a seeded heartbeat
//! process) is measured by the simulator, `safegate_sim::heartbeat`.
//!
//! Time is seconds as `f64`, passed in; nothing here reads a clock.
//!
//! ```
//! use safegate_core::fleet::detector::{FailureDetector, PhiAccrual, PhiConfig};
//!
//! let mut d = PhiAccrual::new(PhiConfig::default()).unwrap(); // Akka's defaults
//! for i in 0..100 {
//!     d.heartbeat(i as f64); // one heartbeat a second
//! }
//! assert!(!d.suspect(99.0 + 1.0));
//! assert!(d.suspect(99.0 + 6.0)); // at 1 s mean + 3 s pause + 5.61 × 0.1 s floored sd = 4.56 s
//! ```

mod failure_detector;
mod normal_tail;
mod phi;
mod timeout;

pub use failure_detector::FailureDetector;
pub use normal_tail::{phi_of_score, score_of_phi};
pub use phi::{PhiAccrual, PhiConfig};
pub use timeout::Timeout;

#[cfg(test)]
mod tests;
