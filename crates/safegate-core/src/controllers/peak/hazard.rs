//! The stall hazard: how much of its time a level loses to stalls, pooled across levels.
//!
//! The climb compares levels by their trials' rates, and a trial is short (two periods)
//! next to the time between stalls (seconds). So a level past the knee of a database
//! wins its probes between stalls (1,300–1,600 txn/s at a limit of 15 on PostgreSQL, where
//! a fixed 15 delivers ~320 on average), and the stall rule (`stall.rs`) can only answer
//! after the fact. What the climb should compare is each level's rate over time, stalls
//! included; one level's own stalls are too rare to count (a few a minute), but they can
//! be pooled.
//!
//! A stall needs two requests waiting for each other (a deadlock: two transactions that
//! lock the same rows in opposite orders), so its hazard is taken to grow with the
//! **pairs** in flight: a level with `n` requests in flight stalls at the rate
//! `k·n(n−1)/2` per second of calm service, one pooled `k` for every level. Each stall then
//! costs `D` seconds in which the level serves next to nothing. An alternating renewal
//! process (calm spells of mean `1/(k·p)`, stalls of mean `D`) keeps a share
//!
//! ```text
//! keep(n) = 1 / (1 + k·p(n)·D),   p(n) = n(n−1)/2
//! ```
//!
//! of its time serving, and the climb compares `rate(L)·keep(L)`. Both are estimated from
//! the climb's own trials (D. R. Cox, *Renewal Theory*, 1962, for the renewal-reward share;
//! the pooled rate is the maximum-likelihood estimate of a Poisson rate with exposure):
//!
//! - `k = stalls / Σ p(n̄)·t` over calm trials, `n̄` a trial's mean in flight (Little's
//!   numerator over its length), `t` its length: a level the load did not fill exposes
//!   only the pairs that were in it;
//! - `D = Σ t / stalls` over stalled trials (a stall and its aftermath, the trial after a
//!   halving that stalled too, are one episode).
//!
//! All three sums decay with a time constant of [`TAU`]: a backend whose health changed
//! is learned again, not averaged with what it was. Before the first stall `k = 0`,
//! every level keeps all its time, and the climb is what it was without this module.
//!
//! The model is the simplest that carries the two facts measured on PostgreSQL: stalls
//! are rare at a few transactions in flight and frequent at a few tens (a fixed 3 never
//! stalled in 20 s; a fixed 16 spent most of its time stalled), and a stall costs its whole
//! length, about `deadlock_timeout`, whatever the level. It is wrong for stalls that do not
//! need pairs (a checkpoint, a vacuum): those cost every level alike and cancel out of a
//! comparison only when `k` is small, which is what a few of them yield.

/// The sums' time constant \[s\].
pub(super) const TAU: f64 = 30.0;

/// Stall episodes (decayed) the model needs before it prices a stall in.
pub(super) const SETTLED: f64 = 2.0;

/// Stall episodes, their length and the calm exposure, decaying with [`TAU`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct StallHazard {
    /// Stall episodes.
    stalls: f64,
    /// Seconds of stalled trials.
    stalled: f64,
    /// Pair-seconds of calm trials.
    exposure: f64,
    /// When the sums were last decayed \[s\] (NaN before the first).
    at: f64,
}

/// Pairs among `n` requests in flight (0 below 1).
fn pairs(n: f64) -> f64 {
    if n > 1.0 {
        0.5 * n * (n - 1.0)
    } else {
        0.0
    }
}

impl StallHazard {
    pub(super) fn new() -> Self {
        StallHazard { stalls: 0.0, stalled: 0.0, exposure: 0.0, at: f64::NAN }
    }

    /// Decay the sums to `now`.
    fn age(&mut self, now: f64) {
        if !now.is_finite() {
            return;
        }
        if self.at.is_finite() && now > self.at {
            let f = (-(now - self.at) / TAU).exp();
            self.stalls *= f;
            self.stalled *= f;
            self.exposure *= f;
        }
        if !(self.at >= now) {
            self.at = now;
        }
    }

    /// A calm trial of `secs` seconds with `held` request-seconds in flight ended at `now`.
    pub(super) fn calm(&mut self, secs: f64, held: f64, now: f64) {
        if !(secs > 0.0 && held >= 0.0 && secs.is_finite() && held.is_finite()) {
            return;
        }
        self.age(now);
        self.exposure += pairs(held / secs) * secs;
    }

    /// A stalled trial of `secs` seconds ended at `now`; `episode` when it starts a new
    /// stall episode (not the aftermath of the one before).
    pub(super) fn stall(&mut self, secs: f64, episode: bool, now: f64) {
        if !(secs > 0.0 && secs.is_finite()) {
            return;
        }
        self.age(now);
        self.stalled += secs;
        if episode {
            self.stalls += 1.0;
        }
    }

