//! [`Builder`]: every setting of an [`AdmissionLayer`](crate::AdmissionLayer), checked in [`Builder::build`]
//! (`build.rs`).

mod build;

#[cfg(feature = "toml")]
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use safegate_core::boundary::Boundary;
use safegate_core::controllers::{ControllerKind, UnknownController};
use safegate_core::Policy;

use crate::classify::SingleClass;
use crate::clock::{Clock, Ticker};
use crate::error::BuildError;
use crate::shared::Mode;

/// Parse a boundary from TOML text (unknown keys are errors); `origin` names it in errors.
/// The core's one boundary parser ([`Boundary::from_toml`]) with the layer's error.
#[cfg(feature = "toml")]
pub fn parse_boundary(text: &str, origin: &str) -> Result<Boundary, BuildError> {
    Boundary::from_toml(text, &[]).map_err(|e| BuildError::Parse { origin: origin.to_string(), message: e.0 })
}

/// The smallest barrier `θ·Q` \[requests\] a layer accepts (see [`Builder::capacity`]).
pub const MIN_BOUNDARY: f64 = 10.0;

/// The nominal controller: from the registry (a name that did not parse is reported by
/// `build`), or a policy the caller built.
enum Nominal {
    Kind(Result<ControllerKind, UnknownController>),
    Policy(Box<dyn Policy + Send>),
}

/// Builds an [`AdmissionLayer`](crate::AdmissionLayer); every setting is checked in [`Builder::build`].
pub struct Builder<C = SingleClass> {
    name: Option<String>,
    boundary: Result<Boundary, BuildError>,
    nominal: Nominal,
    max_concurrency: u32,
    mode: Mode,
    dry_run: bool,
    classes: u8,
    reserve: f64,
    capacity: Option<u32>,
    barrier_requests: Option<u32>,
    timing_sample: u32,
    clock: Option<Ticker>,
    classify: C,
}

impl<C> std::fmt::Debug for Builder<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("name", &self.name)
            .field("max_concurrency", &self.max_concurrency)
            .field("mode", &self.mode)
            .field("dry_run", &self.dry_run)
            .field("classes", &self.classes)
            .finish_non_exhaustive()
    }
}

impl Default for Builder<SingleClass> {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder<SingleClass> {
    /// The defaults: the `peak` controller (climbs delivered throughput to the top of the
    /// service curve; chosen by `safegate bench overload`) under the default boundary
    /// (`θ = 0.7`, `ε = 1 %` over 600 s, Bernstein, 50 ms decisions), at most 100 requests
    /// in service, reject mode, one class.
    pub fn new() -> Self {
        Builder {
            name: None,
            boundary: Ok(Boundary::default()),
            // Chosen by measurement (`safegate bench overload`, BENCHMARKS.md): `peak`
            // climbs delivered throughput to the top of the service curve; the ported
            // latency limiters start at the maximum, deep in a collapsing backend's
            // collapse, and their RTT baselines are taken there (vegas and gradient2 held
            // 0.01–0.08 of the best fixed limit's goodput; envoy-gradient 0.8).
            nominal: Nominal::Kind(Ok(ControllerKind::Peak)),
            max_concurrency: 100,
            mode: Mode::Reject,
            dry_run: false,
            classes: 1,
            reserve: 0.25,
            capacity: None,
            barrier_requests: None,
            timing_sample: 256,
            clock: None,
            classify: SingleClass,
        }
    }
}

impl<C> Builder<C> {
    /// The layer's name: the `layer` label on every metric it publishes, so that two layers
    /// in one process (an API and an admin route, a client per dependency) keep separate
    /// series. 1 to 64 characters, none of them a control character. Unnamed layers are
    /// `default`, `default-2`, `default-3`, … in the order they are built: name them.
    ///
    /// ```
    /// use safegate_tower::AdmissionLayer;
    ///
    /// let api = AdmissionLayer::builder().name("api").build().unwrap();
    /// let admin = AdmissionLayer::builder().name("admin").build().unwrap();
    /// assert_eq!((api.name(), admin.name()), ("api", "admin"));
    /// assert!(AdmissionLayer::builder().name("").build().is_err());
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Use this boundary (see `boundaries/` and `docs/boundary.md`).
    pub fn boundary(mut self, boundary: Boundary) -> Self {
        self.boundary = Ok(boundary);
        self
    }

