//! The backlog in Redis: a stream with one consumer group, admission at the enqueue by a
//! server-side script, acknowledgements that count, and a reaper that gives a dead
//! executor's jobs back to the pool (docs/live.md §The backlog: a stream with a consumer group).
//!
//! Keys, under a namespace `ns`:
//!
//! | key | type | what |
//! |---|---|---|
//! | `ns:jobs` | stream, group `executors` | the backlog: every admitted job until it is acknowledged; `XLEN` is the model's `q` (waiting plus in service) |
//! | `ns:gate` | hash | the controller's decision: `admit` (share in \[0, 1\]), `conc` (executors allowed, −1 = all), `bound` (backlog cap) |
//! | `ns:count` | hash | the job accounting, each field changed only inside a script |
//! | `ns:failed` | list | failed jobs waiting for the load generator's retry decision |
//! | `ns:hb:CONSUMER` | string with an expiry | an executor's heartbeat |
//! | `ns:slot:I` | string with an expiry | the consumer holding executor slot `I` |
//!
//! Every change of the accounting happens inside one script together with the stream
//! operation it accounts for, so `admitted = completed + failed + XLEN` holds at every
//! instant, whatever crashes between two scripts.

use std::collections::HashMap;
use std::time::Duration;

use redis::aio::{ConnectionManager, MultiplexedConnection};
use redis::{AsyncCommands, Client, Script};
use serde::Serialize;

use crate::LiveError;

/// The consumer group every executor reads with.
pub const GROUP: &str = "executors";

/// Admit and enqueue one job, or reject it, atomically.
///
/// KEYS: jobs, gate, count. ARGV: u (a uniform draw in \[0, 1) from the producer), the
/// job's payload, `1` if it is a retry.
/// Returns `{code, backlog}`: 0 admitted, 1 rejected by the admission share, 2 passed the
/// share but the backlog is at its bound (the model's "dropped": the gate's coin comes
/// first, as in the simulator).
const ENQUEUE: &str = r#"
local share = tonumber(redis.call('HGET', KEYS[2], 'admit') or '1') or 1
local bound = tonumber(redis.call('HGET', KEYS[2], 'bound') or '-1') or -1
redis.call('HINCRBY', KEYS[3], 'offered', 1)
if ARGV[3] == '1' then redis.call('HINCRBY', KEYS[3], 'offered_retries', 1) end
local len = redis.call('XLEN', KEYS[1])
if tonumber(ARGV[1]) >= share then
  redis.call('HINCRBY', KEYS[3], 'rejected_share', 1)
  return {1, len}
end
if bound >= 0 and len >= bound then
  redis.call('HINCRBY', KEYS[3], 'rejected_full', 1)
  return {2, len}
end
local t = redis.call('TIME')
local at = string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2]))
redis.call('XADD', KEYS[1], '*', 'job', ARGV[2], 'at', at, 'n', '0')
redis.call('HINCRBY', KEYS[3], 'admitted', 1)
if ARGV[3] == '1' then redis.call('HINCRBY', KEYS[3], 'admitted_retries', 1) end
return {0, len + 1}
"#;

