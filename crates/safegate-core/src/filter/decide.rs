//! The filter itself: the closed-form projection onto every active constraint.

use super::barrier::Barrier;
use super::constraint::{backup_offset, Constraint, ConstraintKind, FilterState};

/// Most constraints one filter holds (no allocation on the hot path).
pub const MAX_CONSTRAINTS: usize = 8;

/// Why a filter cannot be built.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterError {
    /// More than [`MAX_CONSTRAINTS`] constraints.
    TooManyConstraints(usize),
    /// A value out of range: a constraint's parameter (`constraints[0].kappa`) or a setting
    /// of the filter around it (`dt`, `window`, `rate_tau`, …).
    Invalid(crate::error::RangeError),
}

impl From<crate::error::RangeError> for FilterError {
    fn from(e: crate::error::RangeError) -> Self {
        FilterError::Invalid(e)
    }
}

impl std::fmt::Display for FilterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FilterError::TooManyConstraints(n) => write!(f, "{n} constraints given, at most {MAX_CONSTRAINTS} allowed"),
            FilterError::Invalid(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for FilterError {}

/// One decision of the filter, with the record a reviewer needs.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Decision {
    /// The admitted rate `u*` [req/s], in `[0, u_max]`, always finite.
    pub admit_rate: f64,
    /// The nominal proposal, clamped to `[0, u_max]` (NaN read as 0).
    pub nominal: f64,
    /// `U = min_i U_i(x)`, the tightest upper bound (`−∞` if infeasible, `+∞` if none).
    pub upper: f64,
    /// The constraint that bound the nominal action, if one did.
    pub bound_by: Option<ConstraintKind>,
    /// Whether some action satisfies every constraint (`U ≥ 0`). When false the backup
    /// policy acts and `admit_rate` is 0.
    pub feasible: bool,
    /// Throughput given up to the filter, `nominal − admit_rate` [req/s] (Corollary 3's cost).
    pub given_up: f64,
}

/// The closed-form safety filter `F(x, u_nom) = argmin |u − u_nom|` over the constraints.
///
/// # Examples
///
/// ```
/// use safegate_core::filter::{Barrier, Constraint, Filter, FilterState};
///
/// let barrier = Barrier::new(0.7, 200.0).unwrap();
/// let filter = Filter::new(barrier, &[Constraint::gaussian(1e-6, 0.0).unwrap()]).unwrap();
/// let far = FilterState { queue: 20.0, dt: 0.05, drift: -75.0, sigma: 2.7, ..Default::default() };
/// // Far from the boundary the nominal proposal passes unchanged …
/// assert_eq!(filter.decide(&far, 80.0, 80.0).admit_rate, 80.0);
/// // … close to it the filter admits only what keeps P(cross) ≤ 1e-6 this step.
/// let near = FilterState { queue: 130.0, ..far };
/// let d = filter.decide(&near, 80.0, 80.0);
/// assert!(d.admit_rate < 80.0 && d.bound_by.is_some());
/// // At the boundary, with no service, nothing is safe: the backup acts.
/// let stuck = FilterState { queue: 140.0, drift: 0.0, ..far };
/// assert!(!filter.decide(&stuck, 80.0, 80.0).feasible);
/// ```
#[derive(Debug, Clone)]
pub struct Filter {
    barrier: Barrier,
    constraints: [Constraint; MAX_CONSTRAINTS],
    len: usize,
    /// The decision period seen last and its reciprocal, so a fixed period costs no division.
    period: (f64, f64),
    /// The constraints in the form the hot path evaluates (rebuilt whenever they change).
    rows: Rows,
    /// The depth [`Filter::set_backup_depth`] set last (NaN: none yet).
    backup_depth: f64,
}

