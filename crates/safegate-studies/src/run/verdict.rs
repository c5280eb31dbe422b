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
//! it has work. On the seed's λ = 80 band it is 75.4 req/s (400 s; 75.5 over 4,000 s), below λ = 80 because even the
//! ideal backlog overflows in the deepest dips.

use safegate_sim::{Config, Outcome, Series};
use serde::Serialize;

/// `x`, or `null` when it is not finite.
fn finite_or_null<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    if x.is_finite() {
        s.serialize_f64(*x)
    } else {
        s.serialize_none()
    }
}

/// A run's verdict numbers (the table's last lines and `--json`'s `verdict`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Verdict {
    /// Requests cleared per simulated second \[req/s\].
    pub goodput: f64,
    /// The ideal pool's goodput \[req/s\] (module docs).
    pub physical_limit: f64,
    /// `goodput / physical_limit`; NaN (`null` in JSON) when the limit is 0: a run that
    /// could clear nothing has no share of it.
    #[serde(serialize_with = "finite_or_null")]
    pub share_of_limit: f64,
    /// The safe line θ·cap \[requests\] the queue is measured against.
    pub line: f64,
    /// Seconds with the queue above `line`, from the recorded samples (each stands for the
    /// run's duration over their count).
    pub time_beyond: f64,
    /// `time_beyond` over the run's duration.
    pub share_beyond: f64,
}

/// One step of the ideal pool: `dt` seconds at offered rate `lambda` and clearing rate
/// `mu` from `backlog`, bounded by `cap`; returns the backlog after and what was cleared.
///
/// Exact for constant rates (a fluid queue: it clears `mu` while it has work and what
/// arrives once it has none), so `k` steps of the same rates compose to one step of `k·dt`:
/// the result does not depend on how finely a run with constant rates is cut. The same
/// arithmetic as the fluid simulator's step (serve, then bound the backlog), with every
/// request admitted and `C` busy whenever there is work.
#[inline]
fn ideal_step(backlog: f64, lambda: f64, mu: f64, dt: f64, cap: f64) -> (f64, f64) {
    let next = backlog + (lambda - mu) * dt;
    if next >= 0.0 {
        (next.min(cap), mu * dt)
    } else {
        // Empty before the step ends: everything there was, and everything that came.
        (0.0, backlog + lambda * dt)
    }
}

/// The physical limit \[req/s\] of a simulated run of `cfg` (module docs): the ideal pool
/// stepped on the run's own grid (`t = k·dt`, `k < steps`), at the health `cfg.health`
/// gives each step (the simulators read the same track) and the offered rate
/// `cfg.traffic_at(t)`.
///
/// It depends on `cfg` alone, so every arm of a study shares it; its cost is one pass over
/// the steps without a policy (a few ns per step).
pub fn physical_limit(cfg: &Config) -> f64 {
    let (_, peak) = cfg.pool.peak_rate();
    let (dt, cap) = (cfg.dt, cfg.pool.capacity);
    let (mut backlog, mut cleared) = (cfg.initial_queue.min(cap), 0.0);
    for k in 0..cfg.steps() {
        let t = k as f64 * dt;
        let (b, out) = ideal_step(backlog, cfg.traffic_at(t), cfg.health.value(t) * peak, dt, cap);
        backlog = b;
        cleared += out;
    }
    let duration = cfg.steps() as f64 * dt;
    if duration > 0.0 {
        cleared / duration
    } else {
        0.0
    }
}

/// The physical limit \[req/s\] of a run whose health is known only at its recorded
/// samples (a live run: the downstream's health, faults included): each sample's health and
/// offered rate held over the time since the previous sample (the first since 0, the last
/// also until the end of the run), the ideal pool stepped exactly over it (`ideal_step`),
/// so the figure does not depend on how many samples were kept when the health is constant
/// between them.
pub fn physical_limit_of_series(cfg: &Config, series: &Series, duration: f64) -> f64 {
    let (_, peak) = cfg.pool.peak_rate();
    let cap = cfg.pool.capacity;
    let (mut backlog, mut cleared, mut from) = (cfg.initial_queue.min(cap), 0.0, 0.0f64);
    let last = series.t.len().saturating_sub(1);
    for (i, (t, h)) in series.t.iter().zip(&series.health).enumerate() {
        let to = if i == last { duration.max(*t) } else { *t }.min(duration);
        let dt = (to - from).max(0.0);
        let (b, out) = ideal_step(backlog, cfg.traffic_at(from), h * peak, dt, cap);
        backlog = b;
        cleared += out;
        from = from.max(to);
    }
    if duration > 0.0 {
        cleared / duration
    } else {
        0.0
    }
}

