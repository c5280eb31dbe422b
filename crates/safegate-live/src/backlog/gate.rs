//! The producers' and the controller's side: publishing the gate, offering jobs, taking
//! failed jobs for retry, and reading the accounting and the oldest wait.

use std::collections::HashMap;
use std::time::Duration;

use redis::AsyncCommands;

use super::{Accounting, Admission, Backlog, GROUP};
use crate::LiveError;

impl Backlog {
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
