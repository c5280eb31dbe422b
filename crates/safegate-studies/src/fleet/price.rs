//! The coordination price and the analysis of its delay threshold.
//!
//! **The algorithm.** Kelly, Maulloo and Tan's dual algorithm (F. P. Kelly, A. K. Maulloo,
//! D. K. H. Tan, "Rate control for communication networks: shadow prices, proportional
//! fairness and stability", J. Oper. Res. Soc. 49(3), 1998, §3, the "dual algorithm"), one
//! resource, forward Euler at `dt`:
//!
//! ```text
//! p(t + dt) = max(0, p(t) + γ·dt·(Σ_j y_j(t) − c))       the coordinator
//! y_i(t)    = min(λ_i, w_i / p(t − D_i))                  gate i, on the price D_i old
//! ```
//!
//! At the equilibrium every saturated gate (`λ_i > w_i/p*`) gets `w_i/p*`: equal weights
//! split `c` equally among them (proportional fairness; with all gates saturated
//! `p* = W/c`, `W = Σ w_i`).
//!
//! **Linearisation.** Around `p*`, `δy_i = −(w_i/p*²)·δp` for a saturated gate, so
//!
//! ```text
//! δṗ(t) = −Σ_i a_i·δp(t − D_i),   a_i = γ·w_i/p*²,   a = Σ a_i = γ·W/p*² (= γ·c²/W all saturated)
//! ```
//!
//! **Equal delays** (`D_i = τ`): `ẋ = −a·x(t − τ)` is asymptotically stable iff
//! `0 < a·τ < π/2` (N. D. Hayes, "Roots of the transcendental equation associated with a
//! certain difference-differential equation", J. London Math. Soc. 25, 1950, pp. 226–232).
//! This is the single-resource case of the delay condition of R. Johari and D. K. H. Tan,
//! "End-to-end congestion control for the Internet: delays and stability", IEEE/ACM Trans.
//! Networking 9(6), 2001: [`hayes_threshold`].
//!
//! **The Euler step.** The simulated recursion is `x_{k+1} = x_k − (a·dt)·x_{k−d}` with
//! `d = round(τ/dt)`, asymptotically stable iff `0 < a·dt < 2·cos(d·π/(2d + 1))`
//! (S. A. Levin and R. M. May, "A note on difference-delay equations", Theoretical
//! Population Biology 9(2), 1976, pp. 178–187). For large `d` this is
//! `a·(τ + dt/2) < π/2`: the step adds half a step of delay: [`euler_threshold`].
//!
//! **Heterogeneous delays.** The loop is `L(s) = Σ a_i·e^(−s·D_i)/s`. The sufficient
//! condition used here is `a·max_i D_i < π/2`. Why: on `s = jω` the sum `Σ a_i e^(−jωD_i)`
//! has modulus at most `a` and, while `ω·max D_i < π`, a phase in `[−ω·max D_i, 0]` (a
//! positive combination of unit vectors in that sector), so `L(jω) = −1` needs
//! `ω ≤ a` and `ω·max D_i ≥ π/2`, impossible when `a·max D_i < π/2`; for
//! `ω·max D_i ≥ π`, `|L| ≤ a/ω < 1/2`. Scaling every `a_i` from 0 up, no root can cross the
//! imaginary axis, and none sits at `s = 0` (`s + a ≠ 0`). With equal delays it is Hayes's
//! condition; it is the dual-algorithm counterpart of Johari and Tan's per-source condition
//! for one resource (theirs bounds each source's gain times its own delay for the primal
//! algorithm, where every source has its own state; here one price is the only state, so
//! the total gain meets the longest delay). It is conservative: [`nyquist_threshold`]
//! computes the exact boundary of the linear delay equation for a delay profile, and the
//! measured threshold is reported against both.

use std::f64::consts::{FRAC_PI_2, PI};

use super::config::GateConfig;

