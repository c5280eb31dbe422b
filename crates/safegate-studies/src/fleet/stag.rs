//! Freeze or fall back, measured in the running case: the seed's Stag Hunt payoff table and
//! its fleet tipping share `f*` (seed, "Is Freezing Even a Stable Choice?" and
//! Proposition 4), with each cost measured in the fleet model instead of set by hand.
//!
//! The setting: M gates of the seed's pool (P = 8 each, s = 37.5) share one dependency
//! sized for the fleet, `C = 2·M`, so every gate's fair operating point is the two-player
//! one (half of the seed's C = 4). Each is offered the same demand. When the coordinator
//! goes silent, during a dip in the dependency's health (the seed: "a downstream dependency
//! already stressed by an outage"), every gate holds its fair share of the priced capacity
//! `c/M` and of the concurrency, `C/M`. From then on each gate either **freezes** (keeps
//! that share and that concurrency) or **falls back** to a local adaptive controller (a
//! registry policy).
//!
//! A gate's **cost** in a profile is `g₀/g`: its goodput when every gate freezes over its
//! goodput in the profile. Both freezing costs 1, as the seed normalises; a cost of 2 is half
//! the goodput. The seed's illustrative costs are both-freeze 1, both-fall-back 1.3, the lone
//! defector 1.1 and the lone freezer 2.0; `f*` is where the cost of freezing, with a share
//! `f` of the others falling back, meets the cost of falling back.

use safegate_core::{Action, Observation, Policy};
use serde::Serialize;

use super::config::FleetConfig;
use super::run::{run_fleet, FleetRecord, GatePolicy};
use safegate_sim::config::Checked;

/// The seed's illustrative costs: both freeze, both fall back, lone defector, lone freezer.
pub const SEED_COSTS: [f64; 4] = [1.0, 1.3, 1.1, 2.0];

/// The seed's tipping share, `(1.1 − 1)/(1 − 0.2)`.
pub const SEED_F_STAR: f64 = 0.125;

/// A frozen gate: the admit share and the concurrency it held when the price went silent.
#[derive(Debug, Clone, Copy)]
struct Frozen(f64, u32);

impl Policy for Frozen {
    fn decide(&mut self, _: &Observation) -> Action {
        Action { concurrency: Some(self.1), ..Action::admit(self.0) }
    }
    fn name(&self) -> &'static str {
        "freeze"
    }
}

/// The two-player table, measured.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Payoffs {
    /// Cost of each when both freeze (1 by construction).
    pub both_freeze: f64,
    /// Cost of each when both fall back (the mean of the two).
    pub both_fallback: f64,
    /// Cost of the lone gate that falls back while the other freezes.
    pub lone_fallback: f64,
    /// Cost of the lone gate that freezes while the other falls back.
    pub lone_freeze: f64,
    /// Goodput of one gate when both freeze \[req/s\] (the normaliser).
    pub goodput_both_freeze: f64,
}

impl Payoffs {
    /// Whether (freeze, freeze) is a Nash equilibrium: freezing is a best response to
    /// freezing.
    pub fn freeze_is_nash(&self) -> bool {
        self.both_freeze <= self.lone_fallback
    }

    /// Whether (fall back, fall back) is a Nash equilibrium.
    pub fn fallback_is_nash(&self) -> bool {
        self.both_fallback <= self.lone_freeze
    }

    /// Worst-case regret of freezing: what it costs when the other falls back, over the
    /// best response there (0 if freezing is that best response).
    pub fn regret_freeze(&self) -> f64 {
        (self.lone_freeze - self.both_fallback).max(0.0)
    }

    /// Worst-case regret of falling back: over the best response when the other freezes.
    pub fn regret_fallback(&self) -> f64 {
        (self.lone_fallback - self.both_freeze).max(0.0)
    }
}

/// One point of the fleet's cost curves: a share `f` of the other gates falls back.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TippingPoint {
    /// Share of the other `M − 1` gates that fall back.
    pub f: f64,
    /// This gate's cost if it freezes.
    pub freeze: f64,
    /// This gate's cost if it falls back.
    pub fallback: f64,
}

