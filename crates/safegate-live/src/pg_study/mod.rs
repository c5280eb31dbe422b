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
//!
//! Before either step, their inputs are checked ([`CurveOptions::check`],
//! [`ArmsOptions::check`], [`Arm::plan`]); after the first, [`PgCurve::files`] are the
//! scenarios and boundary to write, and [`write_files`] writes them.
//!
//! - this module: the curve, measured, fitted and written;
//! - `arms`: the arms played on the database and in the model;
//! - `input`: the inputs' checks and their errors ([`InputError`]).

use std::path::Path;

use serde::Serialize;

use crate::pg::{curve, CurvePoint, Pg, PgSpec};
use crate::throughput::fit::fit_curve;
use crate::throughput::{CurveFit, Point};
use crate::LiveError;

mod arms;
mod input;

pub use arms::{arms, Arm, ArmFigures, ArmResult, ArmSeries, ArmsOptions, Excursion};
pub use input::{CurveOptions, InputError, MAX_CAPACITY, MAX_DURATION, MAX_LEVEL_SECS, MAX_PASSES};

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
    /// The files a curve gives, named as `safegate pg curve` writes them: the scenarios at
    /// 1.5× and 3× the peak ([`PgCurve::scenario_toml`], each `duration` seconds with a
    /// backlog of `capacity` jobs), `pg-1.5x.toml` and `pg-3x.toml`, then the boundary
    /// ([`PgCurve::boundary_toml`]), `boundary.toml`.
    pub fn files(&self, duration: f64, capacity: f64) -> Vec<(String, String)> {
        let mut files: Vec<(String, String)> =
            [1.5, 3.0].iter().map(|m| (format!("pg-{m}x.toml"), self.scenario_toml(*m, duration, capacity))).collect();
        files.push(("boundary.toml".into(), self.boundary_toml()));
        files
    }
}

/// Write each `(name, text)` of `files` into the directory `dir` (which must exist), in
/// order; the first that fails is the error, naming its path.
pub fn write_files(dir: &Path, files: &[(String, String)]) -> Result<(), LiveError> {
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text)
            .map_err(|error| LiveError::Io { what: format!("writing {}", path.display()), error })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::throughput::fit::contention;
    use safegate_core::boundary::Boundary;
    use safegate_sim::Scenario;

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
    fn files_are_written_into_the_directory_and_a_failure_names_the_path() {
        let dir = std::env::temp_dir().join(format!("safegate-pg-study-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = vec![("a.toml".to_string(), "x = 1\n".to_string()), ("b.svg".to_string(), "<svg/>".to_string())];
        write_files(&dir, &files).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("b.svg")).unwrap(), "<svg/>");
        let e = write_files(&dir.join("missing"), &files).unwrap_err().to_string();
        assert!(e.starts_with(&format!("writing {}: ", dir.join("missing").join("a.toml").display())), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
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
        // The files are those two scenarios and the boundary, as written above.
        let files = c.files(60.0, 200.0);
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["pg-1.5x.toml", "pg-3x.toml", "boundary.toml"]);
        assert_eq!(files[0].1, c.scenario_toml(1.5, 60.0, 200.0));
        assert_eq!(files[2].1, c.boundary_toml());
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