    /// The share of its time a level with `n` requests in flight keeps serving, in
    /// `(0, 1]`: 1 before any stall, or before any calm exposure to pool it over.
    pub(super) fn keep(&self, n: f64) -> f64 {
        if !(self.stalls > 0.0 && self.exposure > 0.0) {
            return 1.0;
        }
        let k = self.stalls / self.exposure;
        let d = self.stalled / self.stalls;
        let keep = 1.0 / (1.0 + k * pairs(n) * d);
        if keep.is_finite() && keep > 0.0 {
            keep
        } else {
            1.0
        }
    }
}

impl StallHazard {
    /// Whether enough stalls are pooled (at least [`SETTLED`], decayed) for a stall at a
    /// level under the ceiling to be expected rather than news.
    pub(super) fn settled(&self) -> bool {
        self.stalls >= SETTLED && self.exposure > 0.0
    }

    /// The level past which a higher limit can only lose over time, in requests (∞ until
    /// [`SETTLED`] stalls are pooled; from the cautious count `s − √s` of the `s` seen): on a service curve whose rate grows at most in proportion to the limit
    /// (a concave curve through the origin, as every measured one is), `rate(L)·keep(L)` is
    /// at most `L·keep(L)·rate(1)`, and `L / (1 + c·L(L−1))` with `c = k·D/2` is largest at
    /// `L = 1/√c` (its derivative is proportional to `1 − c·L²`).
    pub(super) fn ceiling(&self) -> f64 {
        // Only once stalls are pooled, and from a cautious rate: `s − √s` stalls of the `s`
        // seen (one standard deviation of a Poisson count below it). Two stalls in a second
        // of little exposure (a CPU-starved host whose requests all ran late, taken for
        // stalls) put the plain estimate's ceiling at 3 and held a flood's limit there.
        if !self.settled() {
            return f64::INFINITY;
        }
        let cautious = self.stalls - self.stalls.sqrt();
        let c = 0.5 * cautious / self.exposure * (self.stalled / self.stalls);
        let top = 1.0 / c.sqrt();
        if top.is_nan() {
            f64::INFINITY
        } else {
            top
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_stall_keeps_everything() {
        let mut h = StallHazard::new();
        assert_eq!(h.keep(100.0), 1.0);
        h.calm(10.0, 40.0, 10.0);
        assert_eq!(h.keep(100.0), 1.0);
    }

    #[test]
    fn the_share_follows_the_pairs_and_the_stall_length() {
        let mut h = StallHazard::new();
        // 10 s at 5 in flight: 10 pairs · 10 s = 100 pair-seconds; one stall of 2 s.
        h.calm(10.0, 50.0, 10.0);
        h.stall(2.0, true, 10.0);
        // k = 1/100, D = 2: keep(5) = 1/(1 + 0.01·10·2) = 1/1.2.
        assert!((h.keep(5.0) - 1.0 / 1.2).abs() < 1e-12, "{}", h.keep(5.0));
        // A single request has no pair to wait for.
        assert_eq!(h.keep(1.0), 1.0);
        assert!(h.keep(20.0) < h.keep(10.0) && h.keep(10.0) < h.keep(5.0));
        // An aftermath adds to the length, not to the count.
        h.stall(2.0, false, 10.0);
        assert!((h.keep(5.0) - 1.0 / 1.4).abs() < 1e-12, "{}", h.keep(5.0));
    }

    #[test]
    fn the_sums_are_forgotten() {
        let mut h = StallHazard::new();
        h.calm(10.0, 50.0, 0.0);
        h.stall(1.0, true, 0.0);
        let early = h.keep(8.0);
        // Calm exposure after the stall dilutes it, and the stall itself decays.
        h.calm(10.0, 50.0, 10.0 * TAU);
        assert!(h.keep(8.0) > early);
        assert!(h.keep(8.0) > 0.999, "{}", h.keep(8.0));
    }

    #[test]
    fn garbage_is_ignored() {
        let mut h = StallHazard::new();
        h.calm(f64::NAN, 1.0, 0.0);
        h.calm(1.0, f64::INFINITY, 0.0);
        h.stall(-1.0, true, 0.0);
        h.stall(1.0, true, f64::NAN);
        h.calm(1.0, 5.0, 1.0);
        let k = h.keep(f64::NAN);
        assert!(k > 0.0 && k <= 1.0);
        assert_eq!(h.keep(5.0), h.keep(5.0));
    }
}
