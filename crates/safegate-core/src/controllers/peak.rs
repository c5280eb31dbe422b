//! A limit that finds and holds the top of the service curve by measuring delivered
//! throughput: slow start, then a hill climb on a learned curve.
//!
//! The latency limiters (Vegas, Gradient2, AIMD, Envoy's gradient) read a no-load RTT
//! baseline and infer queueing from it. On a backend whose throughput *collapses* past a
//! knee (service time `base·max(1, (n/C)²)` with `n` requests in it, so `n/S(n)` peaks at
//! `n = C`) that baseline is polluted if the limiter starts overloaded, and none of them
//! looks at the quantity that matters, the throughput the limit delivers. `peak` measures
//! that directly and climbs it (the idea of BBR's bandwidth probing and of hill-climbing
//! concurrency tuners, re-derived here for a concurrency limit; no code is taken from
//! either).
//!
//! # The algorithm
//!
//! Limits live on a geometric **grid** from `⌊min⌋` to `⌊max⌋`: each point is
//! `max(g + 1, round(g·(1 + step)))` of the one below (1, 2, …, 10, 11, 12, 13, 14, 15, 17,
//! 19, 21, 23, 25, 28, 31, 34, 37, 41, … for `step` = 0.1), so probes land on the same
//! points again and their estimates accumulate.
//!
//! Time is cut into **periods** (`interval`, the setting's 50 ms); a period is
//! *saturated* when the load pressed on the limit (in flight ≥ `L − 1`) at least half of
//! the decisions in it, or requests were turned away while it pressed at some decision.
//! A **trial** holds one grid point: after a change it waits until the load in flight has
//! come down to the new limit (at most 10 periods: the drain of a lowered limit is not a
//! sample of it), then measures `trial_periods` periods (`hold_periods` for the periodic
//! re-measure of the home point) and at least `min_completions` completions. The trial's
//! delivered rate `Δcompleted/Δt` and service time `(Δlatency − Δwait)/Δcompleted` are a
//! **capacity sample** of its grid point when most of its periods were saturated; an
//! unsaturated trial is app-limited and says nothing about capacity.
//!
//! Capacity samples go into a **learned curve**, one bin per grid point: an EWMA (weight
//! `max(weight, 1/trials)`, as [`ServiceCurve`](crate::estimators::ServiceCurve)) of rate
//! and service time. A bin is *usable* once it holds `min_samples` measured periods and
//! its last sample is younger than `max_age`; a stale bin, or one whose new sample differs
//! from its estimate by more than `shift` (a level shift: the backend's health changed),
//! restarts from the new sample rather than averaging across the change. A probe whose
//! bin is not yet usable is repeated (the noise guard).
//!
//! The climb, around a **home** point:
//!
//! 1. **Slow start** (from `initial`, 8 by default: low, so an overloaded start is not
//!    deep in collapse): measure home, then probe the grid point nearest `2·home`; while
//!    the probe wins (the rule of step 2) it becomes home and the next doubling is probed.
//! 2. **Hill climb**: probe `home ± s` grid steps (one side, then the other). A probe wins
//!    when it delivers more than `(1 + tolerance)·home`, or the same within `tolerance`
//!    and, *below* home, a service time shorter by more than 5 % and `latency_floor` (on a
//!    curve flat past `W` workers this walks down to the knee, where a bigger limit only
//!    adds queueing), or, *above* home, one longer by at most 2 % or `latency_floor` (a
//!    fast service whose latency does not grow with the limit climbs out of the way
//!    instead of shedding the bursts of a load it carries easily). A win moves home there and doubles `s` (momentum,
//!    at most one doubling of the limit per probe, so a health change that moves the knee
//!    by 2× is followed in a few probes); a loss resets `s` to 1 and turns to the other
//!    side. When both sides lost, home is re-measured for `hold_periods`, doubled after
//!    each such confirmation up to 16× (probing costs throughput; a settled climb probes
//!    less often), and cut short when home's rate moves by more than `shift` from its
//!    record (a health change: probing resumes at once).
//! 3. **App-limited** trials (the load did not fill the limit) never lower it: home
//!    becomes the larger of home and the trial's point, and moves one point up when the
//!    most seen in flight came within `step` of it, so the limit drifts up toward the max
//!    as the load approaches it and is already out of the way when the load grows.
//!
//! Bounds: the limit stays in `[min, max]` ([`Setting::limits`] for the maximum). It
//! opens at the maximum and starts the climb at `initial` only once the load fills the
//! maximum (`open_start`): a load that never fills it is never shed, and an overload is not
//! left at the top of a collapsing curve, the failure this controller exists to avoid; the
//! opening ends at its first saturated period. On [`Actuator::Executors`] it caps busy
//! executors (the tower layer in reject mode: in service); on [`Actuator::InFlight`] it
//! caps the requests in the system, and throughput is measured the same way.
//!
//! Nothing is random; the grid and the bins are allocated at construction (at most a few
//! hundred points: `max ≤ 10⁶`, `step ≥ 0.05`), a decision allocates nothing.
//!
//! # Costs and limits
//!
//! Probing costs throughput: in steady state a cycle is one hold of home and one probe on
//! each side (`step` = 10 %: on the collapsing curve each probe delivers ~90 % of the
//! peak), so the mean is ~95 % of the peak. The signal is throughput, so the controller
//! needs saturation to learn anything; under light load it only keeps out of the way.

