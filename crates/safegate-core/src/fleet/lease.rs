//! What a gate admits when the price goes silent: [`GrantKeeper`] and its three policies.
//!
//! A coordinator hands each of `M` gates a grant (a limit in the units of the fleet's
//! bound, a rate or a concurrency) with a lease (an expiry time) and publishes `M`. While
//! the coordinator is reachable and the lease is valid the gate has a *fresh price* and
//! applies `min(grant, proposal)`: a grant is a ceiling, the local adaptive controller may
//! always admit less. Without a fresh price ([`LossPolicy`]):
//!
//! - [`LossPolicy::Freeze`]: hold the last grant until the lease expires, and after expiry
//!   still hold it (the seed's "frozen policy"; we chose to keep holding rather than drop
//!   to zero, so that a long outage of the coordinator alone does not stop the fleet).
//! - [`LossPolicy::Fallback`]: the local controller's own proposal. This is what a
//!   Redis-backed limiter does when each process falls back to its full local limit on a
//!   Redis failure: the fleet admits up to `N×` the bound.
//! - [`LossPolicy::Hybrid`] (ours): freeze until the lease expires, then a conservative
//!   share `min(grant, bound/N̂)`, where `N̂` is the last membership the coordinator
//!   published, raised by any gate seen alive since, and lowered only when a gate is
//!   positively known dead ([`GrantKeeper::confirm_dead`]).
//!
//! In every mode but `Fallback`, without a fresh price the gate's cap never rises from one
//! decision to the next.
//!
//! # The invariant
//!
//! The coordinator's contract: at every instant, the grants it has outstanding sum to at
//! most the bound, counting a gate whose lease has expired (and which is not known dead)
//! at `min(grant, bound/M)`, its hybrid share. Under it, Σ admitted ≤ bound holds for
//! `Freeze` and `Hybrid` through a loss of the coordinator of any length: every gate's
//! cap stays at or below its last fresh grant, and those sum to at most the bound. The
//! share is capped by the grant because leases expire at different times: a gate on a
//! small grant whose lease expires first must not rise to `bound/N̂` while a gate on a large
//! grant still holds it (grants 90 and 10 of 100, shares 50: 140 without the cap). Where
//! the coordinator is alive but partitioned from one gate, it may hand that gate's
//! capacity above `min(grant, bound/M)` to others once the lease expires: `Hybrid` stays
//! under the bound there and `Freeze` does not (tests below).
//!
//! # The learning period
//!
//! After a failover the coordinator may have lost what it granted, while gates still hold
//! their old leases. On the first fresh price after any decision without one, the gate
//! enters a learning period of one lease length during which its cap is
//! `min(new grant, what it held)`, the cap of its last decision without a fresh price
//! (YouTube's Doorman has the server's "learning mode" for one lease length after a
//! failover; this is the gate's side of it). So the sum of what every gate still believes
//! it holds never exceeds the bound: each gate is at or below what it held. A grant from a
//! new coordinator epoch starts the period too, with the cap of the previous decision as
//! what it held: a failover faster than the failure detector leaves no decision without a
//! fresh price. After one lease length every old lease has expired and every reachable
//! gate has renewed.
//!
//! ```
//! use safegate_core::fleet::lease::{Grant, GrantKeeper, KeeperConfig, KeeperInput, LossPolicy, Mode};
//!
//! let cfg = KeeperConfig::new(LossPolicy::Hybrid, 100.0, 10.0, 4).unwrap();
//! let mut k = GrantKeeper::new(cfg);
//! let grant = Some(Grant { limit: 40.0, expires: 10.0, members: 4, epoch: 0 });
//! let d = k.decide(&KeeperInput { now: 1.0, grant, reachable: true, proposal: 60.0 });
//! assert_eq!((d.limit, d.mode), (40.0, Mode::Granted));
//! // The coordinator goes silent: frozen until the lease expires, then bound/N̂ = 25.
//! let d = k.decide(&KeeperInput { now: 5.0, grant, reachable: false, proposal: 60.0 });
//! assert_eq!((d.limit, d.mode), (40.0, Mode::Frozen));
//! let d = k.decide(&KeeperInput { now: 11.0, grant, reachable: false, proposal: 60.0 });
//! assert_eq!((d.limit, d.mode), (25.0, Mode::Share));
//! assert_eq!(k.without_price(), 2);
//! ```

use crate::error::{check, RangeError};

/// What a gate does without a fresh price.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossPolicy {
    /// Hold the last grant, before and after its lease expires.
    Freeze,
    /// The local controller's proposal (the fleet admits up to `N×` the bound).
    Fallback,
    /// Hold the last grant until it expires, then `min(grant, bound/N̂)`.
    Hybrid,
}

