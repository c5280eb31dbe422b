//! The seed's system on a real contended dependency: PostgreSQL (docs/postgres.md).
//!
//! Two steps, each one call:
//!
//! 1. [`measure_curve`]: the database's service curve `X(n)`, measured closed loop with `n`
//!    clients on the application pool for `n = 1 …` the pool's size, then fitted with the
//!    USL and the seed's contention law `s·n·min(1, (C/n)^p)` (with `p = 2` and with `p`
//!    free; [`crate::throughput::fit::fit_curve`]). The `p = 2` fit gives the `[model]` of a
//!    scenario ([`PgCurve::scenario_toml`]) and the knee of a boundary
//!    ([`PgCurve::boundary_toml`]): what the simulator and the filter take as the system.
//! 2. [`arms`]: the seed's system on it, arm after arm under the same offered load: gate
//!    off, the seed's gate, the safety filter over the adaptive controller, the filter with
//!    the concurrency cap, and fixed concurrencies (a pool of `L` executors) whose best is
//!    the oracle. Each arm is a live run ([`crate::run::run`]: producers, a Redis backlog,
//!    executors whose jobs are transactions) and, beside it, the stochastic simulator on the
//!    fitted curve with the same policy: the model's prediction, and how far it is off.
//!
//! Model time is wall time here (speed 1): the database runs at its own pace.

use serde::Serialize;

use safegate_core::boundary::Boundary;
use safegate_core::controllers::PolicySpec;
use safegate_sim::{Config, Scenario};

use crate::loadgen::RetryPolicy;
use crate::pg::{curve, CurvePoint, Pg, PgSpec};
use crate::run::{DownstreamTarget, LiveOptions, LivePolicy, LiveRun, RedisTarget};
use crate::throughput::fit::fit_curve;
use crate::throughput::{CurveFit, Point};
use crate::LiveError;

/// Client counts of the curve (those up to the pool's size, and the size itself).
pub const CURVE_CLIENTS: [usize; 16] = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64];

/// The measured and fitted service curve of a PostgreSQL workload.
#[derive(Debug, Clone, Serialize)]
pub struct PgCurve {
    /// The workload (its URL is not serialized).
    pub spec: PgSpec,
    /// Seconds each level ran in each pass.
    pub secs: f64,
    /// Passes over the levels.
    pub passes: usize,
    /// The measured levels.
    pub levels: Vec<CurvePoint>,
    /// The fits: USL, contention law with `p = 2` and with `p` free, the tail slope.
    pub fit: CurveFit,
    /// The highest measured rate \[tx/s\].
    pub peak: f64,
    /// The fewest clients that reached it.
    pub peak_n: usize,
}

/// Measure the curve of `spec` over the levels of [`CURVE_CLIENTS`] up to the pool's size,
/// `passes` times (`secs` a level each pass, ascending then descending, …), then fit it.
/// A level's figures are its mean over the passes: on a database, throughput comes in
/// episodes (a deadlock holds every transaction queued behind its locks until
/// `deadlock_timeout`, 1 s by default), so one short window per level reads a stall or a
/// calm by chance, and passes spread each level over the whole measurement. `progress`
/// hears of each level of each pass as it ends (the pass, from 0, and the level).
pub async fn measure_curve(
    spec: &PgSpec,
    secs: f64,
    passes: usize,
    progress: &mut dyn FnMut(usize, &CurvePoint),
) -> Result<PgCurve, LiveError> {
    let mut ns: Vec<usize> = CURVE_CLIENTS.iter().copied().filter(|&n| n <= spec.pool).collect();
    if ns.last() != Some(&spec.pool) {
        ns.push(spec.pool);
    }
    let pg = Pg::connect(spec).await?;
    let passes = passes.max(1);
    let mut runs: Vec<Vec<CurvePoint>> = vec![Vec::with_capacity(passes); ns.len()];
    for pass in 0..passes {
        let order: Vec<usize> = if pass % 2 == 0 { (0..ns.len()).collect() } else { (0..ns.len()).rev().collect() };
        for k in order {
            let p = curve(&pg, &[ns[k]], std::time::Duration::from_secs_f64(secs)).await;
            progress(pass, &p[0]);
            runs[k].extend(p);
        }
    }
    let levels: Vec<CurvePoint> = runs.iter().map(|r| mean_point(r)).collect();
    let (peak, peak_n) = levels.iter().fold((0.0, 0), |(r, n), p| if p.rate > r { (p.rate, p.n) } else { (r, n) });
    let points: Vec<Point> = levels
        .iter()
        .filter(|p| p.completed > 0)
        .map(|p| Point { n: p.n as f64, throughput: p.rate, log_se: 1.0 / (p.completed as f64).sqrt() })
        .collect();
    let fit = fit_curve(&points)?;
    Ok(PgCurve { spec: spec.clone(), secs, passes, levels, fit, peak, peak_n })
}