use super::{check_limits, Actuator, Setting};
use crate::error::check;
use crate::policy::{Action, Observation, Policy};
use crate::RangeError;

use super::Sampler;

/// Largest limit [`Peak`] accepts (its grid is allocated up to it).
pub const MAX_LIMIT: f64 = 1e6;

/// Periods a trial waits at most for the load to come down to a lowered limit.
const MAX_SETTLE_PERIODS: u32 = 10;

/// Periods a trial measures at most while waiting for its completions (then it ends with
/// what it has).
const MAX_TRIAL_PERIODS: u32 = 40;

/// Between two points of the same throughput, a lower limit wins when its service time is
/// shorter by more than this share (and `latency_floor`) …
const CHEAPER: f64 = 0.05;
/// … and a higher one when its service time is longer by at most this share (or
/// `latency_floor`).
const NO_DEARER: f64 = 0.02;

/// Most doublings of the hold between probe rounds (4 periods → 64 at most: 3.2 s at 50 ms).
const MAX_CALM: u32 = 4;

/// Configuration of [`Peak`].
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
    /// Open at the maximum, and start the climb at `initial_limit` only once the load
    /// fills it (a load that never reaches the maximum is never shed). Default true; the
    /// cost is one trial deep in a collapsing backend's collapse and its drain (~0.5 s),
    /// the gain that a healthy fast service is not shed while the climb finds its room.
    pub open_start: bool,
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
        Self { actuator, min_limit, initial_limit, max_limit, interval: setting.period, ..d }
    }
}

/// One grid point's learned throughput and service time.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Bin {
    /// Delivered rate \[req/s\] (EWMA over trials).
    rate: f64,
    /// Mean service time \[s\] (EWMA; NaN while unknown).
    service: f64,
    /// Measured periods in the estimate.
    samples: u32,
    /// Trials in the estimate.
    trials: u32,
    /// Time of the last sample \[s\].
    at: f64,
}

/// One period's load, seen at every decision.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct PeriodLoad {
    decisions: u32,
    pressed: u32,
    max_in_flight: f64,
}

/// A trial's accumulated measurements.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Trial {
    periods: u32,
    saturated: u32,
    completed: f64,
    elapsed: f64,
    busy: f64,
    max_in_flight: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Waiting for the load to come down to a new limit (periods waited).
    Settle(u32),
    /// Measuring.
    Measure,
}

/// A point of the learned curve, as [`Peak::curve`] reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CurvePoint {
    /// The limit.
    pub limit: u32,
    /// Delivered rate there while saturated \[req/s\].
    pub rate: f64,
    /// Mean service time there \[s\] (NaN if unknown).
    pub service: f64,
    /// Measured periods in the estimate.
    pub samples: u32,
}

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
/// // It opens at the maximum: a load that never fills it is never shed …
/// let mut p = Peak::new(cfg).unwrap();
/// assert_eq!(p.decide(&Observation::new(0.0, 0.0, 256.0)).concurrency, Some(256));
/// // … and climbs from 8 once one does (or from the start, with the opening off).
/// let mut p = Peak::new(PeakConfig { open_start: false, ..cfg }).unwrap();
/// assert_eq!(p.decide(&Observation::new(0.0, 0.0, 256.0)).concurrency, Some(8));
/// ```
#[derive(Debug, Clone)]
pub struct Peak {
    cfg: PeakConfig,
    grid: Vec<u32>,
    bins: Vec<Bin>,
    /// Grid steps in one doubling of the limit (the momentum's cap).
    max_stride: usize,
    home: usize,
    target: usize,
    slow_start: bool,
    up: bool,
    stride: usize,
    losses: u8,
    /// The opening trial at the maximum is running (see [`PeakConfig::open_start`]).
    opening: bool,
    /// The grid point of `initial_limit`, where the climb starts.
    start: usize,
    /// Probe rounds in a row that confirmed home: each doubles the next hold, up to
    /// `2^MAX_CALM` times `hold_periods` (probing costs throughput; a settled climb probes
    /// less often). Reset by a move, an app-limited trial or a shift of home's rate.
    calm: u32,
    stage: Stage,
    trial: Trial,
    trial_len: u32,
    sampler: Sampler,
    load: PeriodLoad,
    admitted0: f64,
}

