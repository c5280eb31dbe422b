//! A running [`Downstream`]: starting the scheduler and the HTTP server, the state they
//! share, reading and setting it, and stopping both.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use safegate_core::error::RangeError;
use safegate_sim::HealthTrack;
use tokio::sync::oneshot;

use super::channel::{Counters, Inbox, Msg, Submitter};
use super::sched::Scheduler;
use super::{driver, http, DownstreamConfig, DownstreamStats, Faults, Precision};
use crate::{LiveError, ModelClock, TimeSource};

/// What the scheduler, the handlers and the owner share.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) counters: Arc<Counters>,
    faults: Mutex<Faults>,
    pub(super) inbox: Inbox,
    health: HealthTrack,
    clock: ModelClock,
    pub(super) noop: bool,
}

impl Shared {
    pub(super) fn faults_lock(&self) -> MutexGuard<'_, Faults> {
        self.faults.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn set_faults(&self, f: Faults) -> Result<(), RangeError> {
        f.check()?;
        let mut cur = self.faults_lock();
        *cur = f;
        // Under the lock, so the scheduler sees settings in the order they were made. A
        // stopped scheduler has nothing left to apply them to.
        let _ = self.inbox.send(Msg::Faults(f));
        Ok(())
    }

    pub(super) fn stats(&self) -> DownstreamStats {
        let t = self.clock.now();
        let health = match self.faults_lock().health {
            Some(h) => h,
            None => self.health.value(t),
        };
        let c = &self.counters;
        DownstreamStats {
            in_service: c.in_service.load(Ordering::Relaxed),
            served: c.served.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed),
            t_model: t,
            health,
            request_seconds: c.occupancy(t),
            waiting: c.waiting.load(Ordering::Relaxed),
            full: c.full.load(Ordering::Relaxed),
        }
    }
}

/// The scheduler's thread (wall clock) or task (tokio clock).
#[derive(Debug)]
enum Driver {
    Thread(std::thread::JoinHandle<()>),
    Task(tokio::task::JoinHandle<()>),
}

/// A running downstream emulator: an HTTP server and its scheduler. Dropping it
/// stops both (requests still waiting are answered 503); [`Downstream::shutdown`] also
/// waits for the server to finish.
#[derive(Debug)]
pub struct Downstream {
    addr: SocketAddr,
    shared: Arc<Shared>,
    driver: Option<Driver>,
    server_stop: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
}

impl Downstream {
    /// Check `cfg`, bind `bind` (normally `127.0.0.1:0`), start the scheduler (its own
    /// thread on a wall clock, a task on a tokio clock: [`TimeSource`]) and serve. [`LiveError::Bind`] names the address when it cannot be bound (in use),
    /// [`LiveError::Invalid`] the field of a configuration out of range.
    pub async fn start(cfg: DownstreamConfig, bind: SocketAddr) -> Result<Downstream, LiveError> {
        cfg.check()?;
        let listener = tokio::net::TcpListener::bind(bind).await.map_err(|source| LiveError::Bind {
            addr: bind,
            what: "downstream",
            error: source,
        })?;
        let addr = listener.local_addr().map_err(|source| LiveError::Bind {
            addr: bind,
            what: "downstream",
            error: source,
        })?;

        let counters = Arc::new(Counters::default());
        let scheduler =
            Scheduler::new(cfg.pool, cfg.health.clone(), cfg.service, cfg.clock, cfg.seed, counters.clone())
                .with_failures(cfg.failures)
                .with_workers(cfg.workers);
        let (inbox, driver) = match cfg.clock.source() {
            TimeSource::Wall => {
                let (tx, rx) = mpsc::channel();
                let thread = std::thread::Builder::new()
                    .name("safegate-downstream".into())
                    .spawn(move || driver::run_thread(scheduler, rx))
                    .map_err(|source| LiveError::Io {
                        what: "starting the downstream's scheduler thread".into(),
                        error: source,
                    })?;
                (Inbox::Thread(tx), Driver::Thread(thread))
            }
            TimeSource::Tokio => {
                let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                (Inbox::Task(tx), Driver::Task(tokio::spawn(driver::run_task(scheduler, rx))))
            }
        };

        let shared = Arc::new(Shared {
            counters,
            faults: Mutex::new(Faults::default()),
            inbox,
            health: cfg.health,
            clock: cfg.clock,
            noop: cfg.noop,
        });
        let app = http::router(shared.clone());
        let (server_stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Downstream { addr, shared, driver: Some(driver), server_stop: Some(server_stop), server: Some(server) })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests in service, served and answered 500, model time and health now.
    pub fn stats(&self) -> DownstreamStats {
        self.shared.stats()
    }

    /// Set the faults, in force from now on (requests in service continue under them).
    /// Refused, naming the field, when a value is out of range.
    pub fn set_faults(&self, f: Faults) -> Result<(), RangeError> {
        self.shared.set_faults(f)
    }

    /// The faults in force.
    pub fn faults(&self) -> Faults {
        *self.shared.faults_lock()
    }

    /// In-process submission to the scheduler.
    pub(crate) fn submitter(&self) -> Submitter {
        Submitter { inbox: self.shared.inbox.clone() }
    }

    /// How late the scheduler's timed wake-ups were so far.
    pub fn precision(&self) -> Precision {
        use Ordering::Relaxed;
        let c = &self.shared.counters;
        let wakes = c.wakes.load(Relaxed);
        let late = c.late_ns.load(Relaxed) as f64;
        Precision {
            wakes,
            mean_late_us: if wakes > 0 { late / wakes as f64 / 1e3 } else { 0.0 },
            max_late_us: c.max_late_ns.load(Relaxed) as f64 / 1e3,
        }
    }

    /// Stop the scheduler (requests waiting are answered 503), then the server, and wait
    /// for both (the server at most 2 s, then it is aborted).
    pub async fn shutdown(mut self) {
        self.shared.inbox.send(Msg::Shutdown);
        match self.driver.take() {
            Some(Driver::Thread(thread)) => {
                let _ = tokio::task::spawn_blocking(move || thread.join()).await;
            }
            Some(Driver::Task(task)) => {
                let _ = task.await;
            }
            None => {}
        }
        if let Some(stop) = self.server_stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut server) = self.server.take() {
            if tokio::time::timeout(Duration::from_secs(2), &mut server).await.is_err() {
                server.abort();
            }
        }
    }
}

impl Drop for Downstream {
    fn drop(&mut self) {
        self.shared.inbox.send(Msg::Shutdown);
        match self.driver.take() {
            // The thread leaves its loop at the message: the join is short.
            Some(Driver::Thread(thread)) => {
                let _ = thread.join();
            }
            // The task leaves its loop at the message too, and holds nothing of the owner's.
            Some(Driver::Task(_)) | None => {}
        }
        if let Some(stop) = self.server_stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            server.abort();
        }
    }
}
