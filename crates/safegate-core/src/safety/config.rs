//! What a [`super::SafetyFilter`] is configured with, and the ranges it accepts.

use crate::error::{check, RangeError};
use crate::filter::{Backup, Barrier, Constraint};

/// Shortest decision period the filter accepts \[s\]: below 100 µs a period is finer than the
/// clocks and schedulers that would run it, and the per-period estimates carry no signal.
pub const MIN_PERIOD: f64 = 1e-4;
/// Longest decision period \[s\].
pub const MAX_PERIOD: f64 = 3600.0;
/// Most decision periods in the σ window (a window is held in memory, one number a period).
pub const MAX_WINDOW: usize = 100_000;

/// Configuration of a [`super::SafetyFilter`] (usually built from a boundary file).
///
/// [`super::SafetyFilter::new`] refuses one that fails [`SafetyConfig::check`], naming the
/// field, its value and the allowed range.
#[derive(Debug, Clone)]
pub struct SafetyConfig {
    /// The barrier.
    pub barrier: Barrier,
    /// Constraints to enforce (a `BackupSet` constraint's depth is kept up to date).
    pub constraints: Vec<Constraint>,
    /// Decision period \[s\], in `[MIN_PERIOD, MAX_PERIOD]`.
    pub dt: f64,
    /// Decision periods of surprises in the σ window, in `[2, MAX_WINDOW]`.
    pub window: usize,
    /// Time constant of the rate estimates \[s\], `(0, ∞)`.
    pub rate_tau: f64,
    /// What to do when no action satisfies every constraint, and over what horizon its
    /// implicit safe set is computed.
    pub backup: Backup,
    /// The concurrency cap as a second input (`None`: the filter never changes the cap).
    pub concurrency: Option<ConcurrencyInput>,
    /// Where the one-step noise comes from: the Poisson prior as a floor (the seed's open
    /// queue) or the measured surprises alone once enough are in the window (a service).
    pub noise: Noise,
    /// How long \[s\] after a stall (two periods in a row that each fail
    /// [`super::stalled`]) every step must also be safe if completions stop within it (the
    /// stall regime's chance condition, docs/math.md §The stall regime), in `[0, ∞)`; a
    /// boundary sets its probability horizon `T`. 0 turns the condition off.
    pub stall_memory: f64,
}

/// Where the filter's one-step noise `σ_q²` comes from (a boundary file's
/// `[disturbance] noise`).
///
/// The seed's queue is open-loop: arrivals and departures are independent Poisson streams,
/// so a period's net change has variance at least `(λ + ŝ)·dt` whatever was measured, and
/// that prior is a floor under the measured variance ([`Noise::Poisson`], the default; the
/// seed's "bootstrapping the boundary before any telemetry"). A request/response service is
/// not: a departure follows each admission within a service time, so the net change per
/// period is far steadier than two Poisson streams, and a floor of `(λ + ŝ)·dt` at tens of
/// thousands of requests per second is a margin of hundreds of requests that nothing in the
/// service produces. [`Noise::Measured`] uses the variance of the measured net change of
/// the queue per period once the window holds `min_periods` of them, and the Poisson prior
/// only before (docs/math.md §Noise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case", deny_unknown_fields))]
pub enum Noise {
    /// `σ_q² = max(Var e, (λ̂ + ŝ + r̂)·dt)`: the measured variance, never below the Poisson
    /// prior.
    #[default]
    Poisson,
    /// `σ_q² = Var Δq` (the net change per period) once the window holds `min_periods` of
    /// them (the prior before).
    Measured {
        /// Surprises needed before the measured variance is trusted, in `[2, window]`.
        min_periods: usize,
    },
}

