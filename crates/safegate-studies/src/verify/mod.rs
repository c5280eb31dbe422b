//! `verify`: a boundary checked against the model by Monte Carlo, over its envelope.
//!
//! For each cell of a grid over the boundary's envelope (traffic × lowest health of the
//! scenario's dips) it runs `trials` independent trajectories of the horizon `T` in the
//! stepped stochastic mode, once under the safety filter (wrapping the nominal controller)
//! and once under the nominal controller alone, and measures:
//! - the exit frequency: the share of trajectories whose queue ever exceeds `θ·Q`, with a
//!   99 % Clopper–Pearson interval;
//! - the empirical CVaR at tail η of the largest overshoot `max_t (q/Q − θ)⁺` per trajectory;
//! - how often the filter was feasible, how often the backup acted, and the throughput the
//!   filter gave up (Corollary 3's cost, measured), plus goodput.
//!
//! Every trajectory has its own seed derived from `(seed, cell, trial)`, so results do not
//! depend on the number of threads.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use safegate_core::boundary::Boundary;
use safegate_core::filter::bound::{freedman, HorizonInputs};
use safegate_core::safety::{SafetyConfig, SafetyFilter};
use safegate_core::stats::empirical_cvar;
pub use safegate_core::stats::{trials_to_show, Frequency, Verdict};

mod judge;
mod nominal;
mod report;
mod request;

pub use judge::MIN_TAIL_TRAJECTORIES;
use judge::{judge, Judgement};
pub use nominal::Nominal;
pub use report::{Analytic, ArmResult, CellResult, CostFloor, Cvar, Outcome, VerifyReport};
pub use request::{VerifyError, VerifyRequest};

use safegate_sim::health::HealthSchedule;
use safegate_sim::{Config, RunOptions};

/// What to verify and how hard.
#[derive(Debug, Clone)]
pub struct VerifyConfig {
    /// The scenario (its pool, health shape, dt; traffic and dip depth are swept).
    pub base: Config,
    /// The boundary.
    pub boundary: Boundary,
    /// The nominal controller.
    pub nominal: Nominal,
    /// Trajectories per cell and arm.
    pub trials: u64,
    /// Grid points over the envelope's traffic range (0: the scenario's cell only).
    pub traffic_points: usize,
    /// Grid points over the envelope's health range.
    pub health_points: usize,
    /// Seed.
    pub seed: u64,
}

fn with_cell(base: &Config, traffic: f64, low: f64) -> Config {
    let mut cfg = base.clone();
    cfg.traffic = traffic;
    match &mut cfg.health.schedule {
        HealthSchedule::Cycle(s) | HealthSchedule::Dip { shape: s, .. } => s.low = low.min(s.high),
        HealthSchedule::Constant { level } => *level = level.min(1.0).max(low),
        HealthSchedule::Trace { .. } => {}
    }
    cfg
}

fn trial_seed(seed: u64, cell: u64, trial: u64, arm: u64) -> u64 {
    let mut z = seed
        ^ cell.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ trial.wrapping_mul(0xBF58_476D_1CE4_E5B9)
        ^ arm.rotate_left(40);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^ (z >> 31)
}

#[derive(Default, Clone, Copy)]
struct Acc {
    exits: u64,
    decisions: u64,
    infeasible: u64,
    interventions: u64,
    given_up: f64,
    admitted: f64,
    cleared: f64,
    queue_time: f64,
    worst: f64,
}

impl Acc {
    fn add(mut self, o: Acc) -> Acc {
        self.exits += o.exits;
        self.decisions += o.decisions;
        self.infeasible += o.infeasible;
        self.interventions += o.interventions;
        self.given_up += o.given_up;
        self.admitted += o.admitted;
        self.cleared += o.cleared;
        self.queue_time += o.queue_time;
        self.worst = self.worst.max(o.worst);
        self
    }
}

/// Everything one arm of one cell needs.
#[derive(Clone, Copy)]
struct Arm<'a> {
    cfg: &'a Config,
    safety: Option<&'a SafetyConfig>,
    nominal: Nominal,
    trials: u64,
    seed: u64,
    cell: u64,
    boundary: f64,
    capacity: f64,
    eta: f64,
    rho: Option<f64>,
}

