//! The PostgreSQL backend: a real contended dependency, whose shape nobody here chose.
//!
//! A request runs one transaction on a connection of an application pool: at the chosen
//! isolation level it updates one of `rows` hot rows, holds the transaction open for
//! `hold` (the application's work between two statements, as a service that reads, thinks
//! and writes), updates a second hot row and commits. Concurrent transactions on the same
//! rows wait for each other's row locks and, under `SERIALIZABLE` or `REPEATABLE READ`,
//! abort with a serialization failure (SQLSTATE `40001`) or a deadlock (`40P01`); the
//! application retries those, as real services do, up to `retries` times, and answers
//! an error after the last. So past a few transactions at once the throughput of
//! successful transactions falls, and the retries feed the fall: the seed's collapse,
//! produced by the database's own locking.
//!
//! The pool holds `pool` connections (a realistic 64 by default); a request beyond them
//! waits for one (FIFO). The transaction runs as its own task that owns its connection:
//! a client that gives up (its response future dropped) does not abort it mid-statement
//! (a server finishes the statement it is running), but nothing more is sent for it: the
//! transaction is rolled back and not retried, as a handler's dropped transaction is
//! rolled back by its driver and its retry loop goes with it. The connection goes back
//! clean.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{oneshot, Semaphore};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls, Statement};

use crate::LiveError;

/// The table the transactions update (created, and refilled, by [`Pg::connect`]).
pub const TABLE: &str = "safegate_bench_hot";

pub use safegate_sim::scenario::Isolation;

/// The statement that opens a transaction at `i`.
fn begin(i: Isolation) -> &'static str {
    match i {
        Isolation::Serializable => "BEGIN ISOLATION LEVEL SERIALIZABLE",
        Isolation::RepeatableRead => "BEGIN ISOLATION LEVEL REPEATABLE READ",
        Isolation::ReadCommitted => "BEGIN ISOLATION LEVEL READ COMMITTED",
    }
}

/// The transaction and its pool (a scenario's `[postgres]` table, or `bench overload`'s
/// `--pg-*` flags).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PgSpec {
    /// `postgres://…` URL of the database (the password is never printed).
    #[serde(skip)]
    pub url: String,
    /// Hot rows the transactions pick from (two each).
    pub rows: u32,
    /// Time the transaction is held open between its two updates \[ms\], in `[0, 10000]`.
    pub hold_ms: f64,
    /// Isolation level.
    pub isolation: Isolation,
    /// Connections in the application pool.
    pub pool: usize,
    /// Retries of a transaction that failed to serialize (or deadlocked).
    pub retries: u32,
}

impl PgSpec {
    /// A scenario's `[postgres]` table, its ranges checked (the error names
    /// `postgres.KEY`), on the database at `url` (the table's own `url` when `None`; then
    /// the environment's `SAFEGATE_PG_URL`). `Err` also when no URL is given anywhere.
    pub fn from_section(
        section: &safegate_sim::scenario::PostgresSection,
        url: Option<&str>,
    ) -> Result<PgSpec, safegate_core::RangeError> {
        section.check().map_err(|e| e.at("postgres"))?;
        let url = PgSpec::url_or_env(url.or(section.url.as_deref())).ok_or_else(|| {
            safegate_core::RangeError::new(
                "postgres.url",
                "(none)",
                "a postgres://… URL: the scenario's postgres.url, --pg-url or SAFEGATE_PG_URL",
            )
        })?;
        Ok(PgSpec {
            url,
            rows: section.rows,
            hold_ms: section.hold_ms,
            isolation: section.isolation,
            pool: section.pool as usize,
            retries: section.retries,
        })
    }

    /// The database's URL: `given`, else the environment's `SAFEGATE_PG_URL` (an empty one
    /// is unset); `None` when neither names one.
    pub fn url_or_env(given: Option<&str>) -> Option<String> {
        given.map(str::to_owned).or_else(|| std::env::var("SAFEGATE_PG_URL").ok().filter(|u| !u.is_empty()))
    }
}

/// One pooled connection with its prepared update.
#[derive(Debug)]
struct Conn {
    client: Client,
    update: Statement,
}

#[derive(Debug)]
struct Pool {
    slots: Semaphore,
    idle: Mutex<Vec<Conn>>,
    /// Connections still open; the pool closes (every call fails at once) when the last
    /// is lost, rather than leaving callers waiting for a slot no connection backs.
    open: AtomicU64,
}

/// The PostgreSQL backend (cloneable; clones share the pool).
#[derive(Debug, Clone)]
pub struct Pg {
    spec: Arc<PgSpec>,
    pool: Arc<Pool>,
    /// Draws of the hot rows (a counter through a mixing function: the same sequence of
    /// row pairs in every run).
    draws: Arc<AtomicU64>,
}

