//! Telemetry from the seed's executor pool, with or without an injected fault: the samples
//! in `telemetry/`, the boundary check's detection test and its benchmark
//! (docs/boundary-check.md §The generated traces).
//!
//! The pool is the model's ([`Pool`]: P executors, comfortable concurrency C, per-executor
//! rate s, clearing `H·s·n·min(1, (C/n)²)`), stepped every `dt` with Poisson arrivals and
//! completions. A concurrency limit k ∈ \[1, P\] is set about once a second by a probing
//! controller: up by one at random moments while the limit binds, back by one when one more
//! request in flight costs 30 % more service time (past the pool's sweet spot C). Arrivals beyond the
//! queue's capacity are rejected. Health dips periodically. The faults:
//!
//! - `drift`: the latency the telemetry reports grows by a factor `1 + d·t/T`, d ∈ \[0.5, 1.5\]
//!   (a baseline that drifts under the limiter);
//! - `stuck-min`/`stuck-max`: from 30–50 % of the run on, the limit stays at 1 (or P);
//! - `retry-storm`: for 20–30 % of the run, retries add 40–100 % to the offered load;
//! - `oscillation`: the limit is modulated by ±40–60 % at a period of 4–12 s;
//! - `heavy-tail`: 200–400 bursts push the queue past θ·Q by a Pareto(α ∈ \[1.1, 1.5\])
//!   amount (correlated retries replayed at once); `light-bursts` does the same with an
//!   exponential amount, and is clean.

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Poisson};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{Signal, Telemetry};
use safegate_sim::model::Pool;

/// The model's longest step \[s\].
pub const MODEL_STEP: f64 = 0.1;

/// What a generated trace carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Nothing.
    Clean,
    /// Bursts with light-tailed (exponential) overshoots: clean too.
    LightBursts,
    /// A drifting latency baseline.
    Drift,
    /// The limit stuck at its minimum.
    StuckMin,
    /// The limit stuck at its maximum.
    StuckMax,
    /// A retry storm.
    RetryStorm,
    /// An oscillating limit.
    Oscillation,
    /// Heavy-tailed excursions.
    HeavyTail,
}

impl Fault {
    /// Every kind, clean ones first.
    pub const ALL: [Fault; 8] = [
        Fault::Clean,
        Fault::LightBursts,
        Fault::Drift,
        Fault::StuckMin,
        Fault::StuckMax,
        Fault::RetryStorm,
        Fault::Oscillation,
        Fault::HeavyTail,
    ];

    /// Kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Clean => "clean",
            Fault::LightBursts => "light-bursts",
            Fault::Drift => "drift",
            Fault::StuckMin => "stuck-min",
            Fault::StuckMax => "stuck-max",
            Fault::RetryStorm => "retry-storm",
            Fault::Oscillation => "oscillation",
            Fault::HeavyTail => "heavy-tail",
        }
    }

    /// By name.
    pub fn from_name(s: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.name() == s)
    }

    /// The finding the check should raise for it (`None` for the clean ones).
    pub fn finding(self) -> Option<super::FindingKind> {
        use super::FindingKind as K;
        match self {
            Fault::Clean | Fault::LightBursts => None,
            Fault::Drift => Some(K::BaselineDrift),
            Fault::StuckMin | Fault::StuckMax => Some(K::StuckLimit),
            Fault::RetryStorm => Some(K::RetryStorm),
            Fault::Oscillation => Some(K::Oscillation),
            Fault::HeavyTail => Some(K::HeavyTail),
        }
    }
}

/// A trace to generate.
#[derive(Debug, Clone)]
pub struct TraceSpec {
    /// Seconds.
    pub duration: f64,
    /// Sample interval \[s\] (the model steps at most [`MODEL_STEP`] at a time).
    pub dt: f64,
    /// The fault.
    pub fault: Fault,
    /// Seed: traffic, dips and the fault's parameters are drawn from it too.
    pub seed: u64,
    /// The pool.
    pub pool: Pool,
    /// θ, for the burst faults.
    pub threshold: f64,
}

