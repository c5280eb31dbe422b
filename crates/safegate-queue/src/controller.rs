//! The controller: reads the queue's own books every period, decides with a policy (under
//! the safety filter when built from a boundary), and publishes the grant producers and
//! workers apply. Several may run: one leads through a lease in Redis, the others follow
//! (deciding on the same observations, so their estimators are warm) and take over when
//! the lease lapses.

use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::Value;
use safegate_core::boundary::Boundary;
use safegate_core::controllers::{PolicySpec, Setting};
use safegate_core::safety::{FilterStats, SafetyFilter};
use safegate_core::{Action, Observation, Policy};

use crate::keys::GROUP;
use crate::{Bounds, Queue, QueueError, Stats};

/// The policy a controller decides with.
enum Decider {
    Nominal(Box<dyn Policy + Send>),
    Filtered(Box<SafetyFilter<Box<dyn Policy + Send>>>),
}

impl Decider {
    fn decide(&mut self, obs: &Observation) -> Action {
        match self {
            Decider::Nominal(p) => p.decide(obs),
            Decider::Filtered(f) => f.decide(obs),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Decider::Nominal(p) => p.name(),
            Decider::Filtered(f) => f.name(),
        }
    }
}

/// One period's view, for progress lines and dashboards.
#[derive(Debug, Clone)]
pub struct Status {
    /// Seconds since the controller started.
    pub t: f64,
    /// Whether this controller leads (and published).
    pub leading: bool,
    /// The controllers' epoch this controller last saw as leader (0 if it never led).
    pub epoch: u64,
    /// The queue's books at this period.
    pub stats: Stats,
    /// What the policy saw (after [`Controller::observe`]'s hook, if any).
    pub observation: Observation,
    /// The decision (a follower decides too, without publishing).
    pub action: Action,
    /// The bound published \[jobs\].
    pub bound: u64,
    /// The filter's counters, when a filter decides.
    pub filter: Option<FilterStats>,
}

/// What a controller did, from start to shutdown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ControllerReport {
    /// Periods with a decision.
    pub decisions: u64,
    /// Grants published (periods as leader).
    pub published: u64,
    /// Times it became the leader.
    pub takeovers: u64,
    /// Periods lost to Redis errors.
    pub errors: u64,
}

/// A controller of one queue.
pub struct Controller {
    queue: Queue,
    decider: Decider,
    id: String,
    period: Duration,
    lease: Duration,
    capacity: f64,
    bound: Option<u64>,
    /// Completions at the start of the window the mean time between them is taken over:
    /// (seconds, attempts finished).
    window: Option<(f64, u64)>,
    job_us: u64,
    observe: Option<ObserveFn>,
}

/// A hook between the books and the policy (see [`Controller::observe`]).
type ObserveFn = Box<dyn FnMut(Observation, &Stats) -> Observation + Send>;

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("queue", &self.queue)
            .field("policy", &self.decider.name())
            .field("id", &self.id)
            .field("period", &self.period)
            .field("lease", &self.lease)
            .finish()
    }
}

impl Controller {
    /// A controller deciding with `policy` alone, for a backlog of `capacity` jobs (what
    /// the policy's occupancy is measured against; also the bound it publishes), every
    /// 50 ms, with a 2-s lease.
    pub fn new(queue: &Queue, policy: Box<dyn Policy + Send>, capacity: u64) -> Self {
        let t = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        Self {
            queue: queue.clone(),
            decider: Decider::Nominal(policy),
            id: format!("c{}-{:x}", std::process::id(), t & 0xff_ffff),
            period: Duration::from_millis(50),
            lease: Duration::from_secs(2),
            capacity: capacity as f64,
            bound: None,
            window: None,
            job_us: 1000,
            observe: None,
        }
    }