/// The mean of one level's passes (windows of equal length): rates averaged, the mean
/// time weighted by completions, completions summed.
fn mean_point(runs: &[CurvePoint]) -> CurvePoint {
    let k = runs.len().max(1) as f64;
    let completed: u64 = runs.iter().map(|p| p.completed).sum();
    let busy: f64 = runs.iter().filter(|p| p.completed > 0).map(|p| p.mean_ms * p.completed as f64).sum();
    CurvePoint {
        n: runs.first().map_or(0, |p| p.n),
        rate: runs.iter().map(|p| p.rate).sum::<f64>() / k,
        failed_rate: runs.iter().map(|p| p.failed_rate).sum::<f64>() / k,
        mean_ms: if completed > 0 { busy / completed as f64 } else { f64::NAN },
        completed,
    }
}

impl PgCurve {
    /// A scenario of this workload offered `multiple` × the measured peak for `duration`
    /// seconds: the `[model]` is the `p = 2` fit (`s`, `C`) on a pool of the application
    /// pool's size, `capacity` jobs of backlog, constant health, the `[postgres]` table the
    /// workload (its URL left out). `safegate live` plays it on the database; `safegate
    /// run` on the fitted model.
    pub fn scenario_toml(&self, multiple: f64, duration: f64, capacity: f64) -> String {
        let c = &self.fit.contention;
        let s = &self.spec;
        format!(
            "# PostgreSQL at {multiple}x its measured peak ({peak:.0} tx/s at {pn} clients); [model] is the\n\
             # contention law fitted to the measured curve (p = 2): s = {rate:.2} tx/s per transaction below\n\
             # the knee C = {knee:.2}. Made by `safegate pg curve`.\n\
             name = \"pg-{multiple}x\"\n\
             description = \"PostgreSQL, {rows} hot rows, {hold} ms held, {iso}, pool {pool}, offered {multiple}x its peak\"\n\n\
             [model]\nexecutors = {pool}\ncomfortable = {knee:.4}\nrate = {rate:.4}\ncapacity = {capacity}\n\n\
             [traffic]\nrate = {offered:.2}\n\n\
             [health]\nkind = \"constant\"\nhigh = 1.0\n\n\
             [run]\nduration = {duration}\ndt = 0.05\nmode = \"stochastic\"\n\n\
             [postgres]\nrows = {rows}\nhold_ms = {hold}\nisolation = \"{iso}\"\npool = {pool}\nretries = {retries}\n",
            peak = self.peak,
            pn = self.peak_n,
            rate = c.rate,
            knee = c.comfortable,
            rows = s.rows,
            hold = s.hold_ms,
            iso = s.isolation.name(),
            pool = s.pool,
            retries = s.retries,
            offered = multiple * self.peak,
        )
    }

    /// A boundary for this workload: the seed's (`θ = 0.7`, `ε = 0.01` over 600 s, CVaR
    /// `ρ = 0.05`), with the concurrency cap as the filter's second input on the pool's
    /// executors and the fitted knee, and an envelope of traffic up to 4 × the peak.
    pub fn boundary_toml(&self) -> String {
        let knee = self.fit.contention.comfortable;
        format!(
            "# A boundary for the PostgreSQL workload measured by `safegate pg curve`: keep the backlog at\n\
             # or below 70 % of its capacity with at most a 1 % chance of crossing in 600 s, bound the\n\
             # crossing's CVaR, and let the filter cap the executors (its second input) where its learned\n\
             # curve says that clears faster; unseen caps are predicted along the fitted knee C = {knee:.2}.\n\
             name = \"pg-fitted\"\n\n\
             [barrier]\nsignal = \"queue\"\nthreshold = 0.7\n\n\
             [probability]\nepsilon = 0.01\nhorizon = 600\n\n\
             [magnitude]\neta = 0.05\nrho = 0.05\n\n\
             [disturbance]\nmodel = \"bernstein\"\nwindow = 2.0\n\n\
             [backup]\npolicy = \"reject-all-shed-retries\"\nconcurrency = {cap}\nhorizon = 10\n\n\
             [envelope]\ntraffic = [0, {top:.1}]\nhealth = [0.1, 1.0]\n\n\
             [decision]\nperiod = 0.05\nrate_tau = 0.5\n\n\
             [concurrency]\nexecutors = {pool}\nweight = 1\nmin_samples = 40\nknee = {knee:.4}\n",
            cap = knee.round().max(1.0),
            top = 4.0 * self.peak,
            pool = self.spec.pool,
        )
    }
}

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