/// The URL with its password (if any) replaced, for messages.
pub fn redacted(url: &str) -> String {
    if let Some(k) = url.find("password=") {
        // A key=value connection string: the value runs to the next space.
        let v = k + "password=".len();
        let end = url[v..].find(' ').map_or(url.len(), |e| v + e);
        return format!("{}***{}", &url[..v], &url[end..]);
    }
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s + 3 => {
            let user_info = &url[s + 3..at];
            match user_info.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &user_info[..c], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// SplitMix64's finaliser: a well-mixed 64-bit value of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A client error's text with its server-side cause (`tokio_postgres::Error`'s own text is
/// often just "db error" or "error connecting to server").
fn postgres_message(e: &tokio_postgres::Error) -> String {
    match (e.as_db_error(), std::error::Error::source(e)) {
        (Some(db), _) => format!("{e}: {}", db.message()),
        (None, Some(cause)) => format!("{e}: {cause}"),
        (None, None) => e.to_string(),
    }
}

/// Whether a failed statement is one an application retries: a serialization failure or
/// a deadlock.
fn retryable(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|c| *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED)
}

/// A transaction that failed after its retries (or on an error no retry helps).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TxnFailed(String);

/// Why one try of a transaction stopped.
enum Step {
    /// The database refused a statement.
    Db(tokio_postgres::Error),
    /// The caller gave up; nothing more is sent for it.
    Abandoned,
}

impl From<tokio_postgres::Error> for Step {
    fn from(e: tokio_postgres::Error) -> Self {
        Step::Db(e)
    }
}

/// `Err(Step::Abandoned)` once the caller's end of `gone` was dropped (its future ended
/// without its answer: a client timeout, a disconnect).
fn left(gone: &mut oneshot::Receiver<()>) -> Result<(), Step> {
    match gone.try_recv() {
        Err(oneshot::error::TryRecvError::Closed) => Err(Step::Abandoned),
        _ => Ok(()),
    }
}

impl Pg {
    /// Connect the pool, (re)create the hot table with `rows` rows at zero, and prepare the
    /// update on every connection. Runs inside the run's runtime (each connection's driver
    /// is a task on it, ended with the runtime).
    pub async fn connect(spec: &PgSpec) -> Result<Pg, LiveError> {
        let shown = redacted(&spec.url);
        let fail = |what: &str, e: tokio_postgres::Error| LiveError::Postgres {
            url: shown.clone(),
            what: what.to_string(),
            message: postgres_message(&e),
        };
        let mut config: tokio_postgres::Config = spec.url.parse().map_err(|e| fail("reading the URL", e))?;
        // A database that accepts the connection and never answers is an error, not a hang.
        config.connect_timeout(std::time::Duration::from_secs(10));
        let mut conns = Vec::with_capacity(spec.pool);
        for k in 0..spec.pool {
            let (client, connection) = config.connect(NoTls).await.map_err(|e| fail("connecting", e))?;
            tokio::spawn(async move {
                // Ends with an error when the server goes away; the requests then fail.
                let _ = connection.await;
            });
            if k == 0 {
                // A session holding the table would block the DROP for ever: wait 10 s at most.
                let setup = format!(
                    "SET lock_timeout = '10s'; DROP TABLE IF EXISTS {TABLE}; CREATE TABLE {TABLE} (id integer PRIMARY KEY, v bigint NOT NULL); \
                     INSERT INTO {TABLE} SELECT g, 0 FROM generate_series(0, {}) g; SET lock_timeout = 0;",
                    spec.rows.saturating_sub(1)
                );
                client.batch_execute(&setup).await.map_err(|e| fail("creating the hot table", e))?;
            }
            let update = client
                .prepare(&format!("UPDATE {TABLE} SET v = v + 1 WHERE id = $1"))
                .await
                .map_err(|e| fail("preparing the update", e))?;
            conns.push(Conn { client, update });
        }
        Ok(Pg {
            spec: Arc::new(spec.clone()),
            pool: Arc::new(Pool {
                slots: Semaphore::new(conns.len()),
                open: AtomicU64::new(conns.len() as u64),
                idle: Mutex::new(conns),
            }),
            draws: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Two distinct hot rows for the next transaction.
    fn rows(&self) -> (i32, i32) {
        let n = u64::from(self.spec.rows.max(2));
        let r = mix(self.draws.fetch_add(1, Ordering::Relaxed));
        let a = r % n;
        let b = (a + 1 + (r >> 32) % (n - 1)) % n;
        (a as i32, b as i32)
    }

    /// One request: a pooled connection, the transaction with its retries, the connection
    /// back. `Err` after the last retry, or on an error no retry helps.
    ///
    /// Waiting for a connection belongs to the caller: a caller that gives up (its future
    /// dropped, as a client timeout or a disconnect drops a handler's) leaves the wait and
    /// nothing of it runs later. Once it holds a connection, the transaction runs to its end
    /// on a task of its own, so that a connection never goes back to the pool inside a
    /// transaction; like a query already sent to a server, the statement running when the
    /// caller gives up is not taken back. After it, nothing more is sent for a caller that
    /// has gone: its transaction is rolled back and not retried (a dropped handler's
    /// transaction is rolled back by its driver, and its retry loop is dropped with it).
    /// (Spawning the wait too, as before, made every abandoned request run its
    /// transaction later anyway: after a deadlock on PostgreSQL the pool's 64 connections
    /// worked through requests nobody was waiting for, for seconds after the limit was cut.
    /// Retrying for a caller that had gone did the same on a smaller scale: a request
    /// abandoned in a deadlock waited out the deadlock timeout up to `retries` more times,
    /// holding its row locks.)
    pub async fn call(self) -> Result<(), TxnFailed> {
        let conn = self.checkout().await?;
        // The caller's end of a channel nothing is sent on: it is dropped with the caller's
        // future, which wakes the task (out of a hold, too) and tells it so; dropped when
        // the answer is in, it stops nothing.
        let (_caller, mut gone) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let out = self.transaction(&conn, &mut gone).await;
            self.give_back(conn);
            out
        });
        match task.await {
            Ok(r) => r,
            Err(e) => Err(TxnFailed(format!("the transaction's task ended: {e}"))),
        }
    }

    /// The sum of the hot rows' counters: two per committed transaction (a check of the
    /// books: what ran in the database, whoever was still waiting for it).
    pub async fn hot_total(&self) -> Result<i64, TxnFailed> {
        let conn = self.checkout().await?;
        let out = conn.client.query_one(&format!("SELECT coalesce(sum(v), 0)::bigint FROM {TABLE}"), &[]).await;
        self.give_back(conn);
        out.map(|row| row.get(0)).map_err(|e| TxnFailed(format!("reading the hot rows: {}", postgres_message(&e))))
    }

    /// A connection out of the pool, its slot taken; only the wait for the slot awaits, so
    /// a caller dropped after it cannot lose the slot or the connection. Hand it back with
    /// [`Pg::give_back`].
    async fn checkout(&self) -> Result<Conn, TxnFailed> {
        let Ok(slot) = self.pool.slots.acquire().await else {
            return Err(TxnFailed("the pool is closed: every connection to the database was lost".into()));
        };
        // The slot goes back with the connection (`give_back`), not when this guard drops.
        slot.forget();
        let conn = match self.pool.idle.lock() {
            Ok(mut idle) => idle.pop().ok_or("no idle connection behind a free slot"),
            Err(_) => Err("pool poisoned"),
        };
        conn.map_err(|why| {
            self.pool.slots.add_permits(1);
            TxnFailed(why.into())
        })
    }

    /// A checked-out connection back to the pool with its slot; a lost one leaves the pool
    /// smaller (its slot goes with it), and the pool closes with its last connection.
    fn give_back(&self, conn: Conn) {
        if !conn.client.is_closed() {
            if let Ok(mut idle) = self.pool.idle.lock() {
                idle.push(conn);
            }
            self.pool.slots.add_permits(1);
        } else if self.pool.open.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.pool.slots.close();
        }
    }

    /// The transaction with its retries, on `c`; stops (rolled back) at the first step
    /// after the caller has gone.
    async fn transaction(&self, c: &Conn, gone: &mut oneshot::Receiver<()>) -> Result<(), TxnFailed> {
        let (a, b) = self.rows();
        let mut attempt = 0;
        loop {
            let failed = match self.attempt(c, a, b, gone).await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            // Leave the connection outside any transaction (a no-op warning if none).
            let _ = c.client.batch_execute("ROLLBACK").await;
            let e = match failed {
                Step::Abandoned => return Err(TxnFailed("abandoned by its caller; rolled back".into())),
                Step::Db(e) => e,
            };
            if !retryable(&e) {
                return Err(TxnFailed(format!("transaction failed: {e}")));
            }
            if attempt >= self.spec.retries {
                return Err(TxnFailed(format!("serialization failure after {} retries", self.spec.retries)));
            }
            if left(gone).is_err() {
                return Err(TxnFailed("abandoned by its caller; not retried".into()));
            }
            attempt += 1;
        }
    }

    /// One try: `BEGIN`, two updates `hold` apart, `COMMIT`; [`Step::Abandoned`] before
    /// any step, or during the hold, once the caller has gone.
    async fn attempt(&self, c: &Conn, a: i32, b: i32, gone: &mut oneshot::Receiver<()>) -> Result<(), Step> {
        left(gone)?;
        c.client.batch_execute(begin(self.spec.isolation)).await?;
        left(gone)?;
        c.client.execute(&c.update, &[&a]).await?;
        if self.spec.hold_ms > 0.0 {
            // The application's work between the statements: a handler dropped during it
            // stops it.
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs_f64(self.spec.hold_ms / 1e3)) => {}
                _ = &mut *gone => return Err(Step::Abandoned),
            }
        }
        left(gone)?;
        c.client.execute(&c.update, &[&b]).await?;
        left(gone)?;
        c.client.batch_execute("COMMIT").await?;
        Ok(())
    }
}

