//! One fleet run: M gates, their own queues and policies, one contended downstream.

use safegate_core::boundary::Boundary;
use safegate_core::safety::SafetyFilter;
use safegate_core::{Action, Observation, Policy, RangeError};
use serde::Serialize;

use super::config::{FleetConfig, GateConfig};
use super::price::{equilibrium, rate_at, Coordinator};
use safegate_sim::config::{Checked, Config};

/// The coordinator's share as a [`Policy`]: the nominal a [`SafetyFilter`] filters when a
/// priced gate has one. The fleet sets `admit` before every decision.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PriceShare {
    /// The admitted share `y_i/λ_i` the price asks for, in `[0, 1]`.
    pub admit: f64,
}

impl Policy for PriceShare {
    fn decide(&mut self, _obs: &Observation) -> Action {
        Action::admit(self.admit)
    }
    fn name(&self) -> &'static str {
        "price"
    }
}

/// How one gate decides.
pub enum GatePolicy {
    /// Alone, from an observation of its own queue only (uncoordinated): any policy.
    Local(Box<dyn Policy + Send>),
    /// The coordinator's share `y_i/λ_i`, as is.
    Priced,
    /// The coordinator's share as the nominal of this gate's own safety filter.
    Filtered(Box<SafetyFilter<PriceShare>>),
}

impl std::fmt::Debug for GatePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GatePolicy::Local(p) => write!(f, "Local({})", p.name()),
            GatePolicy::Priced => f.write_str("Priced"),
            GatePolicy::Filtered(_) => f.write_str("Filtered(price)"),
        }
    }
}

impl GatePolicy {
    /// A registry policy by name (`open`, `seed-gate`, `gradient2+pool`, …;
    /// [`crate::compare::build_policy`]) built for gate `i`'s own pool.
    pub fn named(name: &str, cfg: &FleetConfig, i: usize) -> Result<Self, String> {
        let single = Config { pool: cfg.pool(i), traffic: cfg.gates[i].rate, dt: cfg.dt, ..Config::default() };
        crate::compare::build_policy(name, &single).map(GatePolicy::Local)
    }

    /// The price under the safety filter a boundary describes, for gate `i`'s backlog.
    pub fn filtered(boundary: &Boundary, cfg: &FleetConfig, i: usize) -> Result<Self, String> {
        let safety = boundary.safety_config(cfg.gates[i].capacity).map_err(|e| e.at("boundary").to_string())?;
        let f = SafetyFilter::new(safety, PriceShare::default()).map_err(|e| e.to_string())?;
        Ok(GatePolicy::Filtered(Box::new(f)))
    }

    fn priced(&self) -> bool {
        !matches!(self, GatePolicy::Local(_))
    }
}

/// What to record besides the summaries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FleetRecord {
    /// Record the price and every queue every this many steps (`None`: nothing).
    pub every: Option<u32>,
}

/// One gate's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateSummary {
    /// `λ_i` [req/s].
    pub rate: f64,
    /// Requests offered.
    pub offered: f64,
    /// Requests admitted (before any overflow of the backlog).
    pub admitted: f64,
    /// Requests rejected at the gate.
    pub rejected: f64,
    /// Admitted requests lost to a full backlog.
    pub dropped: f64,
    /// Requests the dependency cleared.
    pub cleared: f64,
    /// `cleared / duration`, the gate's goodput [req/s].
    pub goodput: f64,
    /// This gate's share of the fleet's goodput.
    pub share: f64,
    /// Share of time with the backlog above `θ·cap_i`.
    pub time_above: f64,
    /// Upward crossings of `θ·cap_i`.
    pub crossings: u64,
    /// Mean backlog.
    pub queue_mean: f64,
    /// Backlog at the end.
    pub queue_final: f64,
}

/// The fleet's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetOutcome {
    /// Per gate, in the configuration's order.
    pub gates: Vec<GateSummary>,
    /// Σ admitted.
    pub admitted: f64,
    /// Σ cleared.
    pub cleared: f64,
    /// Σ dropped.
    pub dropped: f64,
    /// The fleet's goodput [req/s].
    pub goodput: f64,
    /// Jain's index of the gates' goodputs, `(Σx)²/(M·Σx²)`: 1 is an equal split, `1/M`
    /// one gate taking everything (R. Jain, D.-M. Chiu, W. Hawe, "A quantitative measure of
    /// fairness and discrimination for resource allocation in shared computer systems",
    /// DEC-TR-301, 1984).
    pub jain: f64,
    /// Jain's index of goodput over demand, `x_i = goodput_i/λ_i`.
    pub jain_demand: f64,
    /// The price at the end (`None` without a coordinator).
    pub price_final: Option<f64>,
    /// The equilibrium price `p*` at the end's health (`None` without a coordinator).
    pub price_equilibrium: Option<f64>,
    /// The recorded series, if asked for.
    pub series: Option<FleetSeries>,
}

