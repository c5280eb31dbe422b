//! The layer's clock: [`Clock`], the crate's own trait, with the system clock by default
//! and a [`ManualClock`] for tests (governor's shape: the clock is a trait of the crate,
//! not a type of the timing library it happens to use).
//!
//! The default clock reads the CPU's invariant TSC where there is one, else the OS
//! monotonic clock, directly, with no call through the trait; a clock given to
//! [`Builder::clock`](crate::Builder::clock) is called through it.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A monotonic clock: nanoseconds since an origin of the clock's choosing. The layer only
/// takes differences of its readings.
///
/// ```
/// use safegate_tower::Clock;
///
/// /// A clock that reads `std::time::Instant`.
/// struct StdClock(std::time::Instant);
///
/// impl Clock for StdClock {
///     fn now_ns(&self) -> u64 {
///         self.0.elapsed().as_nanos() as u64
///     }
/// }
///
/// let layer = safegate_tower::AdmissionLayer::builder()
///     .clock(StdClock(std::time::Instant::now()))
///     .build()
///     .unwrap();
/// # drop(layer);
/// ```
pub trait Clock: Send + Sync + 'static {
    /// Nanoseconds since the clock's origin; never decreasing.
    fn now_ns(&self) -> u64;
}

/// The system's monotonic clock (`std::time::Instant`), as a [`Clock`]. The layer's own
/// default is faster (it reads the TSC where it is invariant); this one is for code that
/// wants the same clock as the layer's neighbours.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        SystemClock { origin: Instant::now() }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// A clock that moves only when told to: for tests that step the decision periods by hand.
/// Clones share one time.
///
/// ```
/// use std::time::Duration;
/// use safegate_tower::{Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// let layer = safegate_tower::AdmissionLayer::builder().clock(clock.clone()).build().unwrap();
/// clock.advance(Duration::from_millis(50)); // one decision period
/// assert_eq!(clock.now_ns(), 50_000_000);
/// # drop(layer);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    ns: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock at 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Move the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.ns.fetch_add(ns, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        self.ns.load(Ordering::SeqCst)
    }
}

/// The clock a layer reads: the built-in TSC / monotonic clock, called directly, or the
/// caller's [`Clock`].
#[derive(Clone)]
pub(crate) enum Ticker {
    Builtin(quanta::Clock),
    Custom(Arc<dyn Clock>),
}

impl fmt::Debug for Ticker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ticker::Builtin(_) => f.write_str("Ticker::Builtin"),
            Ticker::Custom(_) => f.write_str("Ticker::Custom"),
        }
    }
}

impl Default for Ticker {
    fn default() -> Self {
        Ticker::Builtin(quanta::Clock::new())
    }
}

impl Ticker {
    /// A raw reading (TSC ticks or nanoseconds), only for [`Ticker::delta_as_nanos`].
    #[inline]
    pub(crate) fn raw(&self) -> u64 {
        match self {
            Ticker::Builtin(c) => c.raw(),
            Ticker::Custom(c) => c.now_ns(),
        }
    }

    /// Nanoseconds from raw reading `a` to raw reading `b` (0 if `b` is before `a`).
    #[inline]
    pub(crate) fn delta_as_nanos(&self, a: u64, b: u64) -> u64 {
        match self {
            Ticker::Builtin(c) => c.delta_as_nanos(a, b),
            Ticker::Custom(_) => b.saturating_sub(a),
        }
    }
}