/// A linear constraint as a row: `U·dt + d̄·dt = kg·G + ks·σ_q + k0 + kp·dt·(u₋ + d̄₋)`.
///
/// Six of the eight kinds are linear in the state (the table in [`super::constraint`]);
/// written as rows, the filter evaluates them with three multiply-adds each and no
/// dispatch, and takes `·(1/dt) − d̄` once for their minimum (`1/dt > 0` keeps the order).
#[derive(Debug, Clone, Copy, Default)]
struct Linear {
    kg: f64,
    ks: f64,
    k0: f64,
    kp: f64,
}

/// The Bernstein row, with its constants folded: `D = 2L(R + σ₀²) + 10L²/9` is the
/// discriminant `2RL + L² + c` of [`Constraint::Bernstein`] with `c = L²/9 + 2Lσ₀²`.
#[derive(Debug, Clone, Copy, Default)]
struct BernsteinRow {
    /// `1 − α`.
    keep: f64,
    /// `L`.
    l: f64,
    /// `L/3`.
    l3: f64,
    /// `2L`.
    l2: f64,
    /// `L²/9`.
    c0: f64,
    /// `10L²/9`.
    k: f64,
}

/// The Poisson-admission row.
#[derive(Debug, Clone, Copy, Default)]
struct PoissonRow {
    keep: f64,
    kappa: f64,
}

/// Every active constraint, compiled: linear rows, Bernstein rows and Poisson rows, each
/// with the kind it reports when it binds.
#[derive(Debug, Clone, Copy)]
struct Rows {
    linear: [Linear; MAX_CONSTRAINTS],
    linear_kind: [ConstraintKind; MAX_CONSTRAINTS],
    n_linear: usize,
    bernstein: [BernsteinRow; MAX_CONSTRAINTS],
    n_bernstein: usize,
    poisson: [PoissonRow; MAX_CONSTRAINTS],
    n_poisson: usize,
}

impl Rows {
    fn compile(constraints: &[Constraint], boundary: f64) -> Self {
        let mut r = Rows {
            linear: [Linear::default(); MAX_CONSTRAINTS],
            linear_kind: [ConstraintKind::Expectation; MAX_CONSTRAINTS],
            n_linear: 0,
            bernstein: [BernsteinRow::default(); MAX_CONSTRAINTS],
            n_bernstein: 0,
            poisson: [PoissonRow::default(); MAX_CONSTRAINTS],
            n_poisson: 0,
        };
        for c in constraints.iter().take(MAX_CONSTRAINTS) {
            let row = |kg, ks, k0, kp| Linear { kg, ks, k0, kp };
            let linear = match *c {
                Constraint::Expectation { decay } => Some(row(1.0 - decay, 0.0, 0.0, 0.0)),
                Constraint::Chance { kappa, decay } => Some(row(1.0 - decay, -kappa, 0.0, 0.0)),
                Constraint::Cvar { kappa_eta, rho_requests } => Some(row(1.0, -kappa_eta, rho_requests, 0.0)),
                Constraint::RateOfClosure { gamma0 } => Some(row(gamma0, 0.0, 0.0, 0.0)),
                Constraint::SlewRateOfClosure { gamma0, gamma1 } => {
                    Some(row(gamma0 * gamma1, 0.0, 0.0, 1.0 - gamma0 - gamma1))
                }
                Constraint::BackupSet { depth } => Some(row(1.0, 0.0, backup_offset(depth, boundary), 0.0)),
                Constraint::Bernstein { log_inv_eps: l, decay } => {
                    r.bernstein[r.n_bernstein] = BernsteinRow {
                        keep: 1.0 - decay,
                        l,
                        l3: l * (1.0 / 3.0),
                        l2: 2.0 * l,
                        c0: l * l * (1.0 / 9.0),
                        k: l * l * (10.0 / 9.0),
                    };
                    r.n_bernstein += 1;
                    None
                }
                Constraint::PoissonChance { kappa, decay } => {
                    r.poisson[r.n_poisson] = PoissonRow { keep: 1.0 - decay, kappa };
                    r.n_poisson += 1;
                    None
                }
            };
            if let Some(row) = linear {
                r.linear[r.n_linear] = row;
                r.linear_kind[r.n_linear] = c.kind();
                r.n_linear += 1;
            }
        }
        r
    }
}