    /// A controller deciding with the registry policy `spec` (`peak`, `vegas`,
    /// `cycle+pool`, …) under `boundary`'s safety filter, for a backlog of `capacity`
    /// jobs worked by about `workers` workers, deciding every `boundary.decision.period`.
    /// Also returns the bounds the boundary implies: the cap at `capacity`, the fallback at
    /// the barrier's line θ·Q (so that with no controller the backlog cannot leave the safe
    /// region); store them with [`Queue::set_bounds`] (the other settings stay as they are).
    pub fn with_boundary(
        queue: &Queue,
        boundary: &Boundary,
        spec: &str,
        capacity: u64,
        workers: u32,
    ) -> Result<(Self, Bounds), QueueError> {
        let spec: PolicySpec = spec.parse().map_err(|e| QueueError::Policy(format!("policy {spec:?}: {e}")))?;
        let q = capacity as f64;
        let safety = boundary.safety_config(q).map_err(|e| QueueError::Policy(format!("boundary: {e}")))?;
        let setting = Setting { capacity: q, executors: workers.max(1), period: boundary.decision.period };
        let nominal =
            spec.build(&setting, workers.max(1)).map_err(|e| QueueError::Policy(format!("policy {spec}: {e}")))?;
        let filter = SafetyFilter::new(safety, nominal).map_err(|e| QueueError::Policy(e.to_string()))?;
        let mut c = Self::new(queue, Box::new(NoPolicy), capacity);
        c.decider = Decider::Filtered(Box::new(filter));
        c.period = Duration::from_secs_f64(boundary.decision.period);
        let line = boundary.barrier.threshold * boundary.barrier.capacity.unwrap_or(q);
        Ok((c, Bounds { cap: capacity, fallback: (line.floor().max(1.0) as u64).min(capacity) }))
    }

    /// Its id in the lease (unique per process by default).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// Change what the policy sees: `hook` gets the observation the controller built from
    /// the books (`now` in seconds since it started, times in wall seconds, the queue's
    /// `waiting()` as the backlog) and the books themselves, and returns the one to decide
    /// on. Use it to run a policy on your own clock or time scale (a replay at 10× reports
    /// model seconds), or to add what the books do not hold (an offered rate, a health
    /// reading).
    ///
    /// ```no_run
    /// # fn demo(c: safegate_queue::Controller) -> safegate_queue::Controller {
    /// use safegate_core::Observation;
    /// let speed = 10.0;
    /// c.observe(move |o, _stats| Observation {
    ///     now: o.now * speed,
    ///     latency_total: o.latency_total * speed,
    ///     wait_total: o.wait_total * speed,
    ///     oldest_wait: o.oldest_wait * speed,
    ///     ..o
    /// })
    /// # }
    /// ```
    pub fn observe(mut self, hook: impl FnMut(Observation, &Stats) -> Observation + Send + 'static) -> Self {
        self.observe = Some(Box::new(hook));
        self
    }

    /// The decision period (0.5 ms to 60 s).
    pub fn period(mut self, d: Duration) -> Self {
        self.period = d;
        self
    }

    /// The lease: how long a leader's grant stays in force without renewal, and how long
    /// its followers wait before taking over (at least two periods, at most 1 h).
    pub fn lease(mut self, d: Duration) -> Self {
        self.lease = d;
        self
    }

    /// The bound it publishes (default: the capacity).
    pub fn bound(mut self, jobs: u64) -> Self {
        self.bound = Some(jobs);
        self
    }

    fn check(&self) -> Result<(), QueueError> {
        if !(Duration::from_micros(500)..=Duration::from_secs(60)).contains(&self.period) {
            return Err(QueueError::setting("period", format!("{:?}", self.period), "0.5 ms to 60 s"));
        }
        if self.lease < 2 * self.period || self.lease > Duration::from_secs(3600) {
            return Err(QueueError::setting("lease", format!("{:?}", self.lease), "at least two periods, at most 1 h"));
        }
        if !(self.capacity >= 1.0) {
            return Err(QueueError::setting("capacity", self.capacity, "at least 1 job"));
        }
        if self.id.is_empty() || self.id.len() > 128 {
            return Err(QueueError::setting("controller id", format!("{:?}", self.id), "1 to 128 bytes"));
        }
        Ok(())
    }