/// Acknowledge one job: count it, remove it from the stream.
///
/// KEYS: jobs, count, failed. ARGV: id, `ok` or `fail`, service time \[µs\], the group.
/// Returns 1 + the job's time in the system \[µs\] if this acknowledgement counted, 0 if the
/// job had already been acknowledged or given back (a late acknowledgement of a redelivered
/// job counts nothing).
const ACK: &str = r#"
local e = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
local n = redis.call('XACK', KEYS[1], ARGV[4], ARGV[1])
if n == 0 then return 0 end
redis.call('XDEL', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local at = now
local job = ''
if e[1] then
  local f = e[1][2]
  for i = 1, #f, 2 do
    if f[i] == 'at' then at = tonumber(f[i + 1]) or now end
    if f[i] == 'job' then job = f[i + 1] end
  end
end
local lat = math.max(0, now - at)
local svc = math.min(lat, tonumber(ARGV[3]) or 0)
if ARGV[2] == 'ok' then
  redis.call('HINCRBY', KEYS[2], 'completed', 1)
else
  redis.call('HINCRBY', KEYS[2], 'failed', 1)
  redis.call('RPUSH', KEYS[3], job)
end
redis.call('HINCRBY', KEYS[2], 'latency_us', lat)
redis.call('HINCRBY', KEYS[2], 'wait_us', lat - svc)
return lat + 1
"#;

/// Age of the oldest job not yet delivered \[µs\], 0 when none waits.
///
/// KEYS: jobs. ARGV: the group.
const OLDEST: &str = r#"
local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
local last = '0-0'
for _, g in ipairs(groups) do
  local name, id = nil, nil
  for i = 1, #g, 2 do
    if g[i] == 'name' then name = g[i + 1] end
    if g[i] == 'last-delivered-id' then id = g[i + 1] end
  end
  if name == ARGV[1] and id then last = id end
end
local e = redis.call('XRANGE', KEYS[1], '(' .. last, '+', 'COUNT', 1)
if not e[1] then return 0 end
local f = e[1][2]
for i = 1, #f, 2 do
  if f[i] == 'at' then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    return math.max(0, now - (tonumber(f[i + 1]) or now))
  end
end
return 0
"#;

/// Give every job held by a consumer whose heartbeat has expired back to the backlog.
///
/// KEYS: jobs, count. ARGV: heartbeat key prefix, the group, most entries per call.
/// Each job is re-added at the tail with its enqueue time and its delivery count plus
/// one, then acknowledged and deleted, in one step: `XLEN` does not change. Consumers with
/// nothing pending and no heartbeat are deleted. Returns the number of jobs given back.
const REAP: &str = r#"
local consumers = redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[2])
local budget = tonumber(ARGV[3])
local moved = 0
for _, c in ipairs(consumers) do
  local name, pending = nil, 0
  for i = 1, #c, 2 do
    if c[i] == 'name' then name = c[i + 1] end
    if c[i] == 'pending' then pending = tonumber(c[i + 1]) end
  end
  if name and redis.call('EXISTS', ARGV[1] .. name) == 0 then
    if pending > 0 and budget > 0 then
      local ents = redis.call('XPENDING', KEYS[1], ARGV[2], '-', '+', budget, name)
      for _, p in ipairs(ents) do
        local id = p[1]
        local e = redis.call('XRANGE', KEYS[1], id, id)
        if e[1] then
          local f = e[1][2]
          local job, at, n = '', '0', 0
          for i = 1, #f, 2 do
            if f[i] == 'job' then job = f[i + 1] end
            if f[i] == 'at' then at = f[i + 1] end
            if f[i] == 'n' then n = tonumber(f[i + 1]) or 0 end
          end
          redis.call('XADD', KEYS[1], '*', 'job', job, 'at', at, 'n', tostring(n + 1))
          redis.call('HINCRBY', KEYS[2], 'redelivered', 1)
        end
        redis.call('XACK', KEYS[1], ARGV[2], id)
        redis.call('XDEL', KEYS[1], id)
        moved = moved + 1
        budget = budget - 1
      end
      pending = pending - #ents
    end
    if pending <= 0 then redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[2], name) end
  end
end
return moved
"#;

/// Refresh a consumer's heartbeat and, if it holds one, its slot.
///
/// KEYS: heartbeat key, slot key (or an empty string). ARGV: consumer, ttl \[ms\].
/// Returns 1 if the slot is still this consumer's (or none is held), 0 if it was lost.
const BEAT: &str = r#"
redis.call('SET', KEYS[1], '1', 'PX', ARGV[2])
if KEYS[2] == '' then return 1 end
if redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return 1
end
return 0
"#;

/// Take the lowest free executor slot below `ARGV[3]`.
///
/// KEYS: none. ARGV: slot key prefix, consumer, slots, ttl \[ms\]. Returns the slot or −1.
const TAKE_SLOT: &str = r#"
for i = 0, tonumber(ARGV[3]) - 1 do
  if redis.call('SET', ARGV[1] .. i, ARGV[2], 'NX', 'PX', ARGV[4]) then return i end
end
return -1
"#;

/// How an admission attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Admission {
    /// Enqueued.
    Admitted,
    /// Rejected by the admission share.
    Rejected,
    /// Rejected because the backlog was at its bound.
    Full,
}

