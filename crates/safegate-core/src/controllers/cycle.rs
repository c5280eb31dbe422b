//! Cyclic Adaptive Regulation: the seed's nominal controller.
//!
//! A BBR ProbeBW pacing-gain cycle on a windowed-maximum estimate of the delivered rate,
//! steered by the two-mode IMM regime detector, with the rate-of-closure probe abort of
//! Definition 4 (the seed, "When the Probe Causes the Cliff It Is Measuring For" and "A
//! Formal Sketch of the Missing Mechanism"; Cardwell et al., "BBR: Congestion-Based
//! Congestion Control", ACM Queue 14(5), 2016).
//!
//! Every *round* (the controller's round trip, [`CycleConfig::round`] seconds) it
//! 1. measures the delivered rate `d = Δcompleted / Δt`; the sample is a capacity sample when
//!    work waited for an executor at every decision of the round (BBR's "not app-limited");
//!    an app-limited sample only counts when it raises the estimate, as in BBR;
//! 2. updates the bandwidth estimate `b̂ = max over the last W rounds of d`
//!    ([`WindowedMax`], deliberately slow to revise down);
//! 3. feeds the IMM the shortfall of a capacity sample in standard errors,
//!    `y = (b̂ − d)/√(b̂/round)` (Poisson counts), so mode 0 (mean 0) is "the estimate holds"
//!    and mode 1 (mean 3) is "capacity has moved below it". On an alarm the estimate is
//!    steered: the window restarts from the current sample (the IMM "steering the estimate
//!    on a regime shift");
//! 4. advances the phase: gains `[1.25, 0.75, 1, 1, 1, 1, 1, 1]`, pacing rate `g·b̂`.
//!
//! Between rounds the admitted fraction is `min(1, g·b̂/λ)`. During a probe round, the
//! rate-of-closure constraint `φ₁ = Δφ₀ + γ·φ₀ ≥ 0` (Definition 4, with `φ₀ = θ − q/cap`
//! and `Δφ₀` the margin's change per second since the round began) is checked at every
//! decision; when it binds the probe is aborted: the rest of the round paces at the drain
//! gain (the cycle's clock is not moved, so the next probe comes on schedule).
//! As the seed warns, an aborted probe also withholds the capacity sample that would have
//! corrected the estimate: the abort protects the queue, not the estimate.
//!
//! Optionally the controller also caps concurrency (the second actuator): a fixed cap, such
//! as the pool's comfortable concurrency `C` where the service curve peaks.

use super::probe::PROBE_BW_GAINS;
use crate::error::{check, RangeError};
use crate::estimators::{ImmConfig, TwoModeImm, WindowedMax};
use crate::policy::{Action, Observation, Policy};

/// Configuration of [`Cycle`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CycleConfig {
    /// Seconds per round (one phase of the cycle). Default 1 s.
    pub round: f64,
    /// Pacing gains per round, BBR's ProbeBW `[1.25, 0.75, 1, …]`.
    pub gains: [f64; 8],
    /// Rounds in the windowed maximum (BBR: 10).
    pub window: u64,
    /// The regime detector steering the estimate (`None`: no detector).
    pub imm: Option<ImmConfig>,
    /// Rate-of-closure abort rate γ [1/s] (`None`: probes always run to completion).
    pub abort_gamma: Option<f64>,
    /// Barrier threshold θ the abort's margin is measured against.
    pub threshold: f64,
    /// Cap on busy executors (`None`: uncapped).
    pub concurrency: Option<u32>,
    /// Queue depth, as a share of capacity, the pacing steers toward: pacing rate
    /// `g·b̂ + (target·cap − q)/τ`. `None` is the seed's pure cycle, which holds whatever
    /// queue it finds ("The Backlog Does Not Drain Itself Afterward"); a target repays that
    /// scar, and below it stores work in the buffer for the next dip.
    pub queue_target: Option<f64>,
    /// Time constant τ of the steering toward the target \[s\].
    pub queue_tau: f64,
    /// After a round in which the pool sat idle while admission was paced below the offered
    /// rate, raise the estimate by the probe gain (BBR re-probes after app-limited periods;
    /// without this the estimate climbs back only once per eight-round cycle).
    pub idle_growth: bool,
}

