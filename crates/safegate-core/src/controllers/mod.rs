//! Nominal controllers: the adaptive limiters and admission controllers people deploy today.
//!
//! Each is a [`Policy`] over the same [`Observation`], so any of them can run alone in the
//! simulator, under the safety filter ([`crate::safety::SafetyFilter`]), or behind a tower
//! layer. They differ in the signal they read and in what they actuate.
//!
//! | name | type | source | signal | actuator | defaults |
//! |---|---|---|---|---|---|
//! | `gradient2` | [`Gradient2`] | Netflix concurrency-limits `Gradient2Limit` | long-EWMA vs window RTT | [`Actuator`] | limit 20 in [20, 200], smoothing 0.2, tolerance 1.5, queue 4, long window 600 |
//! | `vegas` | [`Vegas`] | Netflix concurrency-limits `VegasLimit` | queue estimate `L·(1 − rtt₀/rtt)` | [`Actuator`] | limit 20 in [1, 1000], α = 3·lg L, β = 6·lg L, probe every 30·L windows |
//! | `aimd` | [`Aimd`] | Netflix concurrency-limits `AIMDLimit` | drop (full backlog) or RTT > timeout | [`Actuator`] | limit 20 in [20, 200], backoff 0.9, timeout 5 s |
//! | `envoy-gradient` | [`EnvoyGradient`] | Envoy adaptive concurrency filter, gradient controller | window mean RTT vs periodic minRTT | [`Actuator`] | update 0.1 s, minRTT every 60 s over 50 requests at concurrency 3, buffer 25 %, max 1000, no jitter |
//! | `static` | [`StaticLimit`] | tower `ConcurrencyLimit` | none | [`Actuator`] | 20 in flight (executors: the pool size) |
//! | `credits` | [`Credits`] | Breakwater (Cho et al., OSDI 2020) | oldest request's queueing delay | admission only | target 0.2 s, +1 credit/update, β = 0.02, factor ≥ 0.5, overcommit 1 |
//! | `priority-levels` | [`PriorityLevels`] | DAGOR (Zhou et al., SoCC 2018) | mean queueing time | admission only (per-request levels) | 128 × 128 levels, threshold 20 ms, α = 5 %, β = 1 %, window 1 s or 2000 requests |
//! | `sre-throttle` | [`SreThrottle`] | Google SRE book, "Handling Overload" | requests vs accepts | admission only | K = 2, window 120 s |
//! | (wrapper) | [`RetryBudget`] | Finagle `RetryBudget` | retries vs fresh requests | sheds retries | 20 % of fresh requests + 10 retries/s over a 10 s TTL |
//!
//! # Two actuators for one limit
//!
//! A concurrency-limit algorithm produces a limit `L`; [`Actuator`] says what it caps.
//! - [`Actuator::InFlight`] (the default; tower's and Netflix's server-side semantics): `L`
//!   caps requests in the system. A new arrival is admitted while `queue + 1 ≤ L`, so the
//!   action's `admit` is 1 or 0, decided afresh at every call from the current queue (a
//!   semaphore). The signal is latency, time in system: `Δlatency_total / Δcompleted`.
//! - [`Actuator::Executors`]: `L` caps busy executors (`concurrency: Some(L)`) and admission
//!   stays open. The signal is service time, `(Δlatency_total − Δwait_total) / Δcompleted`,
//!   which rises only from contention once more than `C` executors run (the seed's `(C/n)²`
//!   slowdown, crates/safegate-sim/src/model.rs), so a latency limiter on executors looks
//!   for the top of the service curve rather than for an empty queue.
//!
//! Controllers that admit a fraction of traffic rather than holding a limit (`credits`,
//! `priority-levels`, `sre-throttle`) ignore the actuator.
//!
//! # Adapting the defaults to a setting
//!
//! The table's defaults are the sources'. [`build`] (through each `…Config::for_setting`)
//! adapts them to a [`Setting`]: every controller updates at most once per
//! [`Setting::period`]; in flight, a limit's maximum is at most the capacity; on executors a
//! limit lives in `[1, executors]` and starts at `executors` (no cap beyond the pool's own),
//! and two sources' constants, made for limits of tens to hundreds, are replaced where they
//! cannot work on a pool of 8: Gradient2 grows by `max(1, ⌊log₁₀ L⌋)` (Netflix
//! `Log10RootFunction`) instead of 4, and Vegas uses TCP Vegas's α = 2, β = 4 instead of
//! 3 and 6 (the reasons are in [`gradient2`] and [`vegas`]). `static` on executors is the
//! pool size; credits' pool lives between the executor count and the capacity.
//!
//! # Windows, not samples
//!
//! The Netflix and Envoy limiters update per request sample or per window of samples; an
//! [`Observation`] carries cumulative sums instead, so every controller here works on
//! windows: at most one update per [`Setting::period`] (and for the Netflix limiters only
//! once the window holds `min_samples` completions, Netflix `WindowedLimit`'s
//! `windowSize = 10`), with the window's mean latency standing in for a sample. Between
//! update instants a controller repeats its state (the actuator asks at every arrival and
//! every tick). Nothing here draws random numbers: where a source jitters (Vegas probes,
//! Envoy's minRTT interval) the jitter is removed and said so.
//!
//! # Building by name
//!
//! ```
//! use safegate_core::controllers::{build, Actuator, Setting, NAMES};
//! use safegate_core::{Observation, Policy};
//!
//! let setting = Setting::default(); // capacity 200, 8 executors, period 0.05 s
//! for name in NAMES {
//!     let mut p = build(name, Actuator::Executors, &setting).unwrap();
//!     let a = p.decide(&Observation::new(0.0, 10.0, 200.0));
//!     assert!((0.0..=1.0).contains(&a.admit));
//! }
//! assert!(build("cycle", Actuator::InFlight, &setting).is_err());
//! ```

