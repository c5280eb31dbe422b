//! Step 2 of the study: the seed's system on the database, arm after arm, each live and
//! in the model ([`arms`]); which arms `pg arms` plays ([`Arm::plan`]) and how
//! ([`ArmsOptions`], checked by [`ArmsOptions::check`]).

use serde::Serialize;

use safegate_core::boundary::Boundary;
use safegate_core::controllers::PolicySpec;
use safegate_sim::{Config, Scenario};

use super::input::InputError;
use crate::loadgen::RetryPolicy;
use crate::pg::PgSpec;
use crate::run::{DownstreamTarget, LiveOptions, LivePolicy, LiveRun, RedisTarget};
use crate::LiveError;

/// One arm of [`arms`].
#[derive(Debug, Clone, PartialEq)]
pub struct Arm {
    /// Its name in the report (`gate off`, `fixed 6`).
    pub label: String,
    /// The policy.
    pub policy: PolicySpec,
    /// Under the scenario's boundary (the safety filter).
    pub filtered: bool,
    /// Executors of the pool (`None`: the scenario's), for the fixed concurrencies.
    pub executors: Option<u32>,
}

impl Arm {
    /// The fixed concurrencies to sweep on a pool whose fitted knee is `knee`, with at most
    /// `most` executors and connections: `given` (each in `[1, most]`, else `Err` naming the
    /// first that is not), or the knee × ½, 1, 1½ and 2 capped at `most`; sorted, each once.
    pub fn fixed_levels(knee: f64, most: u32, given: &[u32]) -> Result<Vec<u32>, u32> {
        let knee = knee.round().max(1.0);
        let mut levels: Vec<u32> = if given.is_empty() {
            [0.5, 1.0, 1.5, 2.0].iter().map(|m| ((knee * m).round().max(1.0) as u32).min(most)).collect()
        } else {
            if let Some(&bad) = given.iter().find(|&&l| l == 0 || l > most) {
                return Err(bad);
            }
            given.to_vec()
        };
        levels.sort_unstable();
        levels.dedup();
        Ok(levels)
    }

    /// The arms `pg arms` plays on `cfg` over a database pool of `connections`: the seed's
    /// four, then a fixed concurrency for each of the levels [`Arm::fixed_levels`] gives
    /// around the fitted knee (`cfg.pool.comfortable`), or for each of `given`. A fixed
    /// concurrency runs on at most the executors and the connections there are: a level of
    /// `given` outside that is an error naming the field `fixed`.
    pub fn plan(cfg: &Config, connections: usize, given: &[u32]) -> Result<Vec<Arm>, InputError> {
        let most = cfg.pool.executors.min(u32::try_from(connections).unwrap_or(u32::MAX));
        let levels = Arm::fixed_levels(cfg.pool.comfortable, most, given).map_err(|bad| {
            InputError::out(
                "fixed",
                bad,
                format!("1 to {most} (the scenario's {} executors and {connections} connections)", cfg.pool.executors),
            )
        })?;
        Ok(Arm::seed_arms(&levels))
    }

    /// The seed's four arms, then a fixed concurrency for each of `fixed`.
    pub fn seed_arms(fixed: &[u32]) -> Vec<Arm> {
        let spec = |s: &str| s.parse::<PolicySpec>().expect("a registry spec");
        let mut v = vec![
            Arm { label: "gate off".into(), policy: spec("open"), filtered: false, executors: None },
            Arm { label: "seed gate".into(), policy: spec("seed-gate"), filtered: false, executors: None },
            Arm { label: "filter".into(), policy: spec("cycle"), filtered: true, executors: None },
            Arm { label: "filter + cap".into(), policy: spec("cycle+pool"), filtered: true, executors: None },
        ];
        v.extend(fixed.iter().map(|&l| Arm {
            label: format!("fixed {l}"),
            policy: spec("static+pool"),
            filtered: false,
            executors: Some(l),
        }));
        v
    }
}

/// What one arm did, live or in the model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ArmFigures {
    /// Jobs completed per second (committed transactions).
    pub goodput: f64,
    /// Time-averaged backlog \[jobs\].
    pub backlog_mean: f64,
    /// Largest backlog \[jobs\].
    pub backlog_max: f64,
    /// Share of the run with the backlog above `θ·capacity`.
    pub share_beyond: f64,
    /// Jobs failed for good per second (transactions that failed after their retries).
    pub failed_rate: f64,
    /// 99th percentile of a completed job's time in the system \[s\].
    pub sojourn_p99: Option<f64>,
}

impl ArmFigures {
    /// The figures of a run summarised by `s` whose recorded backlog is `queue`, against the
    /// line `line`, with `failed_rate` jobs failed for good per second: the live run and the
    /// model are read the same way.
    fn of(s: &safegate_sim::Summary, queue: &[f64], line: f64, failed_rate: f64) -> ArmFigures {
        ArmFigures {
            goodput: s.cleared / s.duration.max(1e-9),
            backlog_mean: s.queue_mean,
            backlog_max: s.queue_max,
            share_beyond: queue.iter().filter(|q| **q > line).count() as f64 / queue.len().max(1) as f64,
            failed_rate,
            sojourn_p99: s.sojourn_p99,
        }
    }
}

