//! The admission-control stacks compared: each a boxed, cloneable tower service over a
//! fresh backend, every clone sharing the one limiter's state (the generator hands each
//! request its own clone).
//!
//! Every limiter that waits for capacity in `poll_ready` (tower's `ConcurrencyLimit`,
//! tower-acc's `ConcurrencyLimit`, tower-resilience-adaptive's `AdaptiveService`) is put
//! under tower's `LoadShed`, so that it sheds when at its limit instead of queueing: all
//! stacks then answer an excess request at once, as safegate's layer does in reject mode.
//! None of the peers sheds by itself: tower-acc only waits, and tower-resilience-adaptive's
//! `LimitReached` comes only from a closed semaphore.

use safegate_core::controllers::ControllerKind;
use safegate_tower::{AdmissionLayer, BoxError};
use tower::limit::ConcurrencyLimitLayer;
use tower::load_shed::LoadShedLayer;
use tower::util::BoxCloneService;
use tower::Layer;

use super::backend::Backend;
use crate::error::{Error, Result};

/// A stack as the generator calls it.
pub(crate) type Stack = BoxCloneService<(), (), BoxError>;

/// A look at safegate's layer while it runs: its limit in force now.
pub(crate) type LimitProbe = Box<dyn Fn() -> u32 + Send>;

/// The limit of `tower-limit-loose`, and the most requests in service every adaptive
/// stack allows (safegate's `max_concurrency`, the peers' `max_limit`).
pub const LOOSE_LIMIT: usize = 256;

/// Why a peer stack has no row of figures.
pub const NOT_BUILT: &str = "not built (build with --features peers)";

/// Whether the peer stacks are built (the feature `peers`).
pub const PEERS_BUILT: bool = cfg!(feature = "peers");

/// One stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StackKind {
    /// The backend alone.
    None,
    /// `LoadShed<ConcurrencyLimit>` at the backend's best fixed limit.
    TowerOracle,
    /// `LoadShed<ConcurrencyLimit>` at [`LOOSE_LIMIT`].
    TowerLoose,
    /// `LoadShed<ConcurrencyLimit>` at this fixed limit (`tower-limit-N`; the PostgreSQL
    /// scenarios' oracle is the best of a sweep of these).
    TowerFixed(usize),
    /// A peer limiter (the feature `peers`).
    Peer(Peer),
    /// safegate's layer with this controller; `None` is the builder's default.
    Safegate(Option<ControllerKind>),
}

/// The peer limiters, each with its crate's default constants and `max_limit` 256.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peer {
    AccVegas,
    AccGradient2,
    AccAimd,
    ResilienceVegas,
}

impl Peer {
    const ALL: [Peer; 4] = [Peer::AccVegas, Peer::AccGradient2, Peer::AccAimd, Peer::ResilienceVegas];

    fn name(self) -> &'static str {
        match self {
            Peer::AccVegas => "acc-vegas",
            Peer::AccGradient2 => "acc-gradient2",
            Peer::AccAimd => "acc-aimd",
            Peer::ResilienceVegas => "resilience-vegas",
        }
    }
}

impl StackKind {
    /// Every stack, in the order the tables list them: the baselines, the peers, ours.
    pub(crate) fn all() -> Vec<StackKind> {
        let mut v = vec![StackKind::None, StackKind::TowerOracle, StackKind::TowerLoose];
        v.extend(Peer::ALL.map(StackKind::Peer));
        v.push(StackKind::Safegate(None));
        v.extend(ControllerKind::ALL.iter().map(|&k| StackKind::Safegate(Some(k))));
        v
    }

    pub(crate) fn name(self) -> String {
        match self {
            StackKind::None => "none".into(),
            StackKind::TowerOracle => "tower-limit-oracle".into(),
            StackKind::TowerLoose => "tower-limit-loose".into(),
            StackKind::TowerFixed(n) => format!("tower-limit-{n}"),
            StackKind::Peer(p) => p.name().into(),
            StackKind::Safegate(None) => "safegate".into(),
            StackKind::Safegate(Some(k)) => format!("safegate-{k}"),
        }
    }

    pub(crate) fn parse(name: &str) -> Option<StackKind> {
        if let Some(n) = name.strip_prefix("tower-limit-").and_then(|n| n.parse::<usize>().ok()) {
            return (1..=1_000_000).contains(&n).then_some(StackKind::TowerFixed(n));
        }
        StackKind::all().into_iter().find(|k| k.name() == name)
    }

    pub(crate) fn is_peer(self) -> bool {
        matches!(self, StackKind::Peer(_))
    }