fn run_arm(arm_setup: &Arm<'_>, done: &AtomicU64) -> ArmResult {
    let Arm { cfg, safety, nominal, trials, seed, cell, boundary, capacity, eta, rho } = *arm_setup;
    let arm = u64::from(safety.is_some());
    let threshold = boundary / capacity;
    // Trials run in parallel chunks, folded in trial order (the sums do not depend on the
    // thread count); only the overshoot of each trial is kept for the CVaR.
    let mut total = Acc::default();
    let mut losses: Vec<f64> = Vec::with_capacity(trials as usize);
    let mut first = 0;
    while first < trials {
        let last = (first + TRIAL_CHUNK).min(trials);
        let part: Vec<(Acc, f64)> = (first..last)
            .into_par_iter()
            .map(|t| {
                let c = Config { seed: trial_seed(seed, cell, t, arm), ..cfg.clone() };
                let mut acc = Acc::default();
                let summary = match safety {
                    Some(s) => {
                        let mut f = SafetyFilter::new(s.clone(), nominal.policy()).expect("validated filter");
                        let out = safegate_sim::stepped::simulate(&c, &mut f, RunOptions::default()).summary;
                        let st = f.stats();
                        acc.decisions = st.decisions;
                        acc.infeasible = st.infeasible;
                        acc.interventions = st.interventions;
                        acc.given_up = st.given_up;
                        out
                    }
                    None => safegate_sim::stepped::simulate(&c, &mut nominal.policy(), RunOptions::default()).summary,
                };
                let overshoot = (summary.queue_max / capacity - threshold).max(0.0);
                acc.exits = u64::from(summary.queue_max > boundary);
                acc.admitted = summary.admitted;
                acc.cleared = summary.cleared;
                acc.queue_time = summary.backlog_time;
                acc.worst = overshoot;
                done.fetch_add(1, Ordering::Relaxed);
                (acc, overshoot)
            })
            .collect();
        for (a, l) in part {
            total = total.add(a);
            losses.push(l);
        }
        first = last;
    }
    let cvar = empirical_cvar(&mut losses, eta);
    let time = trials as f64 * cfg.steps() as f64 * cfg.dt;
    let decisions = total.decisions.max(1) as f64;
    ArmResult {
        exit_probability: Frequency::from_counts(total.exits, trials),
        cvar: Cvar { estimate: cvar, eta, rho },
        worst_overshoot: total.worst,
        feasible_fraction: if safety.is_some() { 1.0 - total.infeasible as f64 / decisions } else { 1.0 },
        backup_fraction: if safety.is_some() { total.infeasible as f64 / decisions } else { 0.0 },
        intervention_fraction: if safety.is_some() { total.interventions as f64 / decisions } else { 0.0 },
        throughput_given_up: total.given_up / time,
        admitted_rate: total.admitted / time,
        goodput: total.cleared / time,
        mean_queue: total.queue_time / time,
    }
}

/// Trials of one arm run as one parallel batch (bounds the memory of a batch's records).
const TRIAL_CHUNK: u64 = 4096;

fn grid(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if n == 0 {
        return vec![];
    }
    if n == 1 || hi <= lo {
        return vec![lo];
    }
    (0..n).map(|i| lo + (hi - lo) * i as f64 / (n - 1) as f64).collect()
}