/// One stretch of a run with the backlog above the line.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Excursion {
    /// The first sample beyond the line \[s\].
    pub start: f64,
    /// The first sample back under it, or the run's last sample \[s\].
    pub end: f64,
    /// The deepest backlog in it \[jobs\].
    pub peak: f64,
}

impl Excursion {
    /// Every stretch of `queue` (sampled at times `t`) above `line`, in order.
    pub fn all(t: &[f64], queue: &[f64], line: f64) -> Vec<Excursion> {
        let mut out: Vec<Excursion> = Vec::new();
        let mut open: Option<Excursion> = None;
        for (&at, &q) in t.iter().zip(queue) {
            match (&mut open, q > line) {
                (Some(e), true) => e.peak = e.peak.max(q),
                (Some(e), false) => {
                    e.end = at;
                    out.push(*e);
                    open = None;
                }
                (None, true) => open = Some(Excursion { start: at, end: at, peak: q }),
                (None, false) => {}
            }
        }
        if let Some(mut e) = open {
            e.end = t.last().copied().unwrap_or(e.start);
            out.push(e);
        }
        out
    }
}

/// The live run's series, at every decision: what a crossing of the line is read from.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ArmSeries {
    /// Time \[s\].
    pub t: Vec<f64>,
    /// The backlog \[jobs\].
    pub queue: Vec<f64>,
    /// Share of the offers admitted.
    pub admit_fraction: Vec<f64>,
    /// Executors allowed (−1: all).
    pub concurrency: Vec<i32>,
    /// Jobs in service.
    pub in_service: Vec<u64>,
}

/// One arm's result: the live run and the model's prediction.
#[derive(Debug, Clone, Serialize)]
pub struct ArmResult {
    /// The arm's name.
    pub label: String,
    /// The live run on the database.
    pub live: ArmFigures,
    /// The stochastic simulator on the fitted curve, same policy and load.
    pub model: ArmFigures,
    /// Decisions the safety filter changed, and those where no action met the boundary (the
    /// backup acted), for the filtered arms.
    pub interventions: Option<(u64, u64)>,
    /// Jobs lost by the books (must be 0).
    pub lost: i64,
    /// The live run's stretches beyond the line `θ·capacity`.
    pub excursions: Vec<Excursion>,
    /// The safety filter's counters, for the filtered arms.
    pub filter: Option<safegate_core::safety::FilterStats>,
    /// The live run's series (in `--json`).
    pub series: ArmSeries,
}

/// How [`arms`] runs.
#[derive(Debug, Clone)]
pub struct ArmsOptions {
    /// The database.
    pub spec: PgSpec,
    /// Chance a failed job is offered again by its producer (client retries), after a
    /// backoff of 0.1 s on average.
    pub retry_probability: f64,
    /// Redis for the backlogs (each arm its own queue, `pg-arm-K`; on a server of yours, a
    /// queue of that name holding an earlier run's books is refused, never deleted).
    pub redis: RedisTarget,
}

impl ArmsOptions {
    /// Check the options: the retry probability in `[0, 1]` (an error naming the field
    /// `retry_probability`).
    pub fn check(&self) -> Result<(), InputError> {
        if !(0.0..=1.0).contains(&self.retry_probability) {
            return Err(InputError::out("retry_probability", self.retry_probability, "[0, 1]"));
        }
        Ok(())
    }
}