/// A grant from the coordinator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grant {
    /// The limit granted to this gate, in the units of the fleet's bound. A value that is
    /// NaN or negative reads as 0.
    pub limit: f64,
    /// When the lease expires \[s\]; valid while `now < expires` (NaN: expired).
    pub expires: f64,
    /// The fleet's size `M` in the coordinator's last membership (0 reads as 1).
    pub members: u32,
    /// The coordinator's epoch (a generation number that changes on every failover): a
    /// grant from a new epoch starts the learning period even if the gate never noticed
    /// the coordinator was gone.
    pub epoch: u64,
}

/// A keeper's constants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeeperConfig {
    /// The policy without a fresh price.
    pub policy: LossPolicy,
    /// The fleet's bound: Σ admitted over all gates must stay at or below it.
    pub bound: f64,
    /// The coordinator's lease length \[s\]: the learning period's length.
    pub lease: f64,
    /// Whether to apply the learning period (on by default; off only to show what it
    /// prevents).
    pub learning: bool,
    /// `N̂` before the first grant: the fleet size the gate assumes when it has never heard
    /// from the coordinator.
    pub initial_members: u32,
}

impl KeeperConfig {
    /// A configuration with the learning period on: `bound` finite and ≥ 0, `lease` in
    /// `[1e-9, 1e9]` seconds, `initial_members` ≥ 1.
    pub fn new(policy: LossPolicy, bound: f64, lease: f64, initial_members: u32) -> Result<Self, RangeError> {
        check::non_negative("bound", bound)?;
        check::seconds("lease", lease)?;
        check::within("initial_members", initial_members as f64, 1.0, f64::MAX, "[1, ∞)")?;
        Ok(Self { policy, bound, lease, learning: true, initial_members })
    }
}

/// One decision's inputs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeeperInput {
    /// Now \[s\]. A `now` that is not finite counts every lease as expired and every
    /// learning period as running (the conservative reading of each).
    pub now: f64,
    /// The latest grant received, if any (it may be stale).
    pub grant: Option<Grant>,
    /// Whether the coordinator is reachable: its failure detector does not suspect it.
    pub reachable: bool,
    /// The local adaptive controller's proposal, in the bound's units. NaN or negative
    /// reads as 0; `+∞` means no local limit.
    pub proposal: f64,
}

/// The mode a decision was taken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Fresh price: `min(grant, proposal)`.
    Granted,
    /// Fresh price in the learning period: `min(grant, held, proposal)`.
    Learning,
    /// No fresh price, lease still valid: the last grant (`Freeze`, `Hybrid`).
    Frozen,
    /// No fresh price, lease expired, still holding the grant (`Freeze`).
    HeldExpired,
    /// No fresh price, lease expired: `min(grant, bound/N̂)` (`Hybrid`).
    Share,
    /// No fresh price: the local proposal (`Fallback`).
    Fallback,
    /// Never a grant: `bound/N̂` with `N̂` the initial membership (`Freeze`, `Hybrid`).
    Bootstrap,
}

impl Mode {
    /// Every mode, in the order of [`GrantKeeper::counts`].
    pub const ALL: [Mode; 7] =
        [Mode::Granted, Mode::Learning, Mode::Frozen, Mode::HeldExpired, Mode::Share, Mode::Fallback, Mode::Bootstrap];

    /// Whether decisions in this mode had a fresh price.
    pub fn fresh(self) -> bool {
        matches!(self, Mode::Granted | Mode::Learning)
    }

    /// The mode's name, for metrics labels.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Granted => "granted",
            Mode::Learning => "learning",
            Mode::Frozen => "frozen",
            Mode::HeldExpired => "held-expired",
            Mode::Share => "share",
            Mode::Fallback => "fallback",
            Mode::Bootstrap => "bootstrap",
        }
    }

    /// The mode's position in [`Mode::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One decision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeeperDecision {
    /// The admission limit to apply, in the bound's units (≥ 0; `+∞` only under
    /// `Fallback` with an unlimited proposal).
    pub limit: f64,
    /// The mode it was taken in.
    pub mode: Mode,
    /// The policy's cap before the proposal is applied (`limit = min(cap, proposal)`).
    pub cap: f64,
    /// `N̂`, the conservative count of live gates.
    pub members: u32,
}

/// A gate's loss-of-price state machine (see the module's documentation).
#[derive(Debug, Clone)]
pub struct GrantKeeper {
    cfg: KeeperConfig,
    members: u32,
    /// Whether the previous decision had a fresh price (`None` before the first).
    last_fresh: Option<bool>,
    /// The cap of the previous decision.
    held: f64,
    /// The coordinator epoch of the last fresh grant.
    epoch: Option<u64>,
    /// The learning period: its end and the cap it keeps to.
    learning_until: f64,
    learning_cap: f64,
    counts: [u64; 7],
}

