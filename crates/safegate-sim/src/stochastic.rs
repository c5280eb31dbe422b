//! The stochastic mode: an exact discrete-event simulation of the same pool.
//!
//! Arrivals are Poisson at λ. Each admitted request brings work `w` drawn from the service
//! law (mean 1; exponential by default). Every busy executor clears work at the same rate
//! `r(t) = H(t) · s · min(1, (C/n)²)`, so one virtual work clock `W(t) = ∫ r dt` serves all
//! of them: a request entering service at `W₀` completes when `W` reaches `W₀ + w`. Health
//! is piecewise linear (see [`crate::health`]), so between events `W` is a quadratic in time
//! and the next completion time is solved in closed form, with no time step and no thinning
//! error. The gate decides per arrival with the policy's admit fraction.
//!
//! Equal-time events are processed first-in-first-out: each pending event carries the
//! sequence number of the moment it was scheduled, and ties in time go to the older one.
//! The queue is also sampled, and the policy consulted, on a grid of `dt` (a "tick"), so a
//! policy's concurrency cap takes effect even when no request arrives.

use std::collections::{BinaryHeap, VecDeque};

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp1};
use rand_xoshiro::Xoshiro256PlusPlus;
use safegate_core::{Observation, Policy};

use crate::behaviour::RetryPath;
use crate::config::{Checked, Config};
use crate::record::{Outcome, RunOptions, Series, Totals, Tracker};

/// A request in service: completes when the work clock reaches `target`.
#[derive(Debug, Clone, Copy)]
struct InService {
    target: f64,
    arrived: f64,
    started: f64,
    seq: u64,
}

impl PartialEq for InService {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}
impl Eq for InService {}
impl PartialOrd for InService {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for InService {
    // Min-heap on (target, seq) via reversal.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.target.total_cmp(&self.target).then(o.seq.cmp(&self.seq))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Arrival,
    Completion,
    Segment,
    Rate,
    Tick,
    End,
}

/// Time `τ ≥ 0` at which `∫₀^τ f·(h + g·u) du = need`, or ∞ if not reached (`f > 0`).
#[inline]
fn time_to_work(need: f64, f: f64, h: f64, g: f64) -> f64 {
    let d = need / f;
    if d <= 0.0 {
        return 0.0;
    }
    if g == 0.0 {
        return if h > 0.0 { d / h } else { f64::INFINITY };
    }
    // g/2 τ² + h τ − d = 0  →  τ = 2d / (h + √(h² + 2gd))  (stable for either sign of g).
    let disc = h * h + 2.0 * g * d;
    if disc < 0.0 {
        return f64::INFINITY;
    }
    let den = h + disc.sqrt();
    if den <= 0.0 {
        f64::INFINITY
    } else {
        2.0 * d / den
    }
}

/// Run the stochastic model of `cfg` under `policy`, seeded by `cfg.seed`.
///
/// The same seed gives the same outcome bit for bit.
///
/// # Examples
///
/// ```
/// use safegate_core::SeedGate;
/// use safegate_sim::{run_stochastic, Config, RunOptions};
///
/// let cfg = Config { duration: 60.0, ..Config::default() };
/// let a = run_stochastic(&cfg, &mut SeedGate::new(0.7, 1.0).unwrap(), RunOptions::default()).unwrap();
/// let b = run_stochastic(&cfg, &mut SeedGate::new(0.7, 1.0).unwrap(), RunOptions::default()).unwrap();
/// assert_eq!(a, b);
/// assert!(a.summary.cleared > 0.0);
/// ```
pub fn run_stochastic<P: Policy + ?Sized>(cfg: &Config, policy: &mut P, opts: RunOptions<'_>) -> Checked<Outcome> {
    crate::run(crate::Mode::Stochastic, cfg, policy, opts)
}

/// The stochastic model on a configuration that passed [`Config::check`] (unchecked: for a caller
/// that checked the configuration once and runs it many times; [`crate::run`] checks).
pub fn simulate<P: Policy + ?Sized>(cfg: &Config, policy: &mut P, mut opts: RunOptions<'_>) -> Outcome {
    let pool = cfg.pool;
    let cap = pool.capacity.floor() as u64;
    let mut lambda = cfg.traffic_at(0.0);
    // Times the offered rate steps (a spike's start and end); arrivals are memoryless, so at
    // a step the next arrival is drawn afresh at the new rate.
    let mut rate_steps: Vec<f64> = match cfg.spike {
        Some(s) => [s.start + s.duration, s.start].into_iter().filter(|&x| x > 0.0).collect(),
        None => Vec::new(),
    };
    let end = cfg.steps() as f64 * cfg.dt;
    let retries_on = cfg.retries.enabled();
    let gate_retries = cfg.retries.path() == RetryPath::Gate;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);

