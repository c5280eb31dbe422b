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

/// The [`LIBRARY`]'s revision, as `FCALL sg_revision 0` answers it: a component never
/// replaces a library of a later revision that it finds loaded (a newer deployment's), and
/// refuses one that speaks another wire format.
pub const LIBRARY_REVISION: i64 = 5;

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
    Single(Box<Client>),
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
    /// Connect to the queue `name` at `url` (`redis://[user:password@]host:port/db`, or
    /// `rediss://…` with the `tls` feature, trusting the system's roots): load the function
    /// library, create the stream and its group if they do not exist, and store the default
    /// [`QueueConfig`] for any setting not stored yet. Nothing that is there is deleted:
    /// producers, workers and controllers restart and resume.
    pub async fn connect(url: &str, name: &str) -> Result<Self, QueueError> {
        Self::open(url, name, None).await
    }

    /// [`Queue::connect`] over TLS with these settings (a private CA, a client certificate):
    /// `url` must be `rediss://`.
    #[cfg(feature = "tls")]
    pub async fn connect_tls(url: &str, name: &str, tls: &crate::Tls) -> Result<Self, QueueError> {
        if !is_tls(url) {
            return Err(QueueError::setting("url", redact(url), "TLS settings need a rediss:// URL"));
        }
        Self::open(url, name, Some(tls.certificates())).await
    }

    async fn open(url: &str, name: &str, certs: Certs) -> Result<Self, QueueError> {
        let keys = Keys::new(name)?;
        let shown = redact(url);
        check_scheme(url)?;
        let err = |what: &'static str| {
            let url = shown.clone();
            move |error| QueueError::Redis { url, what: what.into(), error }
        };
        let client = match certs {
            #[cfg(feature = "tls")]
            Some(c) => Client::build_with_tls(url, c).map_err(err("parsing the URL and the TLS certificates"))?,
            #[cfg(not(feature = "tls"))]
            Some(never) => match never {},
            None => Client::open(url).map_err(err("parsing the URL"))?,
        };
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
        Self::set_up(Self { client: Source::Single(Box::new(client)), url: shown, con: Con::Single(con), keys }).await
    }

    /// [`Queue::connect`] to a Redis Cluster through any of its `nodes` (`redis://host:port`
    /// each; the others are discovered). Every call is routed by its keys' slot (a queue's
    /// keys share one), and the function library is loaded on every primary.
    pub async fn connect_cluster(nodes: &[&str], name: &str) -> Result<Self, QueueError> {
        Self::open_cluster(nodes, name, None).await
    }

    /// [`Queue::connect_cluster`] over TLS with these settings: every node `rediss://`.
    #[cfg(feature = "tls")]
    pub async fn connect_cluster_tls(nodes: &[&str], name: &str, tls: &crate::Tls) -> Result<Self, QueueError> {
        if let Some(n) = nodes.iter().find(|n| !is_tls(n)) {
            return Err(QueueError::setting("node URL", redact(n), "TLS settings need rediss:// URLs"));
        }
        Self::open_cluster(nodes, name, Some(tls.certificates())).await
    }

    /// Connect as a command line names the server: `servers` is one URL, or with `cluster`
    /// the comma-separated URLs of a Redis Cluster's nodes (one reachable node is enough;
    /// several make the first connection survive one node being down). Several URLs
    /// without `cluster` are refused (they name a cluster's nodes).
    pub async fn connect_to(servers: &str, cluster: bool, name: &str) -> Result<Self, QueueError> {
        let nodes = Self::nodes(servers, cluster)?;
        if cluster {
            Self::connect_cluster(&nodes, name).await
        } else {
            Self::connect(nodes[0], name).await
        }
    }

    /// [`Queue::connect_to`] over TLS.
    #[cfg(feature = "tls")]
    pub async fn connect_to_tls(
        servers: &str,
        cluster: bool,
        name: &str,
        tls: &crate::Tls,
    ) -> Result<Self, QueueError> {
        let nodes = Self::nodes(servers, cluster)?;
        if cluster {
            Self::connect_cluster_tls(&nodes, name, tls).await
        } else {
            Self::connect_tls(nodes[0], name, tls).await
        }
    }

    fn nodes(servers: &str, cluster: bool) -> Result<Vec<&str>, QueueError> {
        let nodes: Vec<&str> = servers.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
        if nodes.is_empty() {
            return Err(QueueError::setting("servers", format!("{servers:?}"), "a URL"));
        }
        if nodes.len() > 1 && !cluster {
            return Err(QueueError::setting(
                "servers",
                redact(servers),
                "several URLs name a cluster's nodes: connect to a cluster",
            ));
        }
        Ok(nodes)
    }

    async fn open_cluster(nodes: &[&str], name: &str, certs: Certs) -> Result<Self, QueueError> {
        let keys = Keys::new(name)?;
        let shown = nodes.iter().map(|n| redact(n)).collect::<Vec<_>>().join(",");
        let err = |what: &'static str| {
            let url = shown.clone();
            move |error| QueueError::Redis { url, what: what.into(), error }
        };
        if nodes.is_empty() {
            return Err(QueueError::setting("nodes", "[]", "at least one cluster node"));
        }
        for n in nodes {
            check_scheme(n)?;
        }
        let builder =
            ClusterClient::builder(nodes.iter().copied()).connection_timeout(TIMEOUT).response_timeout(TIMEOUT);
        let builder = match certs {
            #[cfg(feature = "tls")]
            Some(c) => builder.certs(c),
            #[cfg(not(feature = "tls"))]
            Some(never) => match never {},
            None => builder,
        };
        let client = builder.build().map_err(err("parsing the node URLs"))?;
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

    /// Load the function library, or replace an earlier revision of it. A later revision
    /// that is loaded stays (an older component never downgrades a newer deployment), as
    /// long as it speaks this [`WIRE_VERSION`]; another wire format is an error.
    pub async fn load_library(&self) -> Result<(), QueueError> {
        let mut c = self.con.clone();
        let loaded: redis::RedisResult<i64> = redis::cmd("FCALL").arg("sg_revision").arg(0).query_async(&mut c).await;
        // A server that wants a password says so here (the library's load would only get
        // "unauthenticated bulk length").
        if let Err(e) = &loaded {
            if matches!(e.code(), Some("NOAUTH" | "WRONGPASS" | "NOPERM")) {
                return Err(self.err("calling sg_revision")(loaded.unwrap_err()));
            }
        }
        if let Ok(rev) = loaded {
            if rev >= LIBRARY_REVISION {
                let wire: i64 = redis::cmd("FCALL")
                    .arg("sg_wire")
                    .arg(0)
                    .query_async(&mut c)
                    .await
                    .map_err(self.err("reading the loaded library's wire version"))?;
                if wire != WIRE_VERSION {
                    return Err(QueueError::Protocol {
                        url: self.url.clone(),
                        what: format!(
                            "the loaded function library (revision {rev}) speaks wire version {wire}; this client speaks {WIRE_VERSION}"
                        ),
                        answer: wire.to_string(),
                    });
                }
                return Ok(());
            }
        }
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

/// TLS certificates for a connection, if any (none can be given without the `tls` feature).
#[cfg(feature = "tls")]
type Certs = Option<redis::TlsCertificates>;
#[cfg(not(feature = "tls"))]
type Certs = Option<std::convert::Infallible>;

fn is_tls(url: &str) -> bool {
    let u = url.trim_start().to_ascii_lowercase();
    u.starts_with("rediss://") || u.starts_with("valkeys://")
}

/// A `rediss://` URL without the `tls` feature is refused by name, not by the client's
/// generic parse error.
fn check_scheme(url: &str) -> Result<(), QueueError> {
    if is_tls(url) && !cfg!(feature = "tls") {
        return Err(QueueError::setting(
            "url",
            redact(url),
            "rediss:// needs safegate-queue's `tls` feature (cargo add safegate-queue --features tls)",
        ));
    }
    Ok(())
}

/// Whether `e` says the function library is not loaded.
fn missing(e: &redis::RedisError) -> bool {
    let s = e.to_string();
    s.contains("Function not found") || s.contains("NOGROUP")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rediss_is_refused_by_name_without_the_feature_and_taken_with_it() {
        assert!(check_scheme("redis://127.0.0.1:6379/").is_ok());
        let r = check_scheme("rediss://u:secret@127.0.0.1:6380/");
        if cfg!(feature = "tls") {
            assert!(r.is_ok());
        } else {
            let e = r.unwrap_err().to_string();
            assert!(e.contains("`tls` feature") && !e.contains("secret"), "{e}");
        }
        assert!(is_tls(" RediSS://x") && is_tls("valkeys://x") && !is_tls("redis://x"));
    }
}
