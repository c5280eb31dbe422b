//! Reading and storing a queue's settings, books, grant and dead letters.

use std::collections::HashMap;
use std::time::Duration;

use crate::keys::GROUP;
use crate::{Bounds, DeadLetter, Grant, Queue, QueueConfig, QueueError, Stats};

impl Queue {
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
            shed_retries: m.get("shed").is_some_and(|v| v == "1"),
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

    /// Take the oldest `n` dead letters off the list (one `RPOP`, atomic), oldest first: a
    /// consumer of failures (a client that retries them itself, an alerting job) gets each
    /// letter once. The books are left alone (`dead` and `failed` are counters; the list is
    /// not part of [`Stats::balanced`](crate::Stats::balanced)); letters that do not parse
    /// are taken and skipped.
    pub async fn take_dead_letters(&self, n: usize) -> Result<Vec<DeadLetter>, QueueError> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut c = self.con.clone();
        let v: Option<Vec<Vec<u8>>> = redis::cmd("RPOP")
            .arg(&self.keys.dead)
            .arg(n)
            .query_async(&mut c)
            .await
            .map_err(self.err("taking the dead letters"))?;
        Ok(v.unwrap_or_default().iter().filter_map(|s| serde_json::from_slice(s).ok()).collect())
    }
}
