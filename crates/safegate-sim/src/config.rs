//! A resolved, validated simulation: everything a run needs, no defaults left to fill.

use serde::Serialize;

use crate::behaviour::{Retries, ServiceLaw};
use crate::health::HealthTrack;
use crate::model::Pool;

/// Everything one run of the model needs. Build it from a [`crate::Scenario`] (which
/// validates) or by hand (then [`Config::check`] it).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The executor pool.
    pub pool: Pool,
    /// Base traffic λ [req/s].
    pub traffic: f64,
    /// A step of traffic on top of the base (`None`: constant λ).
    pub spike: Option<Spike>,
    /// Downstream health over time.
    pub health: HealthTrack,
    /// Retries (off by default).
    pub retries: Retries,
    /// Law of one request's work (stochastic mode).
    pub service: ServiceLaw,
    /// Simulated seconds.
    pub duration: f64,
    /// Fluid step and stochastic sampling interval \[s\].
    pub dt: f64,
    /// Seed of every random draw.
    pub seed: u64,
    /// Queue depth at t = 0.
    pub initial_queue: f64,
    /// Queue depth counted as drained (docs/model.md §How each of the seed's numbers is
    /// measured: any of 3–6 gives the same recovery delay).
    pub drain_level: f64,
    /// Start of the settled window whose queue range the summary reports \[s\].
    pub warmup: f64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            pool: Pool::default(),
            traffic: 80.0,
            spike: None,
            health: HealthTrack::new(crate::HealthSchedule::Cycle(Default::default())),
            retries: Retries::Off,
            service: ServiceLaw::Exponential,
            duration: 400.0,
            dt: 0.05,
            seed: 1,
            initial_queue: 0.0,
            drain_level: 6.0,
            warmup: 0.0,
        }
    }
}

/// A step change of the offered rate: λ = `rate` on `[start, start + duration)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spike {
    /// Start \[s\].
    pub start: f64,
    /// Length \[s\].
    pub duration: f64,
    /// Offered rate during the spike [req/s].
    pub rate: f64,
}

impl Config {
    /// Offered rate at time `t` [req/s].
    #[inline]
    pub fn traffic_at(&self, t: f64) -> f64 {
        match self.spike {
            Some(s) if t >= s.start && t < s.start + s.duration => s.rate,
            _ => self.traffic,
        }
    }
}

/// A value a run cannot use.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("{field} = {value} is out of range: allowed {allowed}")]
pub struct InvalidConfig {
    /// The field, as a dotted path (`run.dt`).
    pub field: String,
    /// The offending value, as text.
    pub value: String,
    /// The allowed range, in words.
    pub allowed: String,
}

impl Config {
    /// Number of fluid steps (`round(duration / dt)`).
    pub fn steps(&self) -> u64 {
        (self.duration / self.dt).round() as u64
    }

    /// Check the ranges a run relies on (a [`crate::Scenario`] does this with file paths).
    pub fn check(&self) -> Result<(), InvalidConfig> {
        let bad = |field: &str, value: f64, allowed: &str| {
            Err(InvalidConfig { field: field.into(), value: value.to_string(), allowed: allowed.into() })
        };
        let p = &self.pool;
        if p.executors == 0 {
            return bad("model.executors", 0.0, "an integer ≥ 1");
        }
        if !(p.comfortable > 0.0 && p.comfortable.is_finite()) {
            return bad("model.comfortable", p.comfortable, "(0, ∞)");
        }
        if !(p.rate > 0.0 && p.rate.is_finite()) {
            return bad("model.rate", p.rate, "(0, ∞)");
        }
        if !(p.capacity >= 1.0 && p.capacity.is_finite()) {
            return bad("model.capacity", p.capacity, "[1, ∞)");
        }
        if !(self.traffic >= 0.0 && self.traffic.is_finite()) {
            return bad("traffic.rate", self.traffic, "[0, ∞)");
        }
        if let Some(sp) = self.spike {
            if !(sp.rate >= 0.0 && sp.rate.is_finite()) {
                return bad("traffic.spike.rate", sp.rate, "[0, ∞)");
            }
            if !(sp.start >= 0.0 && sp.start.is_finite()) {
                return bad("traffic.spike.start", sp.start, "[0, ∞)");
            }
            if !(sp.duration > 0.0 && sp.duration.is_finite()) {
                return bad("traffic.spike.duration", sp.duration, "(0, ∞)");
            }
        }
        if !(self.duration > 0.0 && self.duration.is_finite()) {
            return bad("run.duration", self.duration, "(0, ∞)");
        }
        if !(self.dt > 0.0 && self.dt <= self.duration) {
            return bad("run.dt", self.dt, "(0, duration]");
        }
        if !(0.0..=p.capacity).contains(&self.initial_queue) {
            return bad("run.initial_queue", self.initial_queue, "[0, capacity]");
        }
        if !(self.warmup >= 0.0 && self.warmup.is_finite()) {
            return bad("run.warmup", self.warmup, "[0, ∞)");
        }
        if !(self.drain_level >= 0.0 && self.drain_level.is_finite()) {
            return bad("run.drain_level", self.drain_level, "[0, ∞)");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_accepts_the_default_and_names_a_bad_field() {
        assert!(Config::default().check().is_ok());
        let e = Config { dt: 0.0, ..Config::default() }.check().unwrap_err();
        assert_eq!(e.field, "run.dt");
        let e = Config { initial_queue: 500.0, ..Config::default() }.check().unwrap_err();
        assert_eq!(e.field, "run.initial_queue");
        assert!(e.to_string().contains("[0, capacity]"));
    }
}