use std::fmt;

use crate::policy::{Action, Observation, Policy};
use crate::ConfigError;

pub mod aimd;
pub mod credits;
pub mod envoy_gradient;
pub mod gradient2;
pub mod priority_levels;
pub mod retry_budget;
pub mod sre_throttle;
pub mod static_limit;
pub mod vegas;

pub use aimd::{Aimd, AimdConfig};
pub use credits::{Credits, CreditsConfig};
pub use envoy_gradient::{EnvoyGradient, EnvoyGradientConfig};
pub use gradient2::{Gradient2, Gradient2Config, QueueSize};
pub use priority_levels::{Priority, PriorityLevels, PriorityLevelsConfig};
pub use retry_budget::{RetryBudget, RetryBudgetConfig};
pub use sre_throttle::{SreThrottle, SreThrottleConfig};
pub use static_limit::{StaticConfig, StaticLimit};
pub use vegas::{Vegas, VegasConfig};

/// What a concurrency limit `L` caps (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Actuator {
    /// `L` caps requests in the system (waiting plus in service): admit while
    /// `queue + 1 ≤ L`; the signal is latency (tower `ConcurrencyLimit`, Netflix servers).
    #[default]
    InFlight,
    /// `L` caps busy executors (`concurrency: Some(L)`), admission open; the signal is
    /// service time (latency − wait).
    Executors,
}

impl Actuator {
    /// The action that enforces limit `limit` now.
    ///
    /// In-flight: admit 1 when `queue + 1 ≤ limit`, else 0 (and 0 when the queue is not a
    /// number). Executors: admit 1, `concurrency: Some(max(limit, 1))`.
    pub fn action(self, limit: u32, obs: &Observation) -> Action {
        match self {
            Actuator::InFlight => {
                let admit = obs.queue.is_finite() && obs.queue + 1.0 <= limit as f64;
                Action::admit(if admit { 1.0 } else { 0.0 })
            }
            Actuator::Executors => Action { admit: 1.0, concurrency: Some(limit.max(1)), shed_retries: false },
        }
    }

    /// The load the limit is compared with: requests in the system (in-flight) or busy
    /// executors; `None` if the observation's value is not a finite non-negative number.
    pub fn in_flight(self, obs: &Observation) -> Option<f64> {
        let v = match self {
            Actuator::InFlight => obs.queue,
            Actuator::Executors => obs.in_service,
        };
        (v.is_finite() && v >= 0.0).then_some(v)
    }

