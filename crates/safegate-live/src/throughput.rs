//! Falsification criterion F19: the shape of the throughput tail.
//!
//! The seed's pool clears `X(n) = s·n·min(1, (C/n)²)`: `s·n` up to `C`, then `s·C²/n`, a
//! `1/n` tail. The seed argues the `1/n` is structurally required because Gunther's universal
//! scalability law `X(n) = λn / (1 + σ(n − 1) + κn(n − 1))` (N. J. Gunther, *Guerrilla
//! Capacity Planning*, Springer, 2007) falls like `λ/(κn)` whenever `κ > 0`. F19 would be
//! confirmed by a coherency-dominated system (`σ ≈ 0`, `κ > 0`) whose throughput decays
//! asymptotically differently from `1/n`.
//!
//! [`f19`] measures the live downstream emulator's curve ([`measure`]), fits the USL, the
//! contention law with `p = 2` and with `p` free, and the log–log slope of the tail
//! ([`fit`]), and does the same on an analytic USL curve with `σ = 0` peaking where the law
//! peaks. The emulator was built with the `(C/n)²` law, so the measurement can only show
//! that the pipeline recovers it and how the USL's tail compares; see `docs/throughput.md`.
//!
//! ```no_run
//! # async fn run() -> Result<(), safegate_live::LiveError> {
//! use safegate_live::throughput::{f19, Options, Verdict};
//!
//! let report = f19(&Options::quick()).await?;
//! println!("{}: {}", report.verdict.label(), report.reason);
//! if let Some(tail) = report.measured.tail {
//!     println!("tail exponent {:.2} [{:.2}, {:.2}]", tail.exponent, tail.lo, tail.hi);
//! }
//! # let _ = Verdict::Holds;
//! # Ok(())
//! # }
//! ```

pub mod fit;
mod measure;
#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use safegate_core::error::check;
use safegate_core::RangeError;
use safegate_sim::Pool;
use serde::{Deserialize, Serialize};

pub use fit::{CurveFit, FitError, Point};
pub use measure::{measure, Curve, Level};

use crate::LiveError;

/// Concurrency levels as multiples of `C`: 1, 2, 4, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64 at
/// the seed's `C = 4`.
pub const DEFAULT_MULTIPLES: [f64; 13] = [0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 12.0, 16.0];

/// The quick measurement's: 1, 2, 4, 8, 12, 16, 24, 32, 48, 64 at `C = 4`.
pub const QUICK_MULTIPLES: [f64; 10] = [0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0];

/// The widest 95 % interval half-width of the tail exponent that still decides anything.
pub const MAX_HALF_WIDTH: f64 = 0.5;

/// The relative gap between the free-exponent and the `p = 2` tails at 4× the largest `n`
/// that counts as material.
pub const MATERIAL_GAP: f64 = 0.10;

/// What to measure and how fast.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The emulated pool: `rate` (`s`) and `comfortable` (`C`) set the contended rate.
    pub pool: Pool,
    /// Concurrency levels as multiples of `C` (rounded, at least 1, duplicates dropped).
    pub multiples: Vec<f64>,
    /// Explicit levels instead of the multiples (empty: use the multiples).
    pub levels: Vec<u32>,
    /// The measuring window of each level (wall time).
    pub window: Duration,
    /// Wall time each level runs before its window opens.
    pub warmup: Duration,
    /// The shortest mean wall time a request spends in service: sets the model clock's
    /// speed, so the HTTP round trip between requests stays a small share of it.
    pub min_service_wall: Duration,
    /// The most requests per wall second the clients may send.
    pub max_request_rate: f64,
    /// The fastest model clock allowed (model seconds per wall second).
    pub max_speed: f64,
    /// Seed of the emulator's work draws (level `i` uses `seed + i`).
    pub seed: u64,
}

impl Default for Options {
    /// The seed's pool, 13 levels of 1.2 s each: about 18 s.
    fn default() -> Self {
        Self {
            pool: Pool::default(),
            multiples: DEFAULT_MULTIPLES.to_vec(),
            levels: Vec::new(),
            window: Duration::from_millis(1200),
            warmup: Duration::from_millis(100),
            min_service_wall: Duration::from_micros(2500),
            max_request_rate: 2000.0,
            max_speed: 1000.0,
            seed: 1,
        }
    }
}

impl Options {
    /// For tests: 10 levels of 0.25 s each, about 3 s.
    pub fn quick() -> Self {
        Self {
            multiples: QUICK_MULTIPLES.to_vec(),
            window: Duration::from_millis(250),
            warmup: Duration::from_millis(50),
            ..Self::default()
        }
    }

