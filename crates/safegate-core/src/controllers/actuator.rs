//! What a limit caps ([`Actuator`]) and what a controller knows of the system it runs in
//! ([`Setting`]), with the bounds every limit controller derives from the two.

use crate::policy::{Action, Observation};

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

    /// The largest limit a controller whose own maximum is `max` can use here: `max` capped
    /// by the capacity in flight ([`Setting::cap_in_flight`]), the pool size on executors
    /// (no cap beyond the pool's own).
    pub fn max_limit(&self, actuator: Actuator, max: f64) -> f64 {
        match actuator {
            Actuator::InFlight => self.cap_in_flight(max),
            Actuator::Executors => self.executors.max(1) as f64,
        }
    }

    /// A limit's bounds `(min, initial, max)` adapted to `actuator` here: in flight the
    /// maximum is capped by the capacity and the minimum and the start are at most that; on
    /// executors the limit lives in `[1, executors]` and starts at `executors`.
    pub fn limits(&self, actuator: Actuator, min: f64, initial: f64, max: f64) -> (f64, f64, f64) {
        let max = self.max_limit(actuator, max);
        match actuator {
            Actuator::InFlight => {
                let min = min.min(max);
                (min, initial.clamp(min, max), max)
            }
            Actuator::Executors => (1.0, max, max),
        }
    }

    /// The setting with every unusable value replaced by its default (a capacity below 1
    /// or not finite, zero executors, a period not in `(0, ∞)`), so building a known
    /// controller never fails.
    pub fn sanitized(&self) -> Self {
        let d = Setting::default();
        Self {
            capacity: if self.capacity >= 1.0 && self.capacity.is_finite() { self.capacity } else { d.capacity },
            executors: if self.executors >= 1 { self.executors } else { d.executors },
            period: if self.period > 0.0 && self.period.is_finite() { self.period } else { d.period },
        }
    }
}

#[cfg(test)]
mod tests {
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
    fn limits_follow_the_actuator() {
        let s = Setting { capacity: 10.5, ..Setting::default() };
        assert_eq!(s.limits(Actuator::InFlight, 20.0, 20.0, 200.0), (10.5, 10.5, 10.5));
        assert_eq!(s.limits(Actuator::InFlight, 1.0, 5.0, 200.0), (1.0, 5.0, 10.5));
        assert_eq!(s.limits(Actuator::Executors, 20.0, 20.0, 200.0), (1.0, 8.0, 8.0));
        assert_eq!(Setting { executors: 0, ..s }.max_limit(Actuator::Executors, 20.0), 1.0);
    }
}