    // State.
    let mut t = 0.0f64;
    let mut work = 0.0f64; // the virtual work clock W
    let mut seq = 0u64;
    let mut waiting: VecDeque<f64> = VecDeque::new();
    let mut busy: BinaryHeap<InService> = BinaryHeap::with_capacity(pool.executors.min(4096) as usize);
    let mut limit = u32::MAX;
    let mut shed = false;
    let mut retries_shed = 0u64;
    let initial = cfg.initial_queue.round() as u64;
    for _ in 0..initial {
        waiting.push_back(0.0);
    }

    // Counters.
    let (mut offered, mut admitted, mut rejected, mut dropped, mut cleared, mut retried) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let mut sojourn_sum = 0.0f64;
    let mut sojourns = Reservoir::default();
    // Latency and wait summed over every completion (cleared or retried), for policies.
    let (mut latency_total, mut wait_total) = (0.0f64, 0.0f64);
    let mut events = 0u64;
    let mut tracker = Tracker::new(cfg.drain_level, cfg.health.schedule.dip_end(), cfg.warmup);

    // Pending deterministic and random event times, with the sequence of their scheduling.
    let draw_gap = |rng: &mut Xoshiro256PlusPlus, lambda: f64| -> f64 {
        if lambda > 0.0 {
            let e: f64 = Exp1.sample(rng);
            e / lambda
        } else {
            f64::INFINITY
        }
    };
    let mut t_arrival = draw_gap(&mut rng, lambda);
    let mut t_rate = rate_steps.pop().unwrap_or(f64::INFINITY);
    let mut s_rate = 0u64;
    let mut s_arrival = 0u64;
    let (mut seg_h, mut seg_g, seg_left) = cfg.health.segment(0.0);
    let mut seg_t0 = 0.0f64;
    let mut t_segment = seg_left;
    let mut s_segment = 0u64;
    let mut tick_k = 1u64;
    let mut t_tick = cfg.dt;
    let mut s_tick = 0u64;
    let total_ticks = cfg.steps();
    let every = opts.record_every.map(|e| e.max(1) as u64);
    let mut series = every.map(|_| Series::default());
    let progress_every = (total_ticks / 100).max(1);

    let q_of = |waiting: &VecDeque<f64>, busy: &BinaryHeap<InService>| (waiting.len() + busy.len()) as u64;

    macro_rules! observe {
        () => {{
            let q = q_of(&waiting, &busy) as f64;
            Observation {
                now: t,
                queue: q,
                capacity: pool.capacity,
                in_service: busy.len() as f64,
                offered_rate: lambda,
                health: Some(seg_h + seg_g * (t - seg_t0)),
                offered: offered as f64,
                admitted: admitted as f64,
                completed: (cleared + retried) as f64,
                retried: retried as f64,
                failed: 0.0,
                latency_total,
                wait_total,
                oldest_wait: waiting.front().map_or(0.0, |&a| t - a),
            }
        }};
    }
    macro_rules! start_service {
        () => {{
            let allowed = pool.executors.min(limit) as usize;
            while busy.len() < allowed {
                match waiting.pop_front() {
                    Some(arrived) => {
                        seq += 1;
                        let w = cfg.service.sample(&mut rng);
                        busy.push(InService { target: work + w, arrived, started: t, seq });
                    }
                    None => break,
                }
            }
        }};
    }
    // Offer one request to the gate at time t; returns whether it entered the backlog.
    macro_rules! offer {
        () => {{
            offered += 1;
            let obs = observe!();
            let action = policy.decide(&obs);
            let a = if action.admit.is_nan() { 0.0 } else { action.admit.clamp(0.0, 1.0) };
            limit = action.concurrency.unwrap_or(u32::MAX);
            shed = action.shed_retries;
            let admit = a >= 1.0 || (a > 0.0 && rng.random::<f64>() < a);
            if !admit {
                rejected += 1;
            } else if q_of(&waiting, &busy) >= cap {
                admitted += 1;
                dropped += 1;
            } else {
                admitted += 1;
                waiting.push_back(t);
            }
            start_service!();
        }};
    }

