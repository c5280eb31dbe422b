//! A resolved fleet: the gates, the shared downstream, the optional coordination price.

use safegate_core::error::{check, RangeError};
use safegate_sim::limits::{budget, MAX_RATE, MAX_STEPS};
use serde::{Deserialize, Serialize};

use safegate_sim::health::{HealthSchedule, HealthTrack};
use safegate_sim::model::{Busy, Pool};

/// Most gates one fleet may hold.
pub const MAX_GATES: usize = 10_000;
/// Longest price feedback delay \[s\].
pub const MAX_DELAY: f64 = 1e4;
/// Most steps of price history a run keeps for its longest delay (`delay / dt`, one number
/// each): a delay of 1e4 s at dt = 1e-8 once tried to allocate 8 TB.
pub const MAX_DELAY_STEPS: f64 = 1e6;

/// One admission gate of the fleet: its traffic, its own executors and backlog, and what it
/// pays for the shared dependency. A `gates = [{ … }, …]` entry of a fleet file.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GateConfig {
    /// `λ_i`, offered rate [req/s] (80).
    pub rate: f64,
    /// `P_i`, executors pulling from this gate's backlog (8).
    pub executors: u32,
    /// `cap_i`, this gate's backlog capacity \[requests\] (200).
    pub capacity: f64,
    /// `D_i`, the round trip of the coordination price to this gate \[s\] (0): the gate acts
    /// at `t` on the price the coordinator set at `t − D_i`.
    pub delay: f64,
    /// `w_i`, willingness to pay (100): under the price the gate admits `min(λ_i, w_i/p)`,
    /// so `w_i` is the rate it asks for at price 1 [req/s]. Only ratios of weights set the
    /// split; their scale sets `p*` and with it the loop gain `γ·W/p*²`.
    pub weight: f64,
    /// Backlog at t = 0 (0).
    pub initial_queue: f64,
}

impl Default for GateConfig {
    fn default() -> Self {
        Self { rate: 80.0, executors: 8, capacity: 200.0, delay: 0.0, weight: 100.0, initial_queue: 0.0 }
    }
}

/// What the coordinator prices against: Kelly, Maulloo and Tan's dual algorithm (see
/// [`crate::fleet::price`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PriceConfig {
    /// `γ`, the price's gain: `p ← max(0, p + γ·dt·(Σ y_j − c))` (0.05).
    pub gain: f64,
    /// A declared capacity `c` of the dependency [req/s]; `None` prices against
    /// `utilisation · H(t) · C · s`, the ideal pool's clearing rate at the current health.
    pub capacity: Option<f64>,
    /// Share of the ideal rate `H·C·s` priced against when no capacity is declared (`None`
    /// is [`DEFAULT_UTILISATION`]): below 1 so the fleet stays on the rising side of the
    /// contention curve. Giving it with `capacity` is an error: one of them is the target.
    pub utilisation: Option<f64>,
    /// `p(0)`; `None` starts at the equilibrium price `p*` of the health at t = 0.
    pub initial: Option<f64>,
}

impl Default for PriceConfig {
    fn default() -> Self {
        Self { gain: 0.05, capacity: None, utilisation: None, initial: None }
    }
}

/// The share of `H·C·s` the price targets when neither a capacity nor a utilisation is given.
pub const DEFAULT_UTILISATION: f64 = 0.9;

/// Everything one fleet run needs. Build it from a [`crate::fleet::FleetScenario`] (which
/// checks it) or by hand, then [`FleetConfig::check`] it (every run does).
#[derive(Debug, Clone, PartialEq)]
pub struct FleetConfig {
    /// The gates, at least one.
    pub gates: Vec<GateConfig>,
    /// `C`, the dependency's comfortable concurrency, counted over ALL gates' in-flight work (4).
    pub comfortable: f64,
    /// `s`, one request's clearing rate below `C` [req/s] (37.5).
    pub rate: f64,
    /// How busy executors are counted: fractional by default (`n_i = min(P_i, q_i)`). The
    /// seed's whole count (`ceil(q_i)`) is right for one pool, but summed over `M` gates it
    /// overstates the in-flight work by up to `M` (three gates each with half a request
    /// queued count as three busy), which alone can push `N` past `C`.
    pub busy: Busy,
    /// Downstream health `H(t)`, shared by every gate.
    pub health: HealthTrack,
    /// `θ`, the occupancy share above which a gate counts as outside its safe set (0.7).
    pub threshold: f64,
    /// Simulated seconds (400).
    pub duration: f64,
    /// Euler step \[s\] (0.01).
    pub dt: f64,
    /// The coordination price; `None`: every gate decides alone.
    pub price: Option<PriceConfig>,
}

impl Default for FleetConfig {
    fn default() -> Self {
        Self {
            gates: vec![GateConfig::default(); 2],
            comfortable: 4.0,
            rate: 37.5,
            busy: Busy::Fluid,
            health: HealthTrack::new(HealthSchedule::Constant { level: 1.0 }),
            threshold: 0.7,
            duration: 400.0,
            dt: 0.01,
            price: None,
        }
    }
}