    /// A short name (`"in-flight"`, `"executors"`).
    pub fn name(self) -> &'static str {
        match self {
            Actuator::InFlight => "in-flight",
            Actuator::Executors => "executors",
        }
    }
}

/// What a controller needs to know about the system it runs in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setting {
    /// Queue capacity \[requests\] (the seed's 200).
    pub capacity: f64,
    /// Executors in the pool (the seed's 8).
    pub executors: u32,
    /// Decision / update interval \[s\] (the simulator's tick, 0.05 s).
    pub period: f64,
}

impl Default for Setting {
    fn default() -> Self {
        Self { capacity: 200.0, executors: 8, period: 0.05 }
    }
}

impl Setting {
    /// A controller's largest in-flight limit `limit` capped by the queue's capacity (at
    /// least 1): with the in-flight actuator no more than the capacity can be in the system.
    pub fn cap_in_flight(&self, limit: f64) -> f64 {
        limit.min(self.capacity).max(1.0)
    }

    /// The setting with every unusable value replaced by its default (a capacity below 1
    /// or not finite, zero executors, a period not in `(0, ∞)`), so [`build`] never fails on
    /// a known name.
    pub fn sanitized(&self) -> Self {
        let d = Setting::default();
        Self {
            capacity: if self.capacity >= 1.0 && self.capacity.is_finite() { self.capacity } else { d.capacity },
            executors: if self.executors >= 1 { self.executors } else { d.executors },
            period: if self.period > 0.0 && self.period.is_finite() { self.period } else { d.period },
        }
    }
}

/// The names [`build`] knows, in the order of the module table.
pub const NAMES: &[&str] =
    &["gradient2", "vegas", "aimd", "envoy-gradient", "static", "credits", "priority-levels", "sre-throttle"];

/// [`build`] was given a name not in [`NAMES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownController {
    /// The name asked for.
    pub name: String,
}

impl fmt::Display for UnknownController {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown controller {:?}: known are {}", self.name, NAMES.join(", "))
    }
}

impl std::error::Error for UnknownController {}

/// The controller `name` (one of [`NAMES`]) with its defaults adapted to `setting` and
/// `actuator` (see each `…Config::for_setting`); controllers without a limit ignore
/// `actuator`. The setting is [`Setting::sanitized`] first.
pub fn build(name: &str, actuator: Actuator, setting: &Setting) -> Result<Box<dyn Policy + Send>, UnknownController> {
    let s = setting.sanitized();
    // Each `for_setting` config is valid for a sanitized setting (tested); the fallback to
    // the source defaults only guards against a future change breaking that.
    fn or_default<P, C: Default>(made: Result<P, ConfigError>, new: impl Fn(C) -> Result<P, ConfigError>) -> P {
        made.or_else(|_| new(C::default())).expect("source defaults are valid")
    }
    let p: Box<dyn Policy + Send> = match name {
        "gradient2" => Box::new(or_default(Gradient2::new(Gradient2Config::for_setting(actuator, &s)), Gradient2::new)),
        "vegas" => Box::new(or_default(Vegas::new(VegasConfig::for_setting(actuator, &s)), Vegas::new)),
        "aimd" => Box::new(or_default(Aimd::new(AimdConfig::for_setting(actuator, &s)), Aimd::new)),
        "envoy-gradient" => {
            Box::new(or_default(EnvoyGradient::new(EnvoyGradientConfig::for_setting(actuator, &s)), EnvoyGradient::new))
        }
        "static" => Box::new(or_default(StaticLimit::new(StaticConfig::for_setting(actuator, &s)), StaticLimit::new)),
        "credits" => Box::new(or_default(Credits::new(CreditsConfig::for_setting(&s)), Credits::new)),
        "priority-levels" => {
            Box::new(or_default(PriorityLevels::new(PriorityLevelsConfig::for_setting(&s)), PriorityLevels::new))
        }
        "sre-throttle" => Box::new(or_default(SreThrottle::new(SreThrottleConfig::for_setting(&s)), SreThrottle::new)),
        _ => return Err(UnknownController { name: name.to_string() }),
    };
    Ok(p)
}