/// One point of the service curve: `n` closed-loop clients on the pool for a while.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CurvePoint {
    /// Clients, each sending its next transaction when the last one answered.
    pub n: usize,
    /// Successful transactions per second.
    pub rate: f64,
    /// Failed transactions (after their retries) per second.
    pub failed_rate: f64,
    /// Mean time of a successful transaction, retries included \[ms\].
    pub mean_ms: f64,
    /// Successful transactions counted.
    pub completed: u64,
}

/// The service curve X(n): for each `n` of `ns`, `n` closed-loop clients call the backend
/// directly (no limiter) for `secs`. Inside the run's runtime.
pub async fn curve(pg: &Pg, ns: &[usize], secs: Duration) -> Vec<CurvePoint> {
    let mut out = Vec::with_capacity(ns.len());
    for &n in ns {
        let end = tokio::time::Instant::now() + secs;
        let start = tokio::time::Instant::now();
        let clients: Vec<_> = (0..n)
            .map(|_| {
                let pg = pg.clone();
                tokio::spawn(async move {
                    let (mut ok, mut failed, mut busy) = (0u64, 0u64, 0.0f64);
                    while tokio::time::Instant::now() < end {
                        let t = tokio::time::Instant::now();
                        match pg.clone().call().await {
                            Ok(()) => {
                                ok += 1;
                                busy += t.elapsed().as_secs_f64();
                            }
                            Err(_) => failed += 1,
                        }
                    }
                    (ok, failed, busy)
                })
            })
            .collect();
        let (mut ok, mut failed, mut busy) = (0u64, 0u64, 0.0f64);
        for c in clients {
            if let Ok((o, f, b)) = c.await {
                ok += o;
                failed += f;
                busy += b;
            }
        }
        let took = start.elapsed().as_secs_f64().max(1e-9);
        out.push(CurvePoint {
            n,
            rate: ok as f64 / took,
            failed_rate: failed as f64 / took,
            mean_ms: if ok > 0 { busy / ok as f64 * 1e3 } else { f64::NAN },
            completed: ok,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(redacted("postgres://u:secret@127.0.0.1:5432/db"), "postgres://u:***@127.0.0.1:5432/db");
        assert_eq!(redacted("postgres://u@127.0.0.1/db"), "postgres://u@127.0.0.1/db");
        assert_eq!(redacted("host=/tmp user=postgres"), "host=/tmp user=postgres");
        assert_eq!(redacted("host=/tmp password=p4ss user=u"), "host=/tmp password=*** user=u");
    }

    #[test]
    fn isolation_levels_parse_by_name() {
        for i in Isolation::ALL {
            assert_eq!(Isolation::parse(i.name()), Some(i));
        }
        assert_eq!(Isolation::parse("snapshot"), None);
        assert!("snapshot".parse::<Isolation>().unwrap_err().contains("read-committed"));
    }

    #[test]
    fn a_scenario_table_becomes_a_spec_or_names_its_key() {
        use safegate_sim::scenario::PostgresSection;
        let s = PostgresSection { url: Some("postgres://a@127.0.0.1/x".into()), ..PostgresSection::default() };
        let spec = PgSpec::from_section(&s, None).unwrap();
        assert_eq!((spec.rows, spec.pool, spec.retries, spec.hold_ms), (64, 64, 3, 2.0));
        assert_eq!(spec.url, "postgres://a@127.0.0.1/x");
        // The command line's URL wins over the file's.
        assert_eq!(PgSpec::from_section(&s, Some("postgres://b@h/y")).unwrap().url, "postgres://b@h/y");
        let bad = PostgresSection { pool: 0, ..s.clone() };
        assert_eq!(PgSpec::from_section(&bad, None).unwrap_err().field, "postgres.pool");
        let bad = PostgresSection { hold_ms: f64::NAN, ..s.clone() };
        assert_eq!(PgSpec::from_section(&bad, None).unwrap_err().field, "postgres.hold_ms");
        let bad = PostgresSection { rows: 1, ..s };
        assert_eq!(PgSpec::from_section(&bad, None).unwrap_err().field, "postgres.rows");
    }
}
