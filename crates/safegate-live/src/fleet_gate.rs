//! One gate of a fleet as a real process: open-loop demand, admission at the rate its
//! grant allows, requests to the shared downstream, and what it does when the price goes
//! silent (docs/fleet.md §The price over Redis).
//!
//! Every refresh interval the gate calls the coordinator ([`crate::coord`]). A reply is
//! the coordinator's heartbeat and brings a grant with a lease. A failed call is silence.
//! What the gate admits comes from its [`LossPolicy`], which sees both. Arrivals are Poisson
//! at the gate's demand; each one is admitted if a token bucket filled at the policy's rate
//! has a token, and an admitted request is one `POST /work` to the downstream. Every
//! decision taken without a fresh grant is counted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp1};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;
use tokio::sync::watch;

use crate::coord::{Coordinator, Grant};

/// What a gate admits, given the coordinator's latest word or its silence.
pub trait LossPolicy: Send {
    /// The coordinator answered at `now` (wall seconds since the gate started).
    fn on_grant(&mut self, now: f64, grant: &Grant, lease: f64);
    /// A refresh failed at `now`.
    fn on_silence(&mut self, now: f64);
    /// The admitted rate to apply now \[req/s, wall\], and whether it rests on a fresh grant.
    fn limit(&mut self, now: f64) -> (f64, bool);
    /// A short name for reports.
    fn name(&self) -> &'static str;
}

/// A gate's settings.
#[derive(Debug, Clone)]
pub struct GateConfig {
    /// The gate's id in the fleet.
    pub id: String,
    /// Offered rate \[req/s, wall\].
    pub demand: f64,
    /// Weight in the price (willingness to pay).
    pub weight: f64,
    /// Refresh interval \[wall\].
    pub refresh: Duration,
    /// Longest wait for the coordinator's answer \[wall\].
    pub refresh_timeout: Duration,
    /// The downstream's base URL (`None`: admitted requests are only counted).
    pub downstream: Option<String>,
    /// Longest wait for one downstream call \[wall\].
    pub timeout: Duration,
    /// Seed of the arrivals.
    pub seed: u64,
}

/// A gate's counters, cumulative.
#[derive(Debug, Default, Serialize)]
pub struct GateStats {
    /// Arrivals.
    pub offered: AtomicU64,
    /// Admitted into the downstream.
    pub admitted: AtomicU64,
    /// Answered 2xx.
    pub succeeded: AtomicU64,
    /// Answered otherwise, or timed out.
    pub failed: AtomicU64,
    /// Refreshes answered.
    pub grants: AtomicU64,
    /// Refreshes that failed.
    pub silences: AtomicU64,
    /// Admission decisions taken without a fresh grant.
    pub unpriced_decisions: AtomicU64,
    /// The rate in force \[req/s, milli-units\].
    pub limit_milli: AtomicU64,
}

/// Burst of the token bucket \[s of the current rate\]: the fleet's bound holds over any
/// window longer than this.
const BURST: f64 = 0.3;

/// Run one gate until `stop`.
pub async fn run_gate(
    coord: Coordinator,
    cfg: GateConfig,
    policy: Box<dyn LossPolicy>,
    stats: Arc<GateStats>,
    mut stop: watch::Receiver<bool>,
) {
    let started = Instant::now();
    let lease = coord.config().lease_ms as f64 / 1e3;
    let policy = Arc::new(Mutex::new(policy));
    let has = Arc::new(AtomicU64::new(0));
    // The refresh runs beside the arrivals, so a coordinator that answers slowly or not at
    // all never stalls admission.
    let refresher = {
        let policy = policy.clone();
        let stats = stats.clone();
        let has = has.clone();
        let cfg = cfg.clone();
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(cfg.refresh);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.changed() => break,
                }
                let held = has.load(Ordering::Relaxed) as f64 / 1e3;
                let call = coord.refresh(&cfg.id, cfg.demand, cfg.weight, held);
                let r = tokio::time::timeout(cfg.refresh_timeout, call).await;
                let now = started.elapsed().as_secs_f64();
                let mut p = policy.lock().unwrap_or_else(|e| e.into_inner());
                match r {
                    Ok(Ok(g)) => {
                        stats.grants.fetch_add(1, Ordering::Relaxed);
                        p.on_grant(now, &g, lease);
                    }
                    _ => {
                        stats.silences.fetch_add(1, Ordering::Relaxed);
                        p.on_silence(now);
                    }
                }
            }
        })
    };
    let http = Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let mut next_arrival = started;
    let mut tokens = 0.0f64;
    let mut last_fill = started;
    loop {
        if *stop.borrow() {
            break;
        }
        let t = Instant::now();
        let (limit, fresh) =
            policy.lock().unwrap_or_else(|e| e.into_inner()).limit(t.duration_since(started).as_secs_f64());
        let limit = if limit.is_finite() { limit.max(0.0) } else { 0.0 };
        has.store((limit * 1e3) as u64, Ordering::Relaxed);
        stats.limit_milli.store((limit * 1e3) as u64, Ordering::Relaxed);
        // Token bucket at `limit`, a burst of BURST seconds' worth (at least one token).
        tokens = (tokens + limit * t.duration_since(last_fill).as_secs_f64()).min((limit * BURST).max(1.0));
        last_fill = t;
        while next_arrival <= t {
            stats.offered.fetch_add(1, Ordering::Relaxed);
            if !fresh {
                stats.unpriced_decisions.fetch_add(1, Ordering::Relaxed);
            }
            if tokens >= 1.0 {
                tokens -= 1.0;
                stats.admitted.fetch_add(1, Ordering::Relaxed);
                if let Some(base) = &cfg.downstream {
                    let uri = format!("{base}/work");
                    let http = http.clone();
                    let stats = stats.clone();
                    let timeout = cfg.timeout;
                    tokio::spawn(async move {
                        let ok = match hyper::Request::post(uri).body(Empty::<Bytes>::new()) {
                            Ok(req) => matches!(
                                tokio::time::timeout(timeout, http.request(req)).await,
                                Ok(Ok(r)) if r.status().is_success()
                            ),
                            Err(_) => false,
                        };
                        let c = if ok { &stats.succeeded } else { &stats.failed };
                        c.fetch_add(1, Ordering::Relaxed);
                    });
                } else {
                    stats.succeeded.fetch_add(1, Ordering::Relaxed);
                }
            }
            let gap = if cfg.demand > 0.0 {
                let e: f64 = Exp1.sample(&mut rng);
                e / cfg.demand
            } else {
                3600.0
            };
            next_arrival += Duration::from_secs_f64(gap.min(3600.0));
        }
        let jitter: f64 = rng.random::<f64>() * 1e-4;
        tokio::select! {
            _ = tokio::time::sleep_until((next_arrival + Duration::from_secs_f64(jitter)).into()) => {}
            _ = stop.changed() => {}
        }
    }
    let _ = refresher.await;
}