/// `inner` under a [`RetryBudget`] with the Finagle defaults, updated every
/// [`Setting::period`].
pub fn with_retry_budget(inner: Box<dyn Policy + Send>, setting: &Setting) -> Box<dyn Policy + Send> {
    let cfg = RetryBudgetConfig::for_setting(&setting.sanitized());
    // A sanitized setting always gives a valid budget (tested); the fallback only guards
    // against a future change breaking that, and never drops the controller.
    let cfg = if cfg.check().is_ok() { cfg } else { RetryBudgetConfig::default() };
    Box::new(RetryBudget::from_checked(cfg, inner))
}

// ---------------------------------------------------------------------------------------
// Shared machinery: cumulative counters, windows between update instants, range checks.

/// Slack on update instants, so a tick at `k·dt` computed one way meets an instant
/// computed another way.
const TIME_SLACK: f64 = 1e-9;

/// The cumulative counters of an observation that windows difference.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Counters {
    pub(crate) offered: f64,
    pub(crate) completed: f64,
    pub(crate) retried: f64,
    pub(crate) latency: f64,
    pub(crate) wait: f64,
}

impl Counters {
    /// The observation's counters, or `None` if any is not finite.
    pub(crate) fn of(obs: &Observation) -> Option<Self> {
        let c = Self {
            offered: obs.offered,
            completed: obs.completed,
            retried: obs.retried,
            latency: obs.latency_total,
            wait: obs.wait_total,
        };
        [c.offered, c.completed, c.retried, c.latency, c.wait].iter().all(|v| v.is_finite()).then_some(c)
    }

    fn minus(&self, o: &Self) -> Self {
        Self {
            offered: self.offered - o.offered,
            completed: self.completed - o.completed,
            retried: self.retried - o.retried,
            latency: self.latency - o.latency,
            wait: self.wait - o.wait,
        }
    }

    /// Whether every difference is non-negative (counters only grow; a reset or garbage
    /// makes a window unusable).
    fn monotone(&self) -> bool {
        self.offered >= 0.0 && self.completed >= 0.0 && self.retried >= 0.0 && self.latency >= 0.0 && self.wait >= 0.0
    }
}

/// What happened between two update instants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Window {
    /// Length \[s\].
    pub(crate) elapsed: f64,
    /// Counter increments.
    pub(crate) delta: Counters,
}

impl Window {
    /// Mean time in system of the window's completions \[s\] (`None` without completions).
    pub(crate) fn mean_latency(&self) -> Option<f64> {
        positive(self.delta.latency / self.delta.completed)
    }

    /// Mean service time (latency minus wait) of the window's completions \[s\].
    pub(crate) fn mean_service(&self) -> Option<f64> {
        positive((self.delta.latency - self.delta.wait) / self.delta.completed)
    }

    /// The limiter signal for `actuator`: latency (in-flight) or service time (executors).
    pub(crate) fn signal(&self, actuator: Actuator) -> Option<f64> {
        match actuator {
            Actuator::InFlight => self.mean_latency(),
            Actuator::Executors => self.mean_service(),
        }
    }
}

fn positive(x: f64) -> Option<f64> {
    (x.is_finite() && x > 0.0).then_some(x)
}

/// Cuts the run into windows: an update instant comes at most once per `interval`, and a
/// window is handed out only when it holds `min_samples` completions (otherwise it keeps
/// growing until it does, rather than being thrown away as Netflix `WindowedLimit` does).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sampler {
    interval: f64,
    start: Option<(f64, Counters)>,
    next: f64,
}

impl Sampler {
    pub(crate) fn new(interval: f64) -> Self {
        Self { interval, start: None, next: f64::NEG_INFINITY }
    }

    /// Restart the window at this observation (no window is handed out).
    pub(crate) fn restart(&mut self, obs: &Observation) {
        self.start = Counters::of(obs).filter(|_| obs.now.is_finite()).map(|c| (obs.now, c));
        self.next = obs.now + self.interval;
    }