/// Run every arm of `arms` on `scenario` (a [`PgCurve::scenario_toml`](super::PgCurve::scenario_toml), its boundary set
/// for the filtered arms), one after the other, each live and in the model. `progress`
/// hears each arm's result as it ends.
pub async fn arms(
    scenario: &Scenario,
    arms: &[Arm],
    opts: &ArmsOptions,
    progress: &mut dyn FnMut(&ArmResult),
) -> Result<Vec<ArmResult>, LiveError> {
    let base = scenario.config(scenario.name.as_deref().unwrap_or("<scenario>"))?;
    let line = scenario.safe_threshold() * base.pool.capacity;
    let mut out = Vec::with_capacity(arms.len());
    for (k, arm) in arms.iter().enumerate() {
        let mut cfg = base.clone();
        if let Some(p) = arm.executors {
            cfg.pool.executors = p;
        }
        let boundary: Option<&Boundary> = if arm.filtered { scenario.boundary.as_ref() } else { None };
        if arm.filtered && boundary.is_none() {
            return Err(LiveError::Queue(format!("arm {:?} needs the scenario's boundary", arm.label)));
        }
        let policy = || LivePolicy::from_spec(&arm.policy, &cfg, boundary).map_err(LiveError::Queue);
        let model = predict(&cfg, policy()?, line)?;
        let run = LiveRun {
            cfg: cfg.clone(),
            opts: LiveOptions {
                speed: 1.0,
                redis: opts.redis.clone(),
                namespace: format!("pg-arm-{k}"),
                // A private Redis is fresh; on a given one an arm's queue holding an earlier
                // run's books is refused, never deleted.
                reset: opts.redis == RedisTarget::Own,
                metrics: None,
                downstream: DownstreamTarget::Postgres(opts.spec.clone()),
                retry: Some(RetryPolicy {
                    probability: opts.retry_probability,
                    backoff: 0.1,
                    budget: None,
                    around_gate: false,
                }),
                timeout: 30.0,
                ..LiveOptions::default()
            },
            line,
        };
        let report = crate::run::run(&run, policy()?, &mut |_| {}).await?;
        let live = ArmFigures::of(
            &report.summary,
            &report.series.queue,
            line,
            report.accounting.failed as f64 / report.summary.duration.max(1e-9),
        );
        let series = ArmSeries {
            t: report.series.t,
            queue: report.series.queue,
            admit_fraction: report.series.admit_fraction,
            concurrency: report.live.concurrency,
            in_service: report.live.in_service,
        };
        let result = ArmResult {
            label: arm.label.clone(),
            live,
            model,
            interventions: report.filter.as_ref().map(|f| (f.interventions, f.infeasible)),
            lost: report.lost,
            excursions: Excursion::all(&series.t, &series.queue, line),
            filter: report.filter,
            series,
        };
        progress(&result);
        out.push(result);
    }
    Ok(out)
}

/// The stochastic simulator's figures for `cfg` under `policy`.
fn predict(cfg: &Config, mut policy: LivePolicy, line: f64) -> Result<ArmFigures, LiveError> {
    let out = crate::run::stochastic(cfg, &mut policy)?;
    let queue = out.series.as_ref().map_or(&[][..], |series| &series.queue[..]);
    Ok(ArmFigures::of(&out.summary, queue, line, 0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(executors: u32, comfortable: f64) -> Config {
        let s = Scenario::from_toml(
            &format!("[model]\nexecutors = {executors}\ncomfortable = {comfortable}\n[postgres]\npool = 8\n"),
            "pg",
        )
        .unwrap();
        s.config("pg").unwrap()
    }

    #[test]
    fn the_plan_is_the_seeds_arms_then_the_fixed_levels_within_executors_and_connections() {
        let arms = Arm::plan(&cfg(16, 4.0), 8, &[]).unwrap();
        let labels: Vec<&str> = arms.iter().map(|a| a.label.as_str()).collect();
        assert_eq!(
            labels,
            ["gate off", "seed gate", "filter", "filter + cap", "fixed 2", "fixed 4", "fixed 6", "fixed 8"]
        );
        assert_eq!(Arm::plan(&cfg(16, 4.0), 8, &[3]).unwrap().len(), 5);
        let e = Arm::plan(&cfg(16, 4.0), 8, &[9]).unwrap_err();
        assert_eq!(e.to_string(), "fixed 9: expected 1 to 8 (the scenario's 16 executors and 8 connections)");
        // Fewer executors than connections: the executors bound it.
        let e = Arm::plan(&cfg(4, 2.0), 8, &[0]).unwrap_err();
        assert_eq!(e.to_string(), "fixed 0: expected 1 to 4 (the scenario's 4 executors and 8 connections)");
        assert_eq!(e.field(), Some("fixed"));
    }

    #[test]
    fn excursions_are_the_stretches_above_the_line() {
        let t = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let q = [10.0, 150.0, 170.0, 100.0, 140.0, 141.0, 145.0];
        let e = Excursion::all(&t, &q, 140.0);
        assert_eq!(
            e,
            [
                Excursion { start: 1.0, end: 3.0, peak: 170.0 },
                // At the line is not beyond it; one still open at the end ends with the run.
                Excursion { start: 5.0, end: 6.0, peak: 145.0 },
            ]
        );
        assert!(Excursion::all(&t, &[0.0; 7], 140.0).is_empty());
        assert!(Excursion::all(&[], &[], 140.0).is_empty());
    }

    #[test]
    fn a_retry_probability_outside_zero_to_one_is_refused() {
        let spec = PgSpec {
            url: "postgres://x@127.0.0.1/y".into(),
            rows: 64,
            hold_ms: 2.0,
            isolation: crate::pg::Isolation::Serializable,
            pool: 8,
            retries: 3,
        };
        let opts = |p: f64| ArmsOptions { spec: spec.clone(), retry_probability: p, redis: RedisTarget::Own };
        assert_eq!(opts(0.0).check(), Ok(()));
        assert_eq!(opts(1.0).check(), Ok(()));
        for p in [-0.1, 1.5, f64::NAN] {
            let e = opts(p).check().unwrap_err();
            assert_eq!(e.field(), Some("retry_probability"), "{e}");
        }
        assert_eq!(opts(1.5).check().unwrap_err().to_string(), "retry_probability 1.5: expected [0, 1]");
    }
}
