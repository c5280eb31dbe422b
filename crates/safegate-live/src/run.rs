//! One live run: a scenario of the seed's model played by real processes on loopback
//! (docs/live.md).
//!
//! The run starts (or joins) Redis, the downstream emulator, the executor pool, the load
//! generator and the `/metrics` endpoint; the controller then decides every `run.dt` model
//! seconds with the same policy object the simulator runs (the seed's gate, or the safety
//! filter over it), from what Redis holds: the backlog's length, the jobs in service and
//! the accounting. At the end it reports the same summary as `safegate run` and the job
//! accounting.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use safegate_core::boundary::Boundary;
use safegate_core::controllers::PolicySpec;
use safegate_core::safety::{FilterStats, SafetyFilter};
use safegate_core::{Observation, Policy};
use safegate_sim::record::{quantiles, Totals, Tracker};
use safegate_sim::variants::VariantPolicy;
use safegate_sim::{Config, Series, Summary};
use serde::Serialize;
use tokio::sync::watch;

use crate::backlog::{Accounting, Backlog};
use crate::downstream::{Downstream, DownstreamConfig, DownstreamStats};
use crate::executor::{ExecutorConfig, Pool};
use crate::loadgen::{LoadConfig, RetryPolicy};
use crate::metrics::{MetricsServer, Snapshot};
use crate::redis_server::RedisServer;
use crate::{LiveError, ModelClock};

/// Where the backlog lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisTarget {
    /// Start a private `redis-server` on a free port, stop it after.
    Own,
    /// A running server.
    Url(String),
}

/// What the executors call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DownstreamTarget {
    /// The model's downstream, emulated in this process.
    Emulated,
    /// A running HTTP service (`POST URL/work`).
    Url(String),
}

/// How a live run is played.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// Model seconds per wall second.
    pub speed: f64,
    /// Redis.
    pub redis: RedisTarget,
    /// Key prefix in Redis.
    pub namespace: String,
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
        crate::backlog::check_namespace(&self.namespace)?;
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

/// Progress, about four times a second.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Progress {
    /// Model time \[s\].
    pub t: f64,
    /// The run's length \[model s\].
    pub duration: f64,
    /// The backlog.
    pub queue: u64,
    /// Admission share.
    pub admit: f64,
    /// Executors allowed.
    pub concurrency: Option<u32>,
    /// The accounting.
    pub acc: Accounting,
    /// Where `/metrics` is served (the port bound for `--metrics …:0`), if it is.
    pub metrics: Option<SocketAddr>,
}

/// The live run's own series beside the simulator's.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LiveSeries {
    /// Executors allowed at each sample (−1: all).
    pub concurrency: Vec<i32>,
    /// Jobs in service at each sample.
    pub in_service: Vec<u64>,
}

/// What a live run reports.
#[derive(Debug, Clone, Serialize)]
pub struct LiveReport {
    /// The policy's name.
    pub policy: &'static str,
    /// Model seconds per wall second.
    pub speed: f64,
    /// Wall seconds the run took.
    pub wall_seconds: f64,
    /// Redis (password elided).
    pub redis: String,
    /// The summary, as `safegate run` gives it.
    pub summary: Summary,
    /// Backlog, health and admission share at every decision.
    pub series: Series,
    /// Concurrency and jobs in service at every decision.
    pub live: LiveSeries,
    /// The job accounting at the end.
    pub accounting: Accounting,
    /// `admitted − completed − failed − in_backlog` (must be 0).
    pub lost: i64,
    /// Arrivals the generator made; retries; abandoned failed jobs; offers it could not send.
    pub load: LoadSummary,
    /// The filter's counters, if one ran.
    pub filter: Option<FilterStats>,
    /// The downstream emulator's counters, if it ran here.
    pub downstream: Option<DownstreamStats>,
    /// Decisions taken, and periods the controller could not read Redis.
    pub decisions: u64,
    /// Decisions the controller's period allows over the run (`duration / dt`, with the
    /// period at least 0.5 ms of wall time): far more than `decisions` means the controller
    /// could not keep its pace (Redis or the cores were saturated).
    pub planned_decisions: u64,
    /// Controller periods lost to Redis errors.
    pub controller_errors: u64,
    /// The scrapes kept ([`LiveOptions::scrape_every`]), in Prometheus's text format.
    #[serde(skip)]
    pub scrapes: Option<String>,
}