impl FleetConfig {
    /// docs/fleet.md's two-gate example: 120 req/s each, `executors[i]` executors, price
    /// delays 50 and 20 ms, constant health, no price.
    pub fn two_gates(executors: [u32; 2]) -> Self {
        Self {
            gates: vec![
                GateConfig { rate: 120.0, executors: executors[0], delay: 0.05, ..GateConfig::default() },
                GateConfig { rate: 120.0, executors: executors[1], delay: 0.02, ..GateConfig::default() },
            ],
            ..Self::default()
        }
    }

    /// Number of Euler steps (`round(duration / dt)`).
    pub fn steps(&self) -> u64 {
        (self.duration / self.dt).round() as u64
    }

    /// Gate `i`'s own pool: its executors and capacity, the shared `C` and `s`.
    pub fn pool(&self, i: usize) -> Pool {
        let g = &self.gates[i];
        Pool {
            executors: g.executors,
            comfortable: self.comfortable,
            rate: self.rate,
            capacity: g.capacity,
            busy: self.busy,
        }
    }

    /// The capacity the price is set against at health `h` [req/s].
    pub fn priced_capacity(&self, price: &PriceConfig, h: f64) -> f64 {
        price.capacity.unwrap_or(price.utilisation.unwrap_or(DEFAULT_UTILISATION) * h * self.comfortable * self.rate)
    }

    /// Check every range a run relies on; fields are named by their path in a fleet file
    /// (`fleet.gates[1].rate`, `fleet.price.gain`).
    pub fn check(&self) -> Result<(), RangeError> {
        if self.gates.is_empty() || self.gates.len() > MAX_GATES {
            return Err(RangeError::new("fleet.gates", self.gates.len(), format!("[1, {MAX_GATES}] gates")));
        }
        for (i, g) in self.gates.iter().enumerate() {
            let f = |k: &str| format!("fleet.gates[{i}].{k}");
            check::within(&f("rate"), g.rate, 0.0, MAX_RATE, "[0, 1e7] req/s")?;
            if !(1..=1_000_000).contains(&g.executors) {
                return Err(RangeError::new(f("executors"), g.executors, "an integer in [1, 1000000]"));
            }
            check::capacity(&f("capacity"), g.capacity)?;
            check::within(&f("delay"), g.delay, 0.0, MAX_DELAY, "[0, 1e4] seconds")?;
            check::within(&f("weight"), g.weight, f64::MIN_POSITIVE, 1e12, "(0, 1e12]")?;
            if !(g.initial_queue >= 0.0 && g.initial_queue <= g.capacity) {
                return Err(RangeError::new(
                    f("initial_queue"),
                    g.initial_queue,
                    format!("[0, fleet.gates[{i}].capacity = {}]", g.capacity),
                ));
            }
        }
        check::within("fleet.comfortable", self.comfortable, f64::MIN_POSITIVE, 1e6, "(0, 1e6]")?;
        check::within("fleet.rate", self.rate, f64::MIN_POSITIVE, MAX_RATE, "(0, 1e7] req/s")?;
        check::threshold("fleet.threshold", self.threshold)?;
        check::within("fleet.duration", self.duration, f64::MIN_POSITIVE, 1e9, "(0, 1e9] seconds")?;
        if !(self.dt > 0.0 && self.dt <= self.duration) {
            let duration = safegate_core::error::number(self.duration);
            return Err(RangeError::new("fleet.dt", self.dt, format!("(0, fleet.duration = {duration}]")));
        }
        for (i, g) in self.gates.iter().enumerate() {
            budget(
                &format!("fleet.gates[{i}].delay"),
                g.delay,
                g.delay / self.dt,
                MAX_DELAY_STEPS,
                "delay / fleet.dt steps of price history",
            )?;
        }
        let work = self.duration / self.dt * self.gates.len() as f64;
        budget("fleet.duration", self.duration, work, MAX_STEPS, "fleet.duration / fleet.dt × gates")?;
        self.health.check()?;
        if let Some(p) = &self.price {
            check::within("fleet.price.gain", p.gain, f64::MIN_POSITIVE, 1e9, "(0, 1e9]")?;
            if let Some(c) = p.capacity {
                check::within("fleet.price.capacity", c, f64::MIN_POSITIVE, MAX_RATE, "(0, 1e7] req/s")?;
            }
            if let Some(u) = p.utilisation {
                if p.capacity.is_some() {
                    // A declared capacity is the target; a utilisation beside it would be
                    // silently ignored.
                    return Err(RangeError::new(
                        "fleet.price.utilisation",
                        u,
                        "absent when fleet.price.capacity is given (give one target: a capacity, or a share of H·C·s)",
                    ));
                }
                check::within("fleet.price.utilisation", u, f64::MIN_POSITIVE, 1.0, "(0, 1]")?;
            }
            if let Some(p0) = p.initial {
                check::within("fleet.price.initial", p0, 0.0, 1e12, "[0, 1e12]")?;
            }
        }
        Ok(())
    }
}
