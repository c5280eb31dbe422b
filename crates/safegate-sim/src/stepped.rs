//! The stepped stochastic mode: the same pool as a discrete-time Markov chain on a grid of
//! `dt`, for Monte Carlo at scale (`safegate verify`).
//!
//! Each step, with `n = min(P, q, cap_k)` busy executors at health `H(t)`:
//! - offered arrivals `A ~ Poisson(λ·dt)`, each admitted with the policy's probability `a`
//!   (binomial thinning; a full backlog drops the excess);
//! - completions `D ~ Poisson(μ(n, H)·dt)`, at most `q` (drawn by thinning a Poisson of the
//!   pool's peak rate, so both Poisson tables are computed once);
//! - each completion fails and re-enters with probability `p(H)` if retries are on.
//!
//! It is the exact chain of a policy that decides once per `dt` (the filter's decision
//! period) with arrivals and completions counted per period; against the event-driven mode
//! it differs only by within-step ordering, which vanishes as `dt → 0` (tested). The policy
//! is consulted once per step.

use rand::{Rng, RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use safegate_core::{Observation, Policy};

use crate::behaviour::RetryPath;
use crate::config::{Checked, Config};
use crate::record::{Outcome, RunOptions, Series, Totals, Tracker};

/// Cumulative Poisson probabilities for one mean, for sampling by inversion, with a guide
/// table (Chen & Asau 1974) so a draw starts its search at the right count.
#[derive(Debug, Clone)]
pub(crate) struct PoissonTable {
    #[cfg_attr(not(test), allow(dead_code))]
    cdf: Vec<f64>,
    /// `cdf` scaled to 2⁶⁴, so a raw 64-bit draw is compared without conversion.
    cdf_bits: Vec<u64>,
    guide: Vec<u32>,
    mean: f64,
}

const GUIDE: usize = 256;

impl PoissonTable {
    pub(crate) fn new(mean: f64) -> Self {
        let mut cdf = Vec::new();
        if mean <= 0.0 {
            return Self { cdf: vec![1.0], cdf_bits: vec![u64::MAX], guide: vec![0; GUIDE], mean: 0.0 };
        }
        // Work in logs so large means do not underflow e^{−m}.
        let mut log_p = -mean;
        let mut acc = 0.0;
        let mut k = 0u32;
        loop {
            acc += log_p.exp();
            cdf.push(acc.min(1.0));
            k += 1;
            log_p += (mean / k as f64).ln();
            if (acc >= 1.0 - 1e-16 && k as f64 > mean) || k > 100_000 {
                break;
            }
        }
        if let Some(last) = cdf.last_mut() {
            *last = 1.0;
        }
        // guide[j] = the smallest k with cdf[k] ≥ j/GUIDE.
        let mut guide = Vec::with_capacity(GUIDE);
        let mut k = 0usize;
        for j in 0..GUIDE {
            let level = j as f64 / GUIDE as f64;
            while k + 1 < cdf.len() && cdf[k] < level {
                k += 1;
            }
            guide.push(k as u32);
        }
        let cdf_bits =
            cdf.iter().map(|&c| if c >= 1.0 { u64::MAX } else { (c * 18_446_744_073_709_551_616.0) as u64 }).collect();
        Self { cdf, cdf_bits, guide, mean }
    }

    /// The smallest `k` with `cdf[k] ≥ u`, for `u ∈ [0, 1)`.
    #[cfg(test)]
    pub(crate) fn sample(&self, u: f64) -> u32 {
        self.sample_bits((u * 18_446_744_073_709_551_616.0) as u64)
    }

    /// The same for a raw uniform 64-bit draw `x` (u = x/2⁶⁴): the guide table is indexed by
    /// its top 8 bits, and the search compares integers.
    #[inline]
    pub(crate) fn sample_bits(&self, x: u64) -> u32 {
        let mut k = self.guide[(x >> 56) as usize] as usize;
        let last = self.cdf_bits.len() - 1;
        while k < last && x > self.cdf_bits[k] {
            k += 1;
        }
        k as u32
    }
}

/// Binomial(n, p) by `n` Bernoulli draws (`n` is a few counts per step here), two per
/// 64-bit draw at 32-bit resolution (p is resolved to 2⁻³²).
#[inline]
fn binomial<R: Rng>(rng: &mut R, n: u32, p: f64) -> u32 {
    if p >= 1.0 {
        return n;
    }
    if p <= 0.0 {
        return 0;
    }
    // P(u32 < threshold) = p to 2⁻³²; p·2³² < 2⁶³, so the signed conversion (one
    // instruction; the unsigned one is a dozen on x86-64) is exact.
    let threshold = (p * 4_294_967_296.0) as i64 as u64;
    let mut k = 0u32;
    let mut left = n;
    while left >= 2 {
        let x = rng.next_u64();
        k += u32::from((x & 0xFFFF_FFFF) < threshold) + u32::from((x >> 32) < threshold);
        left -= 2;
    }
    if left == 1 {
        k += u32::from((rng.next_u64() >> 32) < threshold);
    }
    k
}

/// Run the stepped stochastic model of `cfg` under `policy`, seeded by `cfg.seed`.
pub fn run_stepped<P: Policy + ?Sized>(cfg: &Config, policy: &mut P, opts: RunOptions<'_>) -> Checked<Outcome> {
    crate::run(crate::Mode::Stepped, cfg, policy, opts)
}

/// The stepped model on a configuration that passed [`Config::check`] (unchecked: for a caller
/// that checked the configuration once and runs it many times; [`crate::run`] checks).
pub fn simulate<P: Policy + ?Sized>(cfg: &Config, policy: &mut P, mut opts: RunOptions<'_>) -> Outcome {
    let pool = cfg.pool;
    let cap = pool.capacity.floor() as u64;
    let dt = cfg.dt;
    let lambda = cfg.traffic;
    let steps = cfg.steps();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let arrivals = PoissonTable::new(lambda * dt);
    // A traffic spike: its own table, used on the steps that start inside it.
    let spike = cfg.spike.map(|sp| (sp.start, sp.start + sp.duration, sp.rate, PoissonTable::new(sp.rate * dt)));
    // Thinning envelope for completions: the pool's peak rate at the highest health seen.
    let h_max = health_ceiling(cfg);
    let (_, peak) = pool.peak_rate();
    let completions = PoissonTable::new(peak * h_max * dt);
    let retries_on = cfg.retries.enabled();
    let gate_retries = cfg.retries.path() == RetryPath::Gate;

    let mut q = cfg.initial_queue.round() as u64;
    // Clearing rate at full health for each busy count, and the health segment in force.
    let rates: Vec<f64> = (0..=pool.executors).map(|n| pool.clearing_rate(n as f64, 1.0)).collect();
    let (mut seg_h, mut seg_g, seg_left) = cfg.health.segment(0.0);
    let mut seg_t0 = 0.0f64;
    let mut seg_end = seg_left;
    let mut tracker = Tracker::new(cfg.drain_level, cfg.health.schedule.dip_end(), cfg.warmup);
    let (mut offered, mut admitted, mut rejected, mut dropped, mut cleared, mut retried, mut shed_n) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let every = opts.record_every.map(|e| e.max(1) as u64);
    let mut series = every.map(|_| Series::default());
    let chunk = if opts.progress.is_some() { (steps / 100).max(1) } else { u64::MAX };
    // Little's-law latency sums: ∫q dt and ∫(q − n) dt.
    let (mut latency_total, mut wait_total) = (0.0f64, 0.0f64);

    for k in 0..steps {
        let t = k as i64 as f64 * dt;
        if t >= seg_end - 1e-9 {
            let (h0, g, left) = cfg.health.segment(t);
            seg_h = h0;
            seg_g = g;
            seg_t0 = t;
            seg_end = t + left;
        }
        let h = seg_h + seg_g * (t - seg_t0);
        let qf = q as i64 as f64;
        // The offered rate and arrival table of this step (the spike's, inside it).
        let (rate_now, table) = match &spike {
            Some((a, b, rate, table)) if t >= *a && t < *b => (*rate, table),
            _ => (lambda, &arrivals),
        };
        let obs = Observation {
            now: t,
            queue: qf,
            capacity: pool.capacity,
            in_service: qf.min(pool.executors as f64),
            offered_rate: rate_now,
            health: Some(h),
            offered: offered as i64 as f64,
            admitted: admitted as i64 as f64,
            completed: (cleared + retried) as i64 as f64,
            retried: retried as i64 as f64,
            // The seed's pool retries, it does not fail: nothing is lost.
            failed: 0.0,
            latency_total,
            wait_total,
            // The expected wait of the last in line, with the pool uncapped.
            oldest_wait: {
                let n0 = q.min(pool.executors as u64);
                let mu0 = rates[n0 as usize] * h;
                if q > n0 && mu0 > 0.0 {
                    (q - n0) as f64 / mu0
                } else {
                    0.0
                }
            },
        };
        let action = policy.decide(&obs);
        let a = if action.admit.is_nan() { 0.0 } else { action.admit.clamp(0.0, 1.0) };
        let limit = action.concurrency.unwrap_or(u32::MAX).min(pool.executors) as u64;

        // Completions among the requests present at the start of the step.
        let n = q.min(limit);
        let mu = rates[n as usize] * h;
        latency_total += qf * dt;
        wait_total += (q - n) as f64 * dt;
        let done = if n == 0 || completions.mean <= 0.0 {
            0
        } else {
            let cand = completions.sample_bits(rng.next_u64());
            (binomial(&mut rng, cand, mu * dt / completions.mean) as u64).min(q)
        };
        let fails =
            if retries_on && done > 0 { binomial(&mut rng, done as u32, cfg.retries.probability(h)) as u64 } else { 0 };
        cleared += done - fails;
        retried += fails;
        q -= done;

        // Arrivals: fresh offers plus retries through the gate.
        let fresh = table.sample_bits(rng.next_u64()) as u64;
        let (gated_retries, direct_retries) = if action.shed_retries {
            shed_n += fails;
            (0, 0)
        } else if gate_retries {
            (fails, 0)
        } else {
            (0, fails)
        };
        let offer = fresh + gated_retries;
        offered += offer;
        let take = if a >= 1.0 { offer } else { binomial(&mut rng, offer as u32, a) as u64 };
        rejected += offer - take;
        let incoming = take + direct_retries;
        admitted += incoming;
        let room = cap - q.min(cap);
        let enter = incoming.min(room);
        dropped += incoming - enter;
        q += enter;

        let tk = (k + 1) as i64 as f64 * dt;
        let qf = q as i64 as f64;
        tracker.integral += qf * dt;
        tracker.sample(tk, qf);
        if let (Some(s), Some(e)) = (series.as_mut(), every) {
            if (k + 1) % e == 0 {
                s.push(tk, q as f64, h, a);
            }
        }
        if (k + 1) % chunk == 0 {
            if let Some(cb) = opts.progress.as_mut() {
                cb((k + 1) as f64 / steps as f64);
            }
        }
    }

    let duration = steps as f64 * dt;
    let totals = Totals {
        offered: offered as f64,
        admitted: admitted as f64,
        rejected: rejected as f64,
        dropped: dropped as f64,
        cleared: cleared as f64,
        retried: retried as f64,
        retries_shed: shed_n as f64,
        mean_sojourn: None,
        sojourn_quantiles: None,
        events: steps,
    };
    Outcome { summary: tracker.finish(totals, q as f64, duration, dt), series }
}

/// The highest health the schedule can reach (noise multiplies it by up to 1 + 6σ).
pub(crate) fn health_ceiling(cfg: &Config) -> f64 {
    use crate::health::HealthSchedule;
    let base = match &cfg.health.schedule {
        HealthSchedule::Constant { level } => *level,
        HealthSchedule::Cycle(s) | HealthSchedule::Dip { shape: s, .. } => s.high.max(s.low),
        HealthSchedule::Trace { points } => points.iter().map(|p| p.1).fold(0.0, f64::max),
    };
    match &cfg.health.noise {
        Some(n) => base * (1.0 + 6.0 * n.sigma),
        None => base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_table_has_the_right_moments() {
        let t = PoissonTable::new(3.75);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let n = 400_000;
        let xs: Vec<f64> = (0..n).map(|_| t.sample_bits(rng.next_u64()) as f64).collect();
        let m = xs.iter().sum::<f64>() / n as f64;
        let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64;
        // se of the mean ≈ √(3.75/4e5) ≈ 0.003.
        assert!((m - 3.75).abs() < 0.015 && (v - 3.75).abs() < 0.06, "{m} {v}");
        assert_eq!(PoissonTable::new(0.0).sample(0.7), 0);
        // The guide table and the integer search agree with a plain search.
        let t = PoissonTable::new(7.5);
        for i in 0..10_000 {
            let u = i as f64 / 10_000.0;
            let plain = t.cdf.iter().position(|&c| c >= u).unwrap() as u32;
            assert!((t.sample(u) as i64 - plain as i64).abs() <= 1, "{u}");
        }
        assert!(PoissonTable::new(500.0).cdf.len() > 500);
    }
}
