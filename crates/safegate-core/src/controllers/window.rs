//! Windows between update instants, and the windowed limiter every Netflix port shares.
//!
//! An [`Observation`] carries cumulative counters; a [`Sampler`] cuts them into
//! [`Window`]s (at most one per interval, each with enough completions), a [`Ticker`] gives
//! update instants to controllers that read instantaneous values. [`Windowed`] is Netflix
//! concurrency-limits' `WindowedLimit`: it runs a [`LimitAlgorithm`] (the update rule of
//! Gradient2, Vegas or AIMD) once per window on a [`WindowSample`] (the window's RTT, the
//! most requests seen in flight, whether the backlog was full) and enforces the limit the
//! rule holds through the [`Actuator`] at every call.

use super::{whole, Actuator};
use crate::error::check;
use crate::policy::{Action, Observation, Policy};
use crate::RangeError;

/// Slack on update instants, so a tick at `k·dt` computed one way meets an instant
/// computed another way.
const TIME_SLACK: f64 = 1e-9;

/// The cumulative counters of an observation that windows difference.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Counters {
    pub(crate) offered: f64,
    pub(crate) completed: f64,
    pub(crate) retried: f64,
    pub(crate) failed: f64,
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
            failed: obs.failed,
            latency: obs.latency_total,
            wait: obs.wait_total,
        };
        [c.offered, c.completed, c.retried, c.failed, c.latency, c.wait].iter().all(|v| v.is_finite()).then_some(c)
    }

    fn minus(&self, o: &Self) -> Self {
        Self {
            offered: self.offered - o.offered,
            completed: self.completed - o.completed,
            retried: self.retried - o.retried,
            failed: self.failed - o.failed,
            latency: self.latency - o.latency,
            wait: self.wait - o.wait,
        }
    }

    /// Whether every difference is non-negative (counters only grow; a reset or garbage
    /// makes a window unusable).
    fn monotone(&self) -> bool {
        self.offered >= 0.0
            && self.completed >= 0.0
            && self.retried >= 0.0
            && self.failed >= 0.0
            && self.latency >= 0.0
            && self.wait >= 0.0
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
struct LoadTrack {
    max_in_flight: f64,
    full: bool,
}

impl LoadTrack {
    fn see(&mut self, actuator: Actuator, obs: &Observation) {
        if let Some(v) = actuator.in_flight(obs) {
            self.max_in_flight = self.max_in_flight.max(v);
        }
        if obs.capacity > 0.0 && obs.queue >= obs.capacity {
            self.full = true;
        }
    }
}

/// What one window tells a [`LimitAlgorithm`] (Netflix `SampleWindow`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowSample {
    /// The window's mean latency (in flight) or service time (executors) \[s\]; `None`
    /// when it is not a positive number.
    pub rtt: Option<f64>,
    /// The most requests in flight (or busy executors) seen at any call in the window.
    pub max_in_flight: f64,
    /// Whether the window saw a drop: the backlog full at some call, or a completion that
    /// failed ([`Observation::failed`]).
    pub drop: bool,
}

impl WindowSample {
    /// Whether the window was app-limited for `limit`: fewer than `limit / 2` in flight
    /// throughout, so it says nothing about the limit (Netflix's `inflight * 2 < limit`).
    pub fn app_limited(&self, limit: f64) -> bool {
        self.max_in_flight * 2.0 < limit
    }
}

/// A limit's update rule, run once per window by [`Windowed`] (Netflix's `AbstractLimit`
/// `_update` under `WindowedLimit`).
pub trait LimitAlgorithm {
    /// The controller's name in reports ([`Policy::name`]).
    const NAME: &'static str;

    /// The limit after a window, given the limit before it (return `limit` to keep it).
    fn update(&mut self, limit: f64, sample: &WindowSample) -> f64;
}

/// Netflix's `WindowedLimit` around the update rule `A`: at every call it notes the load,
/// at most once per interval (and once the window holds `min_samples` completions) it
/// hands the window to `A` for a new limit `L`, and it enforces `⌊L⌋` (at least 1) through
/// the actuator.
#[derive(Debug, Clone)]
pub struct Windowed<A> {
    algorithm: A,
    limit: f64,
    actuator: Actuator,
    min_samples: f64,
    sampler: Sampler,
    load: LoadTrack,
}

