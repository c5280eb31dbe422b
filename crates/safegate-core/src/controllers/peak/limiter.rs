//! The limiter itself: [`Peak`], its state, its constructor and accessors, and its
//! [`Policy`] implementation (one decision: count the load, end a period when one is due,
//! act on the limit).

use super::config::{PeakConfig, MAX_LIMIT};
use super::curve::{grid, Bin};
use super::open::{Opening, OPEN_CADENCE};
use super::trial::{PeriodLoad, Stage, Trial};
use crate::controllers::{check_limits, Sampler};
use crate::error::check;
use crate::policy::{Action, Observation, Policy};
use crate::RangeError;

/// The throughput-climbing limiter (see the module docs).
///
/// # Examples
///
/// ```
/// use safegate_core::controllers::{Actuator, Peak, PeakConfig, Setting};
/// use safegate_core::{Observation, Policy};
///
/// let setting = Setting { capacity: 256.0, executors: 256, period: 0.05 };
/// let cfg = PeakConfig::for_setting(Actuator::Executors, &setting);
/// // It opens low and doubles each round trip the load presses it at the service's floor …
/// let mut p = Peak::new(cfg).unwrap();
/// assert_eq!(p.decide(&Observation::new(0.0, 0.0, 256.0)).concurrency, Some(2));
/// assert!(p.is_opening());
/// // … or climbs from 8 at once, with the opening off.
/// let mut p = Peak::new(PeakConfig { open_start: false, ..cfg }).unwrap();
/// assert_eq!(p.decide(&Observation::new(0.0, 0.0, 256.0)).concurrency, Some(8));
/// ```
#[derive(Debug, Clone)]
pub struct Peak {
    pub(super) cfg: PeakConfig,
    pub(super) grid: Vec<u32>,
    pub(super) bins: Vec<Bin>,
    /// Grid steps in one doubling of the limit (the momentum's cap).
    pub(super) max_stride: usize,
    pub(super) home: usize,
    pub(super) target: usize,
    pub(super) slow_start: bool,
    pub(super) up: bool,
    pub(super) stride: usize,
    pub(super) losses: u8,
    /// The opening (see [`PeakConfig::open_start`] and `open.rs`), while it runs.
    pub(super) open: Option<Opening>,
    /// Probe rounds in a row that confirmed home: each doubles the next hold, up to
    /// `2^MAX_CALM` times `hold_periods` (probing costs throughput; a settled climb probes
    /// less often). Reset by a move, an app-limited trial or a shift of home's rate.
    pub(super) calm: u32,
    /// The grid point whose service time rose in the opening: the first probe round stays
    /// below it.
    pub(super) ceiling: Option<usize>,
    /// The grid point that stalled last (`stall.rs`), and until when nothing at or above it
    /// is probed \[s\].
    pub(super) stalled: Option<(usize, f64)>,
    /// How long the next stall keeps its level out of the climb \[s\], and when the last
    /// stall was (NaN before the first).
    pub(super) stall_hold: f64,
    pub(super) last_stall: f64,
    /// The grid point of the last stall.
    pub(super) last_stalled: Option<usize>,
    /// How long the last stall took to show \[s\] (its trial's length; NaN before the
    /// first), the earliest time the climb may move up again after it, and whether that time
    /// is still to come (`stall.rs`: the climb is paced by its feedback).
    pub(super) pace: f64,
    pub(super) up_at: f64,
    pub(super) paced: bool,
    /// After a cut deeper than half (the first stall after the opening), the grid point at
    /// half the stalled level: up to it the climb regains with momentum and unpaced, as TCP
    /// slow-starts back to `ssthresh` after a timeout (`stall.rs`).
    pub(super) regain: Option<usize>,
    /// When the opening ended \[s\] (NaN while it runs, or without one): a first stall soon
    /// after it cuts deeper (`stall.rs`).
    pub(super) opened_at: f64,
    /// Whether a stall halved the limit and no trial has ended since, calm or stalled (the
    /// first stalled one is forgiven: `stall.rs`).
    pub(super) recovering: bool,
    /// The shortest service time seen, rising slowly (`stall.rs`).
    pub(super) service_floor: super::stall::ServiceFloor,
    /// The stalls pooled across levels (`hazard.rs`).
    pub(super) hazard: super::hazard::StallHazard,
    /// How many times longer than `trial_periods` the last probe ran (at least 1).
    pub(super) stretch: u32,
    pub(super) stage: Stage,
    pub(super) trial: Trial,
    pub(super) trial_len: u32,
    pub(super) sampler: Sampler,
    pub(super) load: PeriodLoad,
    pub(super) admitted0: f64,
    /// When the last decision was made \[s\] (NaN before the first): a decision that comes
    /// long after it says the controller itself was not running (`stall.rs`).
    pub(super) last_decision: f64,
}