/// The fleet's cost curves and where they cross.
#[derive(Debug, Clone, Serialize)]
pub struct Tipping {
    /// Gates in the fleet.
    pub gates: usize,
    /// The curves.
    pub points: Vec<TippingPoint>,
    /// The first share where falling back costs no more than freezing (linear interpolation
    /// between points); `None` if freezing stays cheaper everywhere.
    pub f_star: Option<f64>,
    /// Largest gap between each curve and the straight line through its end points
    /// (the seed's linear interpolation), as a share of the curve's range.
    pub nonlinearity: f64,
}

/// The experiment's settings.
#[derive(Debug, Clone)]
pub struct StagConfig {
    /// The fleet (its gates' demands and pools, health, duration); the price's capacity
    /// sets each gate's frozen share.
    pub fleet: FleetConfig,
    /// The local adaptive controller a gate falls back to (a registry spec).
    pub fallback: String,
}

impl StagConfig {
    /// The running case (module docs): `m` gates of the seed's pool offered `rate` each,
    /// `C = 2·m`, one health dip at 20 s, 120 s at dt 0.01, falling back to `fallback`.
    pub fn running_case(m: usize, fallback: &str, rate: f64) -> Self {
        let fleet = FleetConfig {
            comfortable: 2.0 * m as f64,
            gates: vec![super::GateConfig { rate, ..super::GateConfig::default() }; m],
            health: safegate_sim::health::HealthTrack::new(safegate_sim::health::HealthSchedule::Dip {
                start: 20.0,
                shape: safegate_sim::health::DipShape::default(),
            }),
            duration: 120.0,
            dt: 0.01,
            ..FleetConfig::default()
        };
        StagConfig { fleet, fallback: fallback.into() }
    }
}

/// Goodput of every gate when gate `i` falls back iff `falls[i]`.
fn profile(cfg: &StagConfig, falls: &[bool]) -> Checked<Vec<f64>> {
    let fleet = &cfg.fleet;
    let m = fleet.gates.len() as f64;
    let price = fleet.price.unwrap_or_default();
    let c = fleet.priced_capacity(&price, 1.0);
    let mut policies = Vec::with_capacity(falls.len());
    for (i, &fall) in falls.iter().enumerate() {
        let lambda = fleet.gates[i].rate;
        policies.push(if fall {
            GatePolicy::named(&cfg.fallback, fleet, i)
                .map_err(|e| safegate_core::RangeError::new("fallback", &cfg.fallback, e))?
        } else {
            let share = if lambda > 0.0 { (c / m / lambda).min(1.0) } else { 1.0 };
            let cap = (fleet.comfortable / m).round().max(1.0) as u32;
            GatePolicy::Local(Box::new(Frozen(share, cap)))
        });
    }
    let mut plain = fleet.clone();
    plain.price = None;
    let out = run_fleet(&plain, &mut policies, FleetRecord::default())?;
    Ok(out.gates.iter().map(|g| g.goodput).collect())
}

fn cost(base: f64, g: f64) -> f64 {
    if g > 0.0 {
        base / g
    } else {
        f64::INFINITY
    }
}

/// The two-player table, on the first two gates of `cfg.fleet`.
pub fn two_player(cfg: &StagConfig) -> Checked<Payoffs> {
    let mut two = cfg.clone();
    two.fleet.gates.truncate(2);
    if two.fleet.gates.len() < 2 {
        return Err(safegate_core::RangeError::new("fleet.gates", cfg.fleet.gates.len(), "at least 2 gates"));
    }
    let ff = profile(&two, &[false, false])?;
    let bb = profile(&two, &[true, true])?;
    let bf = profile(&two, &[true, false])?;
    let base = ff[0];
    Ok(Payoffs {
        both_freeze: cost(base, ff[0]),
        both_fallback: (cost(base, bb[0]) + cost(ff[1], bb[1])) / 2.0,
        lone_fallback: cost(base, bf[0]),
        lone_freeze: cost(ff[1], bf[1]),
        goodput_both_freeze: base,
    })
}

