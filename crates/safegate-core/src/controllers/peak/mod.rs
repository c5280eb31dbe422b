//! A limit that finds and holds the top of the service curve by measuring delivered
//! throughput: slow start, then a hill climb on a learned curve.
//!
//! The latency limiters (Vegas, Gradient2, AIMD, Envoy's gradient) read a no-load RTT
//! baseline and infer queueing from it. On a backend whose throughput *collapses* past a
//! knee (service time `base·max(1, (n/C)²)` with `n` requests in it, so `n/S(n)` peaks at
//! `n = C`) that baseline is polluted if the limiter starts overloaded, and none of them
//! looks at the quantity that matters, the throughput the limit delivers. `peak` measures
//! that directly and climbs it (the idea of BBR's bandwidth probing and of hill-climbing
//! concurrency tuners, re-derived here for a concurrency limit; no code is taken from
//! either).
//!
//! # The algorithm
//!
//! Limits live on a geometric **grid** from `⌊min⌋` to `⌊max⌋`: each point is
//! `max(g + 1, round(g·(1 + step)))` of the one below (1, 2, …, 10, 11, 12, 13, 14, 15, 17,
//! 19, 21, 23, 25, 28, 31, 34, 37, 41, … for `step` = 0.1), so probes land on the same
//! points again and their estimates accumulate.
//!
//! Time is cut into **periods** (`interval`, the setting's 50 ms); a period is
//! *saturated* when the load pressed on the limit (in flight ≥ `min(L − 1, (1 − step)·L)`,
//! within one grid step of it) at least half of the decisions in it, or requests were turned away while it pressed at some decision.
//! A **trial** holds one grid point: after a change it waits until the load in flight has
//! come down to the new limit (at most 10 periods: the drain of a lowered limit is not a
//! sample of it), then measures `trial_periods` periods (`hold_periods` for the periodic
//! re-measure of the home point) and at least `min_completions` completions. The trial's
//! delivered rate `Δcompleted/Δt` and service time `(Δlatency − Δwait)/Δcompleted` are a
//! **capacity sample** of its grid point when most of its periods were saturated; an
//! unsaturated trial is app-limited and says nothing about capacity.
//!
//! Capacity samples go into a **learned curve**, one bin per grid point: an EWMA (weight
//! `max(weight, 1/trials)`, as [`ServiceCurve`](crate::estimators::ServiceCurve)) of rate
//! and service time. A bin is *usable* once it holds `min_samples` measured periods and
//! its last sample is younger than `max_age`; a stale bin, or one whose new sample differs
//! from its estimate by more than `shift` (a level shift: the backend's health changed),
//! restarts from the new sample rather than averaging across the change. A probe whose
//! bin is not yet usable is repeated (the noise guard).
//!
//! The climb, around a **home** point:
//!
//! 1. **Slow start** (from `initial`, 8 by default: low, so an overloaded start is not
//!    deep in collapse): measure home, then probe the grid point nearest `2·home`; while
//!    the probe wins (the rule of step 2) it becomes home and the next doubling is probed.
//! 2. **Hill climb**: probe `home ± s` grid steps (one side, then the other). A probe wins
//!    when it delivers more than `(1 + tolerance)·home`, or the same within `tolerance`
//!    and, *below* home, a service time shorter by more than 5 % and `latency_floor` (on a
//!    curve flat past `W` workers this walks down to the knee, where a bigger limit only
//!    adds queueing), or, *above* home, one longer by at most 2 % or `latency_floor` (a
//!    fast service whose latency does not grow with the limit climbs out of the way
//!    instead of shedding the bursts of a load it carries easily). A probe below home that
//!    cannot win is lost without being run: by Little's law `i` requests deliver at most
//!    `i/S₀`, `S₀` the shortest service time ever measured at `i` or below, and when that
//!    is short of home's rate by the margin a win needs, neither way to win is open (at a
//!    knee of 2 the probe of 1 cost a tenth of the goodput). A win moves home there and doubles `s` (momentum,
//!    at most one doubling of the limit per probe, so a health change that moves the knee
//!    by 2× is followed in a few probes); a loss resets `s` to 1 and turns to the other
//!    side. When both sides lost, home is re-measured for `hold_periods`, doubled after
//!    each such confirmation up to 16× (probing costs throughput; a settled climb probes
//!    less often), and cut short when home's rate moves by more than `shift` from its
//!    record (a health change: probing resumes at once).
//! 3. **App-limited** trials (the load did not fill the limit) never lower it: home
//!    becomes the larger of home and the trial's point, and moves one point up when the
//!    most seen in flight came within `step` of it, so the limit drifts up toward the max
//!    as the load approaches it and is already out of the way when the load grows.
//!
//! Bounds: the limit stays in `[min, max]` ([`Setting::limits`] for the maximum). It
//! opens at the maximum and starts the climb at `initial` only once the load fills the
//! maximum (`open_start`): a load that never fills it is never shed, and an overload is not
//! left at the top of a collapsing curve, the failure this controller exists to avoid; the
//! opening ends at its first saturated period. On [`Actuator::Executors`] it caps busy
//! executors (the tower layer in reject mode: in service); on [`Actuator::InFlight`] it
//! caps the requests in the system, and throughput is measured the same way.
//!
//! Nothing is random; the grid and the bins are allocated at construction (at most a few
//! hundred points: `max ≤ 10⁶`, `step ≥ 0.05`), a decision allocates nothing.
//!
//! # Costs and limits
//!
//! Probing costs throughput: in steady state a cycle is one hold of home and one probe on
//! each side (`step` = 10 %: on the collapsing curve each probe delivers ~90 % of the
//! peak), so the mean is ~95 % of the peak. The signal is throughput, so the controller
//! needs saturation to learn anything; under light load it only keeps out of the way.
//!
//! # Files
//!
//! - `config.rs`: [`PeakConfig`] (the constants above, their defaults and
//!   [`PeakConfig::for_setting`]) and [`MAX_LIMIT`].
//! - `limiter.rs`: [`Peak`]: its state, constructor, accessors and [`Policy`] decision.
//! - `trial.rs`: measuring: a period's load, a trial's sums, the settle after a change of
//!   limit, and the end of a period.
//! - `curve.rs`: the learned curve: the grid of limits, one bin per grid point (rate and
//!   service time, EWMA, forgotten when stale or shifted) and [`CurvePoint`].
//! - `climb.rs`: slow start, the hill climb and the app-limited drift: where the next
//!   trial goes and what a finished one decides.
//! - `stall.rs`: a trial whose service time is many times the curve's floor (a database
//!   whose transactions wait out a deadlock timeout together) drops the limit below it and
//!   keeps that level out of the climb for a while.
//! - `hazard.rs`: the stalls pooled across levels: the share of its time a level keeps
//!   serving, by which the climb weighs each level's rate.
//!
//! [`Policy`]: crate::Policy
//! [`Setting::limits`]: crate::controllers::Setting::limits
//! [`Actuator::Executors`]: crate::controllers::Actuator::Executors
//! [`Actuator::InFlight`]: crate::controllers::Actuator::InFlight

mod climb;
mod config;
mod curve;
mod hazard;
mod limiter;
mod open;
mod stall;
mod trial;

pub use config::{PeakConfig, MAX_LIMIT};
pub use curve::CurvePoint;
pub use limiter::Peak;
pub use open::OPEN_CADENCE;

#[cfg(test)]
mod tests;