/// The price's equilibrium for a set of gates and a capacity.
#[derive(Debug, Clone, PartialEq)]
pub struct Equilibrium {
    /// `p*`: `Σ min(λ_i, w_i/p*) = c`; 0 when `Σ λ_i ≤ c` (nothing to price).
    pub price: f64,
    /// Whether gate `i` is saturated at `p*` (`λ_i > w_i/p*`).
    pub saturated: Vec<bool>,
    /// `a_i = γ·w_i/p*²` for saturated gates, 0 otherwise: the linearised loop's gains \[1/s\].
    pub gains: Vec<f64>,
}

impl Equilibrium {
    /// `a = Σ a_i`, the loop gain of the linearised price \[1/s\].
    pub fn loop_gain(&self) -> f64 {
        self.gains.iter().sum()
    }

    /// Each gate's rate at the equilibrium, `min(λ_i, w_i/p*)` [req/s].
    pub fn rates(&self, gates: &[GateConfig]) -> Vec<f64> {
        gates.iter().map(|g| rate_at(g, self.price)).collect()
    }
}

/// A gate's admitted rate at price `p`: `min(λ, w/p)` (`λ` at `p = 0`).
#[inline]
pub fn rate_at(g: &GateConfig, p: f64) -> f64 {
    if p > 0.0 {
        g.rate.min(g.weight / p)
    } else {
        g.rate
    }
}

