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

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
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

use safegate_core::fleet::detector::{FailureDetector, Timeout};
use safegate_core::fleet::lease::{
    Grant as CoreGrant, GrantKeeper, KeeperConfig, KeeperInput, LossPolicy as CorePolicy, Mode,
};
use safegate_core::RangeError;

use crate::coord::{Coordinator, Grant};

/// What a gate admits, given the coordinator's latest word or its silence.
pub trait LossPolicy: Send {
    /// The coordinator answered at `now` (wall seconds since the gate started).
    fn on_grant(&mut self, now: f64, grant: &Grant, lease: f64);
    /// A refresh failed at `now`.
    fn on_silence(&mut self, now: f64);
    /// The admitted rate to apply now \[req/s, wall\], and the mode it was decided in
    /// ([`Mode::fresh`] says whether it rests on a fresh grant).
    fn limit(&mut self, now: f64) -> (f64, Mode);
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
    /// The mode of the latest decision: 1 + its index in [`Mode::ALL`], 0 before the first.
    pub mode: AtomicU8,
}

impl GateStats {
    /// The mode of the latest decision (`None` before the first).
    pub fn mode(&self) -> Option<Mode> {
        let i = self.mode.load(Ordering::Relaxed);
        Mode::ALL.get(usize::from(i).checked_sub(1)?).copied()
    }

    fn set_mode(&self, mode: Mode) {
        self.mode.store(mode.index() as u8 + 1, Ordering::Relaxed);
    }
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
    // The refresh runs beside the arrivals, so a coordinator that answers slowly or not at
    // all never stalls admission.
    let refresher = {
        let policy = policy.clone();
        let stats = stats.clone();
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
                // What the gate holds: the rate in force, as the admission loop last set it.
                let held = stats.limit_milli.load(Ordering::Relaxed) as f64 / 1e3;
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
        let (limit, mode) =
            policy.lock().unwrap_or_else(|e| e.into_inner()).limit(t.duration_since(started).as_secs_f64());
        let fresh = mode.fresh();
        let limit = if limit.is_finite() { limit.max(0.0) } else { 0.0 };
        stats.limit_milli.store((limit * 1e3) as u64, Ordering::Relaxed);
        stats.set_mode(mode);
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

/// The loss-of-price policy by name: `freeze`, `fallback` or `hybrid`.
pub fn parse_policy(s: &str) -> Result<CorePolicy, String> {
    match s {
        "freeze" => Ok(CorePolicy::Freeze),
        "fallback" => Ok(CorePolicy::Fallback),
        "hybrid" => Ok(CorePolicy::Hybrid),
        _ => Err(format!("unknown policy {s:?}: expected freeze, fallback or hybrid")),
    }
}

/// The name of a loss-of-price policy.
pub fn policy_name(p: CorePolicy) -> &'static str {
    match p {
        CorePolicy::Freeze => "freeze",
        CorePolicy::Fallback => "fallback",
        CorePolicy::Hybrid => "hybrid",
    }
}

/// A gate's [`LossPolicy`]: the decision core's [`GrantKeeper`] (the same state machine
/// the fleet simulation runs), fed with the coordinator's grants, a timeout detector over
/// its answers (docs/fleet.md §Failure detectors) and the gate's local limit as the local
/// controller's proposal.
#[derive(Debug)]
pub struct Keeper {
    inner: GrantKeeper,
    grant: Option<CoreGrant>,
    detector: Timeout,
    local: f64,
    name: &'static str,
}

impl Keeper {
    /// A keeper for a fleet whose bound is `bound` \[req/s\]; `local` is what the gate
    /// admits on its own (fallback's proposal); the coordinator is suspected after
    /// `suspect_after` seconds without an answer; `lease` is the coordinator's lease \[s\];
    /// `members` is the fleet's size the gate assumes before its first grant (its share
    /// until then is `bound / members`).
    pub fn new(
        policy: CorePolicy,
        bound: f64,
        local: f64,
        lease: f64,
        suspect_after: f64,
        members: u32,
    ) -> Result<Self, RangeError> {
        let cfg = KeeperConfig::new(policy, bound, lease, members.max(1))?;
        Ok(Self {
            inner: GrantKeeper::new(cfg),
            grant: None,
            detector: Timeout::new(suspect_after)?,
            local,
            name: policy_name(policy),
        })
    }

    /// Decisions taken in each mode of [`safegate_core::fleet::lease::Mode::ALL`].
    pub fn counts(&self) -> [u64; 7] {
        self.inner.counts()
    }
}

impl LossPolicy for Keeper {
    fn on_grant(&mut self, now: f64, g: &Grant, lease: f64) {
        self.detector.heartbeat(now);
        self.inner.see_alive(g.members);
        self.grant = Some(CoreGrant { limit: g.rate, expires: now + lease, members: g.members, epoch: g.epoch });
    }

    fn on_silence(&mut self, _now: f64) {}

    fn limit(&mut self, now: f64) -> (f64, Mode) {
        let reachable = !self.detector.suspect(now) && self.detector.last_heartbeat().is_some();
        let d = self.inner.decide(&KeeperInput { now, grant: self.grant, reachable, proposal: self.local });
        (d.limit, d.mode)
    }

    fn name(&self) -> &'static str {
        self.name
    }
}
