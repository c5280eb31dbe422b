//! The [`Queue`] handle: the connection, the function library, the configuration and the
//! books.

use std::collections::HashMap;
use std::time::Duration;

use redis::cluster::ClusterClient;
use redis::{Client, Value};

use crate::conn::Con;
use crate::keys::{Keys, GROUP};
use crate::QueueError;

/// The function library every call goes through (`FUNCTION LOAD`), loaded by every Rust
/// component on connect; other languages call it with `FCALL` (the wire format is in the
/// crate's README).
pub const LIBRARY: &str = include_str!("library.lua");

/// The wire format's version, as `FCALL sg_wire 0` answers it.
pub const WIRE_VERSION: i64 = 1;

/// A queue's settings, kept in Redis (`sg:{NAME}:config`) and shared by every producer,
/// worker and controller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueConfig {
    /// The backlog's hard cap \[jobs\]: waiting, in service and waiting for a retry. No grant
    /// raises the bound above it.
    pub cap: u64,
    /// The bound when no controller's grant is fresh: before the first, and once the last
    /// one's lease has run out (the safe fallback; a controller built from a boundary sets
    /// it to the barrier's line, θ·Q).
    pub fallback: u64,
    /// Attempts before a job is dead-lettered (≥ 1).
    pub max_attempts: u32,
    /// The first retry's delay; each further retry doubles it, up to `backoff_max`, with
    /// jitter (times 0.5 to 1).
    pub backoff: Duration,
    /// The longest delay between attempts.
    pub backoff_max: Duration,
    /// Dead letters kept (the oldest are dropped beyond it; 0 keeps none; the count goes on).
    pub dead_max: u64,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            cap: 10_000,
            fallback: 10_000,
            max_attempts: 5,
            backoff: Duration::from_millis(100),
            backoff_max: Duration::from_secs(60),
            dead_max: 10_000,
        }
    }
}

impl QueueConfig {
    /// Check every setting's range.
    pub fn validate(&self) -> Result<(), QueueError> {
        if self.cap == 0 || self.cap > 1 << 40 {
            return Err(QueueError::setting("cap", self.cap, "1 to 2^40 jobs"));
        }
        if self.fallback > self.cap {
            return Err(QueueError::setting("fallback", self.fallback, "at most the cap"));
        }
        if self.max_attempts == 0 {
            return Err(QueueError::setting("max_attempts", self.max_attempts, "at least 1"));
        }
        if self.backoff > self.backoff_max || self.backoff_max > Duration::from_secs(86_400 * 7) {
            return Err(QueueError::setting(
                "backoff",
                format!("{:?}", self.backoff),
                "at most backoff_max, at most 7 days",
            ));
        }
        if self.max_attempts > 1_000_000 {
            return Err(QueueError::setting("max_attempts", self.max_attempts, "at most 1000000"));
        }
        if self.dead_max > 1_000_000_000 {
            return Err(QueueError::setting("dead_max", self.dead_max, "at most 10^9"));
        }
        Ok(())
    }

    fn fields(&self) -> [(&'static str, String); 6] {
        [
            ("cap", self.cap.to_string()),
            ("fallback", self.fallback.to_string()),
            ("max_attempts", self.max_attempts.to_string()),
            ("backoff_us", self.backoff.as_micros().to_string()),
            ("backoff_max_us", self.backoff_max.as_micros().to_string()),
            ("dead_max", self.dead_max.to_string()),
        ]
    }
}

/// A queue's two bounds \[jobs\] (see [`QueueConfig::cap`] and [`QueueConfig::fallback`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The backlog's hard cap.
    pub cap: u64,
    /// The bound when no controller's grant is fresh.
    pub fallback: u64,
}

/// A queue's books and state, read atomically.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Offers (`enqueue` calls).
    pub offered: u64,
    /// Offers admitted.
    pub admitted: u64,
    /// Offers turned away by the controller's admission share.
    pub rejected_share: u64,
    /// Offers turned away at the backlog's bound.
    pub rejected_full: u64,
    /// Jobs done.
    pub completed: u64,
    /// Jobs failed for good (a fatal error).
    pub failed: u64,
    /// Jobs dead-lettered after their last attempt.
    pub dead: u64,
    /// Failed attempts put back for a retry.
    pub retried: u64,
    /// Jobs given back from a worker that stopped beating.
    pub redelivered: u64,
    /// Jobs in the stream: waiting and in service.
    pub in_stream: u64,
    /// Jobs delivered and not acknowledged (in service).
    pub in_service: u64,
    /// Jobs waiting for a retry.
    pub delayed: u64,
    /// Time in the stream at the end of every attempt (from the attempt's entry: a retry's
    /// backoff is left out), summed \[µs\].
    pub latency_us: u64,
    /// Service time of every attempt, summed \[µs\].
    pub service_us: u64,
}

