//! Downstream health `H(t)`: the schedules the seed uses, a user trace, optional noise.
//!
//! The seed's repeating cycle (period 19 s, starting with the high hold at t = 0): 7 s at
//! 1.0, a 5 s linear ramp down to 0.1, 2 s at 0.1, a 5 s linear ramp back up. A single dip is
//! the same ramp-hold-ramp once, from a start time, 1.0 elsewhere (docs/model.md §Health,
//! after the earlier parts of the seed's series, whose widgets define the schedule).
//!
//! Every schedule is piecewise linear, which lets the stochastic simulator integrate service
//! exactly between events ([`HealthTrack::segment`]).

use safegate_core::error::{check, RangeError};
use serde::{Deserialize, Serialize};

/// Highest health a schedule may reach: a multiplier of the pool's rate (1 is the seed's
/// healthy downstream); beyond 100 the model's rates leave the range it is checked on.
pub const MAX_HEALTH: f64 = 100.0;
const HEALTH_RANGE: &str = "[0, 100] (a multiplier of the pool's rate; 1 is healthy)";

/// The shape of one dip: hold high, ramp down, hold low, ramp up. A scenario's `[health]`
/// section holds these keys beside its own (`kind`, `start`, …).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DipShape {
    /// Health outside the dip (1.0).
    pub high: f64,
    /// Health at the bottom of the dip (0.1).
    pub low: f64,
    /// Seconds at `high` before the ramp down (cycle only; 7).
    pub hold_high: f64,
    /// Seconds of linear ramp from `high` to `low` (5).
    pub ramp_down: f64,
    /// Seconds at `low` (2).
    pub hold_low: f64,
    /// Seconds of linear ramp from `low` back to `high` (5).
    pub ramp_up: f64,
}

impl Default for DipShape {
    fn default() -> Self {
        Self { high: 1.0, low: 0.1, hold_high: 7.0, ramp_down: 5.0, hold_low: 2.0, ramp_up: 5.0 }
    }
}

impl DipShape {
    /// Check every value; fields are named as in a scenario's `[health]` section.
    pub fn check(&self) -> Result<(), RangeError> {
        check::within("health.high", self.high, 0.0, MAX_HEALTH, HEALTH_RANGE)?;
        if !(self.low >= 0.0 && self.low <= self.high) {
            return Err(RangeError::new("health.low", self.low, format!("[0, health.high = {}]", self.high)));
        }
        check::within("health.hold_high", self.hold_high, 0.0, 1e9, "[0, 1e9] seconds")?;
        check::seconds("health.ramp_down", self.ramp_down)?;
        check::within("health.hold_low", self.hold_low, 0.0, 1e9, "[0, 1e9] seconds")?;
        check::seconds("health.ramp_up", self.ramp_up)?;
        Ok(())
    }

    /// Length of the dip itself: ramp down + hold low + ramp up.
    pub fn dip_length(&self) -> f64 {
        self.ramp_down + self.hold_low + self.ramp_up
    }

    /// Length of one cycle: hold high + the dip.
    pub fn period(&self) -> f64 {
        self.hold_high + self.dip_length()
    }

    /// The linear piece of the dip containing `x ∈ [0, dip_length)`: (value at x, slope,
    /// time to the piece's end).
    #[inline]
    fn dip_piece(&self, x: f64) -> (f64, f64, f64) {
        let (hi, lo) = (self.high, self.low);
        let a = self.ramp_down;
        let b = a + self.hold_low;
        let c = b + self.ramp_up;
        if x < a {
            let slope = (lo - hi) / a;
            (hi + slope * x, slope, a - x)
        } else if x < b {
            (lo, 0.0, b - x)
        } else {
            let slope = (hi - lo) / self.ramp_up;
            (lo + slope * (x - b), slope, c - x)
        }
    }
}

/// A health schedule (before noise).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum HealthSchedule {
    /// `H(t) = level`.
    Constant {
        /// The constant health.
        level: f64,
    },
    /// The seed's repeating cycle, starting at t = 0 with the high hold.
    Cycle(DipShape),
    /// One dip starting at `start`, `high` elsewhere.
    Dip {
        /// The dip's shape (`hold_high` is unused).
        shape: DipShape,
        /// When the ramp down begins \[s\].
        start: f64,
    },
    /// Linear interpolation through `(t, H)` points, held constant beyond both ends.
    Trace {
        /// Points with strictly increasing times and finite, non-negative health.
        points: Vec<(f64, f64)>,
    },
}

impl HealthSchedule {
    /// The linear piece containing `t`: `(H(t), dH/dt, time until the piece ends)`.
    pub fn piece(&self, t: f64) -> (f64, f64, f64) {
        match self {
            HealthSchedule::Constant { level } => (*level, 0.0, f64::INFINITY),
            HealthSchedule::Cycle(s) => {
                let period = s.period();
                let phase = t - period * (t / period).floor();
                if phase < s.hold_high {
                    (s.high, 0.0, s.hold_high - phase)
                } else {
                    s.dip_piece(phase - s.hold_high)
                }
            }
            HealthSchedule::Dip { shape, start } => {
                if t < *start {
                    (shape.high, 0.0, start - t)
                } else if t - start < shape.dip_length() {
                    shape.dip_piece(t - start)
                } else {
                    (shape.high, 0.0, f64::INFINITY)
                }
            }
            HealthSchedule::Trace { points } => trace_piece(points, t),
        }
    }

