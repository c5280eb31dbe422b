//! Measuring: one period's load ([`PeriodLoad`]), a trial's sums ([`Trial`]), the settle
//! before a trial ([`Stage`]), and [`Peak::end_period`], which feeds a period into the trial
//! and ends the trial when it has enough.

use super::Peak;
use crate::policy::Observation;

/// Periods a trial waits at most for the load to come down to a lowered limit.
const MAX_SETTLE_PERIODS: u32 = 10;

/// Periods a trial measures at most while waiting for its completions (then it ends with
/// what it has).
const MAX_TRIAL_PERIODS: u32 = 40;

/// One period's load, seen at every decision.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct PeriodLoad {
    pub(super) decisions: u32,
    pub(super) pressed: u32,
    pub(super) max_in_flight: f64,
    /// The requests in flight summed over the period's decisions (their mean is the
    /// period's load, for Little's law in `stall.rs`).
    pub(super) in_flight_sum: f64,
    /// The latest decision in the period, beyond a period after the one before it \[s\].
    pub(super) late: f64,
}

/// A trial's accumulated measurements.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Trial {
    pub(super) periods: u32,
    pub(super) saturated: u32,
    pub(super) completed: f64,
    /// Of `completed`, the successes (completions less failures): the rate climbed.
    pub(super) good: f64,
    pub(super) elapsed: f64,
    pub(super) busy: f64,
    pub(super) max_in_flight: f64,
    /// Request-seconds in flight: each period's mean in flight times its length. Over the
    /// completions, the mean time in flight by Little's law (`stall.rs`).
    pub(super) held: f64,
    /// The latest decision of its periods (their [`PeriodLoad::late`]) \[s\].
    pub(super) late: f64,
    /// Sum and sum of squares of the periods' good rates \[req/s\]: their spread is the
    /// noise a comparison of two bins must see through.
    pub(super) rate_sum: f64,
    pub(super) rate_sq: f64,
}

impl Trial {
    /// Whether the load pressed the limit in most of its periods (none: not).
    pub(super) fn saturated(&self) -> bool {
        self.periods > 0 && 2 * self.saturated >= self.periods
    }

    /// The sample variance of the trial's period rates (NaN with fewer than two periods).
    pub(super) fn period_variance(&self) -> f64 {
        let n = f64::from(self.periods);
        if n < 2.0 {
            return f64::NAN;
        }
        let mean = self.rate_sum / n;
        ((self.rate_sq - n * mean * mean) / (n - 1.0)).max(0.0)
    }
}

/// Where a trial is: settling to its limit, or measuring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// Waiting for the load to come down to a new limit (periods waited).
    Settle(u32),
    /// Measuring.
    Measure,
}

impl Peak {
    /// One period ended at the observation `obs` with `rejected` requests turned away in it.
    pub(super) fn end_period(
        &mut self,
        elapsed: f64,
        (completed, good): (f64, f64),
        busy: f64,
        rejected: f64,
        obs: &Observation,
    ) {
        let load = std::mem::take(&mut self.load);
        let limit = f64::from(self.limit());
        match self.stage {
            Stage::Settle(waited) => {
                let down = self.cfg.actuator.in_flight(obs).is_none_or(|v| v <= limit);
                self.stage =
                    if down || waited + 1 >= MAX_SETTLE_PERIODS { Stage::Measure } else { Stage::Settle(waited + 1) };
            }
            Stage::Measure => {
                let pressed_most = load.decisions > 0 && 2 * load.pressed >= load.decisions;
                let turned_away = rejected > 0.5 && load.pressed > 0;
                let t = &mut self.trial;
                t.periods += 1;
                t.saturated += u32::from(pressed_most || turned_away);
                t.completed += completed;
                t.good += good;
                t.elapsed += elapsed;
                t.busy += busy;
                t.max_in_flight = t.max_in_flight.max(load.max_in_flight);
                if load.decisions > 0 {
                    t.held += load.in_flight_sum / f64::from(load.decisions) * elapsed;
                }
                t.late = t.late.max(load.late);
                if elapsed > 0.0 {
                    let r = good / elapsed;
                    if r.is_finite() {
                        t.rate_sum += r;
                        t.rate_sq += r * r;
                    }
                }
                let enough = t.periods >= self.trial_len && t.completed >= self.cfg.min_completions;
                // A long hold at home ends early when home's rate moves off its record (a
                // health change): the climb starts probing again at once.
                let (rate, periods, done) = (t.good / t.elapsed, t.periods, t.completed);
                let shifted = self.target == self.home
                    && periods >= self.cfg.trial_periods
                    && done >= self.cfg.min_completions
                    && self.usable(self.home, obs.now).is_some_and(|h| (rate - h).abs() > self.cfg.shift * rate.max(h));
                if shifted {
                    self.calm = 0;
                }
                if enough || shifted || periods >= MAX_TRIAL_PERIODS.max(self.trial_len) {
                    self.finish_trial(obs.now);
                }
            }
        }
    }
}
