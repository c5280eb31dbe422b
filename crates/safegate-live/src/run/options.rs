//! How a live run is played: where Redis and the downstream are, the options and their
//! limits.

use std::net::SocketAddr;
use std::time::Duration;

use safegate_sim::Config;

use crate::loadgen::RetryPolicy;

/// Where the backlog lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisTarget {
    /// Start a private `redis-server` on a free port, stop it after.
    Own,
    /// A running server.
    Url(String),
}

/// What the executors call.
#[derive(Debug, Clone, PartialEq)]
pub enum DownstreamTarget {
    /// The model's downstream, emulated in this process.
    Emulated,
    /// A running HTTP service (`POST URL/work`).
    Url(String),
    /// A real database: each job is one transaction on PostgreSQL (a scenario's
    /// `[postgres]`). Model time is wall time then: the database runs at its own pace, so
    /// the run's speed must be 1.
    Postgres(crate::pg::PgSpec),
}

/// How a live run is played.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// Model seconds per wall second.
    pub speed: f64,
    /// Redis.
    pub redis: RedisTarget,
    /// The queue's name in Redis (its keys are `sg:{NAME}:*`).
    pub namespace: String,
    /// Delete the queue's keys before the run. Nothing is deleted otherwise: a run on a
    /// queue that holds an earlier run's books is refused (its books would be mixed in).
    pub reset: bool,
    /// Serve `/metrics` here.
    pub metrics: Option<SocketAddr>,
    /// The downstream.
    pub downstream: DownstreamTarget,
    /// Retries of failed jobs (`None`: from the scenario's `[retries]`).
    pub retry: Option<RetryPolicy>,
    /// Longest wait for one downstream call \[model s\].
    pub timeout: f64,
    /// Heartbeat time-to-live \[wall\].
    pub heartbeat: Duration,
    /// Run executors in this process (false: other processes run them, as in the
    /// crash tests).
    pub executors: bool,
    /// Keep a scrape of `/metrics` every this many model seconds, stamped with the model
    /// time, for `safegate boundary check` (`None`: keep none).
    pub scrape_every: Option<f64>,
}

impl Default for LiveOptions {
    fn default() -> Self {
        Self {
            speed: 10.0,
            redis: RedisTarget::Own,
            namespace: "safegate".into(),
            reset: false,
            metrics: None,
            downstream: DownstreamTarget::Emulated,
            retry: None,
            timeout: 30.0,
            heartbeat: Duration::from_secs(1),
            executors: true,
            scrape_every: None,
        }
    }
}

/// Most offers per wall second a live run may ask of its load generator: the peak of
/// `traffic.rate` (or `traffic.spike.rate`) times `speed`. One generator task offers through
/// one Redis server, which runs the admission script for each; on the 2-core machine of
/// `BENCHMARKS.md` the release build kept up with 40 000 a second (0 unsent, 92 % of the
/// controller's decisions) and at 90 000 left 24 % unsent and the controller a third of
/// its decisions. Far above it nearly every arrival goes unsent (λ = 10⁶ at speed 10:
/// 98 %), and the run shows a load the scenario never asked for, so it is refused before
/// anything starts.
pub const MAX_OFFERS_PER_WALL_SECOND: f64 = 5e4;

/// Fastest a live run plays model time against the wall clock. At 100× one executor's
/// service at the seed's 37.5 req/s lasts 0.27 ms of wall time, about the controller's
/// shortest period (0.5 ms); at 1000× a 1000-s run took 21 of its 2000 planned decisions and
/// left 31 % of its offers unsent, so its verdict measured the harness, not the gate. Even at
/// 100× the 400-s band took 5 110 of 8 000 decisions and cleared 17 659 against 21 388 at 10×
/// (the run then warns); 10× is the speed the fidelity tests hold to.
pub const MAX_SPEED: f64 = 100.0;

/// Share of the generator's offers that may go unsent before a run is flagged as running a
/// lighter load than its scenario's.
pub const UNSENT_WARNING_SHARE: f64 = 0.01;

/// Refuses a run whose peak offered rate at `speed` is beyond
/// [`MAX_OFFERS_PER_WALL_SECOND`], naming the scenario key that sets the peak.
pub fn check_offer_rate(cfg: &Config, speed: f64) -> Result<(), safegate_core::RangeError> {
    let (field, peak) = match cfg.spike {
        Some(s) if s.rate > cfg.traffic => ("traffic.spike.rate", s.rate),
        _ => ("traffic.rate", cfg.traffic),
    };
    let wall = peak * speed;
    if wall.is_finite() && wall <= MAX_OFFERS_PER_WALL_SECOND {
        return Ok(());
    }
    Err(safegate_core::RangeError::new(
        field,
        peak,
        format!(
            "at speed {speed}, at most {:.0} req/s (the live load generator offers at most {MAX_OFFERS_PER_WALL_SECOND:.0} \
             a wall second; {wall:.3e} asked): lower the rate or the speed",
            MAX_OFFERS_PER_WALL_SECOND / speed
        ),
    ))
}

impl LiveOptions {
    /// Check the options' ranges; the error names the flag.
    pub fn check(&self) -> Result<(), safegate_core::RangeError> {
        use safegate_core::error::check;
        check::within("speed", self.speed, 0.01, MAX_SPEED, "[0.01, 100]")?;
        check::within("timeout", self.timeout, 1e-3, 1e6, "[0.001, 1e6] model seconds")?;
        crate::redis_conn::check_namespace(&self.namespace)?;
        if matches!(self.downstream, DownstreamTarget::Postgres(_)) {
            if self.speed != 1.0 {
                return Err(safegate_core::RangeError::new(
                    "speed",
                    self.speed,
                    "1 with a [postgres] downstream (the database runs in wall time; model time is wall time)",
                ));
            }
            if !self.executors {
                return Err(safegate_core::RangeError::new(
                    "external-executors",
                    "on",
                    "off with a [postgres] downstream (`safegate executor` runs no transactions; the run's own \
                     executors do)",
                ));
            }
        }
        if let Some(r) = &self.retry {
            check::within("retry.probability", r.probability, 0.0, 1.0, "[0, 1]")?;
            check::within("retry.backoff", r.backoff, 0.0, 1e4, "[0, 1e4] model seconds")?;
            if let Some(b) = r.budget {
                check::within("retry.budget", b, 0.0, 100.0, "[0, 100] retries per first attempt")?;
            }
        }
        Ok(())
    }
}
