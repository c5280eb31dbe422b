//! The [`Queue`] handle: the connection, the function library, the configuration and the
//! books.

use std::time::Duration;

use redis::cluster::ClusterClient;
use redis::{Client, Value};

use crate::conn::Con;
use crate::keys::{Keys, GROUP};
use crate::{QueueConfig, QueueError};

/// The function library every call goes through (`FUNCTION LOAD`), loaded by every Rust
/// component on connect; other languages call it with `FCALL` (the wire format is in the
/// crate's README).
pub const LIBRARY: &str = include_str!("library.lua");

/// The wire format's version, as `FCALL sg_wire 0` answers it.
pub const WIRE_VERSION: i64 = 1;

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