    /// Whether this build has the stack (the peers need the feature `peers`).
    pub(crate) fn is_built(self) -> bool {
        !self.is_peer() || PEERS_BUILT
    }

    /// The stack over `backend`; `oracle` is the backend's best fixed limit. `Ok(None)` for
    /// a peer this build lacks. safegate's stacks come with a probe of their limit.
    pub(crate) fn build(self, backend: Backend, oracle: usize) -> Result<Option<(Stack, Option<LimitProbe>)>> {
        let shed_limit = |n: usize| {
            BoxCloneService::new(LoadShedLayer::new().layer(ConcurrencyLimitLayer::new(n).layer(backend.clone())))
        };
        Ok(Some((
            match self {
                StackKind::None => BoxCloneService::new(backend),
                StackKind::TowerOracle => shed_limit(oracle),
                StackKind::TowerLoose => shed_limit(LOOSE_LIMIT),
                StackKind::TowerFixed(n) => shed_limit(n),
                StackKind::Safegate(kind) => {
                    // Reject mode and the default boundary are the builder's defaults.
                    let b = AdmissionLayer::builder().max_concurrency(LOOSE_LIMIT as u32);
                    let b = match kind {
                        Some(k) => b.controller(k),
                        None => b,
                    };
                    let layer =
                        b.build().map_err(|e| Error::failed(format!("building the {} stack", self.name()), e))?;
                    let probe = layer.clone();
                    let probe: LimitProbe = Box::new(move || probe.snapshot().limit);
                    return Ok(Some((BoxCloneService::new(layer.layer(backend)), Some(probe))));
                }
                StackKind::Peer(p) => match peer(p, backend)? {
                    Some(s) => s,
                    None => return Ok(None),
                },
            },
            None,
        )))
    }
}

/// A peer limiter over `backend`, under `LoadShed` (none of them sheds by itself).
///
/// Sharing: tower-acc's `ConcurrencyLimit` and tower-resilience-adaptive's
/// `AdaptiveService` are `Clone`, and their clones share the limiter (the algorithm and the
/// semaphore behind an `Arc`; each clone has only its own pending acquire), so one layer
/// call and a clone per request is one limiter instance. (tower-resilience-adaptive's
/// layer makes a new semaphore on each `layer` call, so the stack is layered once.)
#[cfg(feature = "peers")]
fn peer(p: Peer, backend: Backend) -> Result<Option<Stack>> {
    let max = LOOSE_LIMIT;
    let shed = LoadShedLayer::new();
    Ok(Some(match p {
        Peer::AccVegas => {
            let alg = tower_acc::Vegas::builder().max_limit(max).build();
            BoxCloneService::new(shed.layer(tower_acc::ConcurrencyLimitLayer::new(alg).layer(backend)))
        }
        Peer::AccGradient2 => {
            let alg = tower_acc::Gradient2::builder().max_limit(max).build();
            BoxCloneService::new(shed.layer(tower_acc::ConcurrencyLimitLayer::new(alg).layer(backend)))
        }
        Peer::AccAimd => {
            let alg = tower_acc::Aimd::builder().max_limit(max).build();
            BoxCloneService::new(shed.layer(tower_acc::ConcurrencyLimitLayer::new(alg).layer(backend)))
        }
        Peer::ResilienceVegas => {
            use tower_resilience_adaptive::{AdaptiveLimiterLayer, Vegas};
            let alg = Vegas::builder()
                .max_limit(max)
                .build()
                .map_err(|e| Error::failed("building resilience-vegas", e.to_string()))?;
            BoxCloneService::new(shed.layer(AdaptiveLimiterLayer::new(alg).layer(backend)))
        }
    }))
}

#[cfg(not(feature = "peers"))]
fn peer(_: Peer, _: Backend) -> Result<Option<Stack>> {
    Ok(None)
}

/// The stacks `names` lists (all of them when empty), checked: an unknown name, or a peer
/// this build lacks, is an error naming the field `stacks`.
pub(crate) fn chosen(names: &[String]) -> Result<Vec<StackKind>> {
    if names.is_empty() {
        return Ok(StackKind::all());
    }
    let mut out = Vec::new();
    for name in names {
        let Some(k) = StackKind::parse(name.trim()) else {
            let known: Vec<String> = StackKind::all().into_iter().map(StackKind::name).collect();
            return Err(Error::input(
                "stacks",
                format!(
                    "unknown stack {name:?}; known are {}, and tower-limit-N for N in 1..=1000000",
                    known.join(", ")
                ),
            ));
        };
        if !k.is_built() {
            return Err(Error::input("stacks", format!("{name} is {NOT_BUILT}")));
        }
        if !out.contains(&k) {
            out.push(k);
        }
    }
    Ok(out)
}