/// The fleet's curves: for k = 0 … M − 1 of the others falling back, gate 0's cost if it
/// freezes and if it falls back.
pub fn tipping(cfg: &StagConfig) -> Checked<Tipping> {
    let m = cfg.fleet.gates.len();
    if m < 2 {
        return Err(safegate_core::RangeError::new("fleet.gates", m, "at least 2 gates"));
    }
    let base = profile(cfg, &vec![false; m])?[0];
    let mut points = Vec::with_capacity(m);
    for k in 0..m {
        let mut falls = vec![false; m];
        for f in falls.iter_mut().skip(1).take(k) {
            *f = true;
        }
        let freeze = cost(base, profile(cfg, &falls)?[0]);
        falls[0] = true;
        let fallback = cost(base, profile(cfg, &falls)?[0]);
        points.push(TippingPoint { f: k as f64 / (m - 1) as f64, freeze, fallback });
    }
    let gap = |p: &TippingPoint| p.freeze - p.fallback;
    let mut f_star = None;
    if gap(&points[0]) >= 0.0 {
        f_star = Some(0.0);
    } else {
        for w in points.windows(2) {
            let (a, b) = (gap(&w[0]), gap(&w[1]));
            if a < 0.0 && b >= 0.0 {
                f_star = Some(w[0].f + (w[1].f - w[0].f) * (-a) / (b - a));
                break;
            }
        }
    }
    let nonlin = |ys: Vec<f64>| {
        let (y0, y1) = (ys[0], ys[ys.len() - 1]);
        let range = (y1 - y0).abs().max(1e-12);
        ys.iter()
            .enumerate()
            .map(|(i, y)| (y - (y0 + (y1 - y0) * i as f64 / (ys.len() - 1) as f64)).abs() / range)
            .fold(0.0, f64::max)
    };
    let nonlinearity =
        nonlin(points.iter().map(|p| p.freeze).collect()).max(nonlin(points.iter().map(|p| p.fallback).collect()));
    Ok(Tipping { gates: m, points, f_star, nonlinearity })
}

/// A falsification criterion's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// `F13`, `F14`, `F15`.
    pub id: &'static str,
    /// Holds (the seed's claim stands), falsified (the criterion's condition is met), or
    /// inconclusive: the verdict every criterion gets.
    pub verdict: crate::falsify::Verdict,
    /// The evidence, in words.
    pub evidence: String,
}