impl<A: LimitAlgorithm> Windowed<A> {
    /// `algorithm` starting from `initial_limit`, updated on windows of at least
    /// `interval` seconds (checked: finite and `> 0`) and `min_samples` completions, its
    /// limit enforced through `actuator`.
    pub fn around(
        algorithm: A,
        actuator: Actuator,
        initial_limit: f64,
        interval: f64,
        min_samples: u32,
    ) -> Result<Self, RangeError> {
        check::positive("interval", interval)?;
        Ok(Self {
            algorithm,
            limit: initial_limit,
            actuator,
            min_samples: f64::from(min_samples),
            sampler: Sampler::new(interval),
            load: LoadTrack::default(),
        })
    }

    /// The update rule and its state.
    pub fn algorithm(&self) -> &A {
        &self.algorithm
    }

    /// The limit in force (`⌊L⌋`, at least 1).
    pub fn limit(&self) -> u32 {
        whole(self.limit)
    }

    /// The limit estimate before rounding.
    pub fn estimate(&self) -> f64 {
        self.limit
    }
}

impl<A: LimitAlgorithm> Policy for Windowed<A> {
    fn decide(&mut self, obs: &Observation) -> Action {
        self.load.see(self.actuator, obs);
        if let Some(w) = self.sampler.poll(obs, self.min_samples) {
            let sample = WindowSample {
                rtt: w.signal(self.actuator),
                max_in_flight: self.load.max_in_flight,
                drop: self.load.full || w.delta.failed > 0.0,
            };
            self.limit = self.algorithm.update(self.limit, &sample);
            self.load = LoadTrack::default();
        }
        self.actuator.action(self.limit(), obs)
    }

    fn name(&self) -> &'static str {
        A::NAME
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::Synth;
    use super::*;

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

    /// Counts its windows and grows the limit by one per window, recording each sample.
    #[derive(Debug, Default)]
    struct Count(Vec<WindowSample>);

    impl LimitAlgorithm for Count {
        const NAME: &'static str = "count";
        fn update(&mut self, limit: f64, sample: &WindowSample) -> f64 {
            self.0.push(*sample);
            limit + 1.0
        }
    }

    #[test]
    fn windowed_updates_once_per_full_window_and_enforces_the_floor_of_the_limit() {
        let mut w = Windowed::around(Count::default(), Actuator::InFlight, 2.5, 0.1, 10).unwrap();
        assert!(Windowed::around(Count::default(), Actuator::InFlight, 2.5, 0.0, 10).is_err());
        assert_eq!(w.name(), "count");
        // 100 completions/s at 30 ms with 10 in the system: a window every other 50-ms tick.
        let mut s = Synth::new(10.0, 4.0, 100.0);
        let a = s.run(&mut w, 1, 0.03, 0.0); // first sight starts the window
        assert_eq!((a.admit, w.limit(), w.estimate()), (0.0, 2, 2.5));
        s.run(&mut w, 2, 0.03, 0.0);
        assert_eq!(w.algorithm().0.len(), 1);
        let sample = w.algorithm().0[0];
        assert!((sample.rtt.unwrap() - 0.03).abs() < 1e-12);
        assert_eq!((sample.max_in_flight, sample.drop), (10.0, false));
        assert!(sample.app_limited(20.1) && !sample.app_limited(20.0));
        s.obs.queue = 200.0; // a full backlog at one call is a drop
        s.run(&mut w, 1, 0.03, 0.0);
        s.obs.queue = 10.0;
        s.run(&mut w, 1, 0.03, 0.0);
        assert_eq!(w.algorithm().0.len(), 2);
        assert_eq!((w.algorithm().0[1].max_in_flight, w.algorithm().0[1].drop), (200.0, true));
        assert_eq!(w.limit(), 4);
        let mut e = Windowed::around(Count::default(), Actuator::Executors, 3.0, 0.1, 10).unwrap();
        assert_eq!(e.decide(&s.obs).concurrency, Some(3));
    }

    #[test]
    fn ticker_is_due_once_per_interval() {
        let mut t = Ticker::new(0.05);
        let due: Vec<bool> = [0.0, 0.01, 0.05, 0.07, 0.1, f64::NAN, 0.02].iter().map(|&x| t.due(x)).collect();
        assert_eq!(due, [true, false, true, false, true, false, true]);
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
