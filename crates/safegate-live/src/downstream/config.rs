//! What the downstream emulates: [`DownstreamConfig`] and the optional [`Workers`] in front
//! of the contended service.

use safegate_core::error::{check, RangeError};
use safegate_sim::{HealthSchedule, HealthTrack, Pool, Retries, ServiceLaw};

use crate::ModelClock;

/// What the downstream emulates.
#[derive(Debug, Clone)]
pub struct DownstreamConfig {
    /// The pool's constants: `rate` (`s`) and `comfortable` (`C`) set the contended rate.
    pub pool: Pool,
    /// Health `H(t)` over model time (overridden by [`Faults::health`](super::Faults::health) while that is set).
    pub health: HealthTrack,
    /// The law of one request's work (mean 1).
    pub service: ServiceLaw,
    /// The model clock shared with the rest of the live system.
    pub clock: ModelClock,
    /// Seed of the work draws and of the `error_rate` fault's draws.
    pub seed: u64,
    /// Answer `POST /work` at once, without the scheduler (for plumbing benchmarks).
    pub noop: bool,
    /// The scenario's retry model: a completion fails (500) with its chance `p(H)`, so the
    /// clients' retries re-enter as in docs/model.md §Retries (`Retries::Off`: none).
    pub failures: Retries,
    /// A worker pool in front of the contended service (`None`: every request enters
    /// service at once, so `n` is unbounded).
    pub workers: Option<Workers>,
}

/// A worker pool in front of the contended service, as the seed's executors pulling from a
/// capped backlog: at most `slots` requests in service (`n ≤ slots`, so the joint rate
/// never falls below `μ(slots, H)`), up to `queue` more waiting in arrival order, and a
/// request beyond both answered 503 at once. With the seed's `slots = 8` and `queue = 200`
/// the service clears 75·H req/s however many requests arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workers {
    /// Requests in service at most (`P`).
    pub slots: u32,
    /// Requests waiting at most (`cap`).
    pub queue: u32,
}

impl Workers {
    /// The seed's pool: 8 executors, a backlog of 200.
    pub const SEED: Workers = Workers { slots: 8, queue: 200 };
}

impl DownstreamConfig {
    /// The seed's pool at constant health 1, exponential work, seed 0, on `clock`.
    pub fn new(clock: ModelClock) -> Self {
        Self {
            pool: Pool::default(),
            health: HealthTrack::new(HealthSchedule::Constant { level: 1.0 }),
            service: ServiceLaw::Exponential,
            clock,
            seed: 0,
            noop: false,
            failures: Retries::Off,
            workers: None,
        }
    }

    /// Check the pool's rate and comfortable concurrency, the health track and the service
    /// law; fields are named as in a scenario.
    pub fn check(&self) -> Result<(), RangeError> {
        check::within("model.rate", self.pool.rate, f64::MIN_POSITIVE, 1e9, "(0, 1e9] req/s")?;
        check::within("model.comfortable", self.pool.comfortable, f64::MIN_POSITIVE, 1e6, "(0, 1e6]")?;
        self.health.check()?;
        self.failures.check()?;
        if let Some(w) = self.workers {
            check::within("workers.slots", f64::from(w.slots), 1.0, 1e6, "[1, 1e6]")?;
            check::within("workers.queue", f64::from(w.queue), 0.0, 1e6, "[0, 1e6]")?;
        }
        self.service.check()
    }
}