impl Stats {
    /// Jobs admitted and not yet completed, failed or dead-lettered.
    pub fn waiting(&self) -> u64 {
        self.in_stream + self.delayed
    }

    /// Whether the books balance: `admitted = completed + failed + dead + waiting`.
    pub fn balanced(&self) -> bool {
        self.admitted == self.completed + self.failed + self.dead + self.waiting()
    }
}

/// The controller's grant as published.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    /// The admission share in \[0, 1\].
    pub share: f64,
    /// Workers allowed at once (`None`: all).
    pub concurrency: Option<u32>,
    /// The backlog's bound \[jobs\].
    pub bound: u64,
    /// When the lease expires, Redis time \[µs since the epoch\].
    pub expires_us: u64,
    /// The controllers' epoch (grows with every new leader).
    pub epoch: u64,
    /// The controller that published it.
    pub leader: String,
}

/// A connection to one queue on one Redis server. Cheap to clone: clones share the
/// connection.
#[derive(Clone)]
pub struct Queue {
    pub(crate) client: Source,
    pub(crate) url: String,
    pub(crate) con: Con,
    pub(crate) keys: Keys,
}

/// Where new connections come from.
#[derive(Clone)]
pub(crate) enum Source {
    Single(Client),
    Cluster(Box<ClusterClient>),
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").field("url", &self.url).field("name", &self.keys.name).finish()
    }
}

/// The URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://…@{}", &url[..s], &url[at + 1..]),
        _ => url.to_string(),
    }
}

/// How long to wait for a connection and for each answer.
const TIMEOUT: Duration = Duration::from_secs(2);