impl SafetyConfig {
    /// Check every value (the constraints are checked by [`crate::filter::Filter::new`]).
    pub fn check(&self) -> Result<(), RangeError> {
        check::within("dt", self.dt, MIN_PERIOD, MAX_PERIOD, "[1e-4, 3600] seconds")?;
        if !(2..=MAX_WINDOW).contains(&self.window) {
            return Err(RangeError::new("window", self.window, "[2, 100000] decision periods"));
        }
        check::positive("rate_tau", self.rate_tau)?;
        check::non_negative("stall_memory", self.stall_memory)?;
        self.backup.check().map_err(|e| e.at("backup"))?;
        if let Some(c) = &self.concurrency {
            c.check().map_err(|e| e.at("concurrency"))?;
        }
        if let Noise::Measured { min_periods } = self.noise {
            if !(2..=self.window).contains(&min_periods) {
                return Err(RangeError::new(
                    "noise.min_periods",
                    min_periods,
                    format!("[2, {}] (the σ window's periods)", self.window),
                ));
            }
        }
        Ok(())
    }
}

/// The concurrency cap as the filter's second input (a boundary file's `[concurrency]`).
///
/// The filter learns the service curve `μ(n, H)` online
/// ([`ServiceCurve`](crate::estimators::ServiceCurve)) from the completions of periods in
/// which the busy count did not change. When a constraint binds the nominal admission (or
/// none is feasible), it also tries every cap `n = 1..=P` whose curve bin is trusted: with
/// the next period's service predicted at cap `n` in the drift (the settled `μ̂(min(n, q), H)`
/// reached as fast as jobs in service finish: a cap is not preemption; docs/math.md §The
/// concurrency cap), the closest action is the `(u, n)`
/// minimising `(u_nom − u)² + w·(n − n_nom)²` subject to the constraints (the filter's QP
/// over a discrete second input, solved by enumeration). On the seed's pool the curve peaks
/// at `n = C`: capping there can double the service rate, which is what lets a pinned pool
/// drain where no admission rule can.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct ConcurrencyInput {
    /// Executors in the pool `P`, the cap when the nominal sets none (8), in `[1, 1e6]`.
    pub executors: u32,
    /// `w` in the objective `(u_nom − u)² + w·(n − n_nom)²` [(req/s)² per executor²] (1:
    /// moving the cap by k executors costs as much as giving up k req/s).
    pub weight: f64,
    /// Samples a curve bin needs before it is trusted (40: two seconds at 50 ms).
    pub min_samples: u64,
    /// EWMA weight of the curve's bins, `(0, 1]` (0.02).
    pub alpha: f64,
    /// The contention knee `C` of the declared service-curve shape `n·min(1, (C/n)²)` (the
    /// seed's model), used for a bin not yet learned: `μ̂(n) = ŝ·shape(n)/avg shape`, the
    /// measured service rate scaled along the declared curve by the shape of the busy count
    /// averaged as `ŝ` is; and a busy count past the knee clears at most its `μ̂`. `None`:
    /// learned bins only
    /// (a pool that never leaves one busy count then never learns another).
    pub knee: Option<f64>,
}

impl Default for ConcurrencyInput {
    fn default() -> Self {
        Self { executors: 8, weight: 1.0, min_samples: 40, alpha: 0.02, knee: None }
    }
}

impl ConcurrencyInput {
    /// Check every value.
    pub fn check(&self) -> Result<(), RangeError> {
        if !(1..=1_000_000).contains(&self.executors) {
            return Err(RangeError::new("executors", self.executors, "an integer in [1, 1000000]"));
        }
        check::non_negative("weight", self.weight)?;
        if self.min_samples == 0 {
            return Err(RangeError::new("min_samples", 0, "1 or more"));
        }
        check::gain("alpha", self.alpha)?;
        if let Some(k) = self.knee {
            check::positive("knee", k)?;
        }
        Ok(())
    }
}

/// The declared curve shape `n·min(1, (C/n)²)`.
pub(super) fn shape(n: f64, knee: f64) -> f64 {
    if n <= knee {
        n
    } else {
        knee * knee / n
    }
}