/// Recorded series of a fleet run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FleetSeries {
    /// Times \[s\].
    pub t: Vec<f64>,
    /// The coordinator's price (empty without one).
    pub price: Vec<f64>,
    /// `queues[i][k]`: gate `i`'s backlog at `t[k]`.
    pub queues: Vec<Vec<f64>>,
}

/// Jain's fairness index `(Σx)²/(M·Σx²)` (1 for an empty or all-zero set).
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if s2 > 0.0 {
        s * s / (x.len() as f64 * s2)
    } else {
        1.0
    }
}

/// Per-gate state of a run.
#[derive(Debug, Clone, Default)]
struct GateState {
    q: f64,
    limit: u32,
    offered: f64,
    admitted: f64,
    rejected: f64,
    dropped: f64,
    cleared: f64,
    latency: f64,
    wait: f64,
    above: f64,
    crossings: u64,
    integral: f64,
}

/// Run the fleet `cfg` with one policy per gate.
///
/// Each step every gate decides from its own queue (and, when priced, the price its delay
/// lets it see); then with `n_i = min(P_i, q_i, cap_k_i)` busy and `N = Σ n_i`, gate `i`
/// clears `n_i·H(t)·s·min(1, (C/N)²)`: the seed's contention curve counting every gate's
/// in-flight work (docs/fleet.md).
///
/// # Examples
///
/// Two greedy gates, one with four times the executors, take the dependency in proportion
/// to their concurrency, and push it far past `C`:
///
/// ```
/// use safegate_studies::fleet::{run_fleet, FleetConfig, FleetRecord, GateConfig, GatePolicy};
///
/// let cfg = FleetConfig {
///     gates: vec![
///         GateConfig { rate: 120.0, executors: 32, ..GateConfig::default() },
///         GateConfig { rate: 120.0, executors: 8, ..GateConfig::default() },
///     ],
///     ..FleetConfig::default()
/// };
/// let mut policies: Vec<GatePolicy> = (0..2).map(|i| GatePolicy::named("open", &cfg, i).unwrap()).collect();
/// let out = run_fleet(&cfg, &mut policies, FleetRecord::default()).unwrap();
/// assert!((out.gates[0].share - 0.8).abs() < 0.01);
/// assert!(out.goodput < 20.0); // 150 req/s at N = C; 15 at N = 40
/// ```
pub fn run_fleet(cfg: &FleetConfig, policies: &mut [GatePolicy], record: FleetRecord) -> Checked<FleetOutcome> {
    cfg.check()?;
    if policies.len() != cfg.gates.len() {
        return Err(RangeError::new("policies", policies.len(), format!("one per gate: {}", cfg.gates.len())));
    }
    if cfg.price.is_none() {
        if let Some(i) = policies.iter().position(GatePolicy::priced) {
            return Err(RangeError::new(format!("fleet.gates[{i}]"), "priced", "a [fleet.price] section"));
        }
    }
    Ok(simulate(cfg, policies, record))
}

