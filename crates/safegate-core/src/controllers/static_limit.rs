//! A fixed concurrency limit: tower's `ConcurrencyLimit` (tower docs,
//! `tower::limit::ConcurrencyLimit`: "enforces a limit on the concurrent number of requests
//! the underlying service can handle"), and Netflix concurrency-limits' `FixedLimit`.
//!
//! `L` never changes: in flight, an arrival is admitted while `queue + 1 ≤ L`; on executors,
//! at most `L` run at once. Neither source has a default `L` (it is the one required
//! argument); [`StaticConfig::default`] uses 20, the Netflix limiters' initial limit, and
//! [`StaticConfig::for_setting`] on executors uses the pool size (no cap beyond the pool's
//! own, the "tuned by nobody" baseline).

use crate::error::check;
use super::{Actuator, Setting};
use crate::policy::{Action, Observation, Policy};
use crate::RangeError;

/// Configuration of [`StaticLimit`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StaticConfig {
    /// What the limit caps. Default [`Actuator::InFlight`].
    pub actuator: Actuator,
    /// The limit, ≥ 1. Default 20.
    pub limit: u32,
}

impl Default for StaticConfig {
    fn default() -> Self {
        Self { actuator: Actuator::InFlight, limit: 20 }
    }
}

impl StaticConfig {
    /// In flight: 20, at most the capacity; executors: the pool size.
    pub fn for_setting(actuator: Actuator, setting: &Setting) -> Self {
        Self { actuator, limit: setting.max_limit(actuator, f64::from(Self::default().limit)) as u32 }
    }
}

/// A fixed concurrency limit (see the module docs).
///
/// # Examples
///
/// ```
/// use safegate_core::controllers::{Actuator, StaticConfig, StaticLimit};
/// use safegate_core::{Observation, Policy};
///
/// let mut s = StaticLimit::new(StaticConfig { actuator: Actuator::Executors, limit: 4 }).unwrap();
/// let a = s.decide(&Observation::new(0.0, 120.0, 200.0));
/// assert_eq!((a.admit, a.concurrency), (1.0, Some(4)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StaticLimit {
    cfg: StaticConfig,
}

impl StaticLimit {
    /// A fixed limit; refuses 0.
    pub fn new(cfg: StaticConfig) -> Result<Self, RangeError> {
        check::within("limit", cfg.limit as f64, 1.0, f64::MAX, "1 or more")?;
        Ok(Self { cfg })
    }

    /// The limit.
    pub fn limit(&self) -> u32 {
        self.cfg.limit
    }

    /// The configuration.
    pub fn config(&self) -> &StaticConfig {
        &self.cfg
    }
}

impl Policy for StaticLimit {
    fn decide(&mut self, obs: &Observation) -> Action {
        self.cfg.actuator.action(self.cfg.limit, obs)
    }

    fn name(&self) -> &'static str {
        "static"
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_survives_garbage, Synth};
    use super::*;

    #[test]
    fn the_limit_never_moves() {
        let mut p = StaticLimit::new(StaticConfig::default()).unwrap();
        let mut s = Synth::new(19.0, 8.0, 100.0);
        assert_eq!(s.run(&mut p, 100, 0.05, 0.0).admit, 1.0);
        assert_eq!(s.run(&mut p, 100, 5.0, 0.0).admit, 1.0);
        s.obs.queue = 20.0;
        assert_eq!(s.run(&mut p, 1, 0.001, 0.0).admit, 0.0);
        assert_eq!(p.limit(), 20);
    }

    #[test]
    fn for_setting_follows_the_actuator() {
        let s = Setting::default();
        assert_eq!(StaticConfig::for_setting(Actuator::InFlight, &s).limit, 20);
        assert_eq!(StaticConfig::for_setting(Actuator::Executors, &s).limit, 8);
        let tiny = Setting { capacity: 5.0, ..s };
        assert_eq!(StaticConfig::for_setting(Actuator::InFlight, &tiny).limit, 5);
        assert_eq!(StaticLimit::new(StaticConfig { limit: 0, ..StaticConfig::default() }).unwrap_err().field, "limit");
    }

    #[test]
    fn garbage_never_yields_a_bad_action() {
        assert_survives_garbage(&mut StaticLimit::new(StaticConfig::default()).unwrap());
        let cfg = StaticConfig { actuator: Actuator::Executors, limit: 3 };
        assert_survives_garbage(&mut StaticLimit::new(cfg).unwrap());
    }
}
