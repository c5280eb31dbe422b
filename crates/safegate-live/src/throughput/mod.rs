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
//!
//! Files:
//!
//! - `options.rs`: [`Options`], the concurrency levels and the verdict's thresholds.
//! - `measure.rs`: [`measure`], the emulator's curve over loopback HTTP.
//! - `fit/`: the least-squares fits and the tail slope.
//! - `analytic.rs`: [`AnalyticUsl`], the `σ = 0` USL the measurement is compared with.
//! - `verdict.rs`: [`judge`], F19's verdict on a fitted curve.
//! - `f19.rs`: [`f19`], the whole criterion end to end.

mod analytic;
mod f19;
pub mod fit;
mod measure;
mod options;
#[cfg(test)]
mod tests;
mod verdict;

pub use analytic::{AnalyticUsl, ExponentAt};
pub use f19::{f19, F19Fit};
pub use fit::{CurveFit, FitError, Point};
pub use measure::{measure, Curve, Level};
pub use options::{Options, DEFAULT_MULTIPLES, MATERIAL_GAP, MAX_HALF_WIDTH, QUICK_MULTIPLES};
/// F19's verdict: the one every falsification criterion gets (`safegate falsify`).
pub use safegate_studies::falsify::Verdict;
pub use verdict::judge;
