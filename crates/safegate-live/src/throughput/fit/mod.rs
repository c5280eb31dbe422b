//! Fitting a throughput curve `X(n)`: Gunther's universal scalability law and the seed's
//! contention law, both by least squares on `ln X` (relative errors, so the tail weighs as
//! much as the peak), and the tail's log–log slope with an interval. Pure: no I/O, no clock.
//!
//! - USL (N. J. Gunther, *Guerrilla Capacity Planning*, Springer, 2007, ch. 4):
//!   `X(n) = λn / (1 + σ(n − 1) + κn(n − 1))`, `λ > 0`, `σ, κ ≥ 0`. With `κ > 0` it falls
//!   like `λ/(κn)` at large `n`.
//! - The contention law (docs/model.md §The pool): `X(n) = s·n·min(1, (C/n)^p)`, i.e.
//!   `s·n` up to `C` and `s·C^p·n^(1−p)` past it; the seed's `p = 2` is a `1/n` tail.
//!
//! "Tail exponent" means `p` in `X ∝ n^(1−p)`: 2 is `1/n`, and a USL with `κ > 0` has 2 as
//! its limit.
//!
//! Files:
//!
//! - `types.rs`: [`Point`], [`FitError`], [`Quality`], [`TailSlope`], [`TailPoint`], [`CurveFit`].
//! - `curve.rs`: [`fit_curve`], and the input checks and quality every fit shares.
//! - `usl.rs`: Gunther's USL and its fit.
//! - `contention.rs`: the contention law and its fit.
//! - `tail.rs`: [`tail_slope`] and the Student-t quantile of its interval.

mod contention;
mod curve;
mod tail;
mod types;
mod usl;

pub use contention::{contention, fit_contention, ContentionFit};
pub use curve::{fit_curve, MIN_TAIL_POINTS, TAIL_MULTIPLES};
use curve::{prepare, quality};
pub use tail::{student_t_975, tail_slope};
pub use types::{CurveFit, FitError, Point, Quality, TailPoint, TailSlope};
pub use usl::{fit_usl, usl, usl_local_exponent, UslFit};