/// A proposal or a limit as a usable number: NaN and negatives read as 0.
fn clean(x: f64) -> f64 {
    if x >= 0.0 {
        x
    } else {
        0.0
    }
}

impl GrantKeeper {
    /// A keeper that has not decided yet.
    pub fn new(cfg: KeeperConfig) -> Self {
        Self {
            cfg,
            members: cfg.initial_members.max(1),
            last_fresh: None,
            epoch: None,
            held: f64::INFINITY,
            learning_until: f64::NEG_INFINITY,
            learning_cap: f64::INFINITY,
            counts: [0; 7],
        }
    }

    /// Its constants.
    pub fn config(&self) -> &KeeperConfig {
        &self.cfg
    }

    /// `N̂`: the last membership the coordinator published, raised by gates seen alive
    /// since, lowered only by [`confirm_dead`](Self::confirm_dead).
    pub fn members(&self) -> u32 {
        self.members
    }

    /// This many gates are seen alive now (by gossip, by the orchestrator): `N̂` never
    /// stays below it.
    pub fn see_alive(&mut self, alive: u32) {
        self.members = self.members.max(alive);
    }

    /// `n` gates counted in `N̂` are positively known dead: `N̂` shrinks by `n`, to no fewer
    /// than 1 (this gate).
    pub fn confirm_dead(&mut self, n: u32) {
        self.members = self.members.saturating_sub(n).max(1);
    }

    /// Decisions taken in `mode` so far.
    pub fn count(&self, mode: Mode) -> u64 {
        self.counts[mode.index()]
    }

    /// Decisions per mode, in the order of [`Mode::ALL`].
    pub fn counts(&self) -> [u64; 7] {
        self.counts
    }

    /// Decisions taken without a fresh price.
    pub fn without_price(&self) -> u64 {
        Mode::ALL.iter().filter(|m| !m.fresh()).map(|&m| self.count(m)).sum()
    }

    /// Whether the learning period runs at `now` (NaN: it does).
    fn learning_at(&self, now: f64) -> bool {
        !(now >= self.learning_until)
    }

    /// The grant as this gate may use it at `now`: capped by the learning period's cap
    /// while it runs.
    fn usable(&self, limit: f64, now: f64) -> f64 {
        if self.learning_at(now) {
            limit.min(self.learning_cap)
        } else {
            limit
        }
    }

    /// The limit to apply now, and the mode.
    pub fn decide(&mut self, input: &KeeperInput) -> KeeperDecision {
        let now = input.now;
        let proposal = clean(input.proposal);
        let grant = input.grant.map(|g| Grant { limit: clean(g.limit), members: g.members.max(1), ..g });
        // NaN `now` or `expires`: the compare is false, the lease reads as expired.
        let lease_valid = grant.is_some_and(|g| now < g.expires);
        let fresh = input.reachable && lease_valid;
        let (cap, mode) = match grant {
            Some(g) if fresh => {
                self.members = g.members;
                let new_epoch = self.epoch.is_some_and(|e| e != g.epoch);
                self.epoch = Some(g.epoch);
                if self.cfg.learning && (self.last_fresh == Some(false) || new_epoch) {
                    self.learning_until = now + self.cfg.lease;
                    self.learning_cap = self.held;
                }
                let cap = self.usable(g.limit, now);
                (cap, if self.learning_at(now) && self.cfg.learning { Mode::Learning } else { Mode::Granted })
            }
            _ => {
                let (cap, mode) = match (self.cfg.policy, grant) {
                    (LossPolicy::Fallback, _) => (proposal, Mode::Fallback),
                    (_, None) => (self.share(), Mode::Bootstrap),
                    (_, Some(g)) if lease_valid => (self.usable(g.limit, now), Mode::Frozen),
                    (LossPolicy::Freeze, Some(g)) => (self.usable(g.limit, now), Mode::HeldExpired),
                    (LossPolicy::Hybrid, Some(g)) => (self.usable(g.limit, now).min(self.share()), Mode::Share),
                };
                // Without a fresh price the cap never rises (Fallback excepted: it is the
                // unsafe baseline and follows its proposal).
                let cap = if mode != Mode::Fallback && self.last_fresh.is_some() { cap.min(self.held) } else { cap };
                (cap, mode)
            }
        };
        self.held = cap;
        self.last_fresh = Some(fresh);
        self.counts[mode.index()] += 1;
        KeeperDecision { limit: cap.min(proposal), mode, cap, members: self.members }
    }

    /// `bound/N̂`.
    fn share(&self) -> f64 {
        self.cfg.bound / self.members as f64
    }
}

#[cfg(test)]
#[path = "lease_tests.rs"]
mod tests;