    /// The window since the last one handed out, if an update instant has come and it holds
    /// at least `min_samples` completions. Non-finite time or counters give `None`; time
    /// running backwards or counters falling restart the window.
    pub(crate) fn poll(&mut self, obs: &Observation, min_samples: f64) -> Option<Window> {
        let now = obs.now;
        if !now.is_finite() {
            return None;
        }
        let c = Counters::of(obs)?;
        let Some((t0, c0)) = self.start else {
            self.restart(obs);
            return None;
        };
        if now < t0 {
            self.restart(obs);
            return None;
        }
        if now + TIME_SLACK < self.next {
            return None;
        }
        let delta = c.minus(&c0);
        if !delta.monotone() {
            self.restart(obs);
            return None;
        }
        self.next = now + self.interval;
        if delta.completed < min_samples {
            return None;
        }
        self.start = Some((now, c));
        Some(Window { elapsed: now - t0, delta })
    }
}

/// An update instant at most once per `interval` (for controllers that read instantaneous
/// values rather than windows).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ticker {
    interval: f64,
    last: f64,
}

impl Ticker {
    pub(crate) fn new(interval: f64) -> Self {
        Self { interval, last: f64::NEG_INFINITY }
    }

    /// Whether `now` is an update instant (the first finite time is; so is time running
    /// backwards, which restarts the schedule).
    pub(crate) fn due(&mut self, now: f64) -> bool {
        if !now.is_finite() {
            return false;
        }
        if now < self.last || now + TIME_SLACK >= self.last + self.interval {
            self.last = now;
            return true;
        }
        false
    }
}

/// Load seen at every call during a window: the largest in-flight count (Netflix
/// `SampleWindow`'s max in-flight) and whether the backlog was ever full (our stand-in for
/// a drop: an admitted arrival at a full backlog is lost).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct LoadTrack {
    pub(crate) max_in_flight: f64,
    pub(crate) full: bool,
}

impl LoadTrack {
    pub(crate) fn see(&mut self, actuator: Actuator, obs: &Observation) {
        if let Some(v) = actuator.in_flight(obs) {
            self.max_in_flight = self.max_in_flight.max(v);
        }
        if obs.capacity > 0.0 && obs.queue >= obs.capacity {
            self.full = true;
        }
    }
}

/// `Err` unless `v` is finite and `> 0`.
pub(crate) fn check_positive(field: &'static str, v: f64) -> Result<(), ConfigError> {
    if v > 0.0 && v.is_finite() {
        Ok(())
    } else {
        Err(ConfigError { field, value: v, allowed: "(0, ∞)" })
    }
}

/// `Err` unless `lo ≤ v ≤ hi` (so NaN fails).
pub(crate) fn check_range(
    field: &'static str,
    v: f64,
    lo: f64,
    hi: f64,
    allowed: &'static str,
) -> Result<(), ConfigError> {
    if v >= lo && v <= hi {
        Ok(())
    } else {
        Err(ConfigError { field, value: v, allowed })
    }
}

/// Checks `1 ≤ min ≤ initial ≤ max < ∞` for a limit's bounds.
pub(crate) fn check_limits(min: f64, initial: f64, max: f64) -> Result<(), ConfigError> {
    check_range("min_limit", min, 1.0, f64::MAX, "[1, ∞)")?;
    check_range("max_limit", max, min, f64::MAX, "[min_limit, ∞)")?;
    check_range("initial_limit", initial, min, max, "[min_limit, max_limit]")
}

/// Netflix's `Log10RootFunction`: `max(1, ⌊log₁₀ ⌊L⌋⌋)` below 1000, `⌊√⌊L⌋⌋` from there (the
/// step of Vegas and a queue-size choice for Gradient2).
pub(crate) fn log10_root(limit: f64) -> f64 {
    let n = limit.max(0.0).floor();
    if n < 1000.0 {
        n.log10().floor().max(1.0)
    } else {
        n.sqrt().floor()
    }
}

