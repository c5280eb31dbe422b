//! The controller: every `run.dt` model seconds (at least 0.5 ms of wall time apart) it
//! reads the backlog and the accounting from Redis, asks the policy, publishes its decision,
//! and records the step for the summary, `/metrics` and the progress callback.

use std::time::{Duration, Instant};

use safegate_core::{Action, Observation, Policy};
use safegate_sim::record::Tracker;
use safegate_sim::{Config, Series};

use super::reasons::Rejections;
use super::services::Services;
use super::{LivePolicy, LiveSeries, Progress};
use crate::backlog::Accounting;
use crate::metrics::{MetricsServer, Snapshot};
use crate::ModelClock;

/// What the controller keeps over a run.
#[derive(Debug)]
pub(super) struct Controller<'a> {
    cfg: &'a Config,
    speed: f64,
    line: f64,
    clock: ModelClock,
    scrape_every: Option<f64>,
    /// The backlog's statistics for the summary.
    pub(super) tracker: Tracker,
    /// Backlog, health and admission share at every decision.
    pub(super) series: Series,
    /// Concurrency and jobs in service at every decision.
    pub(super) live: LiveSeries,
    /// Decisions taken.
    pub(super) decisions: u64,
    /// Periods lost to Redis errors.
    pub(super) errors: u64,
    /// Decisions taken with the backlog above the line.
    exits: u64,
    /// Model time and backlog of the latest decision.
    pub(super) last_t: f64,
    pub(super) last_q: f64,
    /// The accounting the latest decision read.
    pub(super) acc: Accounting,
    /// The scrapes kept, and the model time of the next one.
    pub(super) scrapes: Option<String>,
    next_scrape: f64,
    last_progress: Instant,
    /// The enqueue's rejections by reason.
    rejections: Rejections,
}

impl<'a> Controller<'a> {
    /// A controller for `cfg` at `speed` on `clock`, with the barrier line at `line` and a
    /// scrape kept every `scrape_every` model seconds.
    pub(super) fn new(cfg: &'a Config, speed: f64, line: f64, clock: ModelClock, scrape_every: Option<f64>) -> Self {
        Self {
            cfg,
            speed,
            line,
            clock,
            scrape_every,
            tracker: Tracker::new(cfg.drain_level, cfg.health.schedule.dip_end(), cfg.warmup),
            series: Series::default(),
            live: LiveSeries::default(),
            decisions: 0,
            errors: 0,
            exits: 0,
            last_t: 0.0,
            last_q: 0.0,
            acc: Accounting::default(),
            scrapes: scrape_every.map(|_| String::new()),
            next_scrape: 0.0,
            last_progress: Instant::now(),
            rejections: Rejections::default(),
        }
    }

    /// The controller's period on the wall clock: `dt`, at least 0.5 ms.
    pub(super) fn period(&self) -> Duration {
        self.clock.wall(self.cfg.dt).max(Duration::from_micros(500))
    }

    /// Decisions the period allows over the run.
    pub(super) fn planned_decisions(&self) -> u64 {
        (self.clock.wall(self.cfg.duration).as_secs_f64() / self.period().as_secs_f64()).floor() as u64
    }

    /// Decide every period until the run's duration in model time.
    pub(super) async fn run(
        &mut self,
        policy: &mut LivePolicy,
        services: &Services,
        progress: &mut dyn FnMut(&Progress),
    ) {
        let mut tick = tokio::time::interval(self.period());
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let t = self.clock.now();
            if t >= self.cfg.duration {
                break;
            }
            self.step(t, policy, services, progress).await;
        }
    }

    /// One decision at model time `t` (none when Redis cannot be read).
    async fn step(
        &mut self,
        t: f64,
        policy: &mut LivePolicy,
        services: &Services,
        progress: &mut dyn FnMut(&Progress),
    ) {
        let backlog = &services.backlog;
        let (acc, oldest) = match tokio::try_join!(backlog.accounting(), backlog.oldest_wait()) {
            Ok(v) => v,
            Err(_) => {
                self.errors += 1;
                return;
            }
        };
        self.acc = acc;
        let q = acc.in_backlog as f64;
        let action = policy.decide(&self.observation(t, oldest));
        self.decisions += 1;
        if q > self.line {
            self.exits += 1;
        }
        if backlog.publish(action.admit, action.concurrency, self.bound()).await.is_err() {
            self.errors += 1;
        }
        self.record(t, q, action, services);
        self.publish_metrics(t, q, action, policy, services);
        if self.last_progress.elapsed() >= Duration::from_millis(250) {
            self.last_progress = Instant::now();
            progress(&Progress {
                t,
                duration: self.cfg.duration,
                queue: acc.in_backlog,
                admit: action.admit,
                concurrency: action.concurrency,
                acc,
                metrics: services.metrics.as_ref().map(MetricsServer::addr),
                join: services.join.clone(),
            });
        }
    }

    /// The backlog's cap \[jobs\].
    fn bound(&self) -> u64 {
        self.cfg.pool.capacity as u64
    }

    /// What the policy sees at `t`, from the accounting just read; the wall times Redis
    /// keeps, in model seconds.
    fn observation(&self, t: f64, oldest: Duration) -> Observation {
        let acc = &self.acc;
        let model = |us: u64| us as f64 * 1e-6 * self.speed;
        Observation {
            now: t,
            queue: acc.in_backlog as f64,
            capacity: self.cfg.pool.capacity,
            in_service: acc.in_service as f64,
            offered_rate: 0.0,
            health: None,
            offered: acc.offered as f64,
            admitted: acc.admitted as f64,
            completed: (acc.completed + acc.failed) as f64,
            retried: acc.offered_retries as f64,
            failed: 0.0,
            latency_total: model(acc.latency_us),
            wait_total: model(acc.wait_us),
            oldest_wait: oldest.as_secs_f64() * self.speed,
        }
    }

    /// The step in the summary's tracker and the series.
    fn record(&mut self, t: f64, q: f64, action: Action, services: &Services) {
        self.tracker.integrate(self.last_q * (t - self.last_t));
        self.tracker.sample(t, q);
        self.last_t = t;
        self.last_q = q;
        let h = services.downstream.as_ref().map_or_else(|| self.cfg.health.value(t), |d| d.stats().health);
        self.series.push(t, q, h, action.admit);
        self.live.concurrency.push(action.concurrency.map_or(-1, |c| c.min(i32::MAX as u32) as i32));
        self.live.in_service.push(self.acc.in_service);
    }

    /// The step in `/metrics`' snapshot, and in a kept scrape when one is due.
    fn publish_metrics(&mut self, t: f64, q: f64, action: Action, policy: &LivePolicy, services: &Services) {
        let fs = policy.filter_stats();
        let (interventions, backups) = fs.map_or((0, 0), |f| (f.interventions, f.infeasible));
        let rejected = self.rejections.update(&self.acc, interventions, backups);
        let Ok(mut s) = services.snapshot.lock() else { return };
        *s = Snapshot {
            t,
            acc: self.acc,
            admit: action.admit,
            concurrency: action.concurrency,
            slots: self.cfg.pool.executors,
            decisions: self.decisions,
            interventions,
            backup_activations: backups,
            rejected,
            bound: self.bound(),
            margin: self.line - q,
            exits: self.exits,
        };
        if let (Some(buf), Some(every)) = (self.scrapes.as_mut(), self.scrape_every) {
            if t >= self.next_scrape {
                self.next_scrape = ((t / every).floor() + 1.0) * every;
                crate::metrics::render_stamped(&s, buf);
            }
        }
    }
}