    /// Read the boundary from a TOML file (errors surface in [`Builder::build`]).
    #[cfg(feature = "toml")]
    pub fn boundary_file(mut self, path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        let shown = path.display().to_string();
        self.boundary = std::fs::read_to_string(path)
            .map_err(|source| BuildError::Io { path: shown.clone(), source })
            .and_then(|text| parse_boundary(&text, &shown));
        self
    }

    /// The nominal controller: a [`ControllerKind`] or its name, one of
    /// `safegate_core::controllers::NAMES` (`gradient2`, `vegas`, `aimd`, `envoy-gradient`,
    /// `static`, `credits`, `priority-levels`, `sre-throttle`); an unknown name is an error
    /// in [`Builder::build`]. Limit controllers run on the [`Actuator::Executors`](safegate_core::controllers::Actuator::Executors)
    /// semantics: their limit caps requests in the inner service and their signal is
    /// service time (latency minus time waiting in this layer's queue).
    ///
    /// ```
    /// use safegate_core::controllers::ControllerKind;
    /// use safegate_tower::AdmissionLayer;
    ///
    /// assert!(AdmissionLayer::builder().controller(ControllerKind::Aimd).build().is_ok());
    /// assert!(AdmissionLayer::builder().controller("aimd").build().is_ok());
    /// let e = AdmissionLayer::builder().controller("nope").build().unwrap_err();
    /// assert!(e.to_string().contains("known are gradient2, vegas"), "{e}");
    /// ```
    pub fn controller<K>(mut self, controller: K) -> Self
    where
        K: TryInto<ControllerKind>,
        UnknownController: From<K::Error>,
    {
        self.nominal = Nominal::Kind(controller.try_into().map_err(UnknownController::from));
        self
    }

    /// A nominal controller built by the caller. Its action's `concurrency` is read as the
    /// limit on requests in the inner service (`None`: the maximum), its `admit` as the
    /// share of requests to admit.
    pub fn nominal(mut self, policy: Box<dyn Policy + Send>) -> Self {
        self.nominal = Nominal::Policy(policy);
        self
    }

    /// The most requests in the inner service at once, whatever the controller says
    /// (`[1, 1_000_000]`, default 100). In reject mode, unless a barrier is also stated
    /// ([`Builder::capacity`], [`Builder::barrier_requests`] or the boundary's
    /// `[barrier] capacity`), it is the barrier too: `θ·Q = n`, so `n` may be in service.
    ///
    /// ```
    /// use safegate_tower::AdmissionLayer;
    ///
    /// let layer = AdmissionLayer::builder().max_concurrency(256).build().unwrap();
    /// assert_eq!(layer.snapshot().limit, 256); // 256 in service, not ⌊0.7·256⌋
    /// let layer = AdmissionLayer::builder().max_concurrency(256).capacity(256).build().unwrap();
    /// assert_eq!(layer.snapshot().limit, 179); // a stated barrier: ⌊0.7·256⌋
    /// ```
    pub fn max_concurrency(mut self, n: u32) -> Self {
        self.max_concurrency = n;
        self
    }

    /// The barrier's capacity `Q`, in requests in the layer (in service plus waiting); the
    /// boundary keeps them at or below `θ·Q`. Default: in reject mode `max_concurrency/θ`
    /// (so that `θ·Q = max_concurrency`), in queue mode `max_concurrency` plus the queue's
    /// capacity. A boundary's `[barrier] capacity` overrides both.
    ///
    /// In reject mode the limit never exceeds `⌊θ·Q⌋` (70 of a capacity of 100 at `θ = 0.7`),
    /// which holds the barrier deterministically; `θ·Q` must be at least one request. In
    /// queue mode it must be at least [`MIN_BOUNDARY`] requests: the filter's per-step
    /// chance constraint needs a margin of a few requests for one period's arrivals
    /// (Bernstein's range term `ln(1/ε_step)/3` ≈ 4.7 requests at the default boundary,
    /// docs/math.md §Chance constraints).
    pub fn capacity(mut self, q: u32) -> Self {
        self.capacity = Some(q);
        self
    }

