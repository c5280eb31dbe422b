//! Online estimators the policies and the filter read: regime detection (IMM) and BBR's
//! windowed-maximum delivered-rate filter.

pub mod imm;
pub mod moments;
pub mod windowed_max;

pub use imm::{ImmConfig, TwoModeImm};
pub use moments::{EwmaRate, WindowedMoments};
pub use windowed_max::WindowedMax;
