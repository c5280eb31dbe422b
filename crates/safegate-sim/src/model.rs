//! The executor pool: how many executors are busy and how fast they jointly clear.
//!
//! The seed's section "Why a Rulebook Cannot Do This Job" (Polyulya 2026): per-executor
//! rate `s` up to the comfortable concurrency `C`, degraded by `(C/n)²` past it, all of it
//! scaled by downstream health `H`:
//!
//! ```text
//! μ(n, H) = H · n · s · min(1, (C/n)²)   = H·s·n for n ≤ C,  H·s·C²/n for n > C
//! ```
//!
//! With all `P` executors busy at `H = 1` this is the seed's closed-form ceiling
//! `Rate_max = P·s·(C/P)² = s·C²/P` (75 req/s at s = 37.5, C = 4, P = 8). The curve peaks
//! at `n = C` (`C·s`, 150 req/s), which is what a concurrency cap can exploit.

use serde::{Deserialize, Serialize};

/// How the fluid model counts busy executors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Busy {
    /// `n = min(P, ceil(q))`: whole executors (the seed's widget; needed for 386.1 s).
    #[default]
    Whole,
    /// `n = min(P, q)`: a fractional executor count (gives 384.5 s instead of 386.1 s).
    Fluid,
}

/// The pool's constants. Defaults are the seed's: P = 8, C = 4, s = 37.5, cap = 200. A
/// scenario's `[model]` section is this type ([`crate::Config::check`] checks it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Pool {
    /// `P`, executors pulling from the backlog.
    pub executors: u32,
    /// `C`, the comfortable concurrency past which contention degrades every executor.
    pub comfortable: f64,
    /// `s`, one executor's comfortable-load clearing rate [req/s].
    pub rate: f64,
    /// `cap`, the queue capacity \[requests\]; arrivals beyond it are lost.
    pub capacity: f64,
    /// How the fluid model counts busy executors.
    pub busy: Busy,
}

impl Default for Pool {
    fn default() -> Self {
        Self { executors: 8, comfortable: 4.0, rate: 37.5, capacity: 200.0, busy: Busy::Whole }
    }
}

impl Pool {
    /// Joint clearing rate of `n` busy executors at health `h`: `h · n · s · min(1, (C/n)²)`.
    ///
    /// `n` may be fractional (fluid counting). `n ≤ 0` clears nothing.
    #[inline]
    pub fn clearing_rate(&self, n: f64, h: f64) -> f64 {
        if n <= 0.0 {
            return 0.0;
        }
        let c = self.comfortable;
        let per = if n <= c { n } else { c * c / n };
        h * self.rate * per
    }

    /// Per-executor clearing rate factor `s · min(1, (C/n)²)` for `n ≥ 1` whole executors.
    #[inline]
    pub fn per_executor_rate(&self, n: u32) -> f64 {
        if n == 0 {
            return 0.0;
        }
        let n = n as f64;
        let c = self.comfortable;
        if n <= c {
            self.rate
        } else {
            self.rate * (c / n) * (c / n)
        }
    }

    /// Busy executors at queue depth `q` under the fluid model's counting rule, with at most
    /// `limit` allowed to pull (a concurrency cap; `u32::MAX` for none).
    #[inline]
    pub fn busy_at(&self, q: f64, limit: u32) -> f64 {
        let p = self.executors.min(limit) as f64;
        match self.busy {
            Busy::Whole => {
                // ceil(q) without a libm call: q is in [0, cap].
                let t = q as u64 as f64;
                let c = if t < q { t + 1.0 } else { t };
                c.min(p)
            }
            Busy::Fluid => q.min(p),
        }
    }

    /// The seed's joint ceiling `s·C²/P`: the clearing rate with all `P` busy at `H = 1`.
    pub fn saturated_ceiling(&self) -> f64 {
        self.clearing_rate(self.executors as f64, 1.0)
    }

    /// The peak of the throughput curve over whole `n ≤ P` at `H = 1` (`C·s` when `P ≥ C`).
    pub fn peak_rate(&self) -> (u32, f64) {
        (1..=self.executors).map(|n| (n, self.clearing_rate(n as f64, 1.0))).fold((0, 0.0), |best, x| {
            if x.1 > best.1 {
                x
            } else {
                best
            }
        })
    }
}

/// Gunther's Universal Scalability Law `X(n) = γn / (1 + σ(n−1) + κn(n−1))`.
///
/// The seed fits σ ≈ 0, γ = s and κ = 1/C² so the USL peak lands on `C`; at n = 8 that gives
/// ≈ 66.67 req/s, not the model's 75: the two curves share only the 1/N tail (Gunther, Guerrilla
/// Capacity Planning, 2007; seed, "Deeper: the 1/N shape is not an arbitrary choice").
pub fn usl_throughput(n: f64, gamma: f64, sigma: f64, kappa: f64) -> f64 {
    gamma * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceiling_is_s_c2_over_p_for_any_p_above_c() {
        for &(p, c, s) in &[(8u32, 4.0, 37.5), (16, 3.0, 10.0), (5, 2.0, 100.0), (64, 7.0, 1.25), (9, 8.5, 2.0)] {
            let pool = Pool { executors: p, comfortable: c, rate: s, ..Pool::default() };
            let expect = s * c * c / p as f64;
            assert!((pool.saturated_ceiling() - expect).abs() < 1e-9 * expect, "{p} {c} {s}");
            assert!((pool.per_executor_rate(p) * p as f64 - expect).abs() < 1e-9 * expect);
        }
        assert_eq!(Pool::default().saturated_ceiling(), 75.0);
    }

    #[test]
    fn peak_is_at_comfortable_concurrency() {
        assert_eq!(Pool::default().peak_rate(), (4, 150.0));
    }

    #[test]
    fn whole_busy_count_rounds_up() {
        let p = Pool::default();
        assert_eq!(p.busy_at(0.0, u32::MAX), 0.0);
        assert_eq!(p.busy_at(0.01, u32::MAX), 1.0);
        assert_eq!(p.busy_at(3.0, u32::MAX), 3.0);
        assert_eq!(p.busy_at(3.2, u32::MAX), 4.0);
        assert_eq!(p.busy_at(150.0, u32::MAX), 8.0);
        assert_eq!(p.busy_at(150.0, 4), 4.0);
        let f = Pool { busy: Busy::Fluid, ..p };
        assert_eq!(f.busy_at(3.2, u32::MAX), 3.2);
    }

    #[test]
    fn usl_at_eight_is_two_thirds_of_a_hundred() {
        let x = usl_throughput(8.0, 37.5, 0.0, 1.0 / 16.0);
        assert!((x - 66.666_666).abs() < 1e-3, "{x}");
    }
}