/// The integer limit a float estimate enforces: `⌊L⌋`, at least 1 (Netflix `(int) limit`).
pub(crate) fn whole(limit: f64) -> u32 {
    if limit.is_finite() {
        limit.floor().clamp(1.0, u32::MAX as f64) as u32
    } else {
        1
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Synthetic observations for the controllers' unit tests.

    use crate::policy::{Action, Observation, Policy};

    /// A synthetic system: fixed in-flight, a steady completion rate, and a per-window
    /// latency and wait the test chooses.
    #[derive(Debug, Clone)]
    pub(crate) struct Synth {
        pub(crate) obs: Observation,
        pub(crate) dt: f64,
        /// Completions per second.
        pub(crate) rate: f64,
    }

    impl Synth {
        pub(crate) fn new(queue: f64, in_service: f64, rate: f64) -> Self {
            let mut obs = Observation::new(0.0, queue, 200.0);
            obs.in_service = in_service;
            obs.offered_rate = rate;
            Self { obs, dt: 0.05, rate }
        }

        /// Advance one tick in which every completion took `latency` (of which `wait`
        /// waiting) and return the policy's action.
        pub(crate) fn step(&mut self, p: &mut dyn Policy, latency: f64, wait: f64) -> Action {
            let n = self.rate * self.dt;
            let o = &mut self.obs;
            o.now += self.dt;
            o.offered += n;
            o.admitted += n;
            o.completed += n;
            o.latency_total += n * latency;
            o.wait_total += n * wait;
            p.decide(o)
        }

        /// `k` ticks at one latency; the last action.
        pub(crate) fn run(&mut self, p: &mut dyn Policy, k: usize, latency: f64, wait: f64) -> Action {
            let mut a = Action::OPEN;
            for _ in 0..k {
                a = self.step(p, latency, wait);
            }
            a
        }
    }

    /// Observations with every field garbage.
    pub(crate) fn garbage() -> Vec<Observation> {
        let mut v = Vec::new();
        for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, 1e300] {
            v.push(Observation {
                now: x,
                queue: x,
                capacity: x,
                in_service: x,
                offered_rate: x,
                health: Some(x),
                offered: x,
                admitted: x,
                completed: x,
                retried: x,
                latency_total: x,
                wait_total: x,
                oldest_wait: x,
            });
        }
        v
    }

    /// Feed garbage (between sane observations) and check every action is a valid one.
    pub(crate) fn assert_survives_garbage(p: &mut dyn Policy) {
        let mut s = Synth::new(10.0, 4.0, 80.0);
        s.run(p, 40, 0.03, 0.005);
        for (i, g) in garbage().into_iter().enumerate() {
            for o in [g, Observation { now: s.obs.now + 0.05 * i as f64, ..g }] {
                let a = p.decide(&o);
                assert!(a.admit.is_finite() && (0.0..=1.0).contains(&a.admit), "{}: {a:?} on {o:?}", p.name());
                assert_ne!(a.concurrency, Some(0), "{}", p.name());
            }
        }
        // And it still works afterwards on sane input.
        let a = s.run(p, 200, 0.03, 0.005);
        assert!(a.admit.is_finite() && (0.0..=1.0).contains(&a.admit), "{}: {a:?}", p.name());
    }
}

#[cfg(test)]
mod tests {
    use super::testing::Synth;
    use super::*;

    #[test]
    fn in_flight_admits_while_queue_plus_one_fits() {
        let a = |q: f64| Actuator::InFlight.action(5, &Observation::new(0.0, q, 200.0));
        assert_eq!(a(3.0).admit, 1.0);
        assert_eq!(a(4.0).admit, 1.0);
        assert_eq!(a(5.0).admit, 0.0);
        assert_eq!(a(f64::NAN).admit, 0.0);
        assert_eq!(a(3.0).concurrency, None);
        let e = Actuator::Executors.action(0, &Observation::new(0.0, 150.0, 200.0));
        assert_eq!((e.admit, e.concurrency), (1.0, Some(1)));
    }

    #[test]
    fn build_knows_every_name_and_only_those() {
        let s = Setting::default();
        for name in NAMES {
            for act in [Actuator::InFlight, Actuator::Executors] {
                let p = build(name, act, &s).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(&p.name(), name);
            }
        }
        let e = build("cycle", Actuator::InFlight, &s).err().unwrap();
        assert_eq!(e.name, "cycle");
        assert!(e.to_string().contains("gradient2"));
    }