impl Peak {
    /// A limiter with `cfg`, range-checked.
    pub fn new(cfg: PeakConfig) -> Result<Self, RangeError> {
        check_limits(cfg.min_limit, cfg.initial_limit, cfg.max_limit)?;
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
        let home = if cfg.open_start { grid.len() - 1 } else { start };
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
            opening: cfg.open_start,
            start,
            calm: 0,
            stage: Stage::Measure,
            trial: Trial::default(),
            trial_len: cfg.trial_periods,
            sampler: Sampler::new(cfg.interval),
            load: PeriodLoad::default(),
            admitted0: f64::NAN,
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

    /// Whether it is still in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    /// The configuration.
    pub fn config(&self) -> &PeakConfig {
        &self.cfg
    }

    /// The learned curve: every grid point with at least one capacity sample.
    pub fn curve(&self) -> impl Iterator<Item = CurvePoint> + '_ {
        self.grid.iter().zip(&self.bins).filter(|(_, b)| b.samples > 0).map(|(&limit, b)| CurvePoint {
            limit,
            rate: b.rate,
            service: b.service,
            samples: b.samples,
        })
    }

    /// Bin `i`'s rate if it can be compared at `now`: enough samples, not stale.
    fn usable(&self, i: usize, now: f64) -> Option<f64> {
        let b = &self.bins[i];
        (b.samples >= self.cfg.min_samples && now - b.at <= self.cfg.max_age).then_some(b.rate)
    }

    fn record(&mut self, i: usize, now: f64) {
        let t = self.trial;
        let rate = t.completed / t.elapsed;
        if !(rate.is_finite() && rate >= 0.0) {
            return;
        }
        let service = if t.completed > 0.0 { t.busy / t.completed } else { f64::NAN };
        let service = if service.is_finite() && service > 0.0 { service } else { f64::NAN };
        let c = self.cfg;
        let b = &mut self.bins[i];
        let fresh = b.samples > 0 && now - b.at <= c.max_age && now >= b.at;
        let shifted = (rate - b.rate).abs() > c.shift * rate.max(b.rate);
        if !fresh || shifted {
            *b = Bin { rate, service, samples: t.periods, trials: 1, at: now };
            return;
        }
        b.trials += 1;
        let w = c.weight.max(1.0 / f64::from(b.trials));
        b.rate += w * (rate - b.rate);
        b.service = match (b.service.is_nan(), service.is_nan()) {
            (_, true) => b.service,
            (true, false) => service,
            (false, false) => b.service + w * (service - b.service),
        };
        b.samples = b.samples.saturating_add(t.periods);
        b.at = now;
    }

    /// Start a trial at grid point `i` measuring `len` periods (after a settle if the
    /// limit changes).
    fn go(&mut self, i: usize, len: u32) {
        self.stage = if i == self.target { Stage::Measure } else { Stage::Settle(0) };
        self.target = i;
        self.trial = Trial::default();
        self.trial_len = len;
    }

    /// The grid point `stride` steps from home in the current direction, if it differs
    /// from home.
    fn neighbour(&self, up: bool, stride: usize) -> Option<usize> {
        let last = self.grid.len() - 1;
        let i = if up { (self.home + stride).min(last) } else { self.home.saturating_sub(stride) };
        (i != self.home).then_some(i)
    }

    /// The grid point nearest `2·home` above it, if home is not the top.
    fn doubling(&self) -> Option<usize> {
        let want = 2.0 * f64::from(self.grid[self.home]);
        let above = self.home + 1;
        if above >= self.grid.len() {
            return None;
        }
        let j = self.grid.iter().rposition(|&g| f64::from(g) <= want).unwrap_or(above);
        Some(j.max(above))
    }

    /// The next probe of the climb from home, or a hold at home if there is no other point.
    fn next_probe(&mut self) {
        let c = self.cfg;
        if self.slow_start {
            match self.doubling() {
                Some(j) => return self.go(j, c.trial_periods),
                None => {
                    self.slow_start = false;
                    self.up = false;
                    self.stride = 1;
                }
            }
        }
        let probe = self.neighbour(self.up, self.stride).or_else(|| {
            self.up = !self.up;
            self.stride = 1;
            self.neighbour(self.up, 1)
        });
        match probe {
            Some(i) => self.go(i, c.trial_periods),
            None => self.go(self.home, c.hold_periods),
        }
    }

