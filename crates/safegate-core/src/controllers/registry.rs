//! The policy registry: [`ControllerKind`], one variant per controller (generated from the
//! table in the module root by [`registry!`]), and [`PolicySpec`], a base policy optionally
//! on the executors (`+pool`) and under a retry budget (`+retry-budget`), as the simulator
//! composes them.

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

use super::{with_retry_budget, Actuator, ControllerKind, Cycle, CycleConfig, Setting};
use crate::policy::Policy;
use crate::{Open, RangeError, SeedGate};

/// Generates the registry from its table, one row per controller:
///
/// ```text
/// Variant => "name", module, Policy, Config, limit | admission;
/// ```
///
/// declares `pub mod module;`, re-exports `module::{Policy, Config}`, and adds the variant
/// `ControllerKind::Variant` with its name, whether it holds a limit, and its build
/// (`Policy::new(Config::for_setting(actuator, &setting))` for a limit controller,
/// `Policy::new(Config::for_setting(&setting))` for an admission controller).
macro_rules! registry {
    ($($variant:ident => $name:literal, $module:ident, $policy:ident, $config:ident, $holds:ident;)*) => {
        $(
            pub mod $module;
            pub use $module::{$config, $policy};
        )*

        /// A controller [`build`] knows: one variant per row of the registry table, in its
        /// order ([`ControllerKind::ALL`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ControllerKind {
            $(
                #[doc = concat!("`", $name, "`: [`", stringify!($policy), "`].")]
                $variant,
            )*
        }

        /// The names of the controllers, in the order of [`ControllerKind::ALL`].
        pub const NAMES: &[&str] = &[$($name),*];

        impl ControllerKind {
            /// Every controller, in the order of the registry table.
            pub const ALL: &'static [ControllerKind] = &[$(ControllerKind::$variant),*];

            /// The controller's name (`"gradient2"`), as it parses and reports.
            pub const fn name(self) -> &'static str {
                match self {
                    $(ControllerKind::$variant => $name,)*
                }
            }

            /// Whether the controller produces a concurrency limit (so an [`Actuator`] applies
            /// and `+pool` puts the limit on the executors); the others admit a fraction.
            pub const fn holds_limit(self) -> bool {
                match self {
                    $(ControllerKind::$variant => registry!(@holds $holds),)*
                }
            }

            /// The controller with its defaults adapted to `setting` and `actuator` (see each
            /// `…Config::for_setting`); controllers without a limit ignore `actuator`. The
            /// setting is [`Setting::sanitized`] first.
            pub fn build(
                self,
                actuator: $crate::controllers::Actuator,
                setting: &$crate::controllers::Setting,
            ) -> Box<dyn $crate::Policy + Send> {
                // Each adapted configuration is valid for a sanitized setting (tested); the
                // fallback to the source defaults only guards against a future change
                // breaking that.
                self.adapted(actuator, &setting.sanitized()).unwrap_or_else(|_| self.with_defaults())
            }

            /// The controller with its configuration's `for_setting`, range-checked.
            fn adapted(
                self,
                actuator: $crate::controllers::Actuator,
                setting: &$crate::controllers::Setting,
            ) -> Result<Box<dyn $crate::Policy + Send>, $crate::RangeError> {
                let p: Box<dyn $crate::Policy + Send> = match self {
                    $(ControllerKind::$variant => {
                        Box::new($policy::new(registry!(@config $holds, $config, actuator, setting))?)
                    })*
                };
                Ok(p)
            }

            /// The controller with its source's defaults.
            fn with_defaults(self) -> Box<dyn $crate::Policy + Send> {
                match self {
                    $(ControllerKind::$variant => {
                        Box::new($policy::new($config::default()).expect("source defaults are valid"))
                    })*
                }
            }
        }
    };
    (@holds limit) => { true };
    (@holds admission) => { false };
    (@config limit, $config:ident, $actuator:ident, $setting:ident) => {
        $config::for_setting($actuator, $setting)
    };
    (@config admission, $config:ident, $actuator:ident, $setting:ident) => {{
        let _ = $actuator;
        $config::for_setting($setting)
    }};
}
pub(super) use registry;

/// A name that is not one of [`NAMES`](super::NAMES).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownController {
    /// The name asked for.
    pub name: String,
}

impl fmt::Display for UnknownController {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown controller {:?}: known are {}", self.name, super::NAMES.join(", "))
    }
}

impl std::error::Error for UnknownController {}

/// So that `TryInto<ControllerKind>` of a [`ControllerKind`] (which cannot fail) and of a
/// name share one error type.
impl From<Infallible> for UnknownController {
    fn from(never: Infallible) -> Self {
        match never {}
    }
}