    #[test]
    fn build_survives_a_garbage_setting() {
        let bad = Setting { capacity: f64::NAN, executors: 0, period: -1.0 };
        assert_eq!(bad.sanitized(), Setting::default());
        for name in NAMES {
            let mut p = build(name, Actuator::Executors, &bad).unwrap();
            let a = p.decide(&Observation::new(0.0, 1.0, 200.0));
            assert!((0.0..=1.0).contains(&a.admit));
        }
    }

    #[test]
    fn every_for_setting_config_is_valid() {
        for s in [
            Setting::default(),
            Setting { capacity: 1.0, executors: 1, period: 1e-3 },
            Setting { capacity: 1e6, executors: 512, period: 10.0 },
        ] {
            for act in [Actuator::InFlight, Actuator::Executors] {
                Gradient2::new(Gradient2Config::for_setting(act, &s)).unwrap();
                Vegas::new(VegasConfig::for_setting(act, &s)).unwrap();
                Aimd::new(AimdConfig::for_setting(act, &s)).unwrap();
                EnvoyGradient::new(EnvoyGradientConfig::for_setting(act, &s)).unwrap();
                StaticLimit::new(StaticConfig::for_setting(act, &s)).unwrap();
            }
            Credits::new(CreditsConfig::for_setting(&s)).unwrap();
            PriorityLevels::new(PriorityLevelsConfig::for_setting(&s)).unwrap();
            SreThrottle::new(SreThrottleConfig::for_setting(&s)).unwrap();
            assert!(RetryBudget::new(RetryBudgetConfig::for_setting(&s), crate::Open).is_ok());
        }
    }

    #[test]
    fn sampler_waits_for_its_interval_and_its_samples() {
        let mut s = Sampler::new(0.1);
        let mut obs = Observation::new(0.0, 0.0, 200.0);
        assert!(s.poll(&obs, 1.0).is_none()); // first sight starts the window
        obs.now = 0.05;
        obs.completed = 5.0;
        obs.latency_total = 0.5;
        assert!(s.poll(&obs, 1.0).is_none()); // too early
        obs.now = 0.1;
        assert!(s.poll(&obs, 10.0).is_none()); // too few samples: the window grows
        obs.now = 0.2;
        obs.completed = 10.0;
        obs.latency_total = 1.5;
        let w = s.poll(&obs, 10.0).unwrap();
        assert!((w.elapsed - 0.2).abs() < 1e-12);
        assert!((w.mean_latency().unwrap() - 0.15).abs() < 1e-12);
        // Counters running backwards restart rather than give a negative window.
        obs.now = 0.4;
        obs.completed = 3.0;
        assert!(s.poll(&obs, 1.0).is_none());
        obs.now = f64::NAN;
        assert!(s.poll(&obs, 0.0).is_none());
    }

    #[test]
    fn ticker_is_due_once_per_interval() {
        let mut t = Ticker::new(0.05);
        let due: Vec<bool> = [0.0, 0.01, 0.05, 0.07, 0.1, f64::NAN, 0.02].iter().map(|&x| t.due(x)).collect();
        assert_eq!(due, [true, false, true, false, true, false, true]);
    }

    #[test]
    fn whole_floors_and_keeps_one() {
        assert_eq!(whole(4.9), 4);
        assert_eq!(whole(0.2), 1);
        assert_eq!(whole(f64::NAN), 1);
        assert_eq!(whole(1e30), u32::MAX);
    }

    #[test]
    fn synthetic_system_reports_the_latency_asked_for() {
        let mut s = Synth::new(10.0, 4.0, 100.0);
        let mut w = Sampler::new(0.05);
        s.run(&mut crate::Open, 1, 0.0, 0.0);
        w.poll(&s.obs, 0.0);
        s.run(&mut crate::Open, 2, 0.04, 0.01);
        let win = w.poll(&s.obs, 0.0).unwrap();
        assert!((win.mean_latency().unwrap() - 0.04).abs() < 1e-12);
        assert!((win.mean_service().unwrap() - 0.03).abs() < 1e-12);
    }
}