    loop {
        let q_now = q_of(&waiting, &busy);
        // Next completion, within the current health segment only.
        let (t_done, s_done) = match busy.peek() {
            Some(job) => {
                let f = pool.per_executor_rate(busy.len() as u32);
                let h_now = seg_h + seg_g * (t - seg_t0);
                let tau = time_to_work(job.target - work, f, h_now, seg_g);
                let td = t + tau;
                (if td <= t_segment { td } else { f64::INFINITY }, job.seq)
            }
            None => (f64::INFINITY, 0),
        };

        // Earliest event; ties go to the one scheduled first (lowest sequence number).
        let mut best = (end, u64::MAX, Next::End);
        for cand in [
            (t_arrival, s_arrival, Next::Arrival),
            (t_done, s_done, Next::Completion),
            (t_segment, s_segment, Next::Segment),
            (t_rate, s_rate, Next::Rate),
            (t_tick, s_tick, Next::Tick),
        ] {
            if cand.0 < best.0 || (cand.0 == best.0 && cand.1 < best.1) {
                best = cand;
            }
        }
        let (t_next, _, kind) = best;

        // Advance the work clock and the backlog-time integral to t_next.
        if !busy.is_empty() {
            let f = pool.per_executor_rate(busy.len() as u32);
            let h_now = seg_h + seg_g * (t - seg_t0);
            let tau = t_next - t;
            work += f * (h_now * tau + 0.5 * seg_g * tau * tau);
        }
        tracker.integral += q_now as f64 * (t_next - t);
        t = t_next;

        match kind {
            Next::End => break,
            Next::Arrival => {
                events += 1;
                offer!();
                seq += 1;
                s_arrival = seq;
                t_arrival = t + draw_gap(&mut rng, lambda);
            }
            Next::Completion => {
                events += 1;
                let job = busy.pop().expect("a completion needs a busy executor");
                work = work.max(job.target);
                latency_total += t - job.arrived;
                wait_total += job.started - job.arrived;
                let h_now = seg_h + seg_g * (t - seg_t0);
                let p = if retries_on { cfg.retries.probability(h_now) } else { 0.0 };
                if p > 0.0 && rng.random::<f64>() < p {
                    retried += 1;
                    if shed {
                        retries_shed += 1;
                    } else if gate_retries {
                        offer!();
                    } else {
                        admitted += 1;
                        waiting.push_back(t);
                    }
                } else {
                    cleared += 1;
                    sojourn_sum += t - job.arrived;
                    sojourns.push((t - job.arrived) as f32);
                }
                start_service!();
            }
            Next::Segment => {
                let (h, g, left) = cfg.health.segment(t);
                seg_h = h;
                seg_g = g;
                seg_t0 = t;
                seq += 1;
                s_segment = seq;
                // A piece always ends after now: a zero-length piece, or one shorter than the
                // clock's resolution at `t` (rounding at a piece's end), must not hold the
                // clock still.
                let end = t + left;
                t_segment = if end > t { end } else { t + t.abs().max(1.0) * f64::EPSILON };
            }
            Next::Rate => {
                lambda = cfg.traffic_at(t);
                t_arrival = t + draw_gap(&mut rng, lambda);
                seq += 1;
                s_arrival = seq;
                s_rate = seq;
                t_rate = rate_steps.pop().unwrap_or(f64::INFINITY);
            }
            Next::Tick => {
                let obs = observe!();
                let action = policy.decide(&obs);
                let admit_now = if action.admit.is_nan() { 0.0 } else { action.admit.clamp(0.0, 1.0) };
                limit = action.concurrency.unwrap_or(u32::MAX);
                shed = action.shed_retries;
                start_service!();
                let q = q_of(&waiting, &busy) as f64;
                tracker.sample(t, q);
                if let (Some(s), Some(e)) = (series.as_mut(), every) {
                    if tick_k % e == 0 {
                        s.push(t, q, seg_h + seg_g * (t - seg_t0), admit_now);
                    }
                }
                if tick_k % progress_every == 0 {
                    if let Some(cb) = opts.progress.as_mut() {
                        cb(tick_k as f64 / total_ticks as f64);
                    }
                }
                tick_k += 1;
                seq += 1;
                s_tick = seq;
                // Grid times as k·dt (no accumulated rounding); the last tick lands on `end`
                // and is processed before End (it was scheduled earlier).
                t_tick = if tick_k <= total_ticks { tick_k as f64 * cfg.dt } else { f64::INFINITY };
            }
        }
    }