/// The job accounting, as held in Redis (`ns:count`) plus the backlog's length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Accounting {
    /// Offers to the gate (first attempts and retries).
    pub offered: u64,
    /// Of `offered`, retries of failed jobs.
    pub offered_retries: u64,
    /// Jobs admitted into the backlog.
    pub admitted: u64,
    /// Of `admitted`, retries.
    pub admitted_retries: u64,
    /// Rejected by the admission share.
    pub rejected: u64,
    /// Rejected because the backlog was at its bound.
    pub rejected_full: u64,
    /// Jobs completed successfully.
    pub completed: u64,
    /// Jobs whose attempt failed (downstream error or timeout); some come back as retries.
    pub failed: u64,
    /// Jobs given back to the backlog after their executor died.
    pub redelivered: u64,
    /// Jobs in the backlog now (waiting or in service).
    pub in_backlog: u64,
    /// Jobs in service now (delivered, not acknowledged).
    pub in_service: u64,
    /// Sum of the time in the system of acknowledged jobs \[µs, wall\].
    pub latency_us: u64,
    /// The part of `latency_us` spent waiting for an executor \[µs, wall\].
    pub wait_us: u64,
}

impl Accounting {
    /// `admitted − completed − failed − in_backlog`: jobs unaccounted for (must be 0).
    pub fn lost(&self) -> i64 {
        self.admitted as i64 - self.completed as i64 - self.failed as i64 - self.in_backlog as i64
    }
}

/// A job as an executor received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The stream entry's id.
    pub id: String,
    /// The job's payload.
    pub job: String,
    /// Times it was given back before this delivery.
    pub redeliveries: u32,
}

/// The keys of one namespace and the scripts, over a reconnecting connection.
#[derive(Clone)]
pub struct Backlog {
    client: Client,
    url: String,
    con: ConnectionManager,
    ns: String,
    enqueue: Script,
    ack: Script,
    reap: Script,
    beat: Script,
    take_slot: Script,
    oldest: Script,
}

impl std::fmt::Debug for Backlog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backlog").field("url", &self.url).field("ns", &self.ns).finish()
    }
}

/// Check a key namespace: 1 to 64 of `A–Z a–z 0–9 _ . -` (no glob characters: the
/// namespace is also a `SCAN` pattern, and `*` would match other applications' keys).
pub fn check_namespace(ns: &str) -> Result<(), safegate_core::RangeError> {
    let ok = !ns.is_empty() && ns.len() <= 64 && ns.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(safegate_core::RangeError::new("namespace", format!("{ns:?}"), "1 to 64 of A-Z a-z 0-9 _ . -"))
    }
}

/// A client and a reconnecting connection to `url`, with `timeout` for connecting and for
/// each answer and `retries` reconnection attempts per failure; the whole connect is
/// bounded by twice the timeout plus a second. Errors name the URL, password elided.
pub(crate) async fn connect_manager(
    url: &str,
    timeout: Duration,
    retries: usize,
) -> Result<(Client, ConnectionManager), LiveError> {
    let shown = redact(url);
    let err = |what: &str| {
        let shown = shown.clone();
        let what = what.to_string();
        move |error| LiveError::Redis { url: shown, what, error }
    };
    let client = Client::open(url).map_err(err("parsing the URL"))?;
    let cfg = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(timeout))
        .set_response_timeout(Some(timeout))
        .set_number_of_retries(retries)
        .set_max_delay(timeout / 4);
    let con =
        tokio::time::timeout(2 * timeout + Duration::from_secs(1), client.get_connection_manager_with_config(cfg))
            .await
            .map_err(|_| LiveError::Redis {
                url: shown.clone(),
                what: "connecting".into(),
                error: redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut)),
            })?
            .map_err(err("connecting"))?;
    Ok((client, con))
}