impl Filter {
    /// A filter for `barrier` enforcing `constraints` (none: it passes everything).
    ///
    /// Each constraint must pass [`Constraint::check`] (the constructors guarantee it; a
    /// variant built by hand with, say, a negative κ is refused with its index and field).
    pub fn new(barrier: Barrier, constraints: &[Constraint]) -> Result<Self, FilterError> {
        if constraints.len() > MAX_CONSTRAINTS {
            return Err(FilterError::TooManyConstraints(constraints.len()));
        }
        for (i, c) in constraints.iter().enumerate() {
            c.check().map_err(|e| e.at(&format!("constraints[{i}]")))?;
        }
        let mut arr = [Constraint::Expectation { decay: 0.0 }; MAX_CONSTRAINTS];
        arr[..constraints.len()].copy_from_slice(constraints);
        let rows = Rows::compile(constraints, barrier.boundary());
        Ok(Self {
            barrier,
            constraints: arr,
            len: constraints.len(),
            period: (0.05, 20.0),
            rows,
            backup_depth: f64::NAN,
        })
    }

    /// Tell the filter its usual decision period so a decision at that period needs no
    /// division (any other `dt` still works).
    pub fn with_period(mut self, dt: f64) -> Self {
        if dt > 0.0 && dt.is_finite() {
            self.period = (dt, 1.0 / dt);
        }
        self
    }

    /// The barrier.
    pub fn barrier(&self) -> &Barrier {
        &self.barrier
    }

    /// The active constraints.
    pub fn constraints(&self) -> impl Iterator<Item = &Constraint> {
        self.constraints[..self.len].iter()
    }

    /// A copy with one more constraint (Corollary 3: the result is never more permissive).
    pub fn with(&self, c: Constraint) -> Result<Self, FilterError> {
        let mut all: Vec<Constraint> = self.constraints().copied().collect();
        all.push(c);
        Filter::new(self.barrier, &all)
    }

    /// Replace the depth of the backup-set constraint, if there is one.
    pub fn set_backup_depth(&mut self, depth: f64) {
        // Called every decision; the depth moves only while retries out-run service.
        if depth == self.backup_depth {
            return;
        }
        self.backup_depth = depth;
        for c in self.constraints[..self.len].iter_mut() {
            if let Constraint::BackupSet { depth: d } = c {
                *d = depth;
            }
        }
        // Only the backup rows' offsets move: patch them in place.
        let k0 = backup_offset(depth, self.barrier.boundary());
        let rows = &mut self.rows;
        for i in 0..rows.n_linear.min(MAX_CONSTRAINTS) {
            if rows.linear_kind[i] == ConstraintKind::BackupSet {
                rows.linear[i].k0 = k0;
            }
        }
    }

