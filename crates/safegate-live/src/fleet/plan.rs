//! A fleet run's settings, their checks, and how a gate process is started.

use std::ffi::OsString;
use std::path::PathBuf;

use safegate_core::fleet::lease::LossPolicy;

use crate::coord::PriceConfig;

/// The price's default gain at a bound of `capacity` \[req/s\]. Kelly's update moves the
/// admitted total by `γ · Σw/p²` per unit of excess, and at the fair price `p* = Σw/c`
/// that is `γ·c²/Σw`: the same loop gain at every bound takes `γ ∝ 1/c²`. 22.5 is
/// `10⁻³ · 150²`, the gain measured in docs/fleet.md §The price over Redis.
pub fn default_gamma(capacity: f64) -> f64 {
    22.5 / (capacity * capacity)
}

/// The coordinator's price settings for a bound of `capacity`.
pub(crate) fn price_config(capacity: f64, gamma: f64, lease_ms: u64) -> PriceConfig {
    PriceConfig { capacity, gamma, lease_ms, max_step_ms: 500 }
}

/// How [`play`](super::play) starts one gate process: `program` with `args` first (the
/// `safegate` executable and its `fleet-gate` subcommand), then the gate's own flags
/// (`--redis`, `--id`, `--demand`, `--downstream`, `--mode`, `--capacity`, `--lease-ms`,
/// `--refresh-ms`, `--gamma`, `--seed`, `--members`), which the program hands to
/// [`gate`](super::gate).
#[derive(Debug, Clone)]
pub struct GateCommand {
    /// The executable.
    pub program: PathBuf,
    /// Its arguments before the gate's flags.
    pub args: Vec<OsString>,
}

/// A fleet run's settings: what `safegate fleet` and `safegate serve`'s fleet view start.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Gate processes.
    pub nodes: u32,
    /// The coordination Redis; `None` starts a private redis-server (needed for an outage).
    pub redis: Option<String>,
    /// The fleet's bound \[req/s\].
    pub capacity: f64,
    /// Total demand over all gates, split equally \[req/s\].
    pub demand: f64,
    /// Wall seconds to run.
    pub secs: f64,
    /// What each gate does when the price goes silent.
    pub mode: LossPolicy,
    /// Lease of a grant \[ms\].
    pub lease_ms: u64,
    /// Refresh interval of each gate \[ms\].
    pub refresh_ms: u64,
    /// The price's gain γ.
    pub gamma: f64,
    /// Stop the private Redis at `.0` seconds for `.1` seconds.
    pub outage: Option<(f64, f64)>,
}

/// Shortest coordinator outage \[s\] a run's summary can measure.
pub const MIN_OUTAGE_SECS: f64 = 2.0;

impl Plan {
    /// Every value in range; the error starts with the setting's name as the plan spells
    /// it (`nodes 0: …`, `lease_ms …`).
    pub fn check(&self) -> Result<(), String> {
        use safegate_core::error::number;
        if !(1..=64).contains(&self.nodes) {
            return Err(format!("nodes {}: expected 1 to 64", self.nodes));
        }
        if !(self.capacity > 0.0 && self.capacity <= 1e5) {
            return Err(format!("capacity {}: expected (0, 100000] req/s", number(self.capacity)));
        }
        if !(self.secs > 0.0 && self.secs <= 3600.0) {
            return Err(format!("secs {}: expected (0, 3600]", number(self.secs)));
        }
        if !(0.0..=1e6).contains(&self.demand) {
            return Err(format!("demand {}: expected [0, 1e6] req/s", number(self.demand)));
        }
        price_config(self.capacity, self.gamma, self.lease_ms).check().map_err(|e| e.to_string())?;
        if !(10..=60_000).contains(&self.refresh_ms) {
            return Err(format!("refresh_ms {}: expected 10 to 60000", self.refresh_ms));
        }
        if let Some((a, b)) = self.outage {
            // The summary skips the outage's first second (leases granted before still
            // hold) and needs a whole second after it, and one after the return: a shorter
            // window gives its verdict on no sample at all.
            if !(a >= 0.0 && b >= MIN_OUTAGE_SECS && a + b + 1.0 <= self.secs) {
                let (a, b, secs) = (number(a), number(b), number(self.secs));
                return Err(format!(
                    "outage {a}:{b}: expected 0 ≤ START, LEN ≥ {MIN_OUTAGE_SECS} (the first second is skipped, the summary needs one more), START + LEN ≤ secs {secs} − 1 (a second after the return)"
                ));
            }
            if self.redis.is_some() {
                return Err("outage: it stops the private Redis, so it cannot be combined with --redis".into());
            }
        }
        Ok(())
    }
}

/// `START:LEN` in seconds; the error starts with `outage`.
pub fn parse_outage(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = s.split_once(':').ok_or_else(|| format!("outage {s:?}: expected START:LEN in seconds"))?;
    let num = |v: &str, what: &str| {
        v.trim().parse::<f64>().map_err(|_| format!("outage {s:?}: {what} {v:?} is not a number"))
    };
    Ok((num(a, "START")?, num(b, "LEN")?))
}