/// Run every arm of `arms` on `scenario` (a [`PgCurve::scenario_toml`], its boundary set
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
        let result = ArmResult {
            label: arm.label.clone(),
            live,
            model,
            interventions: report.filter.map(|f| (f.interventions, f.infeasible)),
            lost: report.lost,
        };
        progress(&result);
        out.push(result);
    }
    Ok(out)
}

/// The stochastic simulator's figures for `cfg` under `policy`.
fn predict(cfg: &Config, mut policy: LivePolicy, line: f64) -> Result<ArmFigures, LiveError> {
    let stride = (cfg.steps() / 20_000).max(1) as usize;
    let out = safegate_sim::run(
        safegate_sim::Mode::Stochastic,
        cfg,
        &mut policy,
        safegate_sim::RunOptions { record_every: Some(stride), progress: None },
    )?;
    let queue = out.series.as_ref().map_or(&[][..], |series| &series.queue[..]);
    Ok(ArmFigures::of(&out.summary, queue, line, 0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::throughput::fit::contention;

    /// A curve as `measure_curve` would give on a database following the seed's law with
    /// `s = 200`, `C = 5`.
    fn curve() -> PgCurve {
        let levels: Vec<CurvePoint> = [1usize, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32]
            .iter()
            .map(|&n| {
                let rate = contention(n as f64, 200.0, 5.0, 2.0);
                CurvePoint { n, rate, failed_rate: 0.0, mean_ms: 1e3 * n as f64 / rate, completed: (rate * 2.0) as u64 }
            })
            .collect();
        let points: Vec<Point> = levels
            .iter()
            .map(|p| Point { n: p.n as f64, throughput: p.rate, log_se: 1.0 / (p.completed as f64).sqrt() })
            .collect();
        let spec = PgSpec {
            url: "postgres://x@127.0.0.1/y".into(),
            rows: 64,
            hold_ms: 2.0,
            isolation: crate::pg::Isolation::Serializable,
            pool: 32,
            retries: 3,
        };
        PgCurve { spec, secs: 2.0, passes: 1, levels, fit: fit_curve(&points).unwrap(), peak: 1000.0, peak_n: 5 }
    }

    #[test]
    fn a_levels_passes_are_averaged() {
        let p =
            |rate: f64, completed: u64, mean_ms: f64| CurvePoint { n: 4, rate, failed_rate: 1.0, mean_ms, completed };
        let m = mean_point(&[p(100.0, 200, 10.0), p(300.0, 600, 2.0)]);
        assert_eq!((m.n, m.rate, m.failed_rate, m.completed), (4, 200.0, 1.0, 800));
        assert!((m.mean_ms - 4.0).abs() < 1e-12, "{}", m.mean_ms);
        assert!(mean_point(&[p(0.0, 0, f64::NAN)]).mean_ms.is_nan());
    }

    #[test]
    fn the_written_scenario_and_boundary_are_the_fit_and_load_as_written() {
        let c = curve();
        let s = Scenario::from_toml(&c.scenario_toml(1.5, 60.0, 200.0), "pg").unwrap();
        let cfg = s.config("pg").unwrap();
        assert!((cfg.pool.comfortable - 5.0).abs() < 0.05, "{}", cfg.pool.comfortable);
        assert!((cfg.pool.rate - 200.0).abs() < 2.0, "{}", cfg.pool.rate);
        assert_eq!((cfg.pool.executors, cfg.traffic, cfg.duration), (32, 1500.0, 60.0));
        let pg = s.postgres.expect("[postgres]");
        assert_eq!((pg.pool, pg.rows, pg.url), (32, 64, None), "no URL is written");
        let b = Boundary::from_toml(&c.boundary_toml(), &[]).unwrap();
        b.validate(200.0).unwrap();
        assert_eq!(b.barrier.threshold, 0.7);
        assert_eq!(b.envelope.traffic, [0.0, 4000.0]);
        // The arms it plays: the seed's four, then the fixed ones.
        assert_eq!(Arm::fixed_levels(4.58, 64, &[]), Ok(vec![3, 5, 8, 10]));
        assert_eq!(Arm::fixed_levels(40.0, 64, &[]), Ok(vec![20, 40, 60, 64]), "capped at the pool");
        assert_eq!(Arm::fixed_levels(4.0, 8, &[5, 3, 5]), Ok(vec![3, 5]), "sorted, each once");
        assert_eq!(Arm::fixed_levels(4.0, 8, &[3, 0]), Err(0));
        assert_eq!(Arm::fixed_levels(4.0, 8, &[9]), Err(9));
        let arms = Arm::seed_arms(&[2, 5]);
        assert_eq!(arms.len(), 6);
        assert!(arms[2].filtered && arms[3].filtered && !arms[0].filtered);
        assert_eq!(arms[5].executors, Some(5));
    }
}