    /// `U = min_i U_i(x)` and the constraint attaining it. NaN bounds count as infeasible.
    ///
    /// Evaluates the compiled rows: the linear ones as one minimum of multiply-adds,
    /// then the Bernstein and Poisson ones (each one square root). Agrees with
    /// [`Constraint::upper`] on every finite state to rounding (tested).
    #[inline]
    pub fn upper(&self, x: &FilterState) -> (f64, Option<ConstraintKind>) {
        let rows = &self.rows;
        // A period that is not positive makes every bound NaN, so infeasible (and keeps
        // `1/dt > 0`, which the linear rows' shared scaling needs).
        let inv_dt = if x.dt == self.period.0 {
            self.period.1
        } else if x.dt > 0.0 {
            1.0 / x.dt
        } else {
            f64::NAN
        };
        let g = self.barrier.boundary() - x.queue;
        // The slew term folds `dt` in, so it can overflow where `(u₋ + d̄₋)` alone did not:
        // a non-finite term is NaN, so infeasible, never `+∞`. (Any non-finite input a row
        // multiplies makes every linear row infeasible, `0·∞` being NaN: refusing is the safe
        // reading of a state that has lost its numbers.)
        let p = x.dt * (x.prev_admit + x.prev_drift);
        let p = if crate::finite(p) { p } else { f64::NAN };
        // The linear rows' minimum of U·dt + d̄·dt, and which row attains it.
        let mut v = f64::INFINITY;
        // The first row until another is strictly tighter (so a state that makes every row
        // NaN, hence −∞, still names a constraint the filter has).
        let mut which = rows.linear_kind[0];
        for i in 0..rows.n_linear.min(MAX_CONSTRAINTS) {
            let r = rows.linear[i];
            // f64::max returns the other operand for NaN: NaN rows become −∞ (infeasible).
            let vi = (r.kg * g + r.ks * x.sigma + (r.kp * p + r.k0)).max(f64::NEG_INFINITY);
            which = if vi < v { rows.linear_kind[i] } else { which };
            v = v.min(vi);
        }
        let mut u = if rows.n_linear > 0 { (v * inv_dt - x.drift).max(f64::NEG_INFINITY) } else { f64::INFINITY };
        let drift_dt = x.dt * x.drift;
        for b in &rows.bernstein[..rows.n_bernstein.min(MAX_CONSTRAINTS)] {
            let r = b.keep * g - drift_dt - b.l3;
            let disc = b.l2 * (r + x.var0) + b.k;
            let c = b.l2 * x.var0 + b.c0;
            let w = ((r + b.l - disc.max(0.0).sqrt()) * inv_dt).max(f64::NEG_INFINITY);
            // Feasible iff R ≥ √c; otherwise (or on NaN input) even u = 0 leaves more than
            // ε of crossing. Selects, so the hot path has no branch.
            let ui = if r >= 0.0 && r * r >= c { w } else { f64::NEG_INFINITY };
            which = if ui < u { ConstraintKind::Bernstein } else { which };
            u = u.min(ui);
        }
        for pr in &rows.poisson[..rows.n_poisson.min(MAX_CONSTRAINTS)] {
            let r = pr.keep * g - drift_dt;
            let disc = pr.kappa * pr.kappa + 4.0 * (r + x.var0);
            let z = 0.5 * (disc.max(0.0).sqrt() - pr.kappa);
            let ui = if disc >= 0.0 && z >= 0.0 {
                ((z * z - x.var0) * inv_dt).max(f64::NEG_INFINITY)
            } else {
                f64::NEG_INFINITY
            };
            which = if ui < u { ConstraintKind::PoissonChance } else { which };
            u = u.min(ui);
        }
        (u, if u < f64::INFINITY { Some(which) } else { None })
    }

    /// Filter the nominal admitted rate `nominal` under `x`, with `u_max` the most that can be
    /// admitted (the offered rate). Never panics; the result is finite and in `[0, u_max]`
    /// (a non-finite or negative `u_max` is read as 0).
    #[inline]
    pub fn decide(&self, x: &FilterState, nominal: f64, u_max: f64) -> Decision {
        // Selects rather than early returns: the hot path has no data-dependent branch.
        // f64::max/min return the other operand for NaN, so NaN inputs land on 0.
        // `&`, not `&&`, and `≤ MAX`, not `< ∞` (see `crate::finite`): two compares and a
        // select, no branch.
        let u_max = if (u_max > 0.0) & (u_max <= f64::MAX) { u_max } else { 0.0 };
        let nominal = nominal.max(0.0).min(u_max);
        let (upper, which) = self.upper(x);
        let feasible = upper >= 0.0;
        // With U ≥ 0 and nominal ∈ [0, u_max], min(nominal, U) is already in [0, u_max].
        let admit = if feasible { nominal.min(upper) } else { 0.0 };
        let bound_by = if upper < nominal { which } else { None };
        Decision { admit_rate: admit, nominal, upper, bound_by, feasible, given_up: nominal - admit }
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
