//! The fluid (deterministic) mode: forward Euler on the seed's queue equation.
//!
//! ```text
//! dq/dt = λ·a(t) + p(H)·μ·[a(t) if retries go through the gate] − μ(q, H(t))
//! q     ← clamp(q + dt·dq/dt, 0, cap)        overflow is lost
//! ```
//!
//! with `a(t)` the admitted fraction the policy chooses (`1 − rej(q)` for the seed's gate)
//! and `μ` the pool's clearing rate (see [`crate::model`]). This reproduces every fluid
//! number the seed reports (docs/model.md §How each of the seed's numbers is measured). Health and
//! the policy are read at the start of each step; the queue is sampled after it.

use safegate_core::{Observation, Policy};

use crate::behaviour::RetryPath;
use crate::config::{Checked, Config};
use crate::record::{Outcome, RunOptions, Series, Totals, Tracker};

/// Run the fluid model of `cfg` under `policy`.
///
/// # Examples
///
/// The seed's recovery delay at λ = 55 after one dip is 9.0 s:
///
/// ```
/// use safegate_core::Open;
/// use safegate_sim::{run_fluid, Config, DipShape, HealthSchedule, HealthTrack, RunOptions};
///
/// let cfg = Config {
///     traffic: 55.0,
///     duration: 200.0,
///     health: HealthTrack::new(HealthSchedule::Dip { shape: DipShape::default(), start: 20.0 }),
///     ..Config::default()
/// };
/// let out = run_fluid(&cfg, &mut Open, RunOptions::default()).unwrap();
/// // A configuration a run cannot use is refused, not run.
/// assert!(run_fluid(&Config { dt: 0.0, ..cfg }, &mut Open, RunOptions::default()).is_err());
/// let delay = out.summary.recovery_after_dip.unwrap();
/// assert!((delay - 9.0).abs() < 0.05);
/// ```
pub fn run_fluid<P: Policy + ?Sized>(cfg: &Config, policy: &mut P, opts: RunOptions<'_>) -> Checked<Outcome> {
    crate::run(crate::Mode::Fluid, cfg, policy, opts)
}

/// The fluid model on a configuration that passed [`Config::check`] (unchecked: for a caller
/// that checked the configuration once and runs it many times; [`crate::run`] checks).
pub fn simulate<P: Policy + ?Sized>(cfg: &Config, policy: &mut P, mut opts: RunOptions<'_>) -> Outcome {
    let pool = cfg.pool;
    let cap = pool.capacity;
    let dt = cfg.dt;
    let steps = cfg.steps();
    let gate_retries = cfg.retries.path() == RetryPath::Gate;
    let retries_on = cfg.retries.enabled();

    let mut q = cfg.initial_queue;
    let mut tracker = Tracker::new(cfg.drain_level, cfg.health.schedule.dip_end(), cfg.warmup);
    let (mut offered, mut admitted, mut rejected, mut dropped, mut cleared, mut retried) =
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    let mut limit = u32::MAX;
    let mut shed_total = 0.0;
    // Little's-law latency sums: ∫q dt and ∫(q − n) dt.
    let (mut latency_total, mut wait_total) = (0.0f64, 0.0f64);

    let every = opts.record_every.map(|e| e.max(1) as u64);
    let mut series = every.map(|e| {
        let n = (steps / e + 1) as usize;
        let mut s = Series::default();
        s.t.reserve(n);
        s.queue.reserve(n);
        s.health.reserve(n);
        s.admit_fraction.reserve(n);
        s
    });
    let chunk = if opts.progress.is_some() { (steps / 100).max(1) } else { steps.max(1) };

    let mut k = 0u64;
    while k < steps {
        let stop = (k + chunk).min(steps);
        while k < stop {
            let t = k as f64 * dt;
            let h = cfg.health.value(t);
            let lambda = cfg.traffic_at(t);
            let busy_now = pool.busy_at(q, limit);
            let mu_now = pool.clearing_rate(busy_now, h);
            let obs = Observation {
                now: t,
                queue: q,
                capacity: cap,
                in_service: busy_now,
                offered_rate: lambda,
                health: Some(h),
                offered,
                admitted,
                completed: cleared + retried,
                retried,
                failed: 0.0,
                latency_total,
                wait_total,
                // The expected wait of the last in line: the backlog ahead over the clearing rate.
                oldest_wait: if mu_now > 0.0 { (q - busy_now).max(0.0) / mu_now } else { 0.0 },
            };
            let action = policy.decide(&obs);
            let a = if action.admit.is_nan() { 0.0 } else { action.admit.clamp(0.0, 1.0) };
            limit = action.concurrency.unwrap_or(u32::MAX);
            let shed = action.shed_retries;

            let n = pool.busy_at(q, limit);
            let mu = pool.clearing_rate(n, h);
            let p = if retries_on { cfg.retries.probability(h) } else { 0.0 };
            let retry_offered = p * mu;
            let (retry_in, retry_gated) =
                if gate_retries { (retry_offered * a, retry_offered) } else { (retry_offered, 0.0) };

            let inflow = lambda * a + retry_in;
            let mut out = mu;
            let mut next = q + dt * (inflow - mu);
            if next < 0.0 {
                // The pool cleared everything there was: outflow is what was available.
                out = q / dt + inflow;
                next = 0.0;
            }
            let mut lost = 0.0;
            if next > cap {
                lost = next - cap;
                next = cap;
            }
            let scale = if mu > 0.0 { out / mu } else { 0.0 };
            offered += dt * (lambda + retry_gated);
            admitted += dt * inflow;
            rejected += dt * (lambda + retry_gated) * (1.0 - a);
            dropped += lost;
            cleared += dt * mu * scale * (1.0 - p);
            retried += dt * mu * scale * p;
            if shed {
                shed_total += dt * mu * scale * p;
            }

            latency_total += q * dt;
            wait_total += (q - n).max(0.0) * dt;
            q = next;
            k += 1;
            let tk = k as f64 * dt;
            tracker.integral += q * dt;
            tracker.sample(tk, q);
            if let (Some(s), Some(e)) = (series.as_mut(), every) {
                if k % e == 0 {
                    s.push(tk, q, h, a);
                }
            }
        }
        if let Some(cb) = opts.progress.as_mut() {
            cb(k as f64 / steps as f64);
        }
    }

    let duration = steps as f64 * dt;
    let totals = Totals {
        offered,
        admitted,
        rejected,
        dropped,
        cleared,
        retried,
        retries_shed: shed_total,
        mean_sojourn: None,
        sojourn_quantiles: None,
        events: steps,
    };
    Outcome { summary: tracker.finish(totals, q, duration, dt), series }
}