/// Verdicts on F13–F15 from the measured table and curves.
pub fn verdicts(p: &Payoffs, t: &Tipping) -> Vec<Verdict> {
    use crate::falsify::Verdict as V;
    let mut v = Vec::new();
    // F13: falling back has a bounded cost comparable to or better than freezing's.
    let bounded = p.both_fallback.is_finite() && p.lone_fallback.is_finite();
    v.push(Verdict {
        id: "F13",
        verdict: if bounded && p.both_fallback <= 1.1 * p.both_freeze { V::Falsified } else { V::Holds },
        evidence: format!(
            "both falling back costs {:.2} against both freezing's 1 (the seed: 1.3); the condition (a bounded fallback cost comparable to freezing's) is {}",
            p.both_fallback,
            if bounded && p.both_fallback <= 1.1 * p.both_freeze { "met: freezing's advantage is not shown here" } else { "not met: falling back costs more" }
        ),
    });
    // F14: mutual freezing the unique equilibrium, or fallback's regret above freeze's.
    let unique = p.freeze_is_nash() && !p.fallback_is_nash();
    let regret_flip = p.regret_fallback() > p.regret_freeze();
    v.push(Verdict {
        id: "F14",
        verdict: if unique || regret_flip { V::Falsified } else { V::Holds },
        evidence: format!(
            "(freeze, freeze) is {}a Nash equilibrium, (fall back, fall back) is {}one; worst-case regret: freeze {:.2}, fall back {:.2} (the seed: 0.7 and 0.1)",
            if p.freeze_is_nash() { "" } else { "not " },
            if p.fallback_is_nash() { "" } else { "not " },
            p.regret_freeze(),
            p.regret_fallback()
        ),
    });
    // F15: f* far from 1/8, or the curves far from linear.
    let (verdict, evidence) = match t.f_star {
        Some(f) if (f - SEED_F_STAR).abs() <= 0.0625 && t.nonlinearity <= 0.2 => (
            V::Holds,
            format!("f* = {f:.3} with {} gates (the seed: 0.125); the curves are within {:.0} % of straight lines", t.gates, 100.0 * t.nonlinearity),
        ),
        Some(f) => (
            V::Falsified,
            format!(
                "f* = {f:.3} with {} gates, not 0.125; the curves depart from straight lines by up to {:.0} % of their range",
                t.gates,
                100.0 * t.nonlinearity
            ),
        ),
        None => (V::Falsified, format!("freezing stays cheaper for every share of the other {} gates falling back: no tipping point", t.gates - 1)),
    };
    v.push(Verdict { id: "F15", verdict, evidence });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running_case(m: usize, fallback: &str, rate: f64) -> StagConfig {
        StagConfig::running_case(m, fallback, rate)
    }

    /// The seed's probe cycle as the fallback, two gates: freezing is a best response to
    /// freezing and falling back together costs more than freezing together.
    #[test]
    fn the_running_case_two_player_table() {
        let p = two_player(&running_case(2, "cycle", 80.0)).unwrap();
        assert_eq!(p.both_freeze, 1.0);
        assert!(p.goodput_both_freeze > 50.0, "{p:?}");
        assert!(p.freeze_is_nash(), "{p:?}");
        assert!(p.both_fallback > 1.5, "{p:?}");
        assert!(p.lone_freeze > p.both_freeze && p.lone_fallback > p.both_freeze, "{p:?}");
    }

    /// The curves have one point per count of defectors, start at freezing's 1, and the
    /// reported f* is where the gap changes sign.
    #[test]
    fn the_tipping_curves_and_their_crossing() {
        for fb in ["cycle", "vegas+pool"] {
            let t = tipping(&running_case(5, fb, 80.0)).unwrap();
            assert_eq!(t.points.len(), 5);
            assert!((t.points[0].freeze - 1.0).abs() < 1e-12);
            assert!((t.points[4].f - 1.0).abs() < 1e-12);
            match t.f_star {
                Some(f) => {
                    let after: Vec<_> = t.points.iter().filter(|p| p.f >= f - 1e-9).collect();
                    assert!(after.first().is_some_and(|p| p.fallback <= p.freeze + 1e-9), "{t:?}");
                }
                None => assert!(t.points.iter().all(|p| p.freeze < p.fallback), "{t:?}"),
            }
        }
    }

    #[test]
    fn the_seeds_own_table_gives_the_seeds_verdicts() {
        let p = Payoffs {
            both_freeze: 1.0,
            both_fallback: 1.3,
            lone_fallback: 1.1,
            lone_freeze: 2.0,
            goodput_both_freeze: 1.0,
        };
        assert!(p.freeze_is_nash() && p.fallback_is_nash());
        assert!((p.regret_freeze() - 0.7).abs() < 1e-12 && (p.regret_fallback() - 0.1).abs() < 1e-12);
        let points = (0..=8)
            .map(|k| {
                let f = k as f64 / 8.0;
                TippingPoint { f, freeze: 1.0 + f, fallback: 1.1 + 0.2 * f }
            })
            .collect();
        let t = Tipping { gates: 9, points, f_star: Some(0.125), nonlinearity: 0.0 };
        let v = verdicts(&p, &t);
        assert_eq!(v.iter().map(|v| v.verdict.label()).collect::<Vec<_>>(), ["holds", "holds", "holds"]);
    }

    #[test]
    fn a_fleet_of_one_and_an_unknown_fallback_are_errors() {
        assert!(tipping(&running_case(1, "cycle", 80.0)).is_err());
        assert!(two_player(&running_case(2, "no-such", 80.0)).is_err());
    }
}