    /// `H(t)`.
    #[inline]
    pub fn value(&self, t: f64) -> f64 {
        match self {
            HealthSchedule::Constant { level } => *level,
            HealthSchedule::Cycle(s) => {
                // Same arithmetic as `piece`, kept branch-light for the hot loops: for t ≥ 0 a
                // truncating cast is the floor, without a libm call.
                let period = s.period();
                let k = t / period;
                let phase = t - period * if (0.0..9.0e15).contains(&k) { k as i64 as f64 } else { k.floor() };
                if phase < s.hold_high {
                    s.high
                } else {
                    s.dip_piece(phase - s.hold_high).0
                }
            }
            _ => self.piece(t).0,
        }
    }

    /// When the last dip of the schedule ends, if the schedule has a last dip.
    pub fn dip_end(&self) -> Option<f64> {
        match self {
            HealthSchedule::Dip { shape, start } => Some(start + shape.dip_length()),
            _ => None,
        }
    }
}

fn trace_piece(points: &[(f64, f64)], t: f64) -> (f64, f64, f64) {
    match points {
        [] => (1.0, 0.0, f64::INFINITY),
        [(_, h)] => (*h, 0.0, f64::INFINITY),
        _ => {
            let i = points.partition_point(|&(pt, _)| pt <= t);
            if i == 0 {
                (points[0].1, 0.0, points[0].0 - t)
            } else if i == points.len() {
                (points[i - 1].1, 0.0, f64::INFINITY)
            } else {
                let (t0, h0) = points[i - 1];
                let (t1, h1) = points[i];
                let slope = (h1 - h0) / (t1 - t0);
                (h0 + slope * (t - t0), slope, t1 - t)
            }
        }
    }
}

/// Multiplicative health noise: `H(t) = H_schedule(t) · max(0, 1 + σ·z_k)` with `z_k`
/// standard normal, redrawn every `period` seconds (`k = floor(t / period)`).
///
/// The draws come from a counter-based generator keyed by `(seed, k)`, so the value at a
/// time does not depend on the order in which times are asked for: the fluid and the
/// stochastic modes see the same noise path for the same seed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HealthNoise {
    /// Relative standard deviation σ of the multiplier.
    pub sigma: f64,
    /// Seconds between redraws.
    pub period: f64,
    /// Seed of the noise path.
    pub seed: u64,
}

impl HealthNoise {
    /// The multiplier in force at time `t`, and the time until it is redrawn.
    #[inline]
    fn at(&self, t: f64) -> (f64, f64) {
        let mut k = (t / self.period).floor();
        // `t / period` can round down just below a whole number at a redraw instant; the
        // multiplier in force is then the next one (else the time left is 0 and an event
        // loop stepping by it never moves).
        if (k + 1.0) * self.period <= t {
            k += 1.0;
        }
        let next = (k + 1.0) * self.period;
        let z = counter_normal(self.seed, k as i64 as u64);
        ((1.0 + self.sigma * z).max(0.0), next - t)
    }
}