impl FromStr for ControllerKind {
    type Err = UnknownController;

    fn from_str(name: &str) -> Result<Self, UnknownController> {
        ControllerKind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == name)
            .ok_or_else(|| UnknownController { name: name.to_string() })
    }
}

impl TryFrom<&str> for ControllerKind {
    type Error = UnknownController;

    fn try_from(name: &str) -> Result<Self, UnknownController> {
        name.parse()
    }
}

impl TryFrom<String> for ControllerKind {
    type Error = UnknownController;

    fn try_from(name: String) -> Result<Self, UnknownController> {
        name.parse()
    }
}

impl fmt::Display for ControllerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The controller `name` (one of [`NAMES`](super::NAMES)) built by
/// [`ControllerKind::build`].
pub fn build(name: &str, actuator: Actuator, setting: &Setting) -> Result<Box<dyn Policy + Send>, UnknownController> {
    Ok(name.parse::<ControllerKind>()?.build(actuator, setting))
}

/// `cycle+pool` steers the queue toward this share of capacity (just under the seed's θ):
/// work stored for the next dip, and the scar of an overshoot repaid.
pub const CYCLE_POOL_QUEUE_TARGET: f64 = 0.6;

/// What a [`PolicySpec`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicyBase {
    /// `open`: admit everything ([`Open`]).
    Open,
    /// `seed-gate`: the seed's gate, θ = 0.7, sensitivity 1 ([`SeedGate`]).
    SeedGate,
    /// `cycle`: Cyclic Adaptive Regulation ([`Cycle`]), admission only; with `+pool` its
    /// concurrency is capped at the pool's comfortable concurrency `C` and it steers the
    /// queue toward [`CYCLE_POOL_QUEUE_TARGET`].
    Cycle,
    /// A controller of the registry; with `+pool` a limit controller's limit caps busy
    /// executors ([`Actuator::Executors`]) instead of requests in flight.
    Controller(ControllerKind),
}

impl PolicyBase {
    /// Every base: `open`, `seed-gate`, `cycle`, then the controllers in registry order.
    pub fn all() -> impl Iterator<Item = PolicyBase> {
        [PolicyBase::Open, PolicyBase::SeedGate, PolicyBase::Cycle]
            .into_iter()
            .chain(ControllerKind::ALL.iter().map(|&k| PolicyBase::Controller(k)))
    }

    /// The base's name (`"open"`, `"cycle"`, a controller's name).
    pub const fn name(self) -> &'static str {
        match self {
            PolicyBase::Open => "open",
            PolicyBase::SeedGate => "seed-gate",
            PolicyBase::Cycle => "cycle",
            PolicyBase::Controller(k) => k.name(),
        }
    }

    /// Whether `+pool` applies: the cycle and the controllers that hold a limit.
    pub const fn takes_pool(self) -> bool {
        match self {
            PolicyBase::Open | PolicyBase::SeedGate => false,
            PolicyBase::Cycle => true,
            PolicyBase::Controller(k) => k.holds_limit(),
        }
    }
}

/// A policy as the simulator composes it: a base, optionally on the executors (`+pool`)
/// and under a Finagle retry budget (`+retry-budget`, see [`with_retry_budget`]).
///
/// It parses from and prints as `base[+pool][+retry-budget]`: `gradient2+pool`,
/// `cycle+pool`, `vegas+retry-budget`, `static+pool+retry-budget`.
///
/// ```
/// use safegate_core::controllers::{ControllerKind, PolicyBase, PolicySpec};
///
/// let spec: PolicySpec = "static+pool+retry-budget".parse().unwrap();
/// assert_eq!(spec.base(), PolicyBase::Controller(ControllerKind::Static));
/// assert!(spec.pool() && spec.retry_budget());
/// assert_eq!(spec.to_string(), "static+pool+retry-budget");
/// assert!("credits+pool".parse::<PolicySpec>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PolicySpec {
    base: PolicyBase,
    pool: bool,
    retry_budget: bool,
}

impl PolicySpec {
    /// `base` alone: limits in flight, no retry budget.
    pub const fn new(base: PolicyBase) -> Self {
        Self { base, pool: false, retry_budget: false }
    }

    /// The same on the executors (`+pool`); an error unless the base takes it
    /// ([`PolicyBase::takes_pool`]).
    pub fn with_pool(self) -> Result<Self, PolicySpecError> {
        if self.base.takes_pool() {
            Ok(Self { pool: true, ..self })
        } else {
            Err(PolicySpecError::PoolNotApplicable { name: format!("{}+pool", self.base.name()) })
        }
    }

