//! Nominal controllers: the adaptive limiters and admission controllers people deploy today.
//!
//! Each is a [`Policy`](crate::Policy) over the same [`Observation`](crate::Observation), so
//! any of them can run alone in the simulator, under the safety filter
//! ([`crate::safety::SafetyFilter`]), or behind a tower layer. They differ in the signal they
//! read and in what they actuate.
//!
//! | name | type | source | signal | actuator | defaults |
//! |---|---|---|---|---|---|
//! | `gradient2` | [`Gradient2`] | Netflix concurrency-limits `Gradient2Limit` | long-EWMA vs window RTT | [`Actuator`] | limit 20 in [20, 200], smoothing 0.2, tolerance 1.5, queue 4, long window 600 |
//! | `vegas` | [`Vegas`] | Netflix concurrency-limits `VegasLimit` | queue estimate `L·(1 − rtt₀/rtt)` | [`Actuator`] | limit 20 in [1, 1000], α = 3·lg L, β = 6·lg L, probe every 30·L windows |
//! | `aimd` | [`Aimd`] | Netflix concurrency-limits `AIMDLimit` | drop (full backlog) or RTT > timeout | [`Actuator`] | limit 20 in [20, 200], backoff 0.9, timeout 5 s |
//! | `envoy-gradient` | [`EnvoyGradient`] | Envoy adaptive concurrency filter, gradient controller | window mean RTT vs periodic minRTT | [`Actuator`] | update 0.1 s, minRTT every 60 s over 50 requests at concurrency 3, buffer 25 %, max 1000, no jitter |
//! | `static` | [`StaticLimit`] | tower `ConcurrencyLimit` | none | [`Actuator`] | 20 in flight (executors: the pool size) |
//! | `peak` | [`Peak`] | this project (throughput hill climb; see [`peak`]) | delivered rate `Δcompleted/Δt` while saturated, per limit | [`Actuator`] | start 8 in [1, 1000] (executors: [1, pool]), slow start ×2, then probes ±10 % on a geometric grid, tolerance 3 %, trials of 2 periods (hold 4) and ≥ 32 completions, bins forgotten after 3 s |
//! | `credits` | [`Credits`] | Breakwater (Cho et al., OSDI 2020) | oldest request's queueing delay | admission only | target 0.2 s, +1 credit/update, β = 0.02, factor ≥ 0.5, overcommit 1 |
//! | `priority-levels` | [`PriorityLevels`] | DAGOR (Zhou et al., SoCC 2018) | mean queueing time | admission only (per-request levels) | 128 × 128 levels, threshold 20 ms, α = 5 %, β = 1 %, window 1 s or 2000 requests |
//! | `sre-throttle` | [`SreThrottle`] | Google SRE book, "Handling Overload" | requests vs accepts | admission only | K = 2, window 120 s |
//! | (wrapper) | [`RetryBudget`] | Finagle `RetryBudget` | retries vs fresh requests | sheds retries | 20 % of fresh requests + 10 retries/s over a 10 s TTL |
//! | `cycle` (a [`PolicyBase`], not a [`ControllerKind`]) | [`Cycle`] | the seed's Cyclic Adaptive Regulation: BBR ProbeBW gains ([`probe`]) on a windowed-max rate | delivered rate, IMM regime detector | admission (and an optional fixed executor cap) | round 1 s, window 10 rounds, probe abort γ = 0.5 |
//!
//! # Two actuators for one limit
//!
//! A concurrency-limit algorithm produces a limit `L`; [`Actuator`] says what it caps.
//! - [`Actuator::InFlight`] (the default; tower's and Netflix's server-side semantics): `L`
//!   caps requests in the system. A new arrival is admitted while `queue + 1 ≤ L`, so the
//!   action's `admit` is 1 or 0, decided afresh at every call from the current queue (a
//!   semaphore). The signal is latency, time in system: `Δlatency_total / Δcompleted`.
//! - [`Actuator::Executors`]: `L` caps busy executors (`concurrency: Some(L)`) and admission
//!   stays open. The signal is service time, `(Δlatency_total − Δwait_total) / Δcompleted`,
//!   which rises only from contention once more than `C` executors run (the seed's `(C/n)²`
//!   slowdown, crates/safegate-sim/src/model.rs), so a latency limiter on executors looks
//!   for the top of the service curve rather than for an empty queue.
//!
//! Controllers that admit a fraction of traffic rather than holding a limit (`credits`,
//! `priority-levels`, `sre-throttle`) ignore the actuator.
//!
//! # Adapting the defaults to a setting
//!
//! The table's defaults are the sources'. [`ControllerKind::build`] (through each
//! `…Config::for_setting`) adapts them to a [`Setting`]: every controller updates at most
//! once per [`Setting::period`]; in flight, a limit's maximum is at most the capacity; on
//! executors a limit lives in `[1, executors]` and starts at `executors` (no cap beyond the
//! pool's own; both through [`Setting::limits`]), and two sources' constants, made for
//! limits of tens to hundreds, are replaced where they cannot work on a pool of 8:
//! Gradient2 grows by `max(1, ⌊log₁₀ L⌋)` (Netflix `Log10RootFunction`) instead of 4, and
//! Vegas uses TCP Vegas's α = 2, β = 4 instead of 3 and 6 (the reasons are in [`gradient2`]
//! and [`vegas`]). `static` on executors is the pool size; credits' pool lives between the
//! executor count and the capacity.
//!
//! # Windows, not samples
//!
//! The Netflix and Envoy limiters update per request sample or per window of samples; an
//! [`Observation`](crate::Observation) carries cumulative sums instead, so every controller
//! here works on windows: at most one update per [`Setting::period`] (and for the Netflix
//! limiters only once the window holds `min_samples` completions, Netflix `WindowedLimit`'s
//! `windowSize = 10`), with the window's mean latency standing in for a sample. The three
//! Netflix limiters are one [`Windowed`] decorator (Netflix `WindowedLimit`) around their
//! update rules ([`Gradient2Limit`], [`VegasLimit`], [`AimdLimit`], each a
//! [`LimitAlgorithm`]). Between update instants a controller repeats its state (the
//! actuator asks at every arrival and every tick). Nothing here draws random numbers:
//! where a source jitters (Vegas probes, Envoy's minRTT interval) the jitter is removed and
//! said so.
//!
//! # The registry
//!
//! The table below the imports is the one list of controllers: each row declares the
//! controller's module and generates its [`ControllerKind`] variant, its name (parsed,
//! printed, listed in [`NAMES`] and [`ControllerKind::ALL`]), whether it holds a limit,
//! and its build. Adding a controller is its own file and one row
//! (`docs/adding-a-controller.md`). A [`PolicySpec`] composes a base (`open`, `seed-gate`,
//! `cycle` or a controller) with `+pool` and `+retry-budget`, as `safegate compare` runs
//! them.
//!
//! ```
//! use safegate_core::controllers::{build, Actuator, ControllerKind, PolicySpec, Setting};
//! use safegate_core::{Observation, Policy};
//!
//! let setting = Setting::default(); // capacity 200, 8 executors, period 0.05 s
//! for &kind in ControllerKind::ALL {
//!     let mut p = kind.build(Actuator::Executors, &setting);
//!     let a = p.decide(&Observation::new(0.0, 10.0, 200.0));
//!     assert!((0.0..=1.0).contains(&a.admit));
//!     assert_eq!(kind.name().parse::<ControllerKind>(), Ok(kind));
//! }
//! assert!(build("cycle", Actuator::InFlight, &setting).is_err());
//! let spec: PolicySpec = "gradient2+pool+retry-budget".parse().unwrap();
//! assert_eq!(spec.build(&setting, 4).unwrap().name(), "gradient2");
//! ```