    /// A trial ended at `now`.
    fn finish_trial(&mut self, now: f64) {
        let t = self.trial;
        let i = self.target;
        let saturated = t.periods > 0 && 2 * t.saturated >= t.periods;
        if std::mem::take(&mut self.opening) && saturated {
            // The load filled the maximum: overload. Start the climb low, where a
            // collapsing backend is not deep in its collapse.
            self.home = self.start;
            self.slow_start = true;
            self.up = true;
            self.stride = 1;
            return self.go(self.start, self.cfg.trial_periods);
        }
        if !saturated {
            return self.app_limited(i, t.max_in_flight);
        }
        self.record(i, now);
        if i == self.home {
            return match self.usable(i, now) {
                Some(_) => self.next_probe(),
                None => self.go(i, self.cfg.trial_periods),
            };
        }
        let Some(p) = self.usable(i, now) else {
            // The noise guard: a probe is compared only once its bin holds enough samples.
            return self.go(i, self.cfg.trial_periods);
        };
        let Some(h) = self.usable(self.home, now) else {
            return self.go(self.home, self.cfg.trial_periods);
        };
        let tol = self.cfg.tolerance;
        // Latency decides between points of the same throughput: a lower limit must buy a
        // shorter service time (a queue past `W` workers), a higher one may cost none (a
        // fast service, whose limit should be out of the way, not at the smallest point
        // that carries today's load).
        let (sp, sh) = (self.bins[i].service, self.bins[self.home].service);
        let known = sp.is_finite() && sh.is_finite();
        // Service time decides between two points of the same throughput: a lower limit
        // wins when it is shorter by more than 5 % and `latency_floor`, a higher one when it
        // is longer by at most 2 % or `latency_floor` (less than a grid step's 10 %, so a
        // queue past `W` workers, whose service time grows with the limit, stops the climb).
        let same = h > 0.0 && p >= (1.0 - tol) * h;
        let better = p > (1.0 + tol) * h;
        let floor = self.cfg.latency_floor;
        let win = if i < self.home {
            better || (same && known && sp < sh - (CHEAPER * sh).max(floor))
        } else {
            better || (same && known && sp <= sh + (NO_DEARER * sh).max(floor))
        };
        if win {
            self.home = i;
            self.losses = 0;
            self.calm = 0;
            if !self.slow_start {
                self.stride = (2 * self.stride).min(self.max_stride);
            }
            return self.next_probe();
        }
        if self.slow_start {
            // The doubling did not pay: the top is between home and the probe (or at home).
            self.slow_start = false;
            self.up = true;
            self.losses = 0;
        } else {
            self.up = !self.up;
            self.losses += 1;
        }
        self.stride = 1;
        if self.losses >= 2 {
            self.losses = 0;
            let hold = self.cfg.hold_periods.saturating_mul(1 << self.calm.min(MAX_CALM));
            self.calm += 1;
            self.go(self.home, hold);
        } else {
            self.next_probe();
        }
    }

    /// The trial at grid point `i` did not fill the limit: never lower it; drift up when
    /// the load came near it.
    fn app_limited(&mut self, i: usize, max_in_flight: f64) {
        let mut h = self.home.max(i);
        if h + 1 < self.grid.len() && max_in_flight >= (1.0 - self.cfg.step) * f64::from(self.grid[h]) {
            h += 1;
        }
        self.home = h;
        self.losses = 0;
        self.calm = 0;
        if !self.slow_start {
            self.up = true;
            self.stride = 1;
        }
        self.go(h, self.cfg.trial_periods);
    }

    /// One period ended at the observation `obs` with `rejected` requests turned away in it.
    fn end_period(&mut self, elapsed: f64, completed: f64, busy: f64, rejected: f64, obs: &Observation) {
        let load = std::mem::take(&mut self.load);
        let limit = f64::from(self.limit());
        match self.stage {
            Stage::Settle(waited) => {
                let down = self.cfg.actuator.in_flight(obs).map_or(true, |v| v <= limit);
                self.stage = if down || waited + 1 >= MAX_SETTLE_PERIODS { Stage::Measure } else { Stage::Settle(waited + 1) };
            }
            Stage::Measure => {
                let pressed_most = load.decisions > 0 && 2 * load.pressed >= load.decisions;
                let turned_away = rejected > 0.5 && load.pressed > 0;
                let t = &mut self.trial;
                t.periods += 1;
                t.saturated += u32::from(pressed_most || turned_away);
                t.completed += completed;
                t.elapsed += elapsed;
                t.busy += busy;
                t.max_in_flight = t.max_in_flight.max(load.max_in_flight);
                let enough = t.periods >= self.trial_len && t.completed >= self.cfg.min_completions;
                // A long hold at home ends early when home's rate moves off its record (a
                // health change): the climb starts probing again at once.
                let (rate, periods, done) = (t.completed / t.elapsed, t.periods, t.completed);
                let shifted = self.target == self.home
                    && periods >= self.cfg.trial_periods
                    && done >= self.cfg.min_completions
                    && self.usable(self.home, obs.now).is_some_and(|h| (rate - h).abs() > self.cfg.shift * rate.max(h));
                if shifted {
                    self.calm = 0;
                }
                // The opening ends at its first saturated period: the load filled the
                // maximum, which is all it asks (every period more there is deep in a
                // collapsing backend's collapse).
                let opened = self.opening && self.trial.saturated > 0;
                if enough || shifted || opened || periods >= MAX_TRIAL_PERIODS.max(self.trial_len) {
                    self.finish_trial(obs.now);
                }
            }
        }
    }
}

