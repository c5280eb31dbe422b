//! [`Builder::build`]: check every setting, derive the barrier and the limit's range from
//! them, and assemble the layer's shared state.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use safegate_core::boundary::NoiseSource;
use safegate_core::controllers::{Actuator, Setting};
use safegate_core::safety::SafetyFilter;
use safegate_core::RangeError;
use tokio::sync::Notify;

use super::{Builder, Nominal, MIN_BOUNDARY};
use crate::error::BuildError;
use crate::outcome::ErrIsFailure;
use crate::shared::slots::Gate;
use crate::shared::{ClassState, Controller, Done, Mode, Owner, Padded, Published, Settings, Shared};
use crate::AdmissionLayer;

impl<C> Builder<C> {
    /// Check every setting and build the layer.
    pub fn build(self) -> Result<AdmissionLayer<C>, BuildError> {
        let setting =
            |field, value: String, allowed: &str| Err(BuildError::Setting(RangeError::new(field, value, allowed)));
        if !(1..=1_000_000).contains(&self.max_concurrency) {
            return setting("max_concurrency", self.max_concurrency.to_string(), "[1, 1000000]");
        }
        if !(1..=64).contains(&self.classes) {
            return setting("classes", self.classes.to_string(), "[1, 64]");
        }
        if !(0.0..1.0).contains(&self.reserve) {
            return setting("classes reserve", self.reserve.to_string(), "[0, 1)");
        }
        if !(self.timing_sample.is_power_of_two() && self.timing_sample <= 1024) {
            return setting("timing_sample", self.timing_sample.to_string(), "a power of two in [1, 1024]");
        }
        let queue_cap = match self.mode {
            Mode::Reject => 0,
            Mode::Queue { capacity, deadline } => {
                if !(1..=1_000_000).contains(&capacity) {
                    return setting("queue capacity", capacity.to_string(), "[1, 1000000]");
                }
                if deadline.is_zero() || deadline > Duration::from_secs(3600) {
                    return setting("queue deadline", format!("{deadline:?}"), "(0, 1 h]");
                }
                capacity
            }
        };
        let name = match self.name {
            Some(n) if n.is_empty() || n.chars().count() > 64 || n.chars().any(char::is_control) => {
                return setting(
                    "name",
                    format!("{:?}", n.chars().take(80).collect::<String>()),
                    "1 to 64 characters, no control characters",
                );
            }
            Some(n) => n,
            None => default_name(),
        };
        let mut boundary = self.boundary?;
        let stated_barrier =
            self.capacity.is_some() || self.barrier_requests.is_some() || boundary.barrier.capacity.is_some();
        let mut capacity = match (self.capacity, self.mode) {
            (Some(q), _) => f64::from(q),
            // `max_concurrency(n)` means n in service: the barrier is n (θ·Q = n, a hair
            // above so that ⌊θ·Q⌋ is n despite rounding).
            (None, Mode::Reject) if !stated_barrier => {
                f64::from(self.max_concurrency) / boundary.barrier.threshold * (1.0 + 1e-12)
            }
            (None, _) => f64::from(self.max_concurrency) + f64::from(queue_cap),
        };
        if let Some(n) = self.barrier_requests {
            if !(1..=100_000_000).contains(&n) {
                return setting("barrier_requests", n.to_string(), "[1, 100000000]");
            }
            // θ·Q = n; a hair above so that ⌊θ·Q⌋ is n despite rounding.
            capacity = f64::from(n) / boundary.barrier.threshold * (1.0 + 1e-12);
            boundary.barrier.capacity = Some(capacity);
        }
        let mut cfg = boundary.safety_config(capacity)?;
        if let Some(ci) = cfg.concurrency.as_mut() {
            ci.executors = self.max_concurrency;
        }
        // A service's noise is measured, not assumed Poisson (docs/tower.md §What the
        // barrier means for a service), unless the boundary file says which.
        if boundary.disturbance.noise.is_none() {
            cfg.noise = NoiseSource::Measured.for_window(cfg.window);
        }
        let barrier_boundary = cfg.barrier.boundary();
        let limit_cap = match self.mode {
            // Reject mode holds the barrier by the limit itself: at most ⌊θ·Q⌋ in service.
            Mode::Reject => {
                if barrier_boundary < 1.0 {
                    return Err(BuildError::Setting(RangeError::new(
                        "capacity",
                        format!("{} (θ·Q = {barrier_boundary:.2} requests)", cfg.barrier.capacity()),
                        "θ·Q ≥ 1 request: raise max_concurrency or set capacity",
                    )));
                }
                (barrier_boundary.floor() as u32).min(self.max_concurrency)
            }
            Mode::Queue { .. } => {
                if barrier_boundary < MIN_BOUNDARY {
                    return Err(BuildError::Setting(RangeError::new(
                        "capacity",
                        format!("{} (θ·Q = {barrier_boundary:.1} requests)", cfg.barrier.capacity()),
                        "θ·Q ≥ 10 requests in queue mode: raise max_concurrency or the queue, or set capacity",
                    )));
                }
                self.max_concurrency
            }
        };
        let period = boundary.decision.period;
        // The controller's range is the limit the layer can enforce: ⌊θ·Q⌋ in reject mode (a
        // controller that asked for more would never see its limit filled, and read every
        // period as app-limited).
        let setting = Setting { capacity, executors: limit_cap, period };
        let nominal = match self.nominal {
            Nominal::Kind(kind) => kind?.build(Actuator::Executors, &setting),
            Nominal::Policy(p) => p,
        };
        let filter = SafetyFilter::new(cfg, nominal).map_err(|e| BuildError::Filter(e.to_string()))?;
        let clock = self.clock.unwrap_or_default();
        let start_raw = clock.raw();
        let classes = usize::from(self.classes);
        let shared = Shared {
            start_raw,
            settings: Settings {
                name,
                mode: self.mode,
                dry_run: self.dry_run,
                max_concurrency: self.max_concurrency,
                capacity: boundary.barrier.capacity.unwrap_or(capacity),
                boundary: barrier_boundary,
                limit_cap,
                classes,
                reserve: self.reserve,
                period_ns: (period * 1e9) as u64,
                max_sample_mask: u64::from(self.timing_sample - 1),
            },
            published: Padded(Published {
                next_decision_ns: AtomicU64::new(0),
                interval_ns: AtomicU64::new((period * 1e9) as u64),
                sample_mask: AtomicU64::new(0),
                limit: AtomicU32::new(limit_cap),
                shed_reason: AtomicU8::new(0),
                full_reason: AtomicU8::new(0),
                retry_after_ns: AtomicU64::new((period * 1e9) as u64),
            }),
            classes: (0..classes)
                .map(|k| ClassState::new(crate::shared::class_limit(limit_cap, k, classes, self.reserve)))
                .collect(),
            gate: Padded(Gate::new()),
            waiting: Padded(AtomicU32::new(0)),
            done: Padded(Done::default()),
            notify: Notify::new(),
            controller: Mutex::new(Controller::new(filter, classes)),
            #[cfg(feature = "metrics")]
            latency: std::sync::OnceLock::new(),
            clock,
        };
        Ok(AdmissionLayer { shared: Arc::new(Owner::new(shared)), classify: self.classify, outcome: ErrIsFailure })
    }
}

/// The name of an unnamed layer: `default`, then `default-2`, `default-3`, … in build order.
fn default_name() -> String {
    static UNNAMED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    match UNNAMED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
        0 => "default".to_string(),
        k => format!("default-{}", k + 1),
    }
}