    let q_final = q_of(&waiting, &busy) as f64;
    let totals = Totals {
        offered: offered as f64,
        admitted: admitted as f64,
        rejected: rejected as f64,
        dropped: dropped as f64,
        cleared: cleared as f64,
        retried: retried as f64,
        retries_shed: retries_shed as f64,
        mean_sojourn: if cleared > 0 { Some(sojourn_sum / cleared as f64) } else { None },
        sojourn_quantiles: crate::record::quantiles(&mut sojourns.kept, [0.5, 0.99]),
        events,
    };
    Outcome { summary: tracker.finish(totals, q_final, end, 0.0), series }
}

/// Most sojourn times kept for the median and the 99th percentile (4 MiB). A run that
/// clears more keeps a uniform sample of them (J. S. Vitter, "Random sampling with a
/// reservoir", ACM TOMS 11(1), 1985, Algorithm R), drawn from a generator of its own so the
/// model's random stream is unchanged: every run up to a million completions (the seed's
/// 400 s clear about 20 000) has exact quantiles, and a 10⁶-s run keeps at most 4 MB of sojourns where
/// all of them would take 200 MB (400 MB at the event budget, twice that while the vector
/// grows).
const MAX_SOJOURNS: usize = 1 << 20;

#[derive(Default)]
struct Reservoir {
    kept: Vec<f32>,
    seen: u64,
    state: u64,
}

impl Reservoir {
    fn push(&mut self, x: f32) {
        self.seen += 1;
        if self.kept.len() < MAX_SOJOURNS {
            self.kept.push(x);
            return;
        }
        // SplitMix64 (S. Vigna): a fixed sequence, the same in every run.
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let j = (((z as u128) * (self.seen as u128)) >> 64) as usize;
        if j < MAX_SOJOURNS {
            self.kept[j] = x;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{time_to_work, Reservoir, MAX_SOJOURNS};

    #[test]
    fn the_sojourn_reservoir_is_exact_below_its_size_and_uniform_above() {
        let mut r = Reservoir::default();
        for i in 0..1000 {
            r.push(i as f32);
        }
        assert_eq!(r.kept, (0..1000).map(|i| i as f32).collect::<Vec<_>>());
        let mut r = Reservoir::default();
        let n = 3 * MAX_SOJOURNS;
        for i in 0..n {
            r.push(i as f32);
        }
        assert_eq!(r.kept.len(), MAX_SOJOURNS);
        let q = crate::record::quantiles(&mut r.kept, [0.5, 0.99]).unwrap();
        let (m, p99) = (q[0] / n as f64, q[1] / n as f64);
        assert!((m - 0.5).abs() < 0.005 && (p99 - 0.99).abs() < 0.002, "{m} {p99}");
    }

    #[test]
    fn work_time_inverts_the_integral() {
        for &(need, f, h, g) in
            &[(1.0, 2.0, 0.5, 0.0), (3.0, 1.5, 1.0, -0.18), (0.7, 37.5, 0.1, 0.18), (2.0, 1.0, 0.2, 0.3)]
        {
            let tau = time_to_work(need, f, h, g);
            let got = f * (h * tau + 0.5 * g * tau * tau);
            assert!((got - need).abs() < 1e-9, "{need} {f} {h} {g}: {tau} gives {got}");
        }
        // Decreasing health that reaches zero before the work is done never finishes.
        assert!(time_to_work(10.0, 1.0, 1.0, -1.0).is_infinite());
        assert_eq!(time_to_work(5.0, 1.0, 0.0, 0.0), f64::INFINITY);
    }
}
