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
            failed: x,
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
