//! Why a request was not admitted ([`Reason`]), and one value per reason ([`ByReason`]).

use std::ops::Index;
use std::sync::atomic::{AtomicU64, Ordering};

pub use safegate_core::names::Reason;

/// One value per [`Reason`], by name; `by_reason[reason]` reads the one of `reason`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ByReason<T> {
    /// For [`Reason::Limit`].
    pub limit: T,
    /// For [`Reason::Barrier`].
    pub barrier: T,
    /// For [`Reason::Backup`].
    pub backup: T,
    /// For [`Reason::Deadline`].
    pub deadline: T,
}

impl<T> ByReason<T> {
    /// The value of each reason from `f(reason)`.
    pub fn from_fn(mut f: impl FnMut(Reason) -> T) -> Self {
        ByReason {
            limit: f(Reason::Limit),
            barrier: f(Reason::Barrier),
            backup: f(Reason::Backup),
            deadline: f(Reason::Deadline),
        }
    }

    /// Each reason with its value, in the order of [`Reason::ALL`].
    pub fn iter(&self) -> impl Iterator<Item = (Reason, &T)> + '_ {
        Reason::ALL.into_iter().map(move |r| (r, &self[r]))
    }
}

impl ByReason<u64> {
    /// The sum over all reasons.
    pub fn total(&self) -> u64 {
        self.iter().map(|(_, n)| n).sum()
    }
}

impl ByReason<AtomicU64> {
    /// Every count now (relaxed loads).
    pub(crate) fn load(&self) -> ByReason<u64> {
        ByReason::from_fn(|r| self[r].load(Ordering::Relaxed))
    }
}

impl<T> Index<Reason> for ByReason<T> {
    type Output = T;

    #[inline]
    fn index(&self, r: Reason) -> &T {
        match r {
            Reason::Limit => &self.limit,
            Reason::Barrier => &self.barrier,
            Reason::Backup => &self.backup,
            Reason::Deadline => &self.deadline,
            // `Reason` is non-exhaustive in core; a reason added there lands here in
            // `limit` until this struct gets its own field for it.
            _ => &self.limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_its_own_value_and_byte() {
        let by = ByReason::from_fn(|r| r.as_str());
        for r in Reason::ALL {
            assert_eq!(by[r], r.as_str());
            assert_eq!(Reason::from_code(r.code()), r);
        }
        assert_eq!(by.iter().map(|(r, _)| r).collect::<Vec<_>>(), Reason::ALL);
        let counts = ByReason { limit: 1, barrier: 2, backup: 3, deadline: 4 };
        assert_eq!(counts.total(), 10);
        assert_eq!(Reason::from_code(200), Reason::Limit);
    }
}
