//! A resolved, validated simulation: everything a run needs, no defaults left to fill.

use crate::limits::{budget, MAX_EVENTS, MAX_RATE, MAX_STEPS};
use safegate_core::error::{check, RangeError};
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

/// A run's result, or the field of its [`Config`] that [`Config::check`] refused.
pub type Checked<T> = Result<T, RangeError>;

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

/// Largest expected count of arrivals or completions in one step of the stepped mode: its
/// Poisson tables are built to 10⁵ counts, exact for a mean up to about 9·10⁴.
pub const MAX_STEP_MEAN: f64 = 5e4;

impl Config {
    /// The highest offered rate of the run [req/s]: the spike's rate when it is above the
    /// base traffic.
    pub fn peak_traffic(&self) -> f64 {
        self.spike.map_or(self.traffic, |s| s.rate.max(self.traffic))
    }

    /// Offered rate at time `t` [req/s].
    #[inline]
    pub fn traffic_at(&self, t: f64) -> f64 {
        match self.spike {
            Some(s) if t >= s.start && t < s.start + s.duration => s.rate,
            _ => self.traffic,
        }
    }
}

impl Config {
    /// Number of fluid steps (`round(duration / dt)`).
    pub fn steps(&self) -> u64 {
        (self.duration / self.dt).round() as u64
    }

    /// Check the ranges a run relies on; the error names the field by its scenario path
    /// (`run.dt`). Every `run_*` calls this first. [`crate::Scenario::config`] checks the
    /// same ranges (it calls this) and a few more of the file's own.
    pub fn check(&self) -> Result<(), RangeError> {
        let p = &self.pool;
        if !(1..=1_000_000).contains(&p.executors) {
            return Err(RangeError::new("model.executors", p.executors, "an integer in [1, 1000000]"));
        }
        check::within("model.comfortable", p.comfortable, f64::MIN_POSITIVE, 1e6, "(0, 1e6]")?;
        check::within("model.rate", p.rate, f64::MIN_POSITIVE, MAX_RATE, "(0, 1e7] req/s")?;
        check::capacity("model.capacity", p.capacity)?;
        if p.capacity.fract() != 0.0 {
            return Err(RangeError::new("model.capacity", p.capacity, "a whole number in [1, 1e8] requests"));
        }
        check::within("traffic.rate", self.traffic, 0.0, MAX_RATE, "[0, 1e7] req/s")?;
        if let Some(sp) = self.spike {
            check::non_negative("traffic.spike.start", sp.start)?;
            check::positive("traffic.spike.duration", sp.duration)?;
            check::within("traffic.spike.rate", sp.rate, 0.0, MAX_RATE, "[0, 1e7] req/s")?;
        }
        check::within("run.duration", self.duration, f64::MIN_POSITIVE, 1e9, "(0, 1e9] seconds")?;
        if !(self.dt > 0.0 && self.dt <= self.duration) {
            let duration = safegate_core::error::number(self.duration);
            return Err(RangeError::new("run.dt", self.dt, format!("(0, run.duration = {duration}]")));
        }
        budget("run.duration", self.duration, self.duration / self.dt, MAX_STEPS, "run.duration / run.dt steps")?;
        if !(self.initial_queue >= 0.0 && self.initial_queue <= p.capacity) {
            return Err(RangeError::new(
                "run.initial_queue",
                self.initial_queue,
                format!("[0, model.capacity = {}]", p.capacity),
            ));
        }
        check::non_negative("run.warmup", self.warmup)?;
        check::non_negative("run.drain_level", self.drain_level)?;
        self.health.check()?;
        self.retries.check()?;
        self.service.check()?;
        Ok(())
    }

    /// [`Config::check`], and the budget of `mode`: a stochastic run is an event per
    /// arrival, so its expected arrivals `λ·duration` must fit [`MAX_EVENTS`].
    pub fn check_for(&self, mode: crate::Mode) -> Result<(), RangeError> {
        self.check_runs(mode, 1)
    }