impl TraceSpec {
    /// An hour at 10 samples per second on the seed's pool.
    pub fn new(fault: Fault, seed: u64) -> Self {
        Self { duration: 3600.0, dt: 0.1, fault, seed, pool: Pool::default(), threshold: 0.7 }
    }
}

/// Generate one trace (deterministic in the spec).
pub fn generate(spec: &TraceSpec) -> Telemetry {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(spec.seed ^ 0x5afe_6a7e);
    let pool = spec.pool;
    let p = pool.executors.max(1) as f64;
    let q_cap = pool.capacity;
    // The model steps at most 0.1 s at a time; the telemetry samples every `spec.dt`,
    // averaging rates and latency over the interval, reading levels at its end.
    let per_sample = (spec.dt / MODEL_STEP).ceil().max(1.0) as usize;
    let dt = spec.dt / per_sample as f64;
    let steps = (spec.duration / spec.dt).round().max(2.0) as usize * per_sample;
    let mut acc = [0.0f64; 5];
    // The run's own conditions.
    let lambda = rng.random_range(0.2..0.35) * pool.peak_rate().1;
    let dip_period = rng.random_range(40.0..90.0);
    let dip_depth = rng.random_range(0.45..0.7);
    let dip_phase = rng.random_range(0.0..dip_period);
    let retry_share = rng.random_range(0.01..0.06);
    // The fault's parameters.
    let drift = rng.random_range(0.5..1.5);
    let stuck_at = rng.random_range(0.3..0.5) * spec.duration;
    let storm_len = rng.random_range(0.2..0.3) * spec.duration;
    let storm_at = rng.random_range(0.1..(0.9 * spec.duration - storm_len));
    let storm_gain = rng.random_range(0.4..1.0);
    let osc_amp = rng.random_range(0.4..0.6);
    let osc_period = rng.random_range(4.0..12.0);
    let bursts = rng.random_range(200..400);
    let burst_alpha = rng.random_range(1.1..1.5);
    let line = spec.threshold * q_cap;
    let burst_every = spec.duration / bursts as f64;

    let mut t_out = Vec::with_capacity(steps);
    let mut x = Vec::with_capacity(steps);
    let mut lat = Vec::with_capacity(steps);
    let mut thr = Vec::with_capacity(steps);
    let mut off = Vec::with_capacity(steps);
    let mut hea = Vec::with_capacity(steps);
    let mut rej = Vec::with_capacity(steps);
    let mut ret = Vec::with_capacity(steps);
    let mut lim = Vec::with_capacity(steps);

    let mut q = 0.0f64;
    let mut k = (pool.comfortable.round()).clamp(1.0, p);
    let mut est = vec![0.0; pool.executors as usize + 2];
    let mut est_t = vec![f64::NEG_INFINITY; pool.executors as usize + 2];
    let mut next_decision = 1.0;
    let mut next_burst = burst_every * rng.random_range(0.2..1.0);
    let poisson = |rng: &mut Xoshiro256PlusPlus, mean: f64| -> f64 {
        if mean <= 0.0 {
            0.0
        } else if mean > 1e6 {
            mean.round()
        } else {
            Poisson::new(mean).map(|d| d.sample(rng)).unwrap_or(mean.round())
        }
    };
    for i in 0..steps {
        let t = (i + 1) as f64 * dt;
        let phase = (t + dip_phase) % dip_period;
        let mut h = if phase < 0.3 * dip_period { dip_depth } else { 1.0 };
        h = (h + 0.02 * (rng.random::<f64>() - 0.5)).clamp(0.0, 1.0);
        // The published limit.
        let mut k_pub = k;
        match spec.fault {
            Fault::StuckMin if t >= stuck_at => k_pub = 1.0,
            Fault::StuckMax if t >= stuck_at => k_pub = p,
            Fault::Oscillation => {
                k_pub = (k * (1.0 + osc_amp * (std::f64::consts::TAU * t / osc_period).sin())).round().clamp(1.0, p);
            }
            _ => {}
        }
        let n = q.min(k_pub).min(p).ceil().min(q.ceil());
        let rate = pool.clearing_rate(n, h);
        let base = lambda * (1.0 + 0.1 * (rng.random::<f64>() - 0.5));
        let storm = matches!(spec.fault, Fault::RetryStorm) && t >= storm_at && t < storm_at + storm_len;
        let retry_rate = base * if storm { storm_gain } else { retry_share };
        let arrivals = poisson(&mut rng, (base + retry_rate) * dt);
        let retries = poisson(&mut rng, retry_rate * dt).min(arrivals);
        let done = poisson(&mut rng, rate * dt).min(q);
        q -= done;
        let room = (q_cap - q).max(0.0).floor();
        let admitted = arrivals.min(room);
        q += admitted;
        // Bursts that bypass the gate.
        if matches!(spec.fault, Fault::HeavyTail | Fault::LightBursts) && t >= next_burst {
            next_burst += burst_every * rng.random_range(0.5..1.5);
            let u: f64 = 1.0 - rng.random::<f64>();
            let scale = 0.1 * q_cap;
            let excess = if spec.fault == Fault::HeavyTail {
                scale * (u.powf(-1.0 / burst_alpha) - 1.0)
            } else {
                -scale * u.ln()
            };
            q = q.max(line) + excess.min(1e9).ceil() + 1.0;
        }
        // Service time and latency: queueing ahead plus one's own service.
        // (at least one executor at work: an idle pool serves the next arrival at once).
        let busy = n.max(1.0);
        let rate_busy = pool.clearing_rate(busy, h);
        let st = if rate_busy > 0.0 { busy / rate_busy } else { 1e3 };
        let sojourn = if rate_busy > 0.0 { q / rate_busy } else { 1e3 };
        let mut l = (st + sojourn.min(1e3)) * (1.0 + 0.05 * (rng.random::<f64>() - 0.5));
        if spec.fault == Fault::Drift {
            l *= 1.0 + drift * t / spec.duration;
        }
        // The controller, about once a second: it keeps a service-time estimate per
        // concurrency (so a dip, which slows every level alike, does not move it), steps
        // back when one more in flight costs 30 % more service time, and otherwise probes up
        // by one at random moments while the limit binds.
        if n >= 1.0 {
            let j = n as usize;
            est[j] = if est_t[j] + 30.0 < t { st } else { 0.8 * est[j] + 0.2 * st };
            est_t[j] = t;
        }
        if t >= next_decision {
            next_decision = t + rng.random_range(0.5..1.5);
            let ki = k as usize;
            let fresh = |j: usize| j < est.len() && est_t[j] + 30.0 >= t;
            if ki > 1 && fresh(ki) && fresh(ki - 1) && est[ki] > 1.3 * est[ki - 1] {
                k -= 1.0;
            } else if n >= k && k < p && rng.random::<f64>() < 0.5 && !(fresh(ki + 1) && est[ki + 1] > 1.3 * est[ki]) {
                k += 1.0;
            }
        }
        acc[0] += l;
        acc[1] += done;
        acc[2] += (base + retry_rate).max(0.0);
        acc[3] += arrivals - admitted;
        acc[4] += retries;
        if (i + 1) % per_sample == 0 {
            let (m, span) = (per_sample as f64, per_sample as f64 * dt);
            t_out.push(t);
            x.push(q);
            lat.push(acc[0] / m);
            thr.push(acc[1] / span);
            off.push(acc[2] / m);
            hea.push(h);
            rej.push(acc[3] / span);
            ret.push(acc[4] / span);
            lim.push(k_pub);
            acc = [0.0; 5];
        }
    }
    Telemetry {
        t: t_out,
        signal: Some(Signal::Queue),
        x,
        latency: Some(lat),
        throughput: Some(thr),
        offered: Some(off),
        health: Some(hea),
        rejections: Some(rej),
        retries: Some(ret),
        limit: Some(lim),
        capacity: Some(q_cap),
        ignored: Vec::new(),
    }
}