/// The grid of limits from `lo` to `hi` (each at least 1): every point is
/// `max(g + 1, round(g·(1 + step)))` of the one below, the last one `hi`.
fn grid(lo: u32, hi: u32, step: f64) -> Vec<u32> {
    let lo = lo.max(1);
    let hi = hi.max(lo);
    let mut g = vec![lo];
    let mut x = lo;
    while x < hi {
        let next = (f64::from(x) * (1.0 + step)).round().min(f64::from(hi)) as u32;
        x = next.max(x + 1).min(hi);
        g.push(x);
    }
    // The top step is cut short by `hi`; one much shorter than a step (256 after 254) would
    // make the probe below the top a probe of nothing. Drop the point below the top then.
    if let [.., a, b] = g[..] {
        if g.len() > 2 && f64::from(b - a) < 0.5 * step * f64::from(a) && b - a > 0 && a > lo {
            g.remove(g.len() - 2);
        }
    }
    g
}

impl Policy for Peak {
    fn decide(&mut self, obs: &Observation) -> Action {
        let limit = f64::from(self.limit());
        if let Some(v) = self.cfg.actuator.in_flight(obs) {
            self.load.decisions += 1;
            self.load.pressed += u32::from(v >= 1.0 && v >= limit - 1.0);
            self.load.max_in_flight = self.load.max_in_flight.max(v);
        }
        if self.admitted0.is_nan() {
            self.admitted0 = obs.admitted;
        }
        if let Some(w) = self.sampler.poll(obs, 0.0) {
            // Requests turned away in the period (NaN, so none, on garbage counters).
            let rejected = w.delta.offered - (obs.admitted - self.admitted0);
            let busy = (w.delta.latency - w.delta.wait).max(0.0);
            self.admitted0 = obs.admitted;
            self.end_period(w.elapsed, w.delta.completed, busy, rejected, obs);
        }
        self.cfg.actuator.action(self.limit(), obs)
    }

    fn name(&self) -> &'static str {
        "peak"
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::assert_survives_garbage;
    use super::*;
    use crate::estimators::test_rng::SplitMix;

    /// A backend whose service time grows past a knee: `base·max(1, (n/knee)²)`
    /// (collapsing: throughput `n/S(n)` peaks at the knee and falls as `knee²/(base·n)`)
    /// or `base·max(1, n/knee)` (flat: `knee` workers, throughput flat past them).
    #[derive(Debug, Clone, Copy)]
    struct Backend {
        base: f64,
        knee: f64,
        flat: bool,
    }

    impl Backend {
        fn collapsing(base: f64, knee: f64) -> Self {
            Self { base, knee, flat: false }
        }

        fn service(&self, n: f64) -> f64 {
            let r = (n / self.knee).max(1.0);
            self.base * if self.flat { r } else { r * r }
        }

        /// The top of the curve \[req/s\].
        fn peak(&self) -> f64 {
            self.knee / self.base
        }
    }

    /// A closed-loop fluid model of the tower layer in reject mode: `lambda` req/s offered,
    /// admitted while fewer than the limit are in service (the rest rejected at once), each
    /// 1-ms step completing `n·dt/S(n)`.
    struct Model {
        obs: Observation,
        n: f64,
        lambda: f64,
        backend: Backend,
        /// Multiplicative noise on each step's completions, uniform in `1 ± noise`.
        noise: f64,
        rng: SplitMix,
    }

    const DT: f64 = 0.001;

    /// What a run saw: `(time, limit)` at every decision and `(time, completed, offered,
    /// admitted)` at every step.
    #[derive(Default)]
    struct Trace {
        limits: Vec<(f64, u32)>,
        counts: Vec<(f64, f64, f64, f64)>,
    }

    impl Trace {
        /// Delivered throughput over `[t0, t1]` \[req/s\].
        fn throughput(&self, t0: f64, t1: f64) -> f64 {
            let at = |t: f64| self.counts.iter().find(|c| c.0 >= t - 1e-9).unwrap_or(self.counts.last().unwrap()).1;
            (at(t1) - at(t0)) / (t1 - t0)
        }