    /// The same under a retry budget (`+retry-budget`).
    pub const fn with_retry_budget(self) -> Self {
        Self { retry_budget: true, ..self }
    }

    /// What it runs.
    pub const fn base(&self) -> PolicyBase {
        self.base
    }

    /// Whether it runs on the executors (`+pool`).
    pub const fn pool(&self) -> bool {
        self.pool
    }

    /// Whether it runs under a retry budget (`+retry-budget`).
    pub const fn retry_budget(&self) -> bool {
        self.retry_budget
    }

    /// Every spec without a retry budget: each base, followed by its `+pool` form where
    /// that applies (`open`, `seed-gate`, `cycle`, `cycle+pool`, `gradient2`,
    /// `gradient2+pool`, …, `credits`, …). Any of them also takes `+retry-budget`.
    pub fn all() -> Vec<PolicySpec> {
        PolicyBase::all()
            .flat_map(|b| [Some(PolicySpec::new(b)), PolicySpec::new(b).with_pool().ok()])
            .flatten()
            .collect()
    }

    /// The policy for a pool like `setting`, whose comfortable concurrency (where its
    /// service curve peaks; what `cycle+pool` caps) is `comfortable`. Controllers are
    /// built by [`ControllerKind::build`], which never fails; the error is the cycle's or
    /// the gate's configuration being refused.
    pub fn build(&self, setting: &Setting, comfortable: u32) -> Result<Box<dyn Policy + Send>, RangeError> {
        let p: Box<dyn Policy + Send> = match self.base {
            PolicyBase::Open => Box::new(Open),
            PolicyBase::SeedGate => Box::new(SeedGate::new(0.7, 1.0)?),
            PolicyBase::Cycle if self.pool => Box::new(Cycle::new(CycleConfig {
                concurrency: Some(comfortable),
                queue_target: Some(CYCLE_POOL_QUEUE_TARGET),
                ..CycleConfig::default()
            })?),
            PolicyBase::Cycle => Box::new(Cycle::new(CycleConfig::default())?),
            PolicyBase::Controller(k) => {
                k.build(if self.pool { Actuator::Executors } else { Actuator::InFlight }, setting)
            }
        };
        Ok(if self.retry_budget { with_retry_budget(p, setting) } else { p })
    }
}

impl From<PolicyBase> for PolicySpec {
    fn from(base: PolicyBase) -> Self {
        Self::new(base)
    }
}

impl From<ControllerKind> for PolicySpec {
    fn from(kind: ControllerKind) -> Self {
        Self::new(PolicyBase::Controller(kind))
    }
}

impl fmt::Display for PolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.base.name())?;
        if self.pool {
            f.write_str("+pool")?;
        }
        if self.retry_budget {
            f.write_str("+retry-budget")?;
        }
        Ok(())
    }
}

impl FromStr for PolicySpec {
    type Err = PolicySpecError;

    fn from_str(s: &str) -> Result<Self, PolicySpecError> {
        let (rest, retry_budget) = s.strip_suffix("+retry-budget").map_or((s, false), |r| (r, true));
        let (name, pool) = rest.strip_suffix("+pool").map_or((rest, false), |b| (b, true));
        let base = PolicyBase::all().find(|b| b.name() == name);
        let spec = match (base, pool) {
            (Some(b), false) => PolicySpec::new(b),
            (Some(b), true) => PolicySpec::new(b).with_pool()?,
            (None, true) => return Err(PolicySpecError::PoolNotApplicable { name: rest.to_string() }),
            (None, false) => return Err(PolicySpecError::Unknown { name: s.to_string() }),
        };
        Ok(if retry_budget { spec.with_retry_budget() } else { spec })
    }
}

/// A string that is not a [`PolicySpec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicySpecError {
    /// Not a known base.
    Unknown {
        /// The string given.
        name: String,
    },
    /// `+pool` on a base that holds no limit (`credits+pool`, `open+pool`).
    PoolNotApplicable {
        /// The string given, up to `+pool`.
        name: String,
    },
}

impl fmt::Display for PolicySpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicySpecError::Unknown { name } => {
                let known: Vec<String> = PolicySpec::all().iter().map(PolicySpec::to_string).collect();
                write!(f, "unknown policy {name:?}: known are {} (any of them with +retry-budget)", known.join(", "))
            }
            PolicySpecError::PoolNotApplicable { name } => {
                let takes: Vec<&str> = PolicyBase::all().filter(|b| b.takes_pool()).map(PolicyBase::name).collect();
                write!(f, "{name:?}: +pool applies to {}", takes.join(", "))
            }
        }
    }
}

impl std::error::Error for PolicySpecError {}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
