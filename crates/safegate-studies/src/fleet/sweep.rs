//! Measuring the delay past which the price oscillates.
//!
//! A run starts the price `perturbation` above its equilibrium `p*` (every gate priced, no
//! filter) and watches it. With `A₂` and `A₃` the amplitudes `(max p − min p)/2` over the
//! middle and the last third of the run, the price **oscillates** when it does not decay:
//! `A₃ ≥ decay·A₂` (0.99) and `A₃ ≥ 1e-9·p*`. Below the threshold the perturbation decays
//! geometrically (`A₃ < A₂`); past it, it grows until the clamp `p ≥ 0` and the gates'
//! `min(λ_i, ·)` bound it in a limit cycle (`A₃ ≈ A₂`). Comparing the two thirds, not `A₃`
//! against a fixed share of `p*`, keeps the measurement from calling a slowly decaying run
//! just below the threshold oscillating: a fixed share would move the measured threshold
//! with the run's length. Run the sweep on a constant health, so `p*` is one number.

use serde::Serialize;

use super::config::FleetConfig;
use super::price::equilibrium;
use super::run::{run_fleet, FleetRecord, GatePolicy};
use safegate_core::RangeError;
use safegate_sim::config::Checked;

/// How a run is judged to oscillate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OscillationTest {
    /// The price starts at `p*·(1 + perturbation)` (0.1).
    pub perturbation: f64,
    /// Oscillating: the last third's amplitude is at least `decay` times the middle
    /// third's (0.99).
    pub decay: f64,
}

impl Default for OscillationTest {
    fn default() -> Self {
        Self { perturbation: 0.1, decay: 0.99 }
    }
}

/// The amplitudes of the price over a run's middle and last thirds, over `p*`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Amplitudes {
    /// `A₂/p*`.
    pub middle: f64,
    /// `A₃/p*`.
    pub last: f64,
}

impl Amplitudes {
    /// Whether the price oscillates under `test` (it does not decay).
    pub fn oscillates(&self, test: &OscillationTest) -> bool {
        self.last >= 1e-9 && self.last >= test.decay * self.middle
    }
}

/// One point of a delay sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SweepPoint {
    /// The longest gate delay of the run \[s\] (the others scaled in proportion).
    pub tau: f64,
    /// Whether the price oscillates ([`OscillationTest`]).
    pub oscillates: bool,
    /// The last third's amplitude over `p*`.
    pub amplitude: f64,
    /// The middle third's amplitude over `p*`.
    pub middle: f64,
}

/// The gates' delays as shares of the longest (all 1 when every delay is 0).
pub fn delay_profile(cfg: &FleetConfig) -> Vec<f64> {
    let max = cfg.gates.iter().map(|g| g.delay).fold(0.0, f64::max);
    cfg.gates.iter().map(|g| if max > 0.0 { g.delay / max } else { 1.0 }).collect()
}

/// `cfg` with its delay profile scaled so the longest delay is `tau`.
pub fn with_delay(cfg: &FleetConfig, tau: f64) -> FleetConfig {
    let mut c = cfg.clone();
    for (g, f) in c.gates.iter_mut().zip(delay_profile(cfg)) {
        g.delay = tau * f;
    }
    c
}

/// Run `cfg` (it must have a price) with every gate on the price, started off
/// equilibrium; returns the amplitudes of its middle and last thirds over `p*`.
pub fn amplitude(cfg: &FleetConfig, test: &OscillationTest) -> Checked<Amplitudes> {
    let price = cfg.price.ok_or_else(|| RangeError::new("fleet.price", "(missing)", "a [fleet.price] section"))?;
    let p_star = equilibrium(&cfg.gates, cfg.priced_capacity(&price, cfg.health.value(0.0)), price.gain).price;
    if !(p_star > 0.0) {
        return Err(RangeError::new("fleet.gates", "Σ rate ≤ capacity", "a congested fleet (Σ λ_i > c)"));
    }
    let mut c = cfg.clone();
    c.price = Some(super::config::PriceConfig { initial: Some(p_star * (1.0 + test.perturbation)), ..price });
    let mut policies: Vec<GatePolicy> = c.gates.iter().map(|_| GatePolicy::Priced).collect();
    let out = run_fleet(&c, &mut policies, FleetRecord { every: Some(1) })?;
    let p = out.series.map(|s| s.price).unwrap_or_default();
    let amp = |w: &[f64]| {
        let (lo, hi) = w.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        if w.is_empty() {
            0.0
        } else {
            0.5 * (hi - lo) / p_star
        }
    };
    let (third, n) = (p.len() / 3, p.len());
    Ok(Amplitudes { middle: amp(&p[third..n - third]), last: amp(&p[n - third..]) })
}

/// For each `tau`, scale the delays so the longest is `tau` and judge the price.
pub fn delay_sweep(cfg: &FleetConfig, taus: &[f64], test: &OscillationTest) -> Checked<Vec<SweepPoint>> {
    taus.iter()
        .map(|&tau| {
            let a = amplitude(&with_delay(cfg, tau), test)?;
            Ok(SweepPoint { tau, oscillates: a.oscillates(test), amplitude: a.last, middle: a.middle })
        })
        .collect()
}

/// The measured threshold: the shortest longest-delay, a whole number of steps, at which the
/// price oscillates, by bisection on `[0, tau_max]` (assumes stability is lost once).
/// `None` when it does not oscillate even at `tau_max`.
pub fn threshold(cfg: &FleetConfig, tau_max: f64, test: &OscillationTest) -> Checked<Option<f64>> {
    let dt = cfg.dt;
    let osc = |d: u64| -> Checked<bool> { Ok(amplitude(&with_delay(cfg, d as f64 * dt), test)?.oscillates(test)) };
    let mut hi = (tau_max / dt).round() as u64;
    if !osc(hi)? {
        return Ok(None);
    }
    let mut lo = 0u64;
    if osc(lo)? {
        return Ok(Some(0.0));
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if osc(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(Some(hi as f64 * dt))
}