        /// Requests turned away over `[t0, t1]`.
        fn rejected(&self, t0: f64, t1: f64) -> f64 {
            let at = |t: f64| {
                let c = self.counts.iter().find(|c| c.0 >= t - 1e-9).unwrap_or(self.counts.last().unwrap());
                c.2 - c.3
            };
            at(t1) - at(t0)
        }

        /// The limits decided over `[t0, t1]`: (lowest, highest).
        fn range(&self, t0: f64, t1: f64) -> (u32, u32) {
            let ls = self.limits.iter().filter(|l| l.0 >= t0 && l.0 <= t1).map(|l| l.1);
            (ls.clone().min().unwrap(), ls.max().unwrap())
        }

        /// The last time before `t1` a limit outside `[lo, hi]` was in force (`t0` if none since).
        fn settled_since(&self, t0: f64, t1: f64, lo: f64, hi: f64) -> f64 {
            self.limits
                .iter()
                .filter(|l| l.0 >= t0 && l.0 <= t1 && !(lo..=hi).contains(&f64::from(l.1)))
                .map(|l| l.0)
                .fold(t0, f64::max)
        }
    }

    impl Model {
        fn new(lambda: f64, backend: Backend) -> Self {
            Self { obs: Observation::new(0.0, 0.0, 256.0), n: 0.0, lambda, backend, noise: 0.0, rng: SplitMix(11) }
        }

        /// Run `p` until `until` seconds, deciding every `every` steps; the limit in force
        /// caps the requests in service.
        fn run(&mut self, p: &mut Peak, until: f64, every: u64, trace: &mut Trace) {
            let mut k = 0u64;
            while self.obs.now < until - 1e-9 {
                let limit = f64::from(p.limit());
                let s = self.backend.service(self.n);
                let jitter = 1.0 + self.noise * (2.0 * self.rng.next_f64() - 1.0);
                let done = (self.n * DT / s * jitter).min(self.n);
                self.n -= done;
                let arrivals = self.lambda * DT;
                let admit = arrivals.min((limit - self.n).max(0.0));
                self.n += admit;
                let o = &mut self.obs;
                o.now = ((o.now + DT) * 1e6).round() / 1e6;
                o.completed += done;
                o.latency_total += done * s;
                o.offered += arrivals;
                o.admitted += admit;
                o.queue = self.n;
                o.in_service = self.n;
                if k % every == 0 {
                    let a = p.decide(o);
                    if p.config().actuator == Actuator::Executors {
                        assert_eq!(a.concurrency, Some(p.limit()));
                    }
                    trace.limits.push((o.now, p.limit()));
                }
                trace.counts.push((o.now, o.completed, o.offered, o.admitted));
                k += 1;
            }
        }
    }

    /// The tower layer's setting for a 256-request pool, 50-ms decisions.
    fn pool(actuator: Actuator) -> Peak {
        let s = Setting { capacity: 256.0, executors: 256, period: 0.05 };
        let cfg = PeakConfig::for_setting(actuator, &s);
        assert_eq!((cfg.initial_limit, cfg.max_limit), (8.0, 256.0));
        Peak::new(cfg).unwrap()
    }