impl Default for CycleConfig {
    fn default() -> Self {
        Self {
            round: 1.0,
            gains: PROBE_BW_GAINS,
            window: 10,
            // Two rounds in a row, not the seed's five decisions: a round is a long time.
            imm: Some(ImmConfig { alarm_run: 2, ..ImmConfig::default() }),
            abort_gamma: Some(0.5),
            threshold: 0.7,
            concurrency: None,
            queue_target: None,
            queue_tau: 2.0,
            idle_growth: true,
        }
    }
}

/// What happened in the last round (for tests and reports).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RoundRecord {
    /// Round index since the start.
    pub round: u64,
    /// Phase (0 = probe, 1 = drain, 2..7 = cruise) of the round that just ended.
    pub phase: usize,
    /// Delivered rate in that round [req/s].
    pub delivered: f64,
    /// Whether it was a capacity sample (work waited throughout).
    pub capacity_sample: bool,
    /// Bandwidth estimate after the round [req/s].
    pub estimate: f64,
}

/// The Cyclic Adaptive Regulation controller (see the module docs).
///
/// # Examples
///
/// ```
/// use safegate_core::controllers::{Cycle, CycleConfig};
/// use safegate_core::{Observation, Policy};
///
/// let mut c = Cycle::new(CycleConfig { abort_gamma: None, ..CycleConfig::default() }).unwrap();
/// // A backlogged pool delivering 60 req/s against 100 offered.
/// let mut done = 0.0;
/// for k in 0..=200 {
///     let t = k as f64 * 0.05;
///     let mut o = Observation::new(t, 50.0, 200.0);
///     o.in_service = 8.0;
///     o.offered_rate = 100.0;
///     o.completed = done;
///     c.decide(&o);
///     done += 60.0 * 0.05;
/// }
/// assert!((c.estimate() - 60.0).abs() < 1.0);
/// ```
#[derive(Debug, Clone)]
pub struct Cycle {
    cfg: CycleConfig,
    bw: WindowedMax,
    imm: Option<TwoModeImm>,
    /// Rounds completed.
    round: u64,
    phase: usize,
    round_start: f64,
    round_completed: f64,
    round_margin: f64,
    backlogged: bool,
    paced: bool,
    aborted: bool,
    started: bool,
    aborts: u64,
    regime_shifts: u64,
    last: Option<RoundRecord>,
}

impl Cycle {
    /// A controller with `cfg`; checks the ranges.
    pub fn new(cfg: CycleConfig) -> Result<Self, RangeError> {
        check::positive("round", cfg.round)?;
        for g in cfg.gains {
            check::non_negative("gains", g)?;
        }
        if let Some(g) = cfg.abort_gamma {
            check::positive("abort_gamma", g)?;
        }
        check::threshold("threshold", cfg.threshold)?;
        if let Some(t) = cfg.queue_target {
            check::unit("queue_target", t)?;
        }
        check::positive("queue_tau", cfg.queue_tau)?;
        if cfg.concurrency == Some(0) {
            return Err(RangeError::new("concurrency", 0, "1 or more"));
        }
        let imm = match cfg.imm {
            Some(c) => Some(TwoModeImm::new(c).map_err(|e| e.at("imm"))?),
            None => None,
        };
        Ok(Self {
            bw: WindowedMax::new(cfg.window),
            imm,
            cfg,
            round: 0,
            phase: 0,
            round_start: 0.0,
            round_completed: 0.0,
            round_margin: 0.0,
            backlogged: true,
            paced: false,
            aborted: false,
            started: false,
            aborts: 0,
            regime_shifts: 0,
            last: None,
        })
    }

