//! The concurrency cap as the filter's second input: the service curve it learns, the
//! service each cap is predicted to give (settled, and within the next period), and the QP
//! over (admitted rate, cap) solved by enumeration (docs/math.md §The concurrency cap).

use super::config::shape;
use super::{ConcurrencyInput, SafetyFilter};
use crate::filter::{Decision, FilterState};
use crate::policy::{Observation, Policy};

impl<N: Policy> SafetyFilter<N> {
    /// Learn the service curve from the period that just ended, if the busy count held.
    pub(super) fn learn_curve(&mut self, obs: &Observation) {
        let Some(curve) = self.curve.as_mut() else { return };
        let step = self.last_t.map_or(0.0, |t0| obs.now - t0);
        if step > 0.0 && obs.in_service == self.last_busy && obs.in_service >= 1.0 {
            let rate = (obs.completed - self.last_done) / step;
            curve.observe(obs.in_service.round() as usize, obs.health, rate);
        }
        self.last_busy = obs.in_service;
    }

    /// Predicted service rate with the cap at `n` once the pool has settled there: the
    /// learned bin for `min(n, ⌈q⌉)` once trusted, else `ŝ` scaled along the declared shape
    /// (if a knee is set), `ŝ·shape(n)/avg shape`, with the shape of the busy count averaged
    /// as `ŝ` is (a ratio of means: `ŝ` averages `s·shape(n(t))`). Scaling from the busy
    /// count of this instant paired a rate measured at a few busy with a count that had just
    /// risen to all of them: on PostgreSQL it predicted a cap at the knee would clear ten
    /// times `ŝ` while a deadlock held every executor. Scaling from the shape of the
    /// *averaged* busy count did the same over a transient: a busy count that swung from 2–15
    /// to 65 within 0.3 s averaged 19.5, past the knee, while `ŝ` still held the rate of the
    /// periods at a few busy, and a cap of 8 was predicted to clear 1,813 jobs/s on a
    /// database whose peak is ~600 (the filter alone crossed the line at its first stall).
    pub(super) fn predict_service(
        &self,
        n: u32,
        queue: f64,
        s_hat: f64,
        health: Option<f64>,
        ci: &ConcurrencyInput,
    ) -> Option<f64> {
        let curve = self.curve.as_ref()?;
        let busy = (n as usize).min(queue.ceil().max(1.0) as usize);
        if curve.samples(busy) >= ci.min_samples {
            return curve.predict(busy, health);
        }
        match ci.knee {
            Some(c) if self.busy_avg >= 1.0 && self.shape_avg > 0.0 => {
                Some(s_hat * shape(busy as f64, c) / self.shape_avg)
            }
            _ => None,
        }
    }

    /// The service rate of the next period with the cap at `n`, for the filter's one-step
    /// constraint, when the pool now clears `s_now` with `busy_now` busy, and `μ̂(n)` is
    /// [`Self::predict_service`]'s rate once settled at `n`:
    /// - a cap above the busy count lets `min(n, ⌈q⌉) − busy_now` more start at once, which
    ///   adds what the curve says they add: `s_now + μ̂(n) − μ̂(busy_now)`;
    /// - a cap below it is not preemption: the jobs in service run on, and the cap takes
    ///   effect as they finish. About `s_now·dt` of the `busy_now` finish within the period,
    ///   so the period moves that share of the way, `s_now + f·(μ̂(n) − s_now)` with
    ///   `f = min(1, s_now·dt/busy_now)`. The seed's pool (about 100 ms a job, 50-ms
    ///   periods) gets about half the settled gain within the period; a stalled one (`s_now` near 0: a deadlock holding every executor)
    ///   gets nothing from a cap it cannot yet apply, where the settled rate alone let the
    ///   filter admit at full rate into a stalled PostgreSQL pool;
    /// - with no busy count known, the settled rate.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn next_service(
        &self,
        n: u32,
        queue: f64,
        busy_now: f64,
        s_now: f64,
        s_hat: f64,
        health: Option<f64>,
        ci: &ConcurrencyInput,
    ) -> Option<f64> {
        let settled = self.predict_service(n, queue, s_hat, health, ci)?;
        if !(busy_now >= 1.0) || !(busy_now <= f64::MAX) {
            return Some(settled);
        }
        let busy_next = (n as f64).min(queue.ceil());
        if busy_next >= busy_now {
            match self.predict_service(busy_now.round() as u32, queue, s_hat, health, ci) {
                Some(now) => Some((s_now + settled - now).max(0.0)),
                None => Some(settled),
            }
        } else {
            let turnover = (s_now * self.cfg.dt / busy_now).clamp(0.0, 1.0);
            Some(s_now + turnover * (settled - s_now))
        }
    }

    /// The cap with the fastest predicted service (the backup's choice), if any is known.
    pub(super) fn fastest_cap(&self, queue: f64, s_hat: f64, health: Option<f64>) -> Option<u32> {
        let ci = self.cfg.concurrency?;
        let mut best: Option<(u32, f64)> = None;
        for n in 1..=ci.executors {
            if let Some(mu) = self.predict_service(n, queue, s_hat, health, &ci) {
                if best.is_none_or(|(_, b)| mu > b + 1e-9) {
                    best = Some((n, mu));
                }
            }
        }
        best.map(|b| b.0)
    }

    /// The filter's QP over (admitted rate, concurrency cap), by enumeration of the caps
    /// whose service the curve predicts (see [`ConcurrencyInput`]): `state.drift` holds the
    /// nominal cap's service `s_nom`, swapped for each cap's [`Self::next_service`] from the
    /// pool's rate now, `s_now`. Returns the decision, its cap and its drift.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn best_cap(
        &self,
        state: &FilterState,
        busy_now: f64,
        s_now: f64,
        s_nom: f64,
        s_hat: f64,
        health: Option<f64>,
        nominal: f64,
        lambda: f64,
        n_nom: u32,
        d0: Decision,
        ci: &ConcurrencyInput,
    ) -> Option<(Decision, u32, f64)> {
        let cost = |d: &Decision, n: u32| {
            let gap = d.nominal - d.admit_rate;
            gap * gap + ci.weight * (n as f64 - n_nom as f64).powi(2) + if d.feasible { 0.0 } else { 1e18 }
        };
        let mut best: (f64, Option<(Decision, u32, f64)>) = (cost(&d0, n_nom), None);
        for n in 1..=ci.executors {
            if n == n_nom {
                continue;
            }
            let Some(mu) = self.next_service(n, state.queue, busy_now, s_now, s_hat, health, ci) else { continue };
            let x = FilterState { drift: state.drift + s_nom - mu, ..*state };
            let d = self.filter.decide(&x, nominal, lambda);
            let c = cost(&d, n);
            if c < best.0 {
                best = (c, Some((d, n, x.drift)));
            }
        }
        best.1
    }
}
