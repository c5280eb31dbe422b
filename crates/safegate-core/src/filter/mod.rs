//! The safety filter (the seed's Definition 3, Proposition 3, Corollaries 2 and 3,
//! Definition 4), in closed form.
//!
//! The barrier is `h(q) = θ − q/Q`, safe set `{h ≥ 0}`, headroom `G = θQ − q`. The admitted
//! rate `u` enters the next queue depth linearly, `q⁺ = q + dt·(u + d̄) + ξ`, so every
//! constraint in [`constraint`] reduces to an upper bound `u ≤ U_i(x)` and the filter
//!
//! ```text
//! F(x, u_nom) = argmin |u − u_nom|  s.t.  u ≤ U_i(x) for every active i,  0 ≤ u ≤ u_max
//! ```
//!
//! is a clamp: `U = min_i U_i(x)`; if `U < 0` no action satisfies every constraint (the gap
//! the seed names F17) and the backup policy acts; otherwise `u* = clamp(min(u_nom, U), 0,
//! u_max)`. This is the explicit filter of Mestres et al. (arXiv 2512.10118): no solver on
//! the hot path. `tests` cross-check it against a general QP solver.

pub mod backup;
pub mod barrier;
pub mod bound;
pub mod constraint;
pub mod decide;

pub use backup::{Backup, BackupPolicy};
pub use barrier::Barrier;
pub use constraint::{Constraint, ConstraintKind, FilterState};
pub use decide::{Decision, Filter, FilterError};