/// The load generator's counters at the end.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct LoadSummary {
    /// First attempts.
    pub arrivals: u64,
    /// Retries offered.
    pub retries: u64,
    /// Failed jobs not retried.
    pub abandoned: u64,
    /// Of those, for want of retry budget.
    pub over_budget: u64,
    /// Offers never made (Redis unavailable, or the generator's own limit).
    pub unsent: u64,
}

/// The policy a live run decides with: the scenario's (its gate, or the filter over it),
/// or a registry spec (`cycle+pool`, `vegas`, …), optionally under a boundary's filter.
pub enum LivePolicy {
    /// The scenario's own ([`safegate_sim::variants::variants`]).
    Scenario(VariantPolicy),
    /// A registry policy alone.
    Nominal(Box<dyn Policy + Send>),
    /// A registry policy under the safety filter.
    Filtered(Box<SafetyFilter<Box<dyn Policy + Send>>>),
}

impl std::fmt::Debug for LivePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LivePolicy").field(&self.name()).finish()
    }
}

impl LivePolicy {
    /// `spec` for a pool like `cfg`'s, under `boundary`'s filter if given.
    pub fn from_spec(spec: &PolicySpec, cfg: &Config, boundary: Option<&Boundary>) -> Result<Self, String> {
        let nominal = safegate_studies::compare::build_spec(spec, cfg)?;
        match boundary {
            None => Ok(LivePolicy::Nominal(nominal)),
            Some(b) => {
                let safety = b.safety_config(cfg.pool.capacity).map_err(|e| format!("boundary: {e}"))?;
                let f = SafetyFilter::new(safety, nominal).map_err(|e| e.to_string())?;
                Ok(LivePolicy::Filtered(Box::new(f)))
            }
        }
    }

    /// The filter's counters, if a filter decides.
    pub fn filter_stats(&self) -> Option<FilterStats> {
        match self {
            LivePolicy::Scenario(v) => v.filter_stats(),
            LivePolicy::Nominal(_) => None,
            LivePolicy::Filtered(f) => Some(*f.stats()),
        }
    }
}

impl Policy for LivePolicy {
    fn decide(&mut self, obs: &Observation) -> safegate_core::Action {
        match self {
            LivePolicy::Scenario(v) => v.decide(obs),
            LivePolicy::Nominal(p) => p.decide(obs),
            LivePolicy::Filtered(f) => f.decide(obs),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            LivePolicy::Scenario(v) => v.name(),
            LivePolicy::Nominal(p) => p.name(),
            LivePolicy::Filtered(f) => f.name(),
        }
    }
}

impl From<VariantPolicy> for LivePolicy {
    fn from(v: VariantPolicy) -> Self {
        LivePolicy::Scenario(v)
    }
}

/// Everything a run needs besides the policy.
#[derive(Debug, Clone)]
pub struct LiveRun {
    /// The resolved scenario.
    pub cfg: Config,
    /// How it is played.
    pub opts: LiveOptions,
    /// The safe set's line `θ·capacity` \[jobs\] (usually
    /// [`Scenario::safe_threshold`](safegate_sim::Scenario::safe_threshold) × capacity):
    /// `/metrics` publishes the barrier margin `line − q` and the share of decisions taken
    /// with `q > line`, as the tower layer does.
    pub line: f64,
}

