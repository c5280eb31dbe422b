//! The controller: the queue library's [`safegate_queue::Controller`], every `run.dt`
//! model seconds (at least 0.5 ms of wall time apart) reading the queue's books, asking
//! the policy in model time, publishing its grant; after each period this module records
//! the step for the summary, `/metrics` and the progress callback.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use safegate_core::{Action, Observation, Policy};
use safegate_queue::Status;
use safegate_sim::record::Tracker;
use safegate_sim::{Config, Series};

use super::reasons::Rejections;
use super::services::Services;
use super::{LivePolicy, LiveSeries, Progress};
use crate::books::Accounting;
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
        policy: &Arc<Mutex<LivePolicy>>,
        services: &Services,
        progress: &mut dyn FnMut(&Progress),
    ) {
        let (clock, speed, load) = (self.clock, self.speed, services.load_stats.clone());
        let retries = load.clone();
        // What the simulator's policies see: model seconds, every attempt's end a
        // completion (the pool fails a job at its first failed attempt), the load
        // generator's retries, no failure signal (the seed's gate has none).
        let observe = move |o: Observation, s: &safegate_queue::Stats| Observation {
            now: clock.now(),
            completed: (s.completed + s.failed + s.dead) as f64,
            retried: retries.retry_counts().offered as f64,
            failed: 0.0,
            latency_total: o.latency_total * speed,
            wait_total: o.wait_total * speed,
            oldest_wait: o.oldest_wait * speed,
            ..o
        };
        let period = self.period();
        let controller =
            safegate_queue::Controller::new(&services.queue, Box::new(SharedPolicy(policy.clone())), self.bound())
                .period(period)
                .lease((20 * period).max(Duration::from_secs(2)))
                .observe(observe);
        let left = self.clock.wall((self.cfg.duration - self.clock.now()).max(0.0));
        let ran = controller
            .run_with(tokio::time::sleep(left), |st| {
                let acc = Accounting::from_stats(&st.stats, load.retry_counts());
                self.step(st, acc, policy, services, progress);
            })
            .await;
        match ran {
            Ok(r) => self.errors += r.errors,
            Err(_) => self.errors += 1,
        }
    }

    /// Record one period's decision (a follower's too: a live run has one controller).
    fn step(
        &mut self,
        st: &Status,
        acc: Accounting,
        policy: &Arc<Mutex<LivePolicy>>,
        services: &Services,
        progress: &mut dyn FnMut(&Progress),
    ) {
        let t = st.observation.now;
        if t >= self.cfg.duration {
            return;
        }
        self.acc = acc;
        let q = acc.in_backlog as f64;
        let action = st.action;
        self.decisions += 1;
        if q > self.line {
            self.exits += 1;
        }
        self.record(t, q, action, services);
        let filter = policy.lock().unwrap_or_else(|p| p.into_inner()).filter_stats();
        self.publish_metrics(t, q, action, filter, services);
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
    fn publish_metrics(
        &mut self,
        t: f64,
        q: f64,
        action: Action,
        fs: Option<safegate_core::safety::FilterStats>,
        services: &Services,
    ) {
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

/// The run's policy, shared with the report (which reads the filter's counters at the end).
struct SharedPolicy(Arc<Mutex<LivePolicy>>);

impl Policy for SharedPolicy {
    fn decide(&mut self, obs: &Observation) -> Action {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).decide(obs)
    }

    fn name(&self) -> &'static str {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).name()
    }
}
