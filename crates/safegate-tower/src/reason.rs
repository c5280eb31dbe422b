//! Why a request was not admitted ([`Reason`]), and one value per reason ([`ByReason`]).

use std::fmt;
use std::ops::Index;
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a request was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// The concurrency limit (the nominal controller's, or the layer's maximum) was reached,
    /// or the admission share the nominal controller asked for left this request out, or the
    /// wait queue was full.
    Limit,
    /// The safety filter cut the nominal controller's admission to keep the occupancy barrier
    /// (the boundary's `θ`) with the boundary's probability.
    Barrier,
    /// No admission satisfied the boundary's constraints: the backup policy rejects all.
    Backup,
    /// The request waited in the bounded queue until its deadline without getting a slot.
    Deadline,
}

impl Reason {
    /// Every reason, in the order of their metric labels.
    pub const ALL: [Reason; 4] = [Reason::Limit, Reason::Barrier, Reason::Backup, Reason::Deadline];

    /// A short, stable label (`"limit"`, `"barrier"`, `"backup"`, `"deadline"`), used in
    /// metrics and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Limit => "limit",
            Reason::Barrier => "barrier",
            Reason::Backup => "backup",
            Reason::Deadline => "deadline",
        }
    }

    /// The reason as a byte, for publishing it in an atomic ([`Reason::from_byte`] reads it).
    pub(crate) fn to_byte(self) -> u8 {
        match self {
            Reason::Limit => 0,
            Reason::Barrier => 1,
            Reason::Backup => 2,
            Reason::Deadline => 3,
        }
    }

    /// The reason [`Reason::to_byte`] made `b` from (`Limit` for any other byte).
    pub(crate) fn from_byte(b: u8) -> Reason {
        match b {
            1 => Reason::Barrier,
            2 => Reason::Backup,
            3 => Reason::Deadline,
            _ => Reason::Limit,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
            assert_eq!(Reason::from_byte(r.to_byte()), r);
        }
        assert_eq!(by.iter().map(|(r, _)| r).collect::<Vec<_>>(), Reason::ALL);
        let counts = ByReason { limit: 1, barrier: 2, backup: 3, deadline: 4 };
        assert_eq!(counts.total(), 10);
        assert_eq!(Reason::from_byte(200), Reason::Limit);
    }
}