/// What a gate does when the price goes silent (docs/fleet.md §When the price goes silent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Mode {
    /// Hold the last grant, also past its lease (the seed's frozen policy).
    Freeze,
    /// Local control without the price: the gate's own limit (the common bug of
    /// Redis-backed limiters: each gate falls back to its full local limit).
    Fallback,
    /// Freeze until the lease expires, then `bound / N̂` with `N̂` the largest membership
    /// seen; after the coordinator returns, no more than held until one lease has passed.
    Hybrid,
}

impl Mode {
    /// Every mode, as named on the command line.
    pub const ALL: [Mode; 3] = [Mode::Freeze, Mode::Fallback, Mode::Hybrid];

    /// The mode's name.
    pub const fn name(self) -> &'static str {
        match self {
            Mode::Freeze => "freeze",
            Mode::Fallback => "fallback",
            Mode::Hybrid => "hybrid",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown mode {s:?}: expected freeze, fallback or hybrid"))
    }
}

/// The three modes over one gate's view: the last grant and its lease, the largest
/// membership seen, the local limit, and a learning period after silence ends.
#[derive(Debug, Clone)]
pub struct Keeper {
    mode: Mode,
    bound: f64,
    local: f64,
    grant: Option<(f64, f64)>,
    members: u32,
    silent_since: Option<f64>,
    learning_until: f64,
    held: f64,
}

impl Keeper {
    /// A keeper for a fleet whose bound is `bound` \[req/s\], this gate's local limit
    /// `local` (what fallback admits).
    pub fn new(mode: Mode, bound: f64, local: f64) -> Self {
        Self { mode, bound, local, grant: None, members: 1, silent_since: None, learning_until: 0.0, held: 0.0 }
    }
}

impl LossPolicy for Keeper {
    fn on_grant(&mut self, now: f64, g: &Grant, lease: f64) {
        if self.silent_since.take().is_some() && self.mode == Mode::Hybrid {
            // Back from silence: for one lease, no more than held (others may still hold
            // what they took while the price was away).
            self.learning_until = now + lease;
        }
        let rate = if now < self.learning_until { g.rate.min(self.held) } else { g.rate };
        self.grant = Some((rate, now + lease));
        self.members = self.members.max(g.members);
    }

    fn on_silence(&mut self, now: f64) {
        self.silent_since.get_or_insert(now);
    }

    fn limit(&mut self, now: f64) -> (f64, bool) {
        let fresh = self.silent_since.is_none();
        let l = match (self.mode, self.grant) {
            (_, None) => match self.mode {
                Mode::Fallback => self.local,
                _ => self.bound / f64::from(self.members.max(1)),
            },
            (_, Some((g, _))) if fresh => g,
            (Mode::Freeze, Some((g, _))) => g,
            (Mode::Fallback, Some(_)) => self.local,
            (Mode::Hybrid, Some((g, expiry))) => {
                if now < expiry {
                    g
                } else {
                    (self.bound / f64::from(self.members.max(1))).min(self.local)
                }
            }
        };
        self.held = l;
        (l, fresh)
    }

    fn name(&self) -> &'static str {
        self.mode.name()
    }
}
