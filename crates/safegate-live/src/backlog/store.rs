//! The [`Backlog`] handle: its connection, its keys and scripts, and setting up or clearing
//! a namespace.

use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::{AsyncCommands, Client, Script};

use super::connect::{check_namespace, connect_manager, redact};
use super::scripts::{ACK, BEAT, ENQUEUE, OLDEST, REAP, TAKE_SLOT};
use super::GROUP;
use crate::LiveError;

/// The keys of one namespace and the scripts, over a reconnecting connection.
#[derive(Clone)]
pub struct Backlog {
    pub(super) client: Client,
    pub(super) url: String,
    pub(super) con: ConnectionManager,
    pub(super) ns: String,
    pub(super) enqueue: Script,
    pub(super) ack: Script,
    pub(super) reap: Script,
    pub(super) beat: Script,
    pub(super) take_slot: Script,
    pub(super) oldest: Script,
}

impl std::fmt::Debug for Backlog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backlog").field("url", &self.url).field("ns", &self.ns).finish()
    }
}

impl Backlog {
    /// Connect to `url` (checking the server answers `PING` within 2 s) and create the
    /// stream and its group if they do not exist.
    pub async fn connect(url: &str, ns: &str) -> Result<Self, LiveError> {
        check_namespace(ns)?;
        let (client, con) = connect_manager(url, Duration::from_secs(2), 2).await?;
        let shown = redact(url);
        let b = Self {
            client,
            url: shown,
            con,
            ns: ns.to_string(),
            enqueue: Script::new(ENQUEUE),
            ack: Script::new(ACK),
            reap: Script::new(REAP),
            beat: Script::new(BEAT),
            take_slot: Script::new(TAKE_SLOT),
            oldest: Script::new(OLDEST),
        };
        let mut c = b.con.clone();
        let _: String = redis::cmd("PING").query_async(&mut c).await.map_err(b.err("PING"))?;
        b.ensure_group().await?;
        Ok(b)
    }

    /// The server's address, password elided.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.ns
    }

    pub(super) fn key(&self, k: &str) -> String {
        format!("{}:{k}", self.ns)
    }

    pub(super) fn err(&self, what: impl Into<String>) -> impl FnOnce(redis::RedisError) -> LiveError {
        let url = self.url.clone();
        let what = what.into();
        move |error| LiveError::Redis { url, what, error }
    }

    /// Create the stream and the group (after a restart without persistence too).
    pub async fn ensure_group(&self) -> Result<(), LiveError> {
        let mut c = self.con.clone();
        let r: redis::RedisResult<()> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(self.key("jobs"))
            .arg(GROUP)
            .arg("0")
            .arg("MKSTREAM")
            .query_async(&mut c)
            .await;
        match r {
            Ok(()) => Ok(()),
            Err(e) if e.code() == Some("BUSYGROUP") => Ok(()),
            Err(e) => Err(self.err("creating the stream's consumer group")(e)),
        }
    }

    /// Delete every key of the namespace (a fresh run), found with `SCAN` so a large
    /// server is never blocked by `KEYS`.
    pub async fn reset(&self) -> Result<(), LiveError> {
        let mut c = self.con.clone();
        let pattern = format!("{}:*", self.ns);
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
                .map_err(self.err("listing the namespace's keys"))?;
            if !keys.is_empty() {
                let _: () = c.del(keys).await.map_err(self.err("deleting the namespace's keys"))?;
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        self.ensure_group().await
    }
}
