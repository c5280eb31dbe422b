//! What a run starts beside its controller, in order (Redis and the queue, the
//! downstream, `/metrics`, the executors, the load generator), and stops after it.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use safegate_queue::{Queue, QueueConfig};
use safegate_sim::Config;
use tokio::sync::watch;

use super::{DownstreamTarget, LiveOptions, RedisTarget};
use crate::books::Accounting;
use crate::downstream::{Downstream, DownstreamConfig, DownstreamStats};
use crate::executor::{Backend, ExecutorConfig, Pool, PoolStats};
use crate::loadgen::{LoadConfig, LoadStats, RetryPolicy};
use crate::metrics::{MetricsServer, Snapshot};
use crate::redis_server::RedisServer;
use crate::{LiveError, ModelClock};

/// The running parts of a live run.
#[derive(Debug)]
pub(super) struct Services {
    /// The run's model clock, started once the backlog is ready.
    pub(super) clock: ModelClock,
    /// The private redis-server, if the run started one.
    server: Option<RedisServer>,
    /// Redis's URL.
    pub(super) url: String,
    /// The backlog in Redis: a queue of the queue library.
    pub(super) queue: Queue,
    /// The emulated downstream, if it runs here.
    pub(super) downstream: Option<Downstream>,
    /// The `/metrics` endpoint, if served.
    pub(super) metrics: Option<MetricsServer>,
    /// What `/metrics` publishes, written by the controller.
    pub(super) snapshot: Arc<Mutex<Snapshot>>,
    /// The executors, if they run here.
    pool: Option<Pool>,
    /// How an executor outside joins the run (`safegate executor …`), when none run here.
    pub(super) join: Option<String>,
    /// The load generator's counters (the controller reads its retries), the task and its
    /// stop signal.
    pub(super) load_stats: Arc<LoadStats>,
    load: tokio::task::JoinHandle<Arc<LoadStats>>,
    stop_load: watch::Sender<bool>,
}

/// What is left once the services have stopped.
#[derive(Debug)]
pub(super) struct Stopped {
    /// The load generator's counters.
    pub(super) load: Arc<LoadStats>,
    /// The executors' counters, if they ran here.
    pub(super) pool: Option<Arc<PoolStats>>,
    /// The accounting after the executors finished (`None`: Redis did not answer).
    pub(super) accounting: Option<Accounting>,
    /// The emulated downstream's counters at the end, if it ran here.
    pub(super) downstream: Option<DownstreamStats>,
}

impl Services {
    /// Start every part of a run of `cfg` under `opts`, the model clock once the backlog is
    /// ready; `line` is the barrier line `/metrics` publishes the margin to.
    pub(super) async fn start(cfg: &Config, opts: &LiveOptions, line: f64) -> Result<Services, LiveError> {
        let (server, url) = start_redis(&opts.redis)?;
        let queue = connect(&url, opts).await?;
        let bound = cfg.pool.capacity as u64;
        let slots = cfg.pool.executors;
        let load_cfg = load_config(cfg, opts);
        // Until the controller's first grant: share 1 and the cap (the gate open, as the
        // seed's run starts). A failed attempt fails its job for good: the load generator
        // decides on the retry, as the seed's clients do.
        queue
            .configure(&QueueConfig {
                cap: bound,
                fallback: bound,
                max_attempts: 1_000_000,
                // A failed job's dead letter is the retry's source: kept only when the load
                // generator may retry it.
                dead_max: if load_cfg.retry.probability > 0.0 { 1_000_000 } else { 0 },
                ..QueueConfig::default()
            })
            .await?;
        // A database's pool is connected (and its table made) before the model clock starts.
        let pg = match &opts.downstream {
            DownstreamTarget::Postgres(spec) => Some(crate::pg::Pg::connect(spec).await?),
            _ => None,
        };
        let clock = ModelClock::start(opts.speed);
        let (downstream, backend) = match pg {
            Some(pg) => (None, Backend::Postgres(pg)),
            None => start_downstream(cfg, &opts.downstream, clock).await?,
        };
        let snapshot = Arc::new(Mutex::new(Snapshot { slots, bound, admit: 1.0, margin: line, ..Snapshot::default() }));
        let metrics = match opts.metrics {
            Some(addr) => Some(MetricsServer::start(addr, snapshot.clone()).await?),
            None => None,
        };
        let join = match (&backend, opts.executors) {
            (Backend::Http(downstream_url), false) => Some(format!(
                "safegate executor --redis {url} --namespace {} --downstream {downstream_url} --executors {slots}",
                opts.namespace
            )),
            _ => None,
        };
        let pool = if opts.executors {
            let cfg = ExecutorConfig {
                executors: slots,
                backend,
                timeout: clock.wall(opts.timeout),
                heartbeat: opts.heartbeat,
                ..ExecutorConfig::default()
            };
            Some(Pool::start(queue.clone(), cfg).await?)
        } else {
            None
        };
        let (stop_load, stop_rx) = watch::channel(false);
        let load_stats = Arc::new(LoadStats::default());
        let load = tokio::spawn(crate::loadgen::run(queue.clone(), clock, load_cfg, load_stats.clone(), stop_rx));
        Ok(Services {
            clock,
            server,
            url,
            queue,
            downstream,
            metrics,
            snapshot,
            pool,
            join,
            load_stats,
            load,
            stop_load,
        })
    }