    /// The concurrency levels measured, increasing.
    pub fn levels(&self) -> Vec<u32> {
        let mut v: Vec<u32> = if self.levels.is_empty() {
            self.multiples.iter().map(|m| (m * self.pool.comfortable).round().clamp(1.0, 1e6) as u32).collect()
        } else {
            self.levels.clone()
        };
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Check every field; named as `throughput.FIELD`.
    pub fn check(&self) -> Result<(), RangeError> {
        check::within("throughput.pool.rate", self.pool.rate, f64::MIN_POSITIVE, 1e6, "(0, 1e6] req/s")?;
        check::within("throughput.pool.comfortable", self.pool.comfortable, 0.25, 1e4, "[0.25, 1e4]")?;
        let levels = self.levels();
        check::within("throughput.levels", levels.len() as f64, 1.0, 64.0, "1 to 64 levels")?;
        let top = levels.last().copied().unwrap_or(0);
        check::within("throughput.levels", f64::from(top), 1.0, 4096.0, "each in [1, 4096]")?;
        check::within("throughput.window", self.window.as_secs_f64(), 0.01, 10.0, "[0.01, 10] s")?;
        check::within("throughput.warmup", self.warmup.as_secs_f64(), 0.0, 5.0, "[0, 5] s")?;
        check::within("throughput.min_service_wall", self.min_service_wall.as_secs_f64(), 1e-4, 1.0, "[0.1 ms, 1 s]")?;
        check::within("throughput.max_request_rate", self.max_request_rate, 10.0, 1e5, "[10, 1e5] req/s")?;
        check::within("throughput.max_speed", self.max_speed, 1.0, 1e4, "[1, 1e4]")?;
        Ok(())
    }
}

/// F19's verdict: the one every falsification criterion gets (`safegate falsify`).
pub use safegate_studies::falsify::Verdict;

/// Judge a fitted curve: the verdict and its reason.
pub fn judge(fit: &CurveFit) -> (Verdict, String) {
    let Some(tail) = fit.tail else {
        return (
            Verdict::Inconclusive,
            format!("fewer than {} points past 2C = {:.1}", fit::MIN_TAIL_POINTS, 2.0 * fit.contention.comfortable),
        );
    };
    let interval = format!("p̂ = {:.3} [{:.3}, {:.3}] over {} points", tail.exponent, tail.lo, tail.hi, tail.points);
    let half = 0.5 * (tail.hi - tail.lo);
    if !(half <= MAX_HALF_WIDTH) {
        return (Verdict::Inconclusive, format!("too noisy: {interval}, half-width over {MAX_HALF_WIDTH}"));
    }
    if tail.contains(2.0) {
        return (Verdict::Holds, format!("the measured tail is 1/n: {interval} contains 2"));
    }
    let far = fit.tails.last().copied();
    let gap = far.map_or(0.0, |t| (t.free / t.contention - 1.0).abs());
    if gap > MATERIAL_GAP {
        (
            Verdict::Falsified,
            format!(
                "{interval} excludes 2, and at n = {:.0} the free-exponent tail is {:.0} % off the 1/n one",
                far.map_or(0.0, |t| t.n),
                100.0 * gap
            ),
        )
    } else {
        (
            Verdict::Inconclusive,
            format!("{interval} excludes 2, but the tails differ by only {:.1} % at 4× the largest n", 100.0 * gap),
        )
    }
}

/// The local exponent of a curve at one concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ExponentAt {
    /// The concurrency.
    pub n: f64,
    /// `1 − d ln X/d ln n` there.
    pub exponent: f64,
}

/// The analytic comparison: a USL with `σ = 0` whose peak is the law's (at `n = C`, height
/// `s·C`), so `κ = 1/C²` and `λ = s(2C − 1)/C`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalyticUsl {
    /// `λ` \[req/s\].
    pub lambda: f64,
    /// `κ`.
    pub kappa: f64,
    /// `lim n·X(n) = λ/κ` of this USL.
    pub usl_tail_constant: f64,
    /// `lim n·X(n) = s·C²` of the law.
    pub law_tail_constant: f64,
    /// `usl_tail_constant / law_tail_constant = (2C − 1)/C`.
    pub constant_ratio: f64,
    /// The USL's exact local exponent at 1×, 4× and 64× the largest measured `n`.
    pub local_exponents: Vec<ExponentAt>,
    /// The same fits as on the measured curve, on this USL at the measured levels.
    pub fit: CurveFit,
}

impl AnalyticUsl {
    /// The curve for a law with rate `s` and knee `C`, fitted at `levels`.
    pub fn new(rate: f64, comfortable: f64, levels: &[f64]) -> Result<Self, FitError> {
        let c = comfortable;
        let kappa = 1.0 / (c * c);
        let lambda = rate * (2.0 * c - 1.0) / c;
        let points: Vec<Point> =
            levels.iter().map(|&n| Point { n, throughput: fit::usl(n, lambda, 0.0, kappa), log_se: 0.0 }).collect();
        let fit = fit::fit_curve(&points)?;
        let n_max = levels.iter().copied().fold(0.0, f64::max);
        let local_exponents = [1.0, 4.0, 64.0]
            .iter()
            .map(|m| ExponentAt { n: m * n_max, exponent: fit::usl_local_exponent(m * n_max, 0.0, kappa) })
            .collect();
        Ok(Self {
            lambda,
            kappa,
            usl_tail_constant: lambda / kappa,
            law_tail_constant: rate * c * c,
            constant_ratio: (lambda / kappa) / (rate * c * c),
            local_exponents,
            fit,
        })
    }
}