    /// The bandwidth estimate `b̂` [req/s] (0 before the first round).
    pub fn estimate(&self) -> f64 {
        self.bw.get()
    }

    /// The current phase (0 = probe, 1 = drain, 2..7 = cruise).
    pub fn phase(&self) -> usize {
        self.phase
    }

    /// Probes aborted by the rate-of-closure constraint.
    pub fn aborts(&self) -> u64 {
        self.aborts
    }

    /// Regime shifts the IMM signalled (each steered the estimate).
    pub fn regime_shifts(&self) -> u64 {
        self.regime_shifts
    }

    /// The last completed round.
    pub fn last_round(&self) -> Option<RoundRecord> {
        self.last
    }

    fn margin(&self, obs: &Observation) -> f64 {
        let occ = if obs.capacity > 0.0 && obs.queue.is_finite() { obs.queue / obs.capacity } else { 1.0 };
        self.cfg.threshold - occ
    }

    fn start_round(&mut self, obs: &Observation, phase: usize) {
        self.phase = phase;
        self.round_start = obs.now;
        self.round_completed = obs.completed;
        self.round_margin = self.margin(obs);
        self.backlogged = true;
        self.paced = false;
        self.aborted = false;
    }

    fn end_round(&mut self, obs: &Observation) {
        let elapsed = obs.now - self.round_start;
        let delivered = ((obs.completed - self.round_completed) / elapsed).max(0.0);
        let capacity_sample = self.backlogged;
        let before = self.bw.get();
        if delivered.is_finite() && (capacity_sample || delivered > before) {
            self.bw.update(self.round, delivered);
        }
        if self.cfg.idle_growth && !capacity_sample && self.paced && delivered.is_finite() && delivered > 0.0 {
            // Idle pool, our own pacing the limit: the sample says nothing about capacity.
            self.bw.update(self.round, before.max(delivered) * self.cfg.gains[0].max(1.0));
        }
        if capacity_sample && before > 0.0 && delivered.is_finite() {
            if let Some(imm) = self.imm.as_mut() {
                let se = (before / elapsed).sqrt().max(1e-9);
                imm.update((before - delivered) / se);
                if imm.alarm_now() {
                    // Regime shift: the old maximum no longer describes capacity. Restart
                    // the window from the current sample, and the detector with it.
                    self.bw = WindowedMax::new(self.cfg.window);
                    self.bw.update(self.round, delivered);
                    imm.reset();
                    self.regime_shifts += 1;
                }
            }
        }
        self.last = Some(RoundRecord {
            round: self.round,
            phase: self.phase,
            delivered,
            capacity_sample,
            estimate: self.bw.get(),
        });
        self.round += 1;
    }
}