/// The verdict of `outcome`, a simulated run of `cfg`, against the safe line `line`;
/// `None` when the run recorded no series. The limit is [`physical_limit`]: computed from
/// `cfg` on the run's own step, not from the recorded samples, whose spacing grows with the
/// run's length (a limit stepped at that spacing loses what each coarse step's arrivals
/// overflow the backlog by, and fell to 8 req/s on a 5e6-s band run).
pub fn verdict(cfg: &Config, outcome: &Outcome, line: f64) -> Option<Verdict> {
    verdict_with_limit(outcome, line, physical_limit(cfg))
}

/// The verdict of `outcome`, a live run of `cfg` whose health is what its recorded series
/// says ([`physical_limit_of_series`]); `None` without a series.
pub fn verdict_of_series(cfg: &Config, outcome: &Outcome, line: f64) -> Option<Verdict> {
    let series = outcome.series.as_ref().filter(|s| !s.is_empty())?;
    verdict_with_limit(outcome, line, physical_limit_of_series(cfg, series, outcome.summary.duration))
}

/// The verdict of `outcome` against `line`, given its physical limit `limit` \[req/s\]
/// (shared by a study's arms: [`physical_limit`] once per configuration).
pub fn verdict_with_limit(outcome: &Outcome, line: f64, limit: f64) -> Option<Verdict> {
    let series = outcome.series.as_ref().filter(|s| !s.is_empty())?;
    let duration = outcome.summary.duration;
    let n = series.len() as f64;
    let goodput = if duration > 0.0 { outcome.summary.cleared / duration } else { 0.0 };
    let share_beyond = series.queue.iter().filter(|q| **q > line).count() as f64 / n;
    Some(Verdict {
        goodput,
        physical_limit: limit,
        share_of_limit: if limit > 0.0 { goodput / limit } else { f64::NAN },
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

    fn band(duration: f64) -> (Scenario, Config) {
        let mut s = Scenario::from_toml(crate::run::DEFAULT_SCENARIO, "band").unwrap();
        s.run.duration = duration;
        let cfg = s.config("band").unwrap();
        (s, cfg)
    }

    /// The limit of a run is a property of its configuration, not of how many samples it
    /// kept: on the band it was 75.2 req/s at 4,000 s and fell with the run's length (73.3
    /// at 1e5 s, 8.0 at 5e6 s, below the run's own goodput) when it was stepped at the
    /// recorded samples' spacing, which the series' size bound widens.
    #[test]
    fn the_limit_does_not_shrink_as_the_run_gets_longer() {
        let (_, short) = band(4_000.0);
        let base = physical_limit(&short);
        assert!((base - 75.46).abs() < 0.05, "{base}");
        for d in [20_000.0, 100_000.0, 400_000.0] {
            let (s, cfg) = band(d);
            let limit = physical_limit(&cfg);
            assert!((limit - base).abs() < 0.002 * base, "{d} s: {limit} vs {base}");
            // The run as `safegate run --json` records it (at most MAX_SERIES_POINTS
            // samples): its goodput stays under the limit.
            let mut gate = s.gate().unwrap();
            let stride = crate::run::json_stride(cfg.steps(), 1);
            let out = safegate_sim::run(
                s.run.mode,
                &cfg,
                &mut gate,
                RunOptions { record_every: Some(stride), progress: None },
            )
            .unwrap();
            let v = verdict(&cfg, &out, 140.0).unwrap();
            assert_eq!(v.physical_limit, limit);
            assert!(v.goodput <= limit * (1.0 + 1e-9), "{d} s: {v:?}");
        }
    }

    /// A series' limit steps exactly between samples: with constant health the samples'
    /// spacing does not matter, and it is never below what the run cleared.
    #[test]
    fn a_series_limit_does_not_depend_on_the_samples_spacing() {
        let mut s = Scenario::default();
        s.traffic.rate = 200.0;
        s.health.kind = safegate_sim::scenario::HealthKind::Constant;
        s.run.duration = 500.0;
        let cfg = s.config("test").unwrap();
        let limits: Vec<f64> = [1, 10, 1000, 5000]
            .iter()
            .map(|&every| {
                let out = safegate_sim::run(
                    s.run.mode,
                    &cfg,
                    &mut s.gate().unwrap(),
                    RunOptions { record_every: Some(every), progress: None },
                )
                .unwrap();
                let v = verdict_of_series(&cfg, &out, 140.0).unwrap();
                assert!(v.goodput <= v.physical_limit * (1.0 + 1e-9), "{every}: {v:?}");
                v.physical_limit
            })
            .collect();
        for l in &limits {
            assert!((l - 150.0).abs() < 1e-6, "{limits:?}");
        }
    }

    /// No share of a limit of zero: a run offered (almost) nothing has no percentage.
    #[test]
    fn a_zero_limit_has_no_share() {
        let mut s = Scenario::default();
        s.traffic.rate = 0.0;
        s.run.duration = 10.0;
        let cfg = s.config("test").unwrap();
        let out = safegate_sim::run(
            s.run.mode,
            &cfg,
            &mut s.gate().unwrap(),
            RunOptions { record_every: Some(1), progress: None },
        )
        .unwrap();
        let v = verdict(&cfg, &out, 140.0).unwrap();
        assert_eq!(v.physical_limit, 0.0);
        assert!(v.share_of_limit.is_nan());
        assert!(serde_json::to_value(v).unwrap()["share_of_limit"].is_null());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// Over durations, schedules, traffic and initial queues: the limit is at most what
        /// was offered (plus the initial queue) and at most the peak at the run's mean
        /// health, and no arm of the four clears more than it.
        #[test]
        fn no_run_clears_more_than_the_limit(
            duration in 20.0f64..3000.0,
            kind in 0usize..3,
            rate in 0.0f64..400.0,
            low in 0.0f64..1.0,
            hold in 0.5f64..30.0,
            initial in 0.0f64..1.0,
        ) {
            let mut s = Scenario::from_toml(crate::run::DEFAULT_SCENARIO, "band").unwrap();
            s.run.duration = duration;
            s.run.warmup = 0.0;
            s.traffic.rate = rate;
            s.health.kind = [safegate_sim::scenario::HealthKind::Cycle, safegate_sim::scenario::HealthKind::Dip, safegate_sim::scenario::HealthKind::Constant][kind];
            s.health.shape.low = low;
            s.health.shape.hold_low = hold;
            s.run.initial_queue = initial * 200.0;
            let cfg = s.config("prop").unwrap();
            let limit = physical_limit(&cfg);
            let peak = cfg.pool.peak_rate().1;
            let steps = cfg.steps();
            let mean_h = (0..steps).map(|k| cfg.health.value(k as f64 * cfg.dt)).sum::<f64>() / steps as f64;
            let d = steps as f64 * cfg.dt;
            proptest::prop_assert!(limit >= 0.0);
            proptest::prop_assert!(limit <= rate + cfg.initial_queue / d + 1e-9, "{limit} vs offered {rate}");
            proptest::prop_assert!(limit <= mean_h * peak * (1.0 + 1e-9) + 1e-12, "{limit} vs mean peak {}", mean_h * peak);
            let study = crate::run::Study::new(s, "prop", "prop", crate::run::Runs::FourArms).unwrap();
            let played = study.play(crate::run::json_stride(steps, 1), &mut |_, _| {}).unwrap();
            for r in played.reports {
                let v = r.verdict.unwrap();
                proptest::prop_assert_eq!(v.physical_limit, limit);
                proptest::prop_assert!(v.goodput <= limit * (1.0 + 1e-9) + 1e-12, "{}: {:?}", r.label, v);
            }
        }
    }
}