/// The URL without a password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://…@{}", &url[..s], &url[at + 1..]),
        _ => url.to_string(),
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

    fn key(&self, k: &str) -> String {
        format!("{}:{k}", self.ns)
    }

    fn err(&self, what: impl Into<String>) -> impl FnOnce(redis::RedisError) -> LiveError {
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

    /// Publish the controller's decision: the admission share, the executors allowed
    /// (`None`: all) and the backlog bound.
    pub async fn publish(&self, admit: f64, concurrency: Option<u32>, bound: u64) -> Result<(), LiveError> {
        let mut c = self.con.clone();
        let conc = concurrency.map_or(-1, i64::from);
        let _: () = c
            .hset_multiple(
                self.key("gate"),
                &[("admit", format!("{admit}")), ("conc", conc.to_string()), ("bound", bound.to_string())],
            )
            .await
            .map_err(self.err("publishing the gate"))?;
        Ok(())
    }

    /// The executors allowed at once, as published (`None`: all, or nothing published).
    pub async fn concurrency(&self) -> Result<Option<u32>, LiveError> {
        let mut c = self.con.clone();
        let v: Option<i64> = c.hget(self.key("gate"), "conc").await.map_err(self.err("reading the gate"))?;
        Ok(v.and_then(|v| u32::try_from(v).ok()))
    }

    /// Offer one job: admitted and enqueued, or rejected, in one script. `u` is a uniform
    /// draw in \[0, 1) (admitted when `u` is below the published share).
    pub async fn offer(&self, u: f64, job: &str, retry: bool) -> Result<Admission, LiveError> {
        let mut c = self.con.clone();
        let (code, _len): (i64, i64) = self
            .enqueue
            .key(self.key("jobs"))
            .key(self.key("gate"))
            .key(self.key("count"))
            .arg(u)
            .arg(job)
            .arg(if retry { "1" } else { "0" })
            .invoke_async(&mut c)
            .await
            .map_err(self.err("enqueue script"))?;
        Ok(match code {
            0 => Admission::Admitted,
            1 => Admission::Rejected,
            _ => Admission::Full,
        })
    }

    /// A dedicated connection for one executor's blocking reads (a blocking read on the
    /// shared connection would stall every other command behind it).
    pub async fn reader(&self) -> Result<MultiplexedConnection, LiveError> {
        let cfg = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(Duration::from_secs(2)));
        self.client.get_multiplexed_async_connection_with_config(&cfg).await.map_err(self.err("opening a reader"))
    }

    /// Read the next job for `consumer`, waiting at most `block`.
    pub async fn fetch(
        &self,
        reader: &mut MultiplexedConnection,
        consumer: &str,
        block: Duration,
    ) -> Result<Option<Delivery>, LiveError> {
        let opts = redis::streams::StreamReadOptions::default()
            .group(GROUP, consumer)
            .count(1)
            .block(block.as_millis().max(1) as usize);
        let reply: redis::RedisResult<Option<redis::streams::StreamReadReply>> =
            reader.xread_options(&[self.key("jobs")], &[">"], &opts).await;
        let reply = match reply {
            Ok(r) => r,
            Err(e) if e.code() == Some("NOGROUP") => {
                self.ensure_group().await?;
                return Ok(None);
            }
            Err(e) => return Err(self.err("reading the stream")(e)),
        };
        let Some(reply) = reply else { return Ok(None) };
        for k in reply.keys {
            if let Some(entry) = k.ids.into_iter().next() {
                let get = |f: &str| -> Option<String> {
                    entry.map.get(f).and_then(|v| redis::from_redis_value_ref::<String>(v).ok())
                };
                let job = get("job").unwrap_or_default();
                let redeliveries = get("n").and_then(|n| n.parse().ok()).unwrap_or(0);
                return Ok(Some(Delivery { id: entry.id.clone(), job, redeliveries }));
            }
        }
        Ok(None)
    }

    /// Acknowledge a job as done (`ok`) or failed; `service` is the time it spent at the
    /// downstream. Returns whether this acknowledgement counted (false for a job that had
    /// already been given back).
    pub async fn ack(&self, id: &str, ok: bool, service: Duration) -> Result<bool, LiveError> {
        Ok(self.ack_timed(id, ok, service).await?.is_some())
    }

    /// [`Backlog::ack`], returning the job's time in the system if the acknowledgement
    /// counted.
    pub async fn ack_timed(&self, id: &str, ok: bool, service: Duration) -> Result<Option<Duration>, LiveError> {
        let mut c = self.con.clone();
        let n: i64 = self
            .ack
            .key(self.key("jobs"))
            .key(self.key("count"))
            .key(self.key("failed"))
            .arg(id)
            .arg(if ok { "ok" } else { "fail" })
            .arg(service.as_micros() as u64)
            .arg(GROUP)
            .invoke_async(&mut c)
            .await
            .map_err(self.err("acknowledge script"))?;
        Ok((n >= 1).then(|| Duration::from_micros((n - 1) as u64)))
    }

    /// Age of the oldest job no executor has taken yet (zero when none waits).
    pub async fn oldest_wait(&self) -> Result<Duration, LiveError> {
        let mut c = self.con.clone();
        let us: i64 = self
            .oldest
            .key(self.key("jobs"))
            .arg(GROUP)
            .invoke_async(&mut c)
            .await
            .map_err(self.err("oldest-wait script"))?;
        Ok(Duration::from_micros(us.max(0) as u64))
    }

    /// Give the jobs of dead consumers back (at most `budget` per call); returns how many.
    pub async fn reap(&self, budget: u32) -> Result<u64, LiveError> {
        let mut c = self.con.clone();
        let r: redis::RedisResult<u64> = self
            .reap
            .key(self.key("jobs"))
            .key(self.key("count"))
            .arg(self.key("hb:"))
            .arg(GROUP)
            .arg(budget.max(1))
            .invoke_async(&mut c)
            .await;
        match r {
            Ok(n) => Ok(n),
            Err(e) if e.code() == Some("NOGROUP") || e.to_string().contains("NOGROUP") => {
                self.ensure_group().await?;
                Ok(0)
            }
            Err(e) => Err(self.err("reaper script")(e)),
        }
    }

    /// Refresh `consumer`'s heartbeat (and its slot); false if the slot was lost.
    pub async fn beat(&self, consumer: &str, slot: Option<u32>, ttl: Duration) -> Result<bool, LiveError> {
        let mut c = self.con.clone();
        let slot_key = slot.map_or(String::new(), |s| self.key(&format!("slot:{s}")));
        let ok: i64 = self
            .beat
            .key(self.key(&format!("hb:{consumer}")))
            .key(slot_key)
            .arg(consumer)
            .arg(ttl.as_millis() as u64)
            .invoke_async(&mut c)
            .await
            .map_err(self.err("heartbeat"))?;
        Ok(ok == 1)
    }

    /// Take the lowest free slot below `slots` for `consumer`.
    pub async fn take_slot(&self, consumer: &str, slots: u32, ttl: Duration) -> Result<Option<u32>, LiveError> {
        let mut c = self.con.clone();
        let s: i64 = self
            .take_slot
            .arg(self.key("slot:"))
            .arg(consumer)
            .arg(slots)
            .arg(ttl.as_millis() as u64)
            .invoke_async(&mut c)
            .await
            .map_err(self.err("taking a slot"))?;
        Ok(u32::try_from(s).ok())
    }

    /// Release `consumer`'s heartbeat and slot (a clean exit).
    pub async fn release(&self, consumer: &str, slot: Option<u32>) -> Result<(), LiveError> {
        let mut c = self.con.clone();
        let mut keys = vec![self.key(&format!("hb:{consumer}"))];
        if let Some(s) = slot {
            let k = self.key(&format!("slot:{s}"));
            let holder: Option<String> = c.get(&k).await.map_err(self.err("releasing a slot"))?;
            if holder.as_deref() == Some(consumer) {
                keys.push(k);
            }
        }
        let _: () = c.del(keys).await.map_err(self.err("releasing a slot"))?;
        Ok(())
    }

    /// Take up to `n` failed jobs for the retry decision.
    pub async fn take_failed(&self, n: usize) -> Result<Vec<String>, LiveError> {
        let mut c = self.con.clone();
        let v: Option<Vec<String>> = redis::cmd("LPOP")
            .arg(self.key("failed"))
            .arg(n.max(1))
            .query_async(&mut c)
            .await
            .map_err(self.err("taking failed jobs"))?;
        Ok(v.unwrap_or_default())
    }

    /// The accounting and the backlog's length, read atomically.
    pub async fn accounting(&self) -> Result<Accounting, LiveError> {
        let mut c = self.con.clone();
        let (count, len, pending): (HashMap<String, i64>, u64, redis::Value) = redis::pipe()
            .atomic()
            .hgetall(self.key("count"))
            .xlen(self.key("jobs"))
            .cmd("XPENDING")
            .arg(self.key("jobs"))
            .arg(GROUP)
            .query_async(&mut c)
            .await
            .map_err(self.err("reading the accounting"))?;
        let g = |k: &str| count.get(k).copied().unwrap_or(0).max(0) as u64;
        let in_service = match pending {
            redis::Value::Array(v) => v.first().and_then(|x| redis::from_redis_value_ref::<u64>(x).ok()).unwrap_or(0),
            _ => 0,
        };
        Ok(Accounting {
            offered: g("offered"),
            offered_retries: g("offered_retries"),
            admitted: g("admitted"),
            admitted_retries: g("admitted_retries"),
            rejected: g("rejected_share"),
            rejected_full: g("rejected_full"),
            completed: g("completed"),
            failed: g("failed"),
            redelivered: g("redelivered"),
            in_backlog: len,
            in_service,
            latency_us: g("latency_us"),
            wait_us: g("wait_us"),
        })
    }
}