impl Queue {
    /// Connect to the queue `name` at `url` (`redis://[user:password@]host:port/db`): load
    /// the function library, create the stream and its group if they do not exist, and
    /// store the default [`QueueConfig`] for any setting not stored yet. Nothing that is
    /// there is deleted: producers, workers and controllers restart and resume.
    pub async fn connect(url: &str, name: &str) -> Result<Self, QueueError> {
        let keys = Keys::new(name)?;
        let shown = redact(url);
        let err = |what: &'static str| {
            let url = shown.clone();
            move |error| QueueError::Redis { url, what: what.into(), error }
        };
        let client = Client::open(url).map_err(err("parsing the URL"))?;
        let cfg = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT))
            .set_number_of_retries(2)
            .set_max_delay(TIMEOUT / 4);
        let con =
            tokio::time::timeout(2 * TIMEOUT + Duration::from_secs(1), client.get_connection_manager_with_config(cfg))
                .await
                .map_err(|_| timed_out(&shown))?
                .map_err(err("connecting"))?;
        Self::set_up(Self { client: Source::Single(client), url: shown, con: Con::Single(con), keys }).await
    }

    /// [`Queue::connect`] to a Redis Cluster through any of its `nodes` (`redis://host:port`
    /// each; the others are discovered). Every call is routed by its keys' slot (a queue's
    /// keys share one), and the function library is loaded on every primary.
    pub async fn connect_cluster(nodes: &[&str], name: &str) -> Result<Self, QueueError> {
        let keys = Keys::new(name)?;
        let shown = nodes.iter().map(|n| redact(n)).collect::<Vec<_>>().join(",");
        let err = |what: &'static str| {
            let url = shown.clone();
            move |error| QueueError::Redis { url, what: what.into(), error }
        };
        if nodes.is_empty() {
            return Err(QueueError::setting("nodes", "[]", "at least one cluster node"));
        }
        let client = ClusterClient::builder(nodes.iter().copied())
            .connection_timeout(TIMEOUT)
            .response_timeout(TIMEOUT)
            .build()
            .map_err(err("parsing the node URLs"))?;
        let con = tokio::time::timeout(2 * TIMEOUT + Duration::from_secs(1), client.get_async_connection())
            .await
            .map_err(|_| timed_out(&shown))?
            .map_err(err("connecting to the cluster"))?;
        Self::set_up(Self { client: Source::Cluster(Box::new(client)), url: shown, con: Con::Cluster(con), keys }).await
    }

    /// Load the library, create the group, store the default settings not stored yet.
    async fn set_up(q: Self) -> Result<Self, QueueError> {
        q.load_library().await?;
        q.ensure_group().await?;
        let mut c = q.con.clone();
        for (f, v) in QueueConfig::default().fields() {
            let _: i64 = redis::cmd("HSETNX")
                .arg(&q.keys.config)
                .arg(f)
                .arg(v)
                .query_async(&mut c)
                .await
                .map_err(q.err("storing the default configuration"))?;
        }
        Ok(q)
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.keys.name
    }

    /// The server's address, password elided.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub(crate) fn err(&self, what: impl Into<String>) -> impl FnOnce(redis::RedisError) -> QueueError {
        let url = self.url.clone();
        let what = what.into();
        move |error| QueueError::Redis { url, what, error }
    }

    /// Load (or replace with this version) the function library.
    pub async fn load_library(&self) -> Result<(), QueueError> {
        let mut c = self.con.clone();
        let r: redis::RedisResult<Value> =
            redis::cmd("FUNCTION").arg("LOAD").arg("REPLACE").arg(LIBRARY).query_async(&mut c).await;
        r.map(drop).map_err(self.err("loading the function library (FUNCTION LOAD needs Redis 7 or later)"))
    }

    /// Create the stream and its consumer group if they do not exist.
    pub(crate) async fn ensure_group(&self) -> Result<(), QueueError> {
        let mut c = self.con.clone();
        let r: redis::RedisResult<()> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(&self.keys.jobs)
            .arg(GROUP)
            .arg("0")
            .arg("MKSTREAM")
            .query_async(&mut c)
            .await;
        match r {
            Err(e) if e.code() != Some("BUSYGROUP") => Err(self.err("creating the stream's consumer group")(e)),
            _ => Ok(()),
        }
    }

    /// Call the library's function `name`: a server that lost the library (restarted
    /// without persistence) gets it again, and the stream's group, and the call is retried once.
    pub(crate) async fn fcall<T: redis::FromRedisValue, A: redis::ToRedisArgs + Sync>(
        &self,
        name: &str,
        keys: &[&str],
        args: &A,
    ) -> Result<T, QueueError> {
        let build = || {
            let mut cmd = redis::cmd("FCALL");
            cmd.arg(name).arg(keys.len()).arg(keys).arg(args);
            cmd
        };
        let mut c = self.con.clone();
        match build().query_async(&mut c).await {
            Ok(v) => Ok(v),
            Err(e) if missing(&e) => {
                self.load_library().await?;
                self.ensure_group().await?;
                build().query_async(&mut c).await.map_err(self.err(format!("calling {name}")))
            }
            Err(e) => Err(self.err(format!("calling {name}"))(e)),
        }
    }

    /// A dedicated connection (a worker lane's blocking reads would stall every other
    /// command on the shared one).
    pub(crate) async fn dedicated(&self) -> Result<Con, QueueError> {
        match &self.client {
            Source::Single(client) => {
                let cfg = redis::AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(TIMEOUT))
                    .set_response_timeout(Some(TIMEOUT + Duration::from_secs(5)));
                let c = client
                    .get_multiplexed_async_connection_with_config(&cfg)
                    .await
                    .map_err(self.err("opening a connection"))?;
                Ok(Con::Own(c))
            }
            Source::Cluster(client) => {
                Ok(Con::Cluster(client.get_async_connection().await.map_err(self.err("opening a cluster connection"))?))
            }
        }
    }

    /// The settings as stored.
    pub async fn config(&self) -> Result<QueueConfig, QueueError> {
        let mut c = self.con.clone();
        let m: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&self.keys.config)
            .query_async(&mut c)
            .await
            .map_err(self.err("reading the configuration"))?;
        let d = QueueConfig::default();
        let g = |k: &str, d: u64| m.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(d);
        Ok(QueueConfig {
            cap: g("cap", d.cap),
            fallback: g("fallback", d.fallback),
            max_attempts: g("max_attempts", u64::from(d.max_attempts)).min(u64::from(u32::MAX)) as u32,
            backoff: Duration::from_micros(g("backoff_us", d.backoff.as_micros() as u64)),
            backoff_max: Duration::from_micros(g("backoff_max_us", d.backoff_max.as_micros() as u64)),
            dead_max: g("dead_max", d.dead_max),
        })
    }

    /// Store only the bounds (cap and fallback), leaving the other settings as they are:
    /// what a controller built from a boundary stores on start.
    pub async fn set_bounds(&self, b: Bounds) -> Result<(), QueueError> {
        if b.cap == 0 || b.cap > 1 << 40 {
            return Err(QueueError::setting("cap", b.cap, "1 to 2^40 jobs"));
        }
        if b.fallback > b.cap {
            return Err(QueueError::setting("fallback", b.fallback, "at most the cap"));
        }
        let mut c = self.con.clone();
        let () = redis::cmd("HSET")
            .arg(&self.keys.config)
            .arg(&[("cap", b.cap), ("fallback", b.fallback)])
            .query_async(&mut c)
            .await
            .map_err(self.err("storing the bounds"))?;
        Ok(())
    }

    /// Store `cfg` (every setting; it replaces what was stored).
    pub async fn configure(&self, cfg: &QueueConfig) -> Result<(), QueueError> {
        cfg.validate()?;
        let mut c = self.con.clone();
        let fields = cfg.fields();
        let () = redis::cmd("HSET")
            .arg(&self.keys.config)
            .arg(&fields[..])
            .query_async(&mut c)
            .await
            .map_err(self.err("storing the configuration"))?;
        Ok(())
    }

    /// The books and the state, read in one transaction.
    pub async fn stats(&self) -> Result<Stats, QueueError> {
        let keys = [&*self.keys.jobs, &self.keys.count, &self.keys.delayed];
        let (count, in_stream, in_service, delayed): (HashMap<String, i64>, u64, u64, u64) =
            self.fcall("sg_stats", &keys, &GROUP).await?;
        let g = |k: &str| count.get(k).copied().unwrap_or(0).max(0) as u64;
        Ok(Stats {
            offered: g("offered"),
            admitted: g("admitted"),
            rejected_share: g("rejected_share"),
            rejected_full: g("rejected_full"),
            completed: g("completed"),
            failed: g("failed"),
            dead: g("dead"),
            retried: g("retried"),
            redelivered: g("redelivered"),
            in_stream,
            in_service,
            delayed,
            latency_us: g("latency_us"),
            service_us: g("service_us"),
        })
    }

    /// The grant in force, if a controller ever published one.
    pub async fn grant(&self) -> Result<Option<Grant>, QueueError> {
        let mut c = self.con.clone();
        let m: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&self.keys.gate)
            .query_async(&mut c)
            .await
            .map_err(self.err("reading the grant"))?;
        let Some(expires_us) = m.get("expires").and_then(|v| v.parse::<u64>().ok()) else { return Ok(None) };
        let f = |k: &str| m.get(k).and_then(|v| v.parse::<f64>().ok());
        Ok(Some(Grant {
            share: f("share").unwrap_or(1.0),
            concurrency: f("conc").filter(|c| *c >= 0.0).map(|c| c.min(f64::from(u32::MAX)) as u32),
            bound: f("bound").map_or(0, |b| b.max(0.0) as u64),
            expires_us,
            epoch: f("epoch").map_or(0, |e| e.max(0.0) as u64),
            leader: m.get("leader").cloned().unwrap_or_default(),
        }))
    }

    /// The newest `n` dead letters (jobs dead-lettered or failed for good); letters that do
    /// not parse are skipped.
    pub async fn dead_letters(&self, n: usize) -> Result<Vec<DeadLetter>, QueueError> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut c = self.con.clone();
        let v: Vec<Vec<u8>> = redis::cmd("LRANGE")
            .arg(&self.keys.dead)
            .arg(0)
            .arg(n.max(1) as i64 - 1)
            .query_async(&mut c)
            .await
            .map_err(self.err("reading the dead letters"))?;
        Ok(v.iter().filter_map(|s| serde_json::from_slice(s).ok()).collect())
    }

    /// Delete every key of this queue (its jobs, books, grant and settings). Nothing else
    /// ever deletes a queue.
    pub async fn destroy(&self) -> Result<(), QueueError> {
        let mut c = self.con.clone();
        let k = &self.keys;
        let () = redis::cmd("DEL")
            .arg(&[&k.jobs, &k.gate, &k.config, &k.count, &k.delayed, &k.dead, &k.leader])
            .query_async(&mut c)
            .await
            .map_err(self.err("deleting the queue's keys"))?;
        // Heartbeats and slots expire by themselves; on one server they go now (a cluster's
        // SCAN would have to visit every node).
        if !matches!(self.con, Con::Single(_)) {
            return Ok(());
        }
        let pattern = format!("sg:{{{}}}:*", self.keys.name);
        let mut cursor: u64 = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut c)
                .await
                .map_err(self.err("listing the queue's keys"))?;
            if !keys.is_empty() {
                let () = redis::cmd("DEL")
                    .arg(&keys)
                    .query_async(&mut c)
                    .await
                    .map_err(self.err("deleting the queue's keys"))?;
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }
}

fn timed_out(url: &str) -> QueueError {
    QueueError::Redis {
        url: url.to_string(),
        what: "connecting".into(),
        error: redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut)),
    }
}

/// Whether `e` says the function library is not loaded.
fn missing(e: &redis::RedisError) -> bool {
    let s = e.to_string();
    s.contains("Function not found") || s.contains("NOGROUP")
}

/// A job that was dead-lettered (`kind` = `"dead"`) or failed for good (`"failed"`).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct DeadLetter {
    /// Its last stream id.
    pub id: String,
    /// The payload, as enqueued (JSON text).
    pub payload: String,
    /// Attempts made.
    pub attempts: u32,
    /// The last error.
    pub error: String,
    /// `"dead"` or `"failed"`.
    pub kind: String,
    /// When, Redis time \[µs since the epoch\].
    pub at: f64,
}
