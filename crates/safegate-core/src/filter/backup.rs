//! The backup policy and its implicit safe set (the gap the seed names F17).
//!
//! When no admitted rate satisfies every constraint (`U < 0`) the filter hands over to a
//! backup policy known in advance. Rejecting all new work drains the queue in expectation
//! whenever expected service exceeds the retries that still arrive; where retries alone meet
//! or beat service (the metastable regime) rejection cannot drain it, so the backup also sheds
//! retries and caps concurrency (the pool clears fastest at `n = C`).
//!
//! Backup-CBF recipe (Chen, Jankovic, Santillo & Ames, "Backup Control Barrier Functions",
//! IEEE CDC 2021, scalar case): roll the mean dynamics forward `N` steps under the backup
//! from a starting depth; by monotonicity the set of depths from which the rolled-out queue
//! stays at or below the boundary is `{q ≤ q_I}`; `q_I` is found by bisection, and the
//! constraint `u ≤ (q_I − q)/dt − d̄` keeps the filter feasible inside it.

use crate::error::{check, RangeError};

/// The backup: what acts when no action satisfies every constraint, and the horizon of its
/// implicit safe set. A boundary file's `[backup]` section is this type:
///
/// ```toml
/// [backup]
/// policy = "reject-all-shed-retries"   # or "reject-all" (default)
/// concurrency = 4                      # cap while escalated (shed-retries only)
/// horizon = 10                         # seconds of the backup-implicit safe set
/// constrain = true                     # add the backup-set constraint u ≤ (q_I − q)/dt − d̄
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "BackupFile", into = "BackupFile"))]
pub struct Backup {
    /// The policy.
    pub policy: BackupPolicy,
    /// Horizon of the backup-implicit safe set \[s\], `[0, ∞)` (10).
    pub horizon: f64,
    /// Add the backup-set constraint `u ≤ (q_I − q)/dt − d̄` (true).
    pub constrain: bool,
}

impl Default for Backup {
    fn default() -> Self {
        Self { policy: BackupPolicy::RejectAll, horizon: 10.0, constrain: true }
    }
}

impl Backup {
    /// Check every value.
    pub fn check(&self) -> Result<(), RangeError> {
        check::non_negative("horizon", self.horizon)?;
        if let BackupPolicy::RejectAllShedRetries { concurrency: Some(0) } = self.policy {
            return Err(RangeError::new("concurrency", 0, "an integer ≥ 1"));
        }
        Ok(())
    }
}

/// The file's shape of [`Backup`]: the policy by name, its concurrency beside it.
#[cfg(feature = "serde")]
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
struct BackupFile {
    policy: PolicyName,
    concurrency: Option<u32>,
    horizon: f64,
    constrain: bool,
}

#[cfg(feature = "serde")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
enum PolicyName {
    #[default]
    RejectAll,
    RejectAllShedRetries,
}

#[cfg(feature = "serde")]
impl Default for BackupFile {
    fn default() -> Self {
        Backup::default().into()
    }
}

#[cfg(feature = "serde")]
impl TryFrom<BackupFile> for Backup {
    type Error = RangeError;
    fn try_from(f: BackupFile) -> Result<Self, RangeError> {
        let policy = match (f.policy, f.concurrency) {
            (PolicyName::RejectAll, None) => BackupPolicy::RejectAll,
            (PolicyName::RejectAll, Some(c)) => {
                return Err(RangeError::new("concurrency", c, "only with policy = \"reject-all-shed-retries\""))
            }
            (PolicyName::RejectAllShedRetries, concurrency) => BackupPolicy::RejectAllShedRetries { concurrency },
        };
        let b = Backup { policy, horizon: f.horizon, constrain: f.constrain };
        b.check()?;
        Ok(b)
    }
}

#[cfg(feature = "serde")]
impl From<Backup> for BackupFile {
    fn from(b: Backup) -> Self {
        let (policy, concurrency) = match b.policy {
            BackupPolicy::RejectAll => (PolicyName::RejectAll, None),
            BackupPolicy::RejectAllShedRetries { concurrency } => (PolicyName::RejectAllShedRetries, concurrency),
        };
        BackupFile { policy, concurrency, horizon: b.horizon, constrain: b.constrain }
    }
}

/// What the filter does when no action satisfies every constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum BackupPolicy {
    /// Admit nothing new.
    RejectAll,
    /// Admit nothing new; if retries alone out-run service, also shed retries and cap the
    /// pool at `concurrency` executors.
    RejectAllShedRetries {
        /// Concurrency cap while the backup acts (`None`: leave the pool as it is).
        concurrency: Option<u32>,
    },
}

/// The deepest start from which `N` steps of `q ← max(0, q + dt·drift(q))` stay at or below
/// `boundary`, by bisection on the start (the map must be non-decreasing in `q`, true for a
/// small enough `dt`). Returns `boundary` if even the boundary is safe, 0 if nothing is.
///
/// # Examples
///
/// ```
/// use safegate_core::filter::backup::implicit_safe_depth;
///
/// // Retries outpace service by 2 req/s: over 10 s the queue climbs 20.
/// let q_i = implicit_safe_depth(|_| 2.0, 140.0, 0.05, 200);
/// assert!((q_i - 120.0).abs() < 1e-6);
/// // Service wins: every depth up to the boundary is safe.
/// assert_eq!(implicit_safe_depth(|_| -5.0, 140.0, 0.05, 200), 140.0);
/// ```
pub fn implicit_safe_depth(drift: impl Fn(f64) -> f64, boundary: f64, dt: f64, steps: u32) -> f64 {
    let safe_from = |q0: f64| {
        let mut q = q0;
        for _ in 0..steps {
            q = (q + dt * drift(q)).max(0.0);
            if q > boundary || q.is_nan() {
                return false;
            }
        }
        true
    };
    if !(boundary > 0.0) || !(dt > 0.0) {
        return 0.0;
    }
    if safe_from(boundary) {
        return boundary;
    }
    if !safe_from(0.0) {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0f64, boundary);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if safe_from(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Closed form of [`implicit_safe_depth`] for a drift that does not depend on `q`.
#[inline]
pub fn implicit_safe_depth_constant(drift: f64, boundary: f64, horizon: f64) -> f64 {
    if drift.is_nan() {
        return 0.0;
    }
    (boundary - drift.max(0.0) * horizon).clamp(0.0, boundary.max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bisection_matches_the_closed_form_for_constant_drift() {
        for d in [-3.0, 0.0, 0.5, 2.0, 7.5, 100.0] {
            let a = implicit_safe_depth(|_| d, 140.0, 0.05, 200);
            let b = implicit_safe_depth_constant(d, 140.0, 10.0);
            assert!((a - b).abs() < 1e-6, "drift {d}: {a} vs {b}");
        }
    }

    #[test]
    fn state_dependent_drift() {
        // Retries at 30 % of a contended pool's clearing rate, service 75 when busy: drains.
        let drift = |q: f64| if q > 8.0 { 0.3 * 75.0 - 75.0 } else { 0.0 };
        assert_eq!(implicit_safe_depth(drift, 140.0, 0.05, 200), 140.0);
        // Retries exceed service above 100 (a metastable upper branch): q_I sits at the switch.
        let drift = |q: f64| if q > 100.0 { 3.0 } else { -1.0 };
        let q_i = implicit_safe_depth(drift, 140.0, 0.05, 400);
        assert!((100.0..=121.0).contains(&q_i), "{q_i}");
    }
}