    #[test]
    fn grid_is_geometric_and_spans_the_bounds() {
        assert_eq!(grid(1, 45, 0.1), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17, 19, 21, 23, 25, 28, 31, 34, 37, 41, 45]);
        assert_eq!(grid(10, 10, 0.1), [10]);
        assert_eq!(grid(0, 3, 1.0), [1, 2, 3]);
        assert!(grid(1, 1_000_000, 0.05).len() < 300);
    }

    /// On the collapsing curve (knee 32, 10 ms: peak 3200 req/s) offered 1.5× and 3× its
    /// peak, from a pool of 256: settled near the knee within 5 s, ≥ 90 % of the peak.
    #[test]
    fn overload_on_a_collapsing_curve_settles_at_the_knee() {
        let b = Backend::collapsing(0.01, 32.0);
        for actuator in [Actuator::Executors, Actuator::InFlight] {
            // Every millisecond (the simulator's arrivals) and once per period (the tower).
            for every in [1, 50] {
                for (load, preloaded) in [(1.5, false), (3.0, false), (3.0, true)] {
                    let mut p = pool(actuator);
                    let mut m = Model::new(load * b.peak(), b);
                    if preloaded {
                        m.n = 256.0; // deep in collapse when the controller takes over
                    }
                    let mut t = Trace::default();
                    m.run(&mut p, 5.0, every, &mut t);
                    let (lo, hi) = t.range(2.5, 5.0);
                    let share = t.throughput(2.5, 5.0) / b.peak();
                    let since = t.settled_since(0.0, 5.0, 0.8 * 32.0, 1.25 * 32.0);
                    println!(
                        "{}/every {every}/{load}x{}: limits [{lo}, {hi}] over 2.5–5 s, in band since {since:.2} s, {:.1} % of peak, home {}",
                        actuator.name(),
                        if preloaded { " preloaded" } else { "" },
                        100.0 * share,
                        p.home()
                    );
                    assert!(since <= 2.5 && lo as f64 >= 25.6 && hi as f64 <= 40.0, "limits [{lo}, {hi}]");
                    assert!(share >= 0.9, "{share}");
                }
            }
        }
    }

    /// The same with every millisecond's completions off by up to ±50 % (uniform): a
    /// period's rate is off by ~2 %, so probes see noise near the tolerance.
    #[test]
    fn a_noisy_backend_still_settles_at_the_knee() {
        let b = Backend::collapsing(0.01, 32.0);
        for (load, seed) in [(1.5, 1), (3.0, 2), (3.0, 3)] {
            let mut p = pool(Actuator::Executors);
            let mut m = Model::new(load * b.peak(), b);
            m.noise = 0.5;
            m.rng = SplitMix(seed);
            let mut t = Trace::default();
            m.run(&mut p, 10.0, 1, &mut t);
            let (lo, hi) = t.range(2.5, 10.0);
            let share = t.throughput(2.5, 10.0) / b.peak();
            println!("noisy/{load}x/seed {seed}: limits [{lo}, {hi}] over 2.5–10 s, {:.1} % of peak", 100.0 * share);
            // The range includes probes, a grid step or two either side of home.
            assert!(lo as f64 >= 24.0 && hi as f64 <= 40.0, "limits [{lo}, {hi}]");
            assert!(share >= 0.9, "{share}");
        }
    }

    /// Flat past 32 workers: a bigger limit adds latency, not throughput; it settles at
    /// most 1.5× the knee.
    #[test]
    fn a_flat_curve_settles_near_its_knee() {
        let b = Backend { base: 0.01, knee: 32.0, flat: true };
        for load in [1.5, 3.0] {
            let mut p = pool(Actuator::Executors);
            let mut m = Model::new(load * b.peak(), b);
            let mut t = Trace::default();
            m.run(&mut p, 5.0, 1, &mut t);
            let (lo, hi) = t.range(2.5, 5.0);
            let share = t.throughput(2.5, 5.0) / b.peak();
            println!("flat/{load}x: limits [{lo}, {hi}] over 2.5–5 s, {:.1} % of peak, home {}", 100.0 * share, p.home());
            // Probes below the knee (momentum) may reach 0.7 W; the throughput share is what
            // they cost.
            assert!(hi as f64 <= 1.5 * 32.0 && lo >= 22, "[{lo}, {hi}]");
            assert!(share >= 0.9, "{share}");
        }
    }

    /// At 30 % of the peak it admits everything once past its start (8 in, 9.6 needed),
    /// and the limit never falls.
    #[test]
    fn light_load_is_never_limited() {
        let b = Backend::collapsing(0.01, 32.0);
        let mut p = pool(Actuator::Executors);
        let mut m = Model::new(0.3 * b.peak(), b);
        let mut t = Trace::default();
        m.run(&mut p, 10.0, 1, &mut t);
        let rejected = t.rejected(1.0, 10.0);
        let total = t.rejected(0.0, 10.0) / m.obs.offered;
        println!("light: {rejected:.3} rejected after 1 s, {:.2} % overall, limit {}", 100.0 * total, p.limit());
        assert!(rejected.abs() < 1e-6, "{rejected}");
        assert!(total < 0.01, "{total}");
        assert!(t.limits.windows(2).all(|w| w[1].1 >= w[0].1), "the limit fell");
        assert!((t.throughput(1.0, 10.0) / (0.3 * b.peak()) - 1.0).abs() < 0.01);
    }

    /// The backend's service time doubles and its knee halves mid-run (peak 3200 → 800),
    /// then recovers: the limit follows within 5 s each time.
    #[test]
    fn a_health_step_is_followed() {
        let healthy = Backend::collapsing(0.01, 32.0);
        let sick = Backend::collapsing(0.02, 16.0);
        for load in [1.5, 3.0] {
            let mut p = pool(Actuator::Executors);
            let mut m = Model::new(load * healthy.peak(), healthy);
            let mut t = Trace::default();
            m.run(&mut p, 5.0, 1, &mut t);
            m.backend = sick;
            m.run(&mut p, 12.0, 1, &mut t);
            let since = t.settled_since(5.0, 12.0, 0.8 * 16.0, 1.25 * 16.0);
            let (lo, hi) = t.range(10.0, 12.0);
            let share = t.throughput(10.0, 12.0) / sick.peak();
            println!(
                "step/{load}x: in [12.8, 20] from {since:.2} s (step at 5 s), limits [{lo}, {hi}] over 10–12 s, {:.1} % of peak",
                100.0 * share
            );
            assert!(since <= 10.0, "{since}");
            assert!(share >= 0.9, "{share}");
            m.backend = healthy;
            m.run(&mut p, 19.0, 1, &mut t);
            let since = t.settled_since(12.0, 19.0, 0.8 * 32.0, 1.25 * 32.0);
            let share = t.throughput(17.0, 19.0) / healthy.peak();
            println!("recovery/{load}x: in [25.6, 40] from {since:.2} s (step at 12 s), {:.1} % of peak", 100.0 * share);
            assert!(since <= 17.0, "{since}");
            assert!(share >= 0.9, "{share}");
        }
    }

    #[test]
    fn bounds_are_respected() {
        let b = Backend::collapsing(0.01, 32.0);
        // A maximum below the knee: it climbs to the maximum and holds it.
        let cfg = PeakConfig { actuator: Actuator::Executors, max_limit: 20.0, ..PeakConfig::default() };
        let mut p = Peak::new(cfg).unwrap();
        let mut m = Model::new(2.0 * b.peak(), b);
        let mut t = Trace::default();
        m.run(&mut p, 5.0, 1, &mut t);
        assert_eq!(t.range(2.5, 5.0).1, 20);
        assert!(t.limits.iter().all(|l| l.1 <= 20));
        // A minimum above the knee: it never goes below it. (Closed start: the fluid model
        // never abandons a request, so an opening at the maximum of 1000 would take ~10 s
        // to drain; the tower's clients give up and cancel.)
        let cfg = PeakConfig {
            actuator: Actuator::Executors,
            min_limit: 40.0,
            initial_limit: 40.0,
            open_start: false,
            ..PeakConfig::default()
        };
        let mut p = Peak::new(cfg).unwrap();
        let mut m = Model::new(2.0 * b.peak(), b);
        let mut t = Trace::default();
        m.run(&mut p, 5.0, 1, &mut t);
        assert_eq!(t.range(2.5, 5.0).0, 40);
        // The setting's pool of 8 on executors: a grid of 1..=8, starting at 8.
        let p = Peak::new(PeakConfig::for_setting(Actuator::Executors, &Setting::default())).unwrap();
        assert_eq!((p.limit(), p.grid.len()), (8, 8));
    }

    #[test]
    fn the_curve_learns_the_peak() {
        let b = Backend::collapsing(0.01, 32.0);
        let mut p = pool(Actuator::Executors);
        let mut m = Model::new(3.0 * b.peak(), b);
        m.run(&mut p, 5.0, 1, &mut Trace::default());
        let best = p.curve().max_by(|a, b| a.rate.total_cmp(&b.rate)).unwrap();
        assert!((28..=37).contains(&best.limit), "{best:?}");
        assert!((best.rate / b.peak() - 1.0).abs() < 0.1, "{best:?}");
        assert!((best.service / b.service(f64::from(best.limit)) - 1.0).abs() < 0.15, "{best:?}");
        assert!(!p.in_slow_start());
    }

    #[test]
    fn bad_config_is_refused() {
        let d = PeakConfig::default();
        let field = |c: PeakConfig| Peak::new(c).unwrap_err().field;
        assert_eq!(field(PeakConfig { max_limit: 2e6, ..d }), "max_limit");
        assert_eq!(field(PeakConfig { initial_limit: 0.5, ..d }), "initial_limit");
        assert_eq!(field(PeakConfig { step: 0.01, ..d }), "step");
        assert_eq!(field(PeakConfig { tolerance: f64::NAN, ..d }), "tolerance");
        assert_eq!(field(PeakConfig { interval: 0.0, ..d }), "interval");
        assert_eq!(field(PeakConfig { trial_periods: 0, ..d }), "trial_periods");
        assert_eq!(field(PeakConfig { weight: 0.0, ..d }), "weight");
        assert_eq!(field(PeakConfig { shift: -1.0, ..d }), "shift");
        assert_eq!(field(PeakConfig { min_samples: 0, ..d }), "min_samples");
    }

    #[test]
    fn garbage_never_yields_a_bad_action() {
        assert_survives_garbage(&mut Peak::new(PeakConfig::default()).unwrap());
        let mut p = Peak::new(PeakConfig::for_setting(Actuator::Executors, &Setting::default())).unwrap();
        assert_survives_garbage(&mut p);
        assert!((1..=8).contains(&p.limit()));
    }
}