    /// [`Config::check_for`] for `runs` runs of this configuration played one after the
    /// other (a study's arms): every budget counts the work of all of them, so that a
    /// duration each run alone could afford does not take `runs` times the promised time.
    pub fn check_runs(&self, mode: crate::Mode, runs: usize) -> Result<(), RangeError> {
        self.check()?;
        let k = runs.max(1) as f64;
        let of = |what: &str| if runs > 1 { format!("{runs} runs × {what}") } else { what.to_string() };
        if runs > 1 {
            budget(
                "run.duration",
                self.duration,
                k * self.duration / self.dt,
                MAX_STEPS,
                &of("run.duration / run.dt steps"),
            )?;
        }
        if mode == crate::Mode::Stochastic {
            let peak = self.peak_traffic();
            budget(
                "traffic.rate",
                self.traffic,
                k * peak * self.duration,
                MAX_EVENTS,
                &of("expected arrivals of a stochastic run (peak traffic × run.duration)"),
            )?;
            // Every piece of the health schedule (and every noise redraw) is an event too.
            let pieces = self.health.pieces_within(self.duration);
            budget(
                "run.duration",
                self.duration,
                k * pieces,
                MAX_EVENTS,
                &of("health pieces and noise redraws in the run"),
            )?;
        }
        if mode == crate::Mode::Stepped {
            // A stepped run draws each step's arrivals and completion candidates one
            // Bernoulli trial at a time, so its work is its expected arrivals plus the pool's
            // peak completions over the run, not its steps alone (λ = 1e7 for 16 000 s took
            // 40 s in `serve`; 5e6 s at a big pool would have taken hours). And each step's
            // Poisson table is exact only up to a mean of about 1e5 draws.
            let peak_in = self.peak_traffic();
            let peak_out = self.pool.peak_rate().1 * crate::stepped::health_ceiling(self);
            budget(
                "traffic.rate",
                self.traffic,
                k * (peak_in + peak_out) * self.duration,
                MAX_EVENTS,
                &of("arrivals and completion draws of a stepped run ((peak traffic + the pool's peak clearing rate) × run.duration)"),
            )?;
            budget(
                "run.dt",
                self.dt,
                peak_in.max(peak_out) * self.dt,
                MAX_STEP_MEAN,
                "expected arrivals or completions in one step of a stepped run (peak rate × run.dt)",
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A configuration that fails `check` (`dt = 0` would loop for ever) is refused by every
    /// simulator, at once.
    #[test]
    fn every_simulator_refuses_what_check_refuses() {
        let bad = Config { dt: 0.0, ..Config::default() };
        let mut open = safegate_core::Open;
        let opts = crate::RunOptions::default;
        assert_eq!(crate::run_fluid(&bad, &mut open, opts()).unwrap_err().field, "run.dt");
        assert_eq!(crate::run_stochastic(&bad, &mut open, opts()).unwrap_err().field, "run.dt");
        assert_eq!(crate::run_stepped(&bad, &mut open, opts()).unwrap_err().field, "run.dt");
        for mode in [crate::Mode::Fluid, crate::Mode::Stochastic, crate::Mode::Stepped] {
            assert!(crate::run(mode, &bad, &mut open, opts()).is_err());
        }
    }

    /// Sizes derived from input are checked against a stated budget before a run starts
    /// (issue "bad input": `run --duration 1e9` ran for 45 minutes, `--traffic 1e308` printed
    /// `offered inf`, a stochastic run at 1e9 req/s hung).
    #[test]
    fn sizes_derived_from_input_fit_a_budget() {
        let e = Config { duration: 1e9, ..Config::default() }.check().unwrap_err();
        assert_eq!(e.field, "run.duration");
        assert!(e.allowed.contains("2e10") && e.allowed.contains("at most 1e8"), "{e}");
        assert_eq!(Config { traffic: 1e308, ..Config::default() }.check().unwrap_err().field, "traffic.rate");
        let fast = Config { traffic: 1e7, ..Config::default() };
        assert!(fast.check_for(crate::Mode::Fluid).is_ok());
        let e = fast.check_for(crate::Mode::Stochastic).unwrap_err();
        assert!(e.allowed.contains("expected arrivals"), "{e}");
        // The stepped mode draws arrivals and completions one by one: λ = 1e7 over 400 s is
        // refused, and so is a step whose Poisson table could not be exact.
        let e = fast.check_for(crate::Mode::Stepped).unwrap_err();
        assert_eq!(e.field, "traffic.rate");
        assert!(e.allowed.contains("stepped run"), "{e}");
        let coarse = Config { traffic: 1e7, duration: 5.0, dt: 0.05, ..Config::default() };
        assert_eq!(coarse.check_for(crate::Mode::Stepped).unwrap_err().field, "run.dt");
        assert!(Config::default().check_for(crate::Mode::Stepped).is_ok());
    }

    #[test]
    fn check_accepts_the_default_and_names_a_bad_field() {
        assert!(Config::default().check().is_ok());
        let e = Config { dt: 0.0, ..Config::default() }.check().unwrap_err();
        assert_eq!(e.field, "run.dt");
        // One capacity range everywhere: [1, 1e8], as in scenario files.
        let big = Config { pool: crate::Pool { capacity: 1e9, ..crate::Pool::default() }, ..Config::default() };
        assert_eq!(big.check().unwrap_err().allowed, "[1, 1e8] requests");
        let e = Config { initial_queue: 500.0, ..Config::default() }.check().unwrap_err();
        assert_eq!(e.field, "run.initial_queue");
        assert!(e.to_string().contains("[0, model.capacity = 200]"), "{e}");
    }
}
