//! The executors' side: reading jobs, acknowledging them, heartbeats and slots, and the
//! reaper that gives a dead executor's jobs back.

use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::AsyncCommands;

use super::{Backlog, Delivery, GROUP};
use crate::LiveError;

impl Backlog {
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
}