/// Play `run` under `policy`; `progress` hears about it four times a second.
pub async fn run(
    run: &LiveRun,
    mut policy: LivePolicy,
    progress: &mut dyn FnMut(&Progress),
) -> Result<LiveReport, LiveError> {
    let cfg = &run.cfg;
    let opts = &run.opts;
    cfg.check()?;
    opts.check()?;
    check_offer_rate(cfg, opts.speed)?;
    let started = Instant::now();
    // Redis.
    let server = match &opts.redis {
        RedisTarget::Own => Some(RedisServer::start(false)?),
        RedisTarget::Url(_) => None,
    };
    let url = match (&opts.redis, &server) {
        (RedisTarget::Url(u), _) => u.clone(),
        (_, Some(s)) => s.url(),
        _ => unreachable!("a server was started"),
    };
    let backlog = Backlog::connect(&url, &opts.namespace).await?;
    backlog.reset().await?;
    let bound = cfg.pool.capacity as u64;
    let slots = cfg.pool.executors;
    backlog.publish(1.0, None, bound).await?;

    let clock = ModelClock::start(opts.speed);
    // The downstream.
    let downstream = match &opts.downstream {
        DownstreamTarget::Emulated => Some(
            Downstream::start(
                DownstreamConfig {
                    pool: cfg.pool,
                    health: cfg.health.clone(),
                    service: cfg.service,
                    clock,
                    seed: cfg.seed,
                    noop: false,
                    failures: cfg.retries,
                    // The live pool's executors bound what is in service themselves.
                    workers: None,
                },
                SocketAddr::from(([127, 0, 0, 1], 0)),
            )
            .await?,
        ),
        DownstreamTarget::Url(_) => None,
    };
    let downstream_url = match (&opts.downstream, &downstream) {
        (DownstreamTarget::Url(u), _) => u.trim_end_matches('/').to_string(),
        (_, Some(d)) => d.url(),
        _ => unreachable!("an emulator was started"),
    };
    if let DownstreamTarget::Url(u) = &opts.downstream {
        crate::downstream::probe(u).await?;
    }
    // Metrics.
    let line = run.line;
    let snapshot = Arc::new(Mutex::new(Snapshot { slots, bound, admit: 1.0, margin: line, ..Snapshot::default() }));
    let mut exits = 0u64;
    let metrics = match opts.metrics {
        Some(addr) => Some(MetricsServer::start(addr, snapshot.clone()).await?),
        None => None,
    };
    // Executors.
    let pool = if opts.executors {
        Some(
            Pool::start(
                backlog.clone(),
                ExecutorConfig {
                    executors: slots,
                    slots,
                    downstream: Some(downstream_url.clone()),
                    timeout: clock.wall(opts.timeout),
                    heartbeat: opts.heartbeat,
                    ..ExecutorConfig::default()
                },
            )
            .await?,
        )
    } else {
        None
    };
    // Load.
    let retry = opts.retry.unwrap_or(match cfg.retries {
        safegate_sim::Retries::Off => RetryPolicy::default(),
        r => RetryPolicy {
            probability: 1.0,
            backoff: 0.0,
            budget: None,
            around_gate: r.path() == safegate_sim::RetryPath::Direct,
        },
    });
    let base = cfg.clone();
    let rate: crate::loadgen::RateFn = Arc::new(move |t| base.traffic_at(t));
    let peak = cfg.peak_traffic();
    let (stop_tx, stop_rx) = watch::channel(false);
    let load = tokio::spawn(crate::loadgen::run(
        backlog.clone(),
        clock,
        LoadConfig { rate, peak_rate: peak, until: cfg.duration, seed: cfg.seed, retry, max_outstanding: 1024 },
        stop_rx,
    ));

    // The controller.
    let mut tracker = Tracker::new(cfg.drain_level, cfg.health.schedule.dip_end(), cfg.warmup);
    let mut series = Series::default();
    let mut live = LiveSeries::default();
    let mut decisions = 0u64;
    let mut errors = 0u64;
    let period = clock.wall(cfg.dt).max(Duration::from_micros(500));
    let planned_decisions = (clock.wall(cfg.duration).as_secs_f64() / period.as_secs_f64()).floor() as u64;
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_t = 0.0;
    let mut last_q = 0.0;
    let mut last_progress = Instant::now();
    let mut scrapes = opts.scrape_every.map(|_| String::new());
    let mut next_scrape = 0.0;
    let mut acc = Accounting::default();
    loop {
        tick.tick().await;
        let t = clock.now();
        if t >= cfg.duration {
            break;
        }
        let (a, oldest) = match tokio::try_join!(backlog.accounting(), backlog.oldest_wait()) {
            Ok(v) => v,
            Err(_) => {
                errors += 1;
                continue;
            }
        };
        acc = a;
        let q = acc.in_backlog as f64;
        let model = |us: u64| us as f64 * 1e-6 * opts.speed;
        let obs = Observation {
            now: t,
            queue: q,
            capacity: cfg.pool.capacity,
            in_service: acc.in_service as f64,
            offered_rate: 0.0,
            health: None,
            offered: acc.offered as f64,
            admitted: acc.admitted as f64,
            completed: (acc.completed + acc.failed) as f64,
            retried: acc.offered_retries as f64,
            latency_total: model(acc.latency_us),
            wait_total: model(acc.wait_us),
            oldest_wait: oldest.as_secs_f64() * opts.speed,
        };
        let action = policy.decide(&obs);
        decisions += 1;
        if q > line {
            exits += 1;
        }
        if backlog.publish(action.admit, action.concurrency, bound).await.is_err() {
            errors += 1;
        }
        tracker.integrate(last_q * (t - last_t));
        tracker.sample(t, q);
        last_t = t;
        last_q = q;
        let h = downstream.as_ref().map_or_else(|| cfg.health.value(t), |d| d.stats().health);
        series.push(t, q, h, action.admit);
        live.concurrency.push(action.concurrency.map_or(-1, |c| c.min(i32::MAX as u32) as i32));
        live.in_service.push(acc.in_service);
        let fs = policy.filter_stats();
        if let Ok(mut s) = snapshot.lock() {
            *s = Snapshot {
                t,
                acc,
                admit: action.admit,
                concurrency: action.concurrency,
                slots,
                decisions,
                interventions: fs.map_or(0, |f| f.interventions),
                backup_activations: fs.map_or(0, |f| f.infeasible),
                bound,
                margin: line - q,
                exits,
            };
            if let (Some(buf), Some(every)) = (scrapes.as_mut(), opts.scrape_every) {
                if t >= next_scrape {
                    next_scrape = ((t / every).floor() + 1.0) * every;
                    crate::metrics::render_stamped(&s, buf);
                }
            }
        }
        if last_progress.elapsed() >= Duration::from_millis(250) {
            last_progress = Instant::now();
            progress(&Progress {
                t,
                duration: cfg.duration,
                queue: acc.in_backlog,
                admit: action.admit,
                concurrency: action.concurrency,
                acc,
                metrics: metrics.as_ref().map(MetricsServer::addr),
            });
        }
    }
    // Wind down: arrivals stop, executors finish their jobs, the books are read.
    let _ = stop_tx.send(true);
    let load = load.await.unwrap_or_default();
    let pool_stats = pool.as_ref().map(|p| p.stats());
    if let Some(p) = pool {
        p.stop(clock.wall(opts.timeout).min(Duration::from_secs(5))).await;
    }
    if let Ok(a) = backlog.accounting().await {
        acc = a;
    }
    tracker.integrate(last_q * (cfg.duration - last_t).max(0.0));
    let ds = downstream.as_ref().map(|d| d.stats());
    if let Some(d) = downstream {
        d.shutdown().await;
    }
    if let Some(m) = metrics {
        m.shutdown().await;
    }
    drop(server);

    let acked = acc.completed + acc.failed;
    let mut sojourns: Vec<f32> = pool_stats
        .and_then(|p| {
            p.sojourn_us.lock().ok().map(|v| v.iter().map(|&us| (us as f64 * 1e-6 * opts.speed) as f32).collect())
        })
        .unwrap_or_default();
    let totals = Totals {
        offered: acc.offered as f64,
        // As the simulator counts: admitted by the gate, of which `dropped` found the
        // backlog full (the accounting's `admitted` is what entered the backlog).
        admitted: (acc.admitted + acc.rejected_full) as f64,
        rejected: acc.rejected as f64,
        dropped: acc.rejected_full as f64,
        cleared: acc.completed as f64,
        retried: acc.offered_retries as f64,
        retries_shed: 0.0,
        mean_sojourn: (acked > 0).then(|| acc.latency_us as f64 * 1e-6 * opts.speed / acked as f64),
        sojourn_quantiles: quantiles(&mut sojourns, [0.5, 0.99]),
        events: acked,
    };
    let summary = tracker.finish(totals, last_q, cfg.duration, cfg.dt);
    let l = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    Ok(LiveReport {
        policy: policy.name(),
        speed: opts.speed,
        wall_seconds: started.elapsed().as_secs_f64(),
        redis: crate::backlog::redact(&url),
        summary,
        series,
        live,
        accounting: acc,
        lost: acc.lost(),
        load: LoadSummary {
            arrivals: l(&load.arrivals),
            retries: l(&load.retries),
            abandoned: l(&load.abandoned),
            over_budget: l(&load.over_budget),
            unsent: l(&load.unsent),
        },
        filter: policy.filter_stats(),
        downstream: ds,
        decisions,
        planned_decisions,
        controller_errors: errors,
        scrapes,
    })
}
