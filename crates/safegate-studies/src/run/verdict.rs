//! The verdict of a run: its goodput, how much of the physically clearable rate
//! that is, and how long its queue stood beyond the safe line θ·cap.
//!
//! **Physical limit** (docs/filter.md §The main job's four arms). At health `H(t)` the
//! most the pool can clear, whatever admission and concurrency cap it runs, is its peak
//! rate `max_n H·n·s·min(1, (C/n)²) = H(t)·C·s`, at `n = C` busy executors
//! ([`safegate_sim::model::Pool::peak_rate`] scaled by `H`); and it cannot clear what has
//! not arrived or what its backlog (`cap`) could not hold. The limit is the goodput of an
//! ideal pool with the same backlog bound that admits every fresh request (`λ(t)`: base
//! rate and spike, no retries), starts from the run's initial queue, and clears at
//! `H(t)·C·s` whenever it has work: at each instant the smaller of the peak and what is
//! offered or waiting. `H(t)` is the health the run saw, stepped at its recorded samples.
//! A greedy server with the largest service rate and the same buffer clears at least as
//! much as any other, so no policy of the model clears more over the run (in the
//! stochastic mode: in expectation); a pool reaches it only with exactly `C` busy whenever
//! it has work. On the seed's λ = 80 band it is 75.2 req/s, below λ = 80 because even the
//! ideal backlog overflows in the deepest dips.

use safegate_sim::{Config, Outcome};
use serde::Serialize;

/// A run's verdict numbers (the table's last lines and `--json`'s `verdict`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Verdict {
    /// Requests cleared per simulated second \[req/s\].
    pub goodput: f64,
    /// The ideal pool's goodput \[req/s\] (module docs).
    pub physical_limit: f64,
    /// `goodput / physical_limit`.
    pub share_of_limit: f64,
    /// The safe line θ·cap \[requests\] the queue is measured against.
    pub line: f64,
    /// Seconds with the queue above `line`, from the recorded samples (each stands for the
    /// run's duration over their count).
    pub time_beyond: f64,
    /// `time_beyond` over the run's duration.
    pub share_beyond: f64,
}

/// The verdict of `outcome`, a run of `cfg`, against the safe line `line`; `None` when the
/// run recorded no series.
pub fn verdict(cfg: &Config, outcome: &Outcome, line: f64) -> Option<Verdict> {
    let series = outcome.series.as_ref().filter(|s| !s.is_empty())?;
    let duration = outcome.summary.duration;
    let (_, peak) = cfg.pool.peak_rate();
    let n = series.len() as f64;
    // The ideal pool, one recorded sample (duration / n seconds) at a time.
    let dt = duration / n;
    let (mut backlog, mut cleared) = (cfg.initial_queue, 0.0);
    for (t, h) in series.t.iter().zip(&series.health) {
        backlog = (backlog + cfg.traffic_at(*t) * dt).min(cfg.pool.capacity);
        let out = backlog.min(h * peak * dt);
        backlog -= out;
        cleared += out;
    }
    let limit = cleared / duration;
    let goodput = outcome.summary.cleared / duration;
    let share_beyond = series.queue.iter().filter(|q| **q > line).count() as f64 / n;
    Some(Verdict {
        goodput,
        physical_limit: limit,
        share_of_limit: if limit > 0.0 { goodput / limit } else { 0.0 },
        line,
        time_beyond: share_beyond * duration,
        share_beyond,
    })
}

#[cfg(test)]
mod tests {
    use safegate_sim::{RunOptions, Scenario};

    use super::*;

    #[test]
    fn constant_health_limit_is_the_smaller_of_traffic_and_peak() {
        // λ = 80 at constant health 1: the peak 150 req/s is out of reach of the demand, so
        // the limit is λ; at health 0.4 the peak is 60, below the demand.
        for (h, want) in [(1.0, 80.0), (0.4, 60.0)] {
            let mut s = Scenario::default();
            s.traffic.rate = 80.0;
            s.health.kind = safegate_sim::scenario::HealthKind::Constant;
            s.health.shape.high = h;
            s.run.duration = 50.0;
            s.gate.sensitivity = 0.0;
            let cfg = s.config("test").unwrap();
            let mut gate = s.gate().unwrap();
            let out =
                safegate_sim::run(s.run.mode, &cfg, &mut gate, RunOptions { record_every: Some(1), progress: None })
                    .unwrap();
            let v = verdict(&cfg, &out, 140.0).unwrap();
            assert!((v.physical_limit - want).abs() < 1e-9, "{h}: {}", v.physical_limit);
            assert!((v.goodput - out.summary.cleared / 50.0).abs() < 1e-12);
            assert!(v.share_of_limit <= 1.0 + 1e-9, "{v:?}");
            assert!((v.time_beyond - v.share_beyond * 50.0).abs() < 1e-9);
        }
    }

    /// What a dip backs up is cleared after it: the limit carries it over, up to the
    /// backlog's bound (a limit of `min(λ, H·peak)` per instant alone falls below the goodput
    /// of this very run).
    #[test]
    fn a_backlog_from_a_dip_counts_toward_the_limit() {
        let mut s = Scenario::default();
        s.traffic.rate = 55.0;
        s.health.kind = safegate_sim::scenario::HealthKind::Dip;
        s.gate.sensitivity = 0.0;
        s.run.duration = 200.0;
        let cfg = s.config("test").unwrap();
        let mut gate = s.gate().unwrap();
        let out = safegate_sim::run(s.run.mode, &cfg, &mut gate, RunOptions { record_every: Some(1), progress: None })
            .unwrap();
        let v = verdict(&cfg, &out, 140.0).unwrap();
        let naive =
            out.series.as_ref().unwrap().health.iter().map(|h| (h * cfg.pool.peak_rate().1).min(55.0)).sum::<f64>()
                / out.series.as_ref().unwrap().len() as f64;
        assert!(v.goodput > naive, "the dip must back up work: {} vs {naive}", v.goodput);
        assert!(v.goodput <= v.physical_limit + 1e-6, "{v:?}");
        // Everything offered is cleared by the ideal pool (55 < 150 when healthy).
        assert!((v.physical_limit - 55.0).abs() < 0.5, "{v:?}");
    }
}
