//! Online estimators the policies and the filter read: regime detection (IMM) and BBR's
//! windowed-maximum delivered-rate filter.

pub mod imm;
pub mod windowed_max;

pub use imm::{ImmConfig, TwoModeImm};
pub use windowed_max::WindowedMax;