    /// Decide every period until `shutdown` completes, then give the lease up.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<ControllerReport, QueueError> {
        self.run_with(shutdown, |_| {}).await
    }

    /// [`Controller::run`], calling `on_period` after every period.
    pub async fn run_with(
        mut self,
        shutdown: impl Future<Output = ()>,
        mut on_period: impl FnMut(&Status),
    ) -> Result<ControllerReport, QueueError> {
        self.check()?;
        // A first call that fails says so at once (a wrong URL, no functions).
        let _ = self.queue.stats().await?;
        let start = Instant::now();
        let mut report = ControllerReport::default();
        let mut tick = tokio::time::interval(self.period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut leading = false;
        let mut epoch = 0;
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                _ = tick.tick() => {}
            }
            match self.step(start.elapsed().as_secs_f64(), &mut leading, &mut epoch, &mut report).await {
                Ok(s) => on_period(&s),
                Err(_) => report.errors += 1,
            }
        }
        let q = &self.queue;
        let _: Result<i64, _> = q.fcall("sg_resign", &[&q.keys.leader], &self.id).await;
        Ok(report)
    }

    async fn step(
        &mut self,
        t: f64,
        leading: &mut bool,
        epoch: &mut u64,
        r: &mut ControllerReport,
    ) -> Result<Status, QueueError> {
        let q = &self.queue;
        let lease_ms = self.lease.as_millis() as u64;
        // One round trip: the lease, the books and the oldest wait, pipelined on the
        // connection.
        let lead_keys: [&str; 2] = [&q.keys.leader, &q.keys.gate];
        let jobs: [&str; 1] = [&q.keys.jobs];
        let lead_args = (&self.id, &lease_ms);
        let (lead, stats, oldest) = tokio::try_join!(
            q.fcall::<Vec<Value>, _>("sg_lead", &lead_keys, &lead_args),
            q.stats(),
            q.fcall::<i64, _>("sg_oldest", &jobs, &GROUP),
        )?;
        let now_leading = lead.first().and_then(|v| redis::from_redis_value_ref::<i64>(v).ok()) == Some(1);
        if now_leading {
            *epoch = lead.get(1).and_then(|v| redis::from_redis_value_ref::<u64>(v).ok()).unwrap_or(*epoch);
            if !*leading {
                r.takeovers += 1;
            }
        }
        *leading = now_leading;
        let mut obs = self.observation(t, &stats, oldest);
        if let Some(hook) = self.observe.as_mut() {
            obs = hook(obs, &stats);
        }
        // Mean time between completions over windows of at least a second (this
        // controller's own, so a queue's history or a takeover does not skew it), for the
        // retry-after of a full backlog.
        let done = stats.completed + stats.failed + stats.dead + stats.retried;
        match self.window {
            Some((t0, d0)) if t - t0 >= 1.0 => {
                let n = done.saturating_sub(d0);
                self.job_us = if n > 0 { ((t - t0) * 1e6 / n as f64).clamp(1.0, 60e6) as u64 } else { 1_000_000 };
                self.window = Some((t, done));
            }
            Some(_) => {}
            None => self.window = Some((t, done)),
        }
        let action = self.decider.decide(&obs);
        r.decisions += 1;
        let bound = self.bound.unwrap_or(self.capacity as u64);
        if now_leading {
            let share = if action.admit.is_nan() { 0.0 } else { action.admit.clamp(0.0, 1.0) };
            let conc = action.concurrency.map_or(-1, i64::from);
            let lease_us = self.lease.as_micros() as u64;
            let retry_us = self.period.as_micros() as u64;
            let job_us = self.job_us;
            let ok: i64 = q
                .fcall(
                    "sg_publish",
                    &[&q.keys.leader, &q.keys.gate],
                    &(
                        &self.id,
                        &share.to_string(),
                        &conc,
                        &bound,
                        &lease_us,
                        &retry_us,
                        &job_us,
                        u8::from(action.shed_retries),
                    ),
                )
                .await?;
            if ok == 1 {
                r.published += 1;
            } else {
                *leading = false;
            }
        }
        let filter = match &self.decider {
            Decider::Filtered(f) => Some(*f.stats()),
            Decider::Nominal(_) => None,
        };
        Ok(Status { t, leading: *leading, epoch: *epoch, stats, observation: obs, action, bound, filter })
    }

    fn observation(&self, t: f64, s: &Stats, oldest_us: i64) -> Observation {
        let latency = s.latency_us as f64 * 1e-6;
        Observation {
            now: t,
            queue: s.waiting() as f64,
            capacity: self.capacity,
            in_service: s.in_service as f64,
            offered_rate: 0.0,
            health: None,
            offered: s.offered as f64,
            admitted: s.admitted as f64,
            // Attempts finished, each counted once: done, failed for good, dead-lettered,
            // or failed and put back for a retry (the books' latency sums all of them).
            completed: (s.completed + s.failed + s.dead + s.retried) as f64,
            retried: s.retried as f64,
            failed: (s.failed + s.dead + s.retried) as f64,
            latency_total: latency,
            wait_total: (latency - s.service_us as f64 * 1e-6).max(0.0),
            oldest_wait: oldest_us.max(0) as f64 * 1e-6,
        }
    }
}

/// A placeholder replaced before use.
struct NoPolicy;

impl Policy for NoPolicy {
    fn decide(&mut self, _: &Observation) -> Action {
        Action::OPEN
    }
    fn name(&self) -> &'static str {
        "none"
    }
}
