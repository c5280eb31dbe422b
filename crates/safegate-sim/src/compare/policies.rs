//! The policies `compare` runs, by name.

use safegate_core::controllers::{self, Actuator, Setting};
use safegate_core::cycle::{Cycle, CycleConfig};
use safegate_core::{Open, Policy, SeedGate};

use crate::config::Config;

/// The policies run by default, in report order.
pub const DEFAULT_POLICIES: &[&str] = &[
    "open",
    "seed-gate",
    "cycle",
    "cycle+pool",
    "gradient2",
    "gradient2+pool",
    "vegas",
    "aimd",
    "envoy-gradient",
    "static",
    "credits",
    "priority-levels",
    "sre-throttle",
];

/// Every policy name [`build_policy`] accepts: the defaults, `+pool` variants of the limit
/// controllers, and `+retry-budget` on any of them.
pub fn policy_names() -> Vec<String> {
    let mut v: Vec<String> = ["open", "seed-gate", "cycle", "cycle+pool"].iter().map(|s| s.to_string()).collect();
    for n in controllers::NAMES {
        v.push(n.to_string());
        if LIMIT_CONTROLLERS.contains(n) {
            v.push(format!("{n}+pool"));
        }
    }
    v
}

/// `cycle+pool` steers the queue toward this share of capacity (just under the seed's θ): work
/// stored for the next dip, and the scar of an overshoot repaid.
pub const CYCLE_POOL_QUEUE_TARGET: f64 = 0.6;

const LIMIT_CONTROLLERS: &[&str] = &["gradient2", "vegas", "aimd", "envoy-gradient", "static"];

/// The policy `name` for a pool like `cfg`'s: `open`, `seed-gate` (θ = 0.7, sensitivity
/// 1), `cycle` (Cyclic Adaptive Regulation, admission only), `cycle+pool` (the same with
/// concurrency capped at the pool's comfortable concurrency C), any of
/// [`controllers::NAMES`] (limit on requests in flight), `<limit controller>+pool` (the
/// limit caps busy executors instead), and a `+retry-budget` suffix on any of them.
pub fn build_policy(name: &str, cfg: &Config) -> Result<Box<dyn Policy + Send>, String> {
    if let Some(inner) = name.strip_suffix("+retry-budget") {
        let p = build_policy(inner, cfg)?;
        return Ok(controllers::with_retry_budget(p, &setting(cfg)));
    }
    let comfortable = cfg.pool.comfortable.round().max(1.0) as u32;
    let p: Box<dyn Policy + Send> = match name {
        "open" => Box::new(Open),
        "seed-gate" => Box::new(SeedGate::new(0.7, 1.0).map_err(|e| e.to_string())?),
        "cycle" => Box::new(Cycle::new(CycleConfig::default()).map_err(|e| e.to_string())?),
        "cycle+pool" => Box::new(
            Cycle::new(CycleConfig {
                concurrency: Some(comfortable),
                queue_target: Some(CYCLE_POOL_QUEUE_TARGET),
                ..CycleConfig::default()
            })
            .map_err(|e| e.to_string())?,
        ),
        other => {
            let (base, actuator) = match other.strip_suffix("+pool") {
                Some(b) if LIMIT_CONTROLLERS.contains(&b) => (b, Actuator::Executors),
                Some(_) => return Err(format!("{other:?}: +pool applies to {}", LIMIT_CONTROLLERS.join(", "))),
                None => (other, Actuator::InFlight),
            };
            controllers::build(base, actuator, &setting(cfg))
                .map_err(|_| format!("unknown policy {other:?}: known are {}", policy_names().join(", ")))?
        }
    };
    Ok(p)
}

fn setting(cfg: &Config) -> Setting {
    Setting { capacity: cfg.pool.capacity, executors: cfg.pool.executors, period: cfg.dt }
}