/// The equilibrium of the dual algorithm with gain `gain` against capacity `c`: the price
/// solving `Σ min(λ_i, w_i/p) = c` (by bisection: the sum falls monotonically in `p`).
pub fn equilibrium(gates: &[GateConfig], c: f64, gain: f64) -> Equilibrium {
    let demand: f64 = gates.iter().map(|g| g.rate).sum();
    let n = gates.len();
    if !(demand > c) || !(c > 0.0) {
        return Equilibrium { price: 0.0, saturated: vec![false; n], gains: vec![0.0; n] };
    }
    let total = |p: f64| gates.iter().map(|g| rate_at(g, p)).sum::<f64>();
    // At W/c every gate gets at most w_i/p, so the sum is ≤ c.
    let mut hi = gates.iter().map(|g| g.weight).sum::<f64>() / c;
    let mut lo = hi;
    while total(lo) <= c && lo > 1e-300 {
        lo *= 0.5;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if total(mid) > c {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let p = 0.5 * (lo + hi);
    let saturated: Vec<bool> = gates.iter().map(|g| g.weight / p < g.rate).collect();
    let gains = gates.iter().zip(&saturated).map(|(g, &s)| if s { gain * g.weight / (p * p) } else { 0.0 }).collect();
    Equilibrium { price: p, saturated, gains }
}

/// Hayes's threshold for `ẋ = −a·x(t − τ)`: stable iff `τ < π/(2a)` \[s\].
pub fn hayes_threshold(a: f64) -> f64 {
    FRAC_PI_2 / a
}

/// The Euler recursion's threshold (Levin and May) for loop gain `a` and step `dt`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct EulerThreshold {
    /// The real-valued delay `x·dt` at which `a·dt = 2·sin(π/(4x + 2))`, i.e.
    /// `x = (π/asin(a·dt/2) − 2)/4` steps \[s\]: about `π/(2a) − dt/2`.
    pub real: f64,
    /// The smallest whole delay `d` (in steps) with `a·dt ≥ 2·cos(d·π/(2d + 1))`: the first
    /// delay a run (whose delays are whole steps) loses stability at.
    pub steps: u64,
    /// `steps·dt` \[s\].
    pub whole: f64,
}

/// The Euler recursion `x_{k+1} = x_k − a·dt·x_{k−d}`'s threshold by Levin and May;
/// `None` if even `d = 0` is unstable (`a·dt ≥ 2`, the plain Euler bound).
pub fn euler_threshold(a: f64, dt: f64) -> Option<EulerThreshold> {
    let q = a * dt;
    if !(q < 2.0) || !(q > 0.0) {
        return None;
    }
    let x = (PI / (q / 2.0).asin() - 2.0) / 4.0;
    let bound = |d: u64| 2.0 * (d as f64 * PI / (2.0 * d as f64 + 1.0)).cos();
    // The bound falls in d; walk from just below the real-valued root.
    let mut d = (x - 2.0).max(0.0) as u64;
    while d > 0 && q >= bound(d) {
        d -= 1;
    }
    while q < bound(d) {
        d += 1;
    }
    Some(EulerThreshold { real: x.max(0.0) * dt, steps: d, whole: d as f64 * dt })
}

/// The sufficient condition for heterogeneous delays: with delays `profile·κ`, stable for
/// every `κ` with `a·κ·max(profile) < π/2`. Returns that bound on `κ·max(profile)` \[s\].
pub fn sufficient_threshold(gains: &[f64]) -> f64 {
    hayes_threshold(gains.iter().sum())
}

/// The exact stability boundary of the linear delay equation `ẋ = −Σ a_i·x(t − κ·τ_i)` over
/// the scale `κ`: the smallest `κ` at which the Nyquist curve of `L(s) = Σ a_i e^(−sκτ_i)/s`
/// passes through −1. Since `L(jω; κ) = κ·L(jκω; 1)`, this is `1 / max M` over the crossings
/// of the negative real axis of `L(·; 1)`, `M` the distance from 0 there. Returns `None` when
/// every delay is 0 (no finite threshold).
pub fn nyquist_threshold(gains: &[f64], profile: &[f64]) -> Option<f64> {
    let a: f64 = gains.iter().sum();
    let tmax = profile.iter().cloned().fold(0.0, f64::max);
    if !(tmax > 0.0) || !(a > 0.0) {
        return None;
    }
    // Im L = −g(ω)/ω with g = Σ a_i cos(ωτ_i); Re L = −Σ a_i sin(ωτ_i)/ω.
    let g = |w: f64| gains.iter().zip(profile).map(|(a, t)| a * (w * t).cos()).sum::<f64>();
    let m = |w: f64| gains.iter().zip(profile).map(|(a, t)| a * (w * t).sin()).sum::<f64>() / w;
    let step = PI / (400.0 * tmax);
    let mut best = 0.0f64;
    let mut w0 = step;
    let mut g0 = g(w0);
    // |L(jω)| ≤ a/ω: past ω = a/best no crossing can be farther out.
    while w0 < 1e4 / tmax && (best == 0.0 || w0 < a / best) {
        let w1 = w0 + step;
        let g1 = g(w1);
        if g0.signum() != g1.signum() {
            let (mut lo, mut hi, glo) = (w0, w1, g0);
            for _ in 0..80 {
                let mid = 0.5 * (lo + hi);
                if g(mid).signum() == glo.signum() {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            best = best.max(m(0.5 * (lo + hi)));
        }
        w0 = w1;
        g0 = g1;
    }
    // A crossing at |L| ≈ 0 (the delay-free term cancelling the rest) is no threshold.
    (best > 1e-9 * a * tmax).then(|| 1.0 / best)
}

/// The coordinator's state: the price now and the prices of the last steps, so each gate
/// reads the one its delay lets it see.
#[derive(Debug, Clone)]
pub(crate) struct Coordinator {
    gain: f64,
    /// Ring of past prices, `history[k mod len] = p_k`.
    history: Vec<f64>,
    k: u64,
}

impl Coordinator {
    pub(crate) fn new(gain: f64, p0: f64, max_delay_steps: u64) -> Self {
        Self { gain, history: vec![p0; max_delay_steps as usize + 1], k: 0 }
    }

    /// `p_k`, the price now.
    pub(crate) fn now(&self) -> f64 {
        self.seen(0)
    }

    /// `p_{k−d}` (the initial price before t = 0).
    #[inline]
    pub(crate) fn seen(&self, d: u64) -> f64 {
        let len = self.history.len() as u64;
        let back = d.min(self.k).min(len - 1);
        self.history[((self.k - back) % len) as usize]
    }

    /// One step of the dual algorithm: aggregate admitted rate `y` against capacity `c`.
    pub(crate) fn step(&mut self, y: f64, c: f64, dt: f64) {
        let p = (self.now() + self.gain * dt * (y - c)).max(0.0);
        self.k += 1;
        let len = self.history.len() as u64;
        self.history[(self.k % len) as usize] = p;
    }
}