/// SplitMix64 finaliser (Steele, Lea & Flood 2014), used as a counter-based generator.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A standard normal draw determined by `(seed, counter)` (Box–Muller).
fn counter_normal(seed: u64, counter: u64) -> f64 {
    let a = splitmix(seed ^ splitmix(counter));
    let b = splitmix(a);
    let u1 = ((a >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let u2 = (b >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A schedule with optional noise: what the simulators query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HealthTrack {
    /// The deterministic schedule.
    pub schedule: HealthSchedule,
    /// Optional multiplicative noise.
    pub noise: Option<HealthNoise>,
}

impl HealthTrack {
    /// A noiseless track.
    pub fn new(schedule: HealthSchedule) -> Self {
        Self { schedule, noise: None }
    }

    /// How many pieces (linear segments and noise redraws) the first `duration` seconds
    /// hold: the events the stochastic simulator steps through besides the requests.
    pub fn pieces_within(&self, duration: f64) -> f64 {
        let schedule = match &self.schedule {
            HealthSchedule::Constant { .. } => 1.0,
            HealthSchedule::Cycle(s) => 4.0 * (duration / s.period()).ceil().max(1.0),
            HealthSchedule::Dip { .. } => 5.0,
            HealthSchedule::Trace { points } => points.len() as f64 + 1.0,
        };
        schedule + self.noise.map_or(0.0, |n| (duration / n.period).ceil())
    }

    /// Check the schedule and the noise; fields are named as in a scenario's `[health]`.
    pub fn check(&self) -> Result<(), RangeError> {
        match &self.schedule {
            HealthSchedule::Constant { level } => {
                check::within("health.high", *level, 0.0, MAX_HEALTH, HEALTH_RANGE).map(drop)?
            }
            HealthSchedule::Cycle(shape) => shape.check()?,
            HealthSchedule::Dip { shape, start } => {
                shape.check()?;
                check::within("health.start", *start, 0.0, 1e9, "[0, 1e9] seconds")?;
            }
            HealthSchedule::Trace { points } => {
                if points.is_empty() {
                    return Err(RangeError::new("health.file", "(no points)", "at least one `t,health` row"));
                }
                for (i, w) in points.windows(2).enumerate() {
                    if !(w[1].0 > w[0].0) {
                        return Err(RangeError::new(format!("health.file[{}].t", i + 1), w[1].0, "increasing times"));
                    }
                }
                if let Some((t, h)) = points.iter().find(|(t, h)| !(t.is_finite() && *h >= 0.0 && *h <= MAX_HEALTH)) {
                    return Err(RangeError::new("health.file", format!("({t}, {h})"), "finite t, health in [0, 100]"));
                }
            }
        }
        if let Some(n) = &self.noise {
            check::within("health.noise", n.sigma, 0.0, 10.0, "[0, 10]")?;
            check::seconds("health.noise_period", n.period)?;
        }
        Ok(())
    }

    /// The period of a repeating schedule.
    pub fn schedule_period(&self) -> Option<f64> {
        match &self.schedule {
            HealthSchedule::Cycle(s) => Some(s.period()),
            _ => None,
        }
    }

    /// `H(t)`.
    #[inline]
    pub fn value(&self, t: f64) -> f64 {
        let h = self.schedule.value(t);
        match &self.noise {
            None => h,
            Some(n) => h * n.at(t).0,
        }
    }

    /// The linear piece containing `t`: `(H(t), dH/dt, time until the piece ends)`. Within
    /// the piece `H(t + τ) = H(t) + slope·τ` exactly.
    #[inline]
    pub fn segment(&self, t: f64) -> (f64, f64, f64) {
        let (h, slope, left) = self.schedule.piece(t);
        match &self.noise {
            None => (h, slope, left),
            Some(n) => {
                let (m, nleft) = n.at(t);
                (h * m, slope * m, left.min(nleft))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_cycle_values() {
        let s = HealthSchedule::Cycle(DipShape::default());
        assert_eq!(s.value(0.0), 1.0);
        assert_eq!(s.value(6.99), 1.0);
        assert!((s.value(9.5) - 0.55).abs() < 1e-12);
        assert!((s.value(13.0) - 0.1).abs() < 1e-12);
        assert!((s.value(16.5) - 0.55).abs() < 1e-12);
        assert!((s.value(19.0 + 9.5) - 0.55).abs() < 1e-9);
        assert_eq!(s.value(38.0 + 1.0), 1.0);
    }

    #[test]
    fn pieces_are_exact_linear_segments() {
        let s = HealthSchedule::Cycle(DipShape::default());
        for i in 0..400 {
            let t = i as f64 * 0.173;
            let (h, slope, left) = s.piece(t);
            assert!(left > 0.0);
            let tau = left * 0.5;
            assert!((s.value(t + tau) - (h + slope * tau)).abs() < 1e-9, "t={t}");
        }
    }

    #[test]
    fn dip_happens_once() {
        let s = HealthSchedule::Dip { shape: DipShape::default(), start: 20.0 };
        assert_eq!(s.value(19.9), 1.0);
        assert!((s.value(27.0) - 0.1).abs() < 1e-12);
        assert_eq!(s.value(32.0), 1.0);
        assert_eq!(s.value(51.0), 1.0);
        assert_eq!(s.dip_end(), Some(32.0));
    }

    #[test]
    fn trace_interpolates_and_holds() {
        let s = HealthSchedule::Trace { points: vec![(0.0, 1.0), (10.0, 0.0), (20.0, 0.5)] };
        assert_eq!(s.value(-5.0), 1.0);
        assert!((s.value(5.0) - 0.5).abs() < 1e-12);
        assert!((s.value(15.0) - 0.25).abs() < 1e-12);
        assert_eq!(s.value(99.0), 0.5);
    }

    #[test]
    fn noise_is_order_independent_and_nonnegative() {
        let n = HealthNoise { sigma: 0.5, period: 1.0, seed: 7 };
        let a: Vec<f64> = (0..100).map(|i| n.at(i as f64 * 0.5).0).collect();
        let b: Vec<f64> = (0..100).rev().map(|i| n.at(i as f64 * 0.5).0).collect();
        assert!(a.iter().zip(b.iter().rev()).all(|(x, y)| x == y));
        assert!(a.iter().all(|&m| m >= 0.0));
        let mean = (0..20_000).map(|k| counter_normal(3, k)).sum::<f64>() / 20_000.0;
        assert!(mean.abs() < 0.03, "{mean}");
    }
}