impl Policy for Cycle {
    fn decide(&mut self, obs: &Observation) -> Action {
        let cap = self.cfg.concurrency;
        if !obs.now.is_finite() {
            return Action { admit: 0.0, concurrency: cap, shed_retries: false };
        }
        if !self.started {
            self.started = true;
            self.start_round(obs, 0);
        }
        // Work waiting for an executor (queue beyond those in service) at every decision
        // makes the round's delivery a capacity sample.
        if !(obs.queue > obs.in_service) {
            self.backlogged = false;
        }
        if obs.now - self.round_start >= self.cfg.round - 1e-9 {
            self.end_round(obs);
            let next = (self.phase + 1) % self.cfg.gains.len();
            self.start_round(obs, next);
        } else if self.phase == 0 && self.cfg.gains[0] > 1.0 {
            if let Some(gamma) = self.cfg.abort_gamma {
                // Definition 4: φ₁ = Δφ₀ + γ·φ₀ with Δφ₀ per second since the probe began.
                let elapsed = obs.now - self.round_start;
                let phi0 = self.margin(obs);
                if elapsed > 0.0 {
                    let dphi = (phi0 - self.round_margin) / elapsed;
                    if dphi + gamma * phi0 < 0.0 && !self.aborted {
                        self.aborts += 1;
                        self.aborted = true;
                    }
                }
            }
        }
        let bw = self.bw.get();
        let lambda = obs.offered_rate;
        let admit = if bw <= 0.0 || !(lambda > 0.0) {
            // No estimate yet (BBR's startup): admit everything and measure.
            1.0
        } else {
            // An aborted probe paces at the drain gain for the rest of its round; the cycle's
            // clock is not moved, so later probes stay on schedule.
            let gain = if self.aborted { self.cfg.gains[1].min(self.cfg.gains[0]) } else { self.cfg.gains[self.phase] };
            let steer = match self.cfg.queue_target {
                Some(target) if obs.capacity > 0.0 && obs.queue.is_finite() => {
                    (target * obs.capacity - obs.queue) / self.cfg.queue_tau
                }
                _ => 0.0,
            };
            ((gain * bw + steer) / lambda).clamp(0.0, 1.0)
        };
        if admit < 1.0 {
            self.paced = true;
        }
        Action { admit, concurrency: cap, shed_retries: false }
    }

    fn name(&self) -> &'static str {
        "cycle"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fluid queue fed at `lambda·admit` and served at `capacity(t)` while backlogged,
    /// driving the controller at dt = 0.05 s; returns the queue path.
    fn drive(c: &mut Cycle, lambda: f64, capacity: impl Fn(f64) -> f64, seconds: f64, q0: f64) -> Vec<f64> {
        let dt = 0.05;
        let (mut q, mut done) = (q0, 0.0);
        let mut path = Vec::new();
        for k in 0..(seconds / dt) as usize {
            let t = k as f64 * dt;
            let mut o = Observation::new(t, q, 200.0);
            o.in_service = q.min(4.0);
            o.offered_rate = lambda;
            o.completed = done;
            let a = c.decide(&o);
            let served = (capacity(t) * dt).min(q + lambda * a.admit * dt);
            q = (q + lambda * a.admit * dt - served).clamp(0.0, 200.0);
            done += served;
            path.push(q);
        }
        path
    }

    #[test]
    fn cycles_through_the_eight_gains_and_converges_on_capacity() {
        let mut c = Cycle::new(CycleConfig { abort_gamma: None, imm: None, ..CycleConfig::default() }).unwrap();
        let path = drive(&mut c, 200.0, |_| 150.0, 80.0, 30.0);
        assert!((c.estimate() - 150.0).abs() < 1.0, "{}", c.estimate());
        // Probe and drain cancel: the queue returns to where the cycle started.
        let per_cycle = (8.0 / 0.05) as usize;
        let a = path[path.len() - 1 - per_cycle];
        let b = path[path.len() - 1];
        assert!((a - b).abs() < 1.0, "{a} {b}");
    }

    #[test]
    fn drain_adds_to_the_queue_when_capacity_falls_below_three_quarters() {
        // The seed's drain table: capacity falls to 0.6 of the estimate as a probe begins.
        for (frac, drain_adds) in [(0.9, false), (0.6, true)] {
            let mut c = Cycle::new(CycleConfig { abort_gamma: None, imm: None, ..CycleConfig::default() }).unwrap();
            let path = drive(&mut c, 200.0, |t| if t >= 80.0 { 150.0 * frac } else { 150.0 }, 82.0, 30.0);
            let at = |t: f64| path[(t / 0.05) as usize - 1];
            let drain = at(82.0) - at(81.0);
            assert_eq!(drain > 0.0, drain_adds, "capacity {frac}: drain round changed the queue by {drain}");
            // The probe round itself adds (1.25 − c)·b̂ per second.
            let probe = at(81.0) - at(80.0);
            assert!((probe - (1.25 - frac) * 150.0).abs() < 2.0, "{probe}");
        }
    }