/// F19's result: the verdict, why, the evidence, and every number behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct F19Fit {
    /// The verdict on the measured curve.
    pub verdict: Verdict,
    /// Why, in one sentence.
    pub reason: String,
    /// What was measured and fitted, one finding a line.
    pub evidence: Vec<String>,
    /// The fits of the measured curve.
    pub measured: CurveFit,
    /// The analytic USL with `σ = 0` and the fits of it.
    pub analytic: AnalyticUsl,
    /// The measured curve.
    pub curve: Curve,
    /// Wall time of the whole run \[s\].
    pub wall_seconds: f64,
}

/// Measure the emulator's curve, fit it and the analytic USL, and judge F19.
/// [`LiveError::Fit`] when the measured curve cannot be fitted (too few levels, a level with
/// no completion), otherwise the errors of [`measure`].
pub async fn f19(opts: &Options) -> Result<F19Fit, LiveError> {
    let started = Instant::now();
    let curve = measure(opts).await?;
    let measured = fit::fit_curve(&curve.points())?;
    let levels: Vec<f64> = opts.levels().iter().map(|&n| f64::from(n)).collect();
    let analytic = AnalyticUsl::new(curve.rate, curve.comfortable, &levels)?;
    let (verdict, reason) = judge(&measured);
    let evidence = evidence(&curve, &measured, &analytic);
    Ok(F19Fit { verdict, reason, evidence, measured, analytic, curve, wall_seconds: started.elapsed().as_secs_f64() })
}

fn evidence(curve: &Curve, m: &CurveFit, a: &AnalyticUsl) -> Vec<String> {
    let (s, c) = (curve.rate, curve.comfortable);
    let mut out = vec![format!(
        "the emulator serves at H·s·min(1, (C/n)²) by construction (s = {s}, C = {c}): this checks that the \
         measurement pipeline recovers that law and how the USL's tail compares, not whether real systems decay as 1/n"
    )];
    if let Some(t) = m.tail {
        out.push(format!(
            "measured tail exponent p̂ = {:.3} [{:.3}, {:.3}] (95 %) over n ≥ {:.1}, {} points; p = 2 is 1/n",
            t.exponent, t.lo, t.hi, t.from_n, t.points
        ));
    }
    let law = |f: &fit::ContentionFit| {
        format!(
            "s = {:.2}, C = {:.2}, p = {:.3}: R² = {:.4}, RMSE {:.2} req/s",
            f.rate, f.comfortable, f.exponent, f.quality.r2, f.quality.rmse
        )
    };
    out.push(format!("contention law, p = 2: {}", law(&m.contention)));
    out.push(format!("contention law, p free: {}", law(&m.free)));
    let u = &m.usl;
    let peak = u.peak_n.map_or("no peak".to_string(), |n| format!("peak at n = {n:.1}"));
    out.push(format!(
        "USL: λ = {:.2}, σ = {:.4}, κ = {:.5}, {peak}: R² = {:.4}, RMSE {:.2} req/s; its tail λ/(κn) = {:.0}/n \
         against the law's sC²/n = {:.0}/n",
        u.lambda,
        u.sigma,
        u.kappa,
        u.quality.r2,
        u.quality.rmse,
        u.tail_constant(),
        m.contention.rate * m.contention.comfortable.powi(2)
    ));
    for t in &m.tails {
        out.push(format!(
            "at n = {:.0}: USL {:.2}, (C/n)² {:.2}, free p {:.2} req/s (USL/(C/n)² = {:.2})",
            t.n,
            t.usl,
            t.contention,
            t.free,
            t.usl / t.contention
        ));
    }
    let local: Vec<String> = a.local_exponents.iter().map(|e| format!("{:.3} at n = {:.0}", e.exponent, e.n)).collect();
    out.push(format!(
        "analytic USL with σ = 0 peaking at the law's peak (κ = 1/C² = {:.4}, λ = s(2C − 1)/C = {:.2}): tail {:.0}/n \
         against the law's {:.0}/n (ratio {:.3}), both 1/n; its local exponent is {} (→ 2)",
        a.kappa,
        a.lambda,
        a.usl_tail_constant,
        a.law_tail_constant,
        a.constant_ratio,
        local.join(", ")
    ));
    if let Some(t) = a.fit.tail {
        out.push(format!(
            "over the measured levels that USL's log–log slope gives p̂ = {:.3} [{:.3}, {:.3}], and the free-exponent law \
             p = {:.3}: a finite range sees the approach to 1/n, not its limit",
            t.exponent, t.lo, t.hi, a.fit.free.exponent
        ));
    }
    out.push(format!(
        "the seed's own USL matching (γ = s, κ = 1/C²) gives λ/κ = sC² = {:.0}: the very tail of the law",
        s * c * c
    ));
    out
}
