//! The policy interface: observation in, action out, time passed in.
//!
//! Every admission policy in safegate, from the seed's gate to the adaptive controllers
//! and the safety filter, implements [`Policy`]. A policy is consulted by an actuator
//! (the simulator's gate, a tower permit, a Redis ingress) with an [`Observation`] of the
//! system at time `now` and answers with an [`Action`]: the fraction of offered work to
//! admit and, optionally, how many executors may pull work at once.

/// What an actuator can see when it asks for a decision.
///
/// All quantities are in the units of the seed's model: requests, requests per second and
/// seconds. Counters are cumulative since the start of the run; a policy that needs rates
/// differences them itself. Fields an actuator cannot observe are left at their defaults
/// (zero, or `None` for health).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Observation {
    /// Current time \[s\]. The only clock a policy may read.
    pub now: f64,
    /// Queue depth `q`: requests waiting plus in service.
    pub queue: f64,
    /// Queue capacity `cap` (the seed's 200).
    pub capacity: f64,
    /// Requests currently in service (busy executors `n`).
    pub in_service: f64,
    /// Offered arrival rate λ [req/s], as known or estimated by the actuator (0 if unknown).
    pub offered_rate: f64,
    /// Downstream health `H` if the actuator can observe it.
    pub health: Option<f64>,
    /// Cumulative requests offered to the gate.
    pub offered: f64,
    /// Cumulative requests admitted.
    pub admitted: f64,
    /// Cumulative requests completed (successfully or not).
    pub completed: f64,
    /// Cumulative completions that failed downstream and came back as retries.
    pub retried: f64,
    /// Cumulative completions that failed: the service's error, or a response the
    /// actuator's classifier counted as a failure (an HTTP 5xx, a downstream's rejection).
    /// The windowed limiters (Vegas, AIMD) read a failure in a window as a drop; `peak`
    /// climbs successes (`completed − failed`), not completions. Actuators that cannot
    /// tell leave it at 0.
    pub failed: f64,
    /// Cumulative time in the system (waiting plus in service) summed over completed
    /// requests \[s\]. Its change over an interval divided by the change in `completed` is
    /// the mean latency (RTT) of that interval. Models without individual requests use the
    /// backlog-time integral `∫q dt`, the same sum by Little's law.
    pub latency_total: f64,
    /// The part of `latency_total` spent waiting for an executor \[s\] (latency minus wait is
    /// service time, the signal a limiter on executors reads).
    pub wait_total: f64,
    /// Age of the oldest request still waiting for an executor \[s\], 0 when none waits: the
    /// queueing delay Breakwater and DAGOR read.
    pub oldest_wait: f64,
}

impl Observation {
    /// An observation of queue depth `queue` out of `capacity` at time `now`; every other
    /// field at its default.
    pub fn new(now: f64, queue: f64, capacity: f64) -> Self {
        Self {
            now,
            queue,
            capacity,
            in_service: 0.0,
            offered_rate: 0.0,
            health: None,
            offered: 0.0,
            admitted: 0.0,
            completed: 0.0,
            retried: 0.0,
            failed: 0.0,
            latency_total: 0.0,
            wait_total: 0.0,
            oldest_wait: 0.0,
        }
    }

    /// Queue occupancy `q / cap` (0 when the capacity is not positive).
    pub fn occupancy(&self) -> f64 {
        if self.capacity > 0.0 {
            self.queue / self.capacity
        } else {
            0.0
        }
    }
}

/// What a policy asks the actuator to do until the next decision.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Action {
    /// Fraction of offered arrivals to admit, in `[0, 1]` (`1 − rej` in the seed's notation).
    pub admit: f64,
    /// Most executors allowed to pull work at once; `None` leaves the pool uncapped.
    pub concurrency: Option<u32>,
    /// Drop retries instead of letting them re-enter (a backup policy's last resort).
    pub shed_retries: bool,
}

impl Action {
    /// Admit everything, no concurrency cap.
    pub const OPEN: Action = Action { admit: 1.0, concurrency: None, shed_retries: false };

    /// Admit fraction `admit` (clamped to `[0, 1]`, NaN treated as 0), no concurrency cap.
    pub fn admit(admit: f64) -> Self {
        let admit = if admit.is_nan() { 0.0 } else { admit.clamp(0.0, 1.0) };
        Action { admit, concurrency: None, shed_retries: false }
    }
}

/// An admission policy: observation → action, time passed in.
///
/// Implementations must be deterministic functions of the observations they have been
/// given (and their configuration); they must never read a clock or do I/O.
pub trait Policy {
    /// Decide what to do now. Called by the actuator at its decision points (every step of
    /// the fluid model; every arrival and every sampling tick of the stochastic model).
    fn decide(&mut self, obs: &Observation) -> Action;

    /// A short, stable name for reports (`"seed-gate"`, `"open"`, …).
    fn name(&self) -> &'static str;

    /// How soon the policy wants its next decision \[s\], when that is sooner than its
    /// actuator's period (`None`, the default: the period is fine). An actuator that
    /// decides on a clock (the tower layer) may honour it; one that decides every step (the
    /// simulators) already does. [`Peak`](crate::controllers::Peak)'s opening asks for a
    /// tenth of its period, so that it doubles once per round trip, not once per period.
    fn next_decision_within(&self) -> Option<f64> {
        None
    }
}

impl<P: Policy + ?Sized> Policy for Box<P> {
    fn decide(&mut self, obs: &Observation) -> Action {
        (**self).decide(obs)
    }
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn next_decision_within(&self) -> Option<f64> {
        (**self).next_decision_within()
    }
}