    /// Wind down: arrivals stop, the executors finish their jobs (at most the run's timeout,
    /// and 5 s), the books are read, the downstream and `/metrics` stop, then Redis.
    pub(super) async fn stop(self, timeout: f64) -> Stopped {
        let _ = self.stop_load.send(true);
        let _ = self.load.await;
        let load = self.load_stats;
        let pool = self.pool.as_ref().map(|p| p.stats());
        if let Some(p) = self.pool {
            p.stop(self.clock.wall(timeout).min(Duration::from_secs(5))).await;
        }
        let retries = load.retry_counts();
        let accounting = self.queue.stats().await.ok().map(|s| Accounting::from_stats(&s, retries));
        let downstream = self.downstream.as_ref().map(|d| d.stats());
        if let Some(d) = self.downstream {
            d.shutdown().await;
        }
        if let Some(m) = self.metrics {
            m.shutdown().await;
        }
        drop(self.server);
        Stopped { load, pool, accounting, downstream }
    }
}

/// The run's queue at `url`: reset first if asked; otherwise one that holds an earlier
/// run's books is refused (nothing is deleted without `reset`).
async fn connect(url: &str, opts: &LiveOptions) -> Result<Queue, LiveError> {
    let queue = Queue::connect(url, &opts.namespace).await?;
    if opts.reset {
        queue.destroy().await?;
        return Ok(Queue::connect(url, &opts.namespace).await?);
    }
    let s = queue.stats().await?;
    if s.offered > 0 || s.in_stream > 0 || s.delayed > 0 {
        return Err(LiveError::Queue(format!(
            "queue {:?} at {} holds an earlier run's books ({} offered, {} in the backlog): pick another \
             --namespace, or pass --reset to delete its keys first",
            opts.namespace,
            crate::redis_conn::redact(url),
            s.offered,
            s.waiting()
        )));
    }
    Ok(queue)
}

/// A private redis-server (stopped when dropped) or none, and the URL to use.
fn start_redis(target: &RedisTarget) -> Result<(Option<RedisServer>, String), LiveError> {
    match target {
        RedisTarget::Own => {
            let server = RedisServer::start(false)?;
            let url = server.url();
            Ok((Some(server), url))
        }
        RedisTarget::Url(u) => Ok((None, u.clone())),
    }
}

/// The emulated downstream (or none, for a URL, which must accept connections, and for
/// PostgreSQL, whose pool is connected here) and what the executors call.
async fn start_downstream(
    cfg: &Config,
    target: &DownstreamTarget,
    clock: ModelClock,
) -> Result<(Option<Downstream>, Backend), LiveError> {
    match target {
        DownstreamTarget::Emulated => {
            let d = Downstream::start(
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
            .await?;
            let url = d.url();
            Ok((Some(d), Backend::Http(url)))
        }
        DownstreamTarget::Url(u) => {
            crate::downstream::probe(u).await?;
            Ok((None, Backend::Http(u.trim_end_matches('/').to_string())))
        }
        DownstreamTarget::Postgres(spec) => Ok((None, Backend::Postgres(crate::pg::Pg::connect(spec).await?))),
    }
}

/// The load generator's settings: the scenario's traffic, and the options' retries or the
/// scenario's.
fn load_config(cfg: &Config, opts: &LiveOptions) -> LoadConfig {
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
    LoadConfig {
        rate,
        peak_rate: cfg.peak_traffic(),
        until: cfg.duration,
        seed: cfg.seed,
        retry,
        max_outstanding: 1024,
    }
}