    /// The barrier in requests, the unit a service's owner thinks in: at most `n` requests
    /// in the layer (in service plus waiting) with the boundary's probability. Sets the
    /// capacity to `n/θ` (so `θ·Q = n`); overrides [`Builder::capacity`]. In reject mode
    /// `n` is the most requests ever in the inner service at once.
    ///
    /// ```
    /// use safegate_tower::AdmissionLayer;
    /// // ConcurrencyLimit(256)'s bound, as a barrier: never more than 256 in service.
    /// let layer = AdmissionLayer::builder().max_concurrency(256).barrier_requests(256).build().unwrap();
    /// assert_eq!(layer.snapshot().limit, 256);
    /// ```
    pub fn barrier_requests(mut self, n: u32) -> Self {
        self.barrier_requests = Some(n);
        self
    }

    /// Time at most one request in `k` (a power of two in `[1, 1024]`, default 256): only
    /// timed requests read the clock (at arrival and departure) and may run the decision
    /// step. The layer times every request while traffic is light and thins out as it
    /// grows, keeping about 16 timed requests per decision interval (the period, or the
    /// shorter one the controller asks for, as `peak`'s opening does), so that the step runs
    /// on time at any rate and a busy service rarely reads the clock; `k` caps the
    /// thinning. The period's mean latency and wait come from the timed requests and are
    /// charged to every request that left in the period; `1` times every request.
    pub fn timing_sample(mut self, k: u32) -> Self {
        self.timing_sample = k;
        self
    }

    /// Reject at once when over the limit (the default).
    pub fn reject(mut self) -> Self {
        self.mode = Mode::Reject;
        self
    }

    /// Wait in a bounded queue of `capacity` requests for at most `deadline` when over the
    /// limit (needs a tokio runtime with timers). The barrier's capacity becomes
    /// `max_concurrency + capacity`.
    pub fn queue(mut self, capacity: u32, deadline: Duration) -> Self {
        self.mode = Mode::Queue { capacity, deadline };
        self
    }

    /// Decide and record, never reject: rejections are counted as `would_reject` and the
    /// request goes through.
    pub fn dry_run(mut self, on: bool) -> Self {
        self.dry_run = on;
        self
    }

    /// `classes` priority classes (`[1, 64]`, default 1), and the `reserve`, the share of
    /// the limit held back from the least important class (`[0, 1)`, default 0.25; class
    /// `k` of `K` may use `limit · (1 − reserve·k/(K−1))`).
    pub fn classes(mut self, classes: u8, reserve: f64) -> Self {
        self.classes = classes;
        self.reserve = reserve;
        self
    }

    /// How a request's class is found (a [`Classify`](crate::Classify), e.g. a closure).
    pub fn classifier<C2>(self, classify: C2) -> Builder<C2> {
        Builder {
            name: self.name,
            boundary: self.boundary,
            nominal: self.nominal,
            max_concurrency: self.max_concurrency,
            mode: self.mode,
            dry_run: self.dry_run,
            classes: self.classes,
            reserve: self.reserve,
            capacity: self.capacity,
            barrier_requests: self.barrier_requests,
            timing_sample: self.timing_sample,
            clock: self.clock,
            classify,
        }
    }

    /// The clock (default: the CPU's invariant TSC where there is one, else the OS
    /// monotonic clock, read directly). Tests pass a [`ManualClock`](crate::ManualClock)
    /// to step time by hand; any [`Clock`] will do.
    ///
    /// ```
    /// use std::time::Duration;
    /// use safegate_tower::{AdmissionLayer, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let layer = AdmissionLayer::builder().clock(clock.clone()).build().unwrap();
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(layer.snapshot().decisions, 0); // decisions run in requests, not in time
    /// ```
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(Ticker::Custom(Arc::new(clock)));
        self
    }

    /// [`build`](Self::build), as an [`HttpAdmissionLayer`](crate::http::HttpAdmissionLayer):
    /// rejections are `503` responses with `Retry-After` and a JSON body, `5xx` responses
    /// count as failures.
    ///
    /// ```
    /// use safegate_tower::AdmissionLayer;
    ///
    /// let layer = AdmissionLayer::builder().name("api").max_concurrency(256).build_http().unwrap();
    /// assert_eq!(layer.snapshot().limit, 256);
    /// ```
    #[cfg(feature = "http")]
    pub fn build_http(self) -> Result<crate::http::HttpAdmissionLayer<C>, BuildError> {
        self.build().map(crate::http::HttpAdmissionLayer::new)
    }
}