    #[test]
    fn the_rate_of_closure_abort_shrinks_the_excursion() {
        // Capacity falls to 0.6 of the estimate as the probe at t = 80 begins. The seed's
        // scope: the queue added over the probe and drain rounds; also the peak over 2 s.
        let run = |gamma: Option<f64>| {
            let mut c = Cycle::new(CycleConfig { abort_gamma: gamma, imm: None, ..CycleConfig::default() }).unwrap();
            let mut phases = Vec::new();
            let dt = 0.05;
            let (mut q, mut done) = (30.0, 0.0);
            let mut path = Vec::new();
            for k in 0..(82.0 / dt) as usize {
                let t = k as f64 * dt;
                let mut o = Observation::new(t, q, 200.0);
                o.in_service = q.min(4.0);
                o.offered_rate = 200.0;
                o.completed = done;
                let a = c.decide(&o);
                phases.push(c.phase());
                let cap = if t >= 80.0 { 90.0 } else { 150.0 };
                let served = (cap * dt).min(q + 200.0 * a.admit * dt);
                q = (q + 200.0 * a.admit * dt - served).clamp(0.0, 200.0);
                done += served;
                path.push(q);
            }
            let start = (80.0 / dt) as usize;
            // End of the drain round: the first decision after t = 80 in a cruise phase.
            let end = (start..path.len()).find(|&i| phases[i] >= 2).unwrap_or(path.len() - 1);
            assert_eq!(phases[start], 0, "a probe begins at t = 80");
            let q0 = path[start - 1];
            let peak = path[start..].iter().cloned().fold(f64::MIN, f64::max);
            (path[end - 1] - q0, peak - q0, c.aborts())
        };
        let (probe_drain, peak, a0) = run(None);
        assert_eq!(a0, 0);
        assert!((probe_drain - 120.0).abs() < 3.0, "(1.25 − 0.6 + 0.75 − 0.6)·150 = 120: {probe_drain}");
        let (probe_drain_abort, peak_abort, a1) = run(Some(0.5));
        assert!(a1 >= 1);
        assert!(probe_drain_abort < 0.5 * probe_drain, "{probe_drain_abort} vs {probe_drain}");
        assert!(peak_abort < peak, "{peak_abort} vs {peak}");
    }

    #[test]
    fn the_imm_steers_the_estimate_down_after_a_collapse() {
        let run = |imm: Option<ImmConfig>| {
            let mut c = Cycle::new(CycleConfig { abort_gamma: None, imm, ..CycleConfig::default() }).unwrap();
            drive(&mut c, 200.0, |t| if t >= 80.0 { 90.0 } else { 150.0 }, 90.0, 30.0);
            (c.estimate(), c.regime_shifts())
        };
        let (slow, s0) = run(None);
        let (steered, s1) = run(Some(ImmConfig { alarm_run: 2, ..ImmConfig::default() }));
        assert_eq!(s0, 0);
        assert!(slow > 140.0, "the windowed max holds the old capacity: {slow}");
        assert!(s1 >= 1 && (steered - 90.0).abs() < 5.0, "{steered} after {s1} shifts");
    }

    #[test]
    fn garbage_observations_give_finite_actions() {
        let mut c = Cycle::new(CycleConfig::default()).unwrap();
        for (i, q) in [f64::NAN, -3.0, f64::INFINITY, 1e300].into_iter().enumerate() {
            let mut o = Observation::new(i as f64 * 0.6, q, 200.0);
            o.offered_rate = f64::NAN;
            o.completed = f64::NAN;
            let a = c.decide(&o);
            assert!((0.0..=1.0).contains(&a.admit));
        }
        assert!(Cycle::new(CycleConfig { round: 0.0, ..CycleConfig::default() }).is_err());
        assert!(Cycle::new(CycleConfig { concurrency: Some(0), ..CycleConfig::default() }).is_err());
    }
}