impl Peak {
    /// A limiter with `cfg`, range-checked.
    pub fn new(cfg: PeakConfig) -> Result<Self, RangeError> {
        check_limits(cfg.min_limit, cfg.initial_limit, cfg.max_limit)?;
        check::positive("open_limit", cfg.open_limit)?;
        check::within("max_limit", cfg.max_limit, cfg.min_limit, MAX_LIMIT, "[min_limit, 1e6]")?;
        check::within("step", cfg.step, 0.05, 1.0, "[0.05, 1]")?;
        check::within("tolerance", cfg.tolerance, 0.0, 0.5, "[0, 0.5]")?;
        check::positive("interval", cfg.interval)?;
        check::within("trial_periods", f64::from(cfg.trial_periods), 1.0, 1e6, "[1, 1e6]")?;
        check::within("hold_periods", f64::from(cfg.hold_periods), 1.0, 1e6, "[1, 1e6]")?;
        check::non_negative("min_completions", cfg.min_completions)?;
        check::within("min_samples", f64::from(cfg.min_samples), 1.0, 1e6, "[1, 1e6]")?;
        check::gain("weight", cfg.weight)?;
        check::positive("max_age", cfg.max_age)?;
        check::positive("shift", cfg.shift)?;
        check::non_negative("latency_floor", cfg.latency_floor)?;
        let grid = grid(cfg.min_limit.floor() as u32, cfg.max_limit.floor() as u32, cfg.step);
        let start = grid.iter().rposition(|&g| f64::from(g) <= cfg.initial_limit).unwrap_or(0);
        // Within the bounds (a minimum above 2 opens at the minimum).
        let open_at = grid.iter().rposition(|&g| f64::from(g) <= cfg.open_limit).unwrap_or(0);
        let home = if cfg.open_start { open_at } else { start };
        let max_stride = (2f64.ln() / (1.0 + cfg.step).ln()).ceil().max(1.0) as usize;
        Ok(Self {
            bins: vec![Bin::default(); grid.len()],
            grid,
            max_stride,
            home,
            target: home,
            slow_start: !cfg.open_start,
            up: true,
            stride: 1,
            losses: 0,
            open: cfg.open_start.then(Opening::new),
            calm: 0,
            ceiling: None,
            stalled: None,
            stall_hold: super::stall::FIRST_HOLD,
            last_stall: f64::NAN,
            last_stalled: None,
            opened_at: f64::NAN,
            pace: f64::NAN,
            up_at: f64::NEG_INFINITY,
            paced: false,
            regain: None,
            recovering: false,
            service_floor: super::stall::ServiceFloor::new(),
            hazard: super::hazard::StallHazard::new(),
            stretch: 1,
            stage: Stage::Measure,
            trial: Trial::default(),
            trial_len: cfg.trial_periods,
            sampler: Sampler::new(cfg.interval),
            load: PeriodLoad::default(),
            admitted0: f64::NAN,
            last_decision: f64::NAN,
            cfg,
        })
    }

    /// The limit in force.
    pub fn limit(&self) -> u32 {
        self.grid[self.target]
    }

    /// The limit the climb holds (the one probes are compared with).
    pub fn home(&self) -> u32 {
        self.grid[self.home]
    }

    /// Whether the opening (the slow start by round trips) is still running.
    pub fn is_opening(&self) -> bool {
        self.open.is_some()
    }

    /// Whether it is still in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    /// The configuration.
    pub fn config(&self) -> &PeakConfig {
        &self.cfg
    }
}

impl Policy for Peak {
    fn decide(&mut self, obs: &Observation) -> Action {
        let limit = f64::from(self.limit());
        if let Some(v) = self.cfg.actuator.in_flight(obs) {
            self.load.decisions += 1;
            // Pressed: within one grid step of the limit (`L − 1` at small limits, where a step
            // is less than one request). A single reading per period can fall between a batch
            // of completions and their refill (a timer tick's worth at large limits), so
            // `L − 1` alone judged saturated load app-limited.
            let near = (limit - 1.0).min((1.0 - self.cfg.step) * limit);
            self.load.pressed += u32::from(v >= 1.0 && v >= near);
            self.load.max_in_flight = self.load.max_in_flight.max(v);
            self.load.in_flight_sum += v;
        }
        // How late this decision is: the time since the last one beyond a period (a host
        // that did not run the controller did not run its requests either).
        let late = obs.now - self.last_decision - self.cfg.interval;
        if late > self.load.late {
            self.load.late = late;
        }
        self.last_decision = obs.now;
        if self.admitted0.is_nan() {
            self.admitted0 = obs.admitted;
        }
        if self.open.is_some() {
            self.open_step(obs);
            if self.open.is_some() {
                // The climb's periods start when the opening ends.
                self.load = PeriodLoad::default();
                self.admitted0 = obs.admitted;
                let _ = self.sampler.poll(obs, 0.0);
                return self.cfg.actuator.action(self.limit(), obs);
            }
        }
        if let Some(w) = self.sampler.poll(obs, 0.0) {
            // Requests turned away in the period (NaN, so none, on garbage counters).
            let rejected = w.delta.offered - (obs.admitted - self.admitted0);
            let busy = (w.delta.latency - w.delta.wait).max(0.0);
            self.admitted0 = obs.admitted;
            // The curve climbed is of successes: a failure past the knee (a serialization
            // error, a 5xx) is no throughput (Observation::failed).
            let good = (w.delta.completed - w.delta.failed).max(0.0);
            self.end_period(w.elapsed, (w.delta.completed, good), busy, rejected, obs);
        }
        self.cfg.actuator.action(self.limit(), obs)
    }

    fn name(&self) -> &'static str {
        "peak"
    }

    fn next_decision_within(&self) -> Option<f64> {
        self.open.is_some().then_some(self.cfg.interval * OPEN_CADENCE)
    }
}