fn simulate(cfg: &FleetConfig, policies: &mut [GatePolicy], record: FleetRecord) -> FleetOutcome {
    let m = cfg.gates.len();
    let dt = cfg.dt;
    let steps = cfg.steps();
    let pools: Vec<_> = (0..m).map(|i| cfg.pool(i)).collect();
    let delays: Vec<u64> = cfg.gates.iter().map(|g| (g.delay / dt).round() as u64).collect();
    let mut coord =
        price_cfg_start(cfg).map(|(gain, p0)| Coordinator::new(gain, p0, *delays.iter().max().unwrap_or(&0)));
    let mut st: Vec<GateState> =
        cfg.gates.iter().map(|g| GateState { q: g.initial_queue, limit: u32::MAX, ..GateState::default() }).collect();
    let every = record.every.map(|e| e.max(1) as u64);
    let mut series = every.map(|_| FleetSeries { queues: vec![Vec::new(); m], ..FleetSeries::default() });
    let (c2, s) = (cfg.comfortable * cfg.comfortable, cfg.rate);
    let per_request =
        |n_total: f64, h: f64| if n_total > cfg.comfortable { h * s * c2 / (n_total * n_total) } else { h * s };
    let mut admit_rate = vec![0.0; m];
    let mut busy = vec![0.0; m];

    for k in 0..steps {
        let t = k as f64 * dt;
        let h = cfg.health.value(t);
        let n_now: f64 = st.iter().zip(&pools).map(|(g, p)| p.busy_at(g.q, g.limit)).sum();
        let r_now = per_request(n_now, h);
        for i in 0..m {
            let g: &GateConfig = &cfg.gates[i];
            let gs = &mut st[i];
            let lambda = g.rate;
            let busy_now = pools[i].busy_at(gs.q, gs.limit);
            let mu_now = busy_now * r_now;
            let obs = Observation {
                now: t,
                queue: gs.q,
                capacity: g.capacity,
                in_service: busy_now,
                offered_rate: lambda,
                health: Some(h),
                offered: gs.offered,
                admitted: gs.admitted,
                completed: gs.cleared,
                retried: 0.0,
                failed: 0.0,
                latency_total: gs.latency,
                wait_total: gs.wait,
                oldest_wait: if mu_now > 0.0 { (gs.q - busy_now).max(0.0) / mu_now } else { 0.0 },
            };
            let share = |c: &Coordinator| if lambda > 0.0 { rate_at(g, c.seen(delays[i])) / lambda } else { 1.0 };
            let action = match &mut policies[i] {
                GatePolicy::Local(p) => p.decide(&obs),
                GatePolicy::Priced => Action::admit(coord.as_ref().map_or(1.0, share)),
                GatePolicy::Filtered(f) => {
                    f.nominal_mut().admit = coord.as_ref().map_or(1.0, share);
                    f.decide(&obs)
                }
            };
            let a = if action.admit.is_nan() { 0.0 } else { action.admit.clamp(0.0, 1.0) };
            gs.limit = action.concurrency.unwrap_or(u32::MAX);
            admit_rate[i] = lambda * a;
            busy[i] = pools[i].busy_at(gs.q, gs.limit);
        }
        let n_total: f64 = busy.iter().sum();
        let r = per_request(n_total, h);
        for i in 0..m {
            let gs = &mut st[i];
            let cap = cfg.gates[i].capacity;
            let level = cfg.threshold * cap;
            let (inflow, mu) = (admit_rate[i], busy[i] * r);
            let mut out = mu;
            let mut next = gs.q + dt * (inflow - mu);
            if next < 0.0 {
                out = gs.q / dt + inflow;
                next = 0.0;
            }
            if next > cap {
                gs.dropped += next - cap;
                next = cap;
            }
            let lambda = cfg.gates[i].rate;
            gs.offered += dt * lambda;
            gs.admitted += dt * inflow;
            gs.rejected += dt * (lambda - inflow);
            gs.cleared += dt * out;
            gs.latency += gs.q * dt;
            gs.wait += (gs.q - busy[i]).max(0.0) * dt;
            if next > level {
                gs.above += dt;
                if gs.q <= level {
                    gs.crossings += 1;
                }
            }
            gs.q = next;
            gs.integral += next * dt;
        }
        if let (Some(c), Some(p)) = (coord.as_mut(), cfg.price.as_ref()) {
            c.step(admit_rate.iter().sum(), cfg.priced_capacity(p, h), dt);
        }
        if let (Some(sr), Some(e)) = (series.as_mut(), every) {
            if (k + 1) % e == 0 {
                sr.t.push((k + 1) as f64 * dt);
                if let Some(c) = &coord {
                    sr.price.push(c.now());
                }
                for (qs, g) in sr.queues.iter_mut().zip(&st) {
                    qs.push(g.q);
                }
            }
        }
    }

    let duration = steps as f64 * dt;
    let total_cleared: f64 = st.iter().map(|g| g.cleared).sum();
    let gates: Vec<GateSummary> = st
        .iter()
        .zip(&cfg.gates)
        .map(|(g, c)| GateSummary {
            rate: c.rate,
            offered: g.offered,
            admitted: g.admitted,
            rejected: g.rejected,
            dropped: g.dropped,
            cleared: g.cleared,
            goodput: g.cleared / duration,
            share: if total_cleared > 0.0 { g.cleared / total_cleared } else { 0.0 },
            time_above: g.above / duration,
            crossings: g.crossings,
            queue_mean: g.integral / duration,
            queue_final: g.q,
        })
        .collect();
    let goodputs: Vec<f64> = gates.iter().map(|g| g.goodput).collect();
    let per_demand: Vec<f64> = gates.iter().filter(|g| g.rate > 0.0).map(|g| g.goodput / g.rate).collect();
    let h_end = cfg.health.value(duration);
    FleetOutcome {
        admitted: st.iter().map(|g| g.admitted).sum(),
        cleared: total_cleared,
        dropped: st.iter().map(|g| g.dropped).sum(),
        goodput: total_cleared / duration,
        jain: jain(&goodputs),
        jain_demand: jain(&per_demand),
        price_final: coord.as_ref().map(Coordinator::now),
        price_equilibrium: cfg
            .price
            .as_ref()
            .map(|p| equilibrium(&cfg.gates, cfg.priced_capacity(p, h_end), p.gain).price),
        gates,
        series,
    }
}

/// The coordinator's gain and initial price, if the fleet has one.
fn price_cfg_start(cfg: &FleetConfig) -> Option<(f64, f64)> {
    let p = cfg.price.as_ref()?;
    let p0 = p
        .initial
        .unwrap_or_else(|| equilibrium(&cfg.gates, cfg.priced_capacity(p, cfg.health.value(0.0)), p.gain).price);
    Some((p.gain, p0))
}
