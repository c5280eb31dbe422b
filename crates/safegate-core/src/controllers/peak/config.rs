//! The limiter's constants: [`PeakConfig`] (defaults and their adaptation to a
//! [`Setting`]) and [`MAX_LIMIT`].

use crate::controllers::{Actuator, Setting};

/// Largest limit [`Peak`](super::Peak) accepts (its grid is allocated up to it).
pub const MAX_LIMIT: f64 = 1e6;

/// Configuration of [`Peak`](super::Peak).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeakConfig {
    /// What the limit caps. Default [`Actuator::InFlight`].
    pub actuator: Actuator,
    /// Lowest limit. Default 1.
    pub min_limit: f64,
    /// Starting limit (slow start begins here). Default 8.
    pub initial_limit: f64,
    /// Highest limit, at most 10⁶. Default 1000.
    pub max_limit: f64,
    /// Grid ratio and probe size δ: neighbouring limits differ by `max(1, δ·L)`, in
    /// `[0.05, 1]`. Default 0.1.
    pub step: f64,
    /// Throughput tolerance: a probe above must beat home by more than this share, a probe
    /// below may fall short of it by at most this share, in `[0, 0.5]`. Default 0.03.
    pub tolerance: f64,
    /// Period \[s\]. Default 0.05 s.
    pub interval: f64,
    /// Periods a probe measures. Default 2.
    pub trial_periods: u32,
    /// Periods home is re-measured between probe rounds. Default 4.
    pub hold_periods: u32,
    /// Completions a trial needs at least (it is extended until it has them). Default 32.
    pub min_completions: f64,
    /// Measured periods a bin needs before it can be compared. Default 2.
    pub min_samples: u32,
    /// EWMA weight of a new trial in its bin, in `(0, 1]`. Default 0.5.
    pub weight: f64,
    /// A bin older than this is forgotten \[s\]. Default 3 s.
    pub max_age: f64,
    /// A sample off its bin's estimate by more than this share restarts the bin (a health
    /// change, not noise), `> 0`. Default 0.25.
    pub shift: f64,
    /// Service-time differences below this \[s\] count as none when two limits deliver the
    /// same throughput, `≥ 0`. Default 0.25 ms: below it a difference is the scheduler's,
    /// not a queue worth shedding for (a fast service climbs out of the way).
    pub latency_floor: f64,
    /// Open with a slow start by round trips (`open.rs`): from `open_limit`, double the
    /// limit each round trip the load presses it with the service time at its floor; the
    /// first rise of the service time ends the opening and the climb starts at the last
    /// level served at the floor. Default true. Off, the climb starts at `initial_limit`
    /// with its own slow start (a probe of the doubling every trial).
    pub open_start: bool,
    /// Where the opening starts. Default 2: a backend that collapses past two requests is
    /// not overrun, and a fast one is opened to a limit of 256 in 7 round trips.
    pub open_limit: f64,
}

impl Default for PeakConfig {
    fn default() -> Self {
        Self {
            actuator: Actuator::InFlight,
            min_limit: 1.0,
            initial_limit: 8.0,
            max_limit: 1000.0,
            step: 0.1,
            tolerance: 0.03,
            interval: 0.05,
            trial_periods: 2,
            hold_periods: 4,
            min_completions: 32.0,
            min_samples: 2,
            weight: 0.5,
            max_age: 3.0,
            shift: 0.25,
            latency_floor: 2.5e-4,
            open_start: true,
            open_limit: 2.0,
        }
    }
}

impl PeakConfig {
    /// The defaults adapted to `setting`: the maximum from [`Setting::limits`] (capacity in
    /// flight, the pool on executors; at most 10⁶), the start at `min(8, max)` on both
    /// actuators, updates every period.
    pub fn for_setting(actuator: Actuator, setting: &Setting) -> Self {
        let d = Self::default();
        let (min_limit, _, max_limit) = setting.limits(actuator, d.min_limit, d.initial_limit, d.max_limit);
        let max_limit = max_limit.min(MAX_LIMIT);
        let min_limit = min_limit.min(max_limit);
        let initial_limit = d.initial_limit.clamp(min_limit, max_limit);
        let open_limit = d.open_limit.clamp(min_limit, max_limit);
        Self { actuator, min_limit, initial_limit, max_limit, open_limit, interval: setting.period, ..d }
    }
}