mod actuator;
mod checks;
pub mod cycle;
pub mod probe;
mod registry;
pub mod retry_budget;
#[cfg(test)]
pub(crate) mod testing;
mod window;

use self::registry::registry;

registry! {
    // variant     => name,              module,          policy,         config,               holds
    Gradient2      => "gradient2",       gradient2,       Gradient2,      Gradient2Config,      limit;
    Vegas          => "vegas",           vegas,           Vegas,          VegasConfig,          limit;
    Aimd           => "aimd",            aimd,            Aimd,           AimdConfig,           limit;
    EnvoyGradient  => "envoy-gradient",  envoy_gradient,  EnvoyGradient,  EnvoyGradientConfig,  limit;
    Static         => "static",          static_limit,    StaticLimit,    StaticConfig,         limit;
    Peak           => "peak",            peak,            Peak,           PeakConfig,           limit;
    Credits        => "credits",         credits,         Credits,        CreditsConfig,        admission;
    PriorityLevels => "priority-levels", priority_levels, PriorityLevels, PriorityLevelsConfig, admission;
    SreThrottle    => "sre-throttle",    sre_throttle,    SreThrottle,    SreThrottleConfig,    admission;
}

pub use actuator::{Actuator, Setting};
pub use aimd::AimdLimit;
pub(crate) use checks::{check_limits, log10_root, whole};
pub use cycle::{Cycle, CycleConfig, RoundRecord};
pub use gradient2::{Gradient2Limit, QueueSize};
pub use priority_levels::Priority;
pub use registry::{build, PolicyBase, PolicySpec, PolicySpecError, UnknownController, CYCLE_POOL_QUEUE_TARGET};
pub use retry_budget::{with_retry_budget, RetryBudget, RetryBudgetConfig};
pub use vegas::VegasLimit;
pub(crate) use window::{Counters, Sampler, Ticker, Window};
pub use window::{LimitAlgorithm, WindowSample, Windowed};