/// Run the verification; `progress` is told the fraction of trajectories done.
pub fn verify(vc: &VerifyConfig, progress: &(dyn Fn(f64) + Sync)) -> Result<VerifyReport, safegate_core::RangeError> {
    let b = &vc.boundary;
    let capacity = b.barrier.capacity.unwrap_or(vc.base.pool.capacity);
    let safety = b.safety_config(capacity)?;
    let boundary = safety.barrier.boundary();
    let mut base = vc.base.clone();
    base.dt = b.decision.period;
    base.duration = b.probability.horizon;
    base.initial_queue = 0.0;
    base.check()?;
    request::check_effort(vc, base.steps())?;
    let (eta, rho) = match &b.magnitude {
        Some(m) => (m.eta, Some(m.rho)),
        None => (0.05, None),
    };
    let scenario_low = match &base.health.schedule {
        HealthSchedule::Cycle(s) | HealthSchedule::Dip { shape: s, .. } => s.low,
        HealthSchedule::Constant { level } => *level,
        HealthSchedule::Trace { .. } => 1.0,
    };
    let mut cells = vec![(base.traffic, scenario_low)];
    for t in grid(b.envelope.traffic[0], b.envelope.traffic[1], vc.traffic_points) {
        for h in grid(b.envelope.health[0], b.envelope.health[1], vc.health_points) {
            cells.push((t, h));
        }
    }
    let total = (cells.len() as u64) * 2 * vc.trials;
    let done = AtomicU64::new(0);
    // What every arm shares; each takes its cell's config, filter and index from here.
    let template = Arm {
        cfg: &base,
        safety: None,
        nominal: vc.nominal,
        trials: vc.trials,
        seed: vc.seed,
        cell: 0,
        boundary,
        capacity,
        eta,
        rho,
    };
    for &(traffic, low) in &cells {
        with_cell(&base, traffic, low).check()?;
    }
    let mut results = Vec::with_capacity(cells.len());
    for (i, &(traffic, low)) in cells.iter().enumerate() {
        let cfg = with_cell(&base, traffic, low);
        let cell = i as u64;
        let arm = Arm { cfg: &cfg, safety: Some(&safety), cell, ..template };
        let filtered = run_arm(&arm, &done);
        progress(done.load(Ordering::Relaxed) as f64 / total as f64);
        let unfiltered = run_arm(&Arm { safety: None, ..arm }, &done);
        progress(done.load(Ordering::Relaxed) as f64 / total as f64);
        results.push(CellResult { traffic, health_low: low, filtered, unfiltered });
    }
    let scenario = results.remove(0);
    let envelope = results;

    // Corollary 3: the same trajectories (same seeds) with the CVaR constraint removed.
    let cost_floor = match &b.magnitude {
        Some(_) => {
            let mut prob_only = b.clone();
            prob_only.magnitude = None;
            let safety_p = prob_only.safety_config(capacity)?;
            let cfg = with_cell(&base, scenario.traffic, scenario.health_low);
            let arm = Arm { cfg: &cfg, safety: Some(&safety_p), cell: 0, ..template };
            let p = run_arm(&arm, &done).throughput_given_up;
            let joint = scenario.filtered.throughput_given_up;
            Some(CostFloor { probability_only: p, joint, holds: joint >= p - 1e-9 })
        }
        None => None,
    };

    let eps = b.probability.epsilon;
    let cells = || std::iter::once(&scenario).chain(&envelope);
    let unfiltered_violations =
        cells().filter(|c| c.unfiltered.exit_probability.verdict(eps) == Verdict::Violates).count();
    let n_cells = (envelope.len() + 1) as f64;
    let feasible_fraction = cells().map(|c| c.filtered.feasible_fraction).sum::<f64>() / n_cells;
    let backup_fraction = cells().map(|c| c.filtered.backup_fraction).sum::<f64>() / n_cells;
    let all: Vec<&CellResult> = cells().collect();
    let Judgement { violations, cvar_violations, outcome, verdict } = judge(&all, eps, rho, eta, vc.trials);
    let pass = outcome == Outcome::Pass;

    // Analytic reference: Freedman from an empty queue, α = 1.
    let dt = b.decision.period;
    let lambda_max = b.envelope.traffic[1].max(base.traffic);
    let (_, peak) = base.pool.peak_rate();
    let sigma_q = ((lambda_max + peak) * dt).sqrt();
    let xi_max = poisson_quantile(lambda_max * dt, 1e-12);
    let inputs = HorizonInputs {
        h0: b.barrier.threshold,
        alpha: 1.0,
        sigma_h: sigma_q / capacity,
        delta: xi_max / capacity,
        steps: b.horizon_steps(),
    };
    let analytic = Analytic {
        epsilon: eps,
        horizon: b.probability.horizon,
        steps: b.horizon_steps(),
        step_epsilon: b.step_epsilon(),
        union_bound: b.step_epsilon() * b.horizon_steps() as f64,
        freedman: freedman(&inputs).probability,
        freedman_inputs: inputs,
    };
    Ok(VerifyReport {
        boundary: b.name.clone(),
        nominal: vc.nominal,
        analytic,
        scenario,
        envelope,
        epsilon: eps,
        feasible_fraction,
        backup_fraction,
        violations,
        cvar_violations,
        unfiltered_violations,
        cost_floor,
        trajectory_steps: (total + if b.magnitude.is_some() { vc.trials } else { 0 }) * base.steps(),
        verdict,
        outcome,
        pass,
    })
}

/// Smallest `k` with `P(Poisson(m) > k) ≤ tail`.
fn poisson_quantile(m: f64, tail: f64) -> f64 {
    let mut p = (-m).exp();
    let mut cdf = p;
    let mut k = 0.0;
    while 1.0 - cdf > tail && k < 1e6 {
        k += 1.0;
        p *= m / k;
        cdf += p;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trials_to_show_is_the_first_count_whose_upper_limit_reaches_eps() {
        for eps in [0.01, 0.05, 0.001] {
            let n = trials_to_show(eps);
            assert!(Frequency::from_counts(0, n).ci_high <= eps, "{eps}: {n}");
            assert!(Frequency::from_counts(0, n - 1).ci_high > eps, "{eps}: {n}");
        }
        assert_eq!(trials_to_show(0.0), 0);
    }
}
