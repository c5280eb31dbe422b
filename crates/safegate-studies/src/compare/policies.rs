//! The policies `compare` runs: [`PolicySpec`]s of the core's registry, built for a pool.

use safegate_core::controllers::{ControllerKind, PolicyBase, PolicySpec, PolicySpecError, Setting};
use safegate_core::Policy;

use safegate_sim::config::Config;

/// The policies run by default, in report order: every base of the registry
/// ([`PolicySpec::all`]'s order), with `+pool` only for `cycle` and `gradient2` (the other
/// limit controllers' `+pool` forms are listed by [`policy_names`] and run on request):
/// `open`, `seed-gate`, `cycle`, `cycle+pool`, `gradient2`, `gradient2+pool`, `vegas`,
/// `aimd`, `envoy-gradient`, `static`, `credits`, `priority-levels`, `sre-throttle`.
pub fn default_policies() -> Vec<PolicySpec> {
    let pooled_by_default = [PolicyBase::Cycle, PolicyBase::Controller(ControllerKind::Gradient2)];
    PolicySpec::all().into_iter().filter(|s| !s.pool() || pooled_by_default.contains(&s.base())).collect()
}

/// Every policy name [`build_policy`] accepts without `+retry-budget` ([`PolicySpec::all`]):
/// `open`, `seed-gate`, `cycle`, `cycle+pool`, every controller, and `+pool` forms of the
/// limit controllers. Any of them also takes a `+retry-budget` suffix.
pub fn policy_names() -> Vec<String> {
    PolicySpec::all().iter().map(PolicySpec::to_string).collect()
}

/// The policy `name` (a [`PolicySpec`]) for a pool like `cfg`'s: `open`, `seed-gate` (θ =
/// 0.7, sensitivity 1), `cycle` (Cyclic Adaptive Regulation, admission only),
/// `cycle+pool` (the same with concurrency capped at the pool's comfortable concurrency
/// C), any of [`safegate_core::controllers::NAMES`] (limit on requests in flight), `<limit
/// controller>+pool` (the limit caps busy executors instead), and a `+retry-budget` suffix
/// on any of them.
pub fn build_policy(name: &str, cfg: &Config) -> Result<Box<dyn Policy + Send>, String> {
    build_spec(&name.parse().map_err(|e: PolicySpecError| e.to_string())?, cfg)
}

/// The policy `spec` for a pool like `cfg`'s (see [`build_policy`]).
pub fn build_spec(spec: &PolicySpec, cfg: &Config) -> Result<Box<dyn Policy + Send>, String> {
    let setting = Setting { capacity: cfg.pool.capacity, executors: cfg.pool.executors, period: cfg.dt };
    let comfortable = cfg.pool.comfortable.round().max(1.0) as u32;
    spec.build(&setting, comfortable).map_err(|e| format!("{spec}: {e}"))
}
