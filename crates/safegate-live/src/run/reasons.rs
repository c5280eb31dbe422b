//! Rejections at the enqueue told by reason, in the vocabulary the tower layer uses
//! ([`Reason`]): the script counts two kinds (left out by the share in force, or the
//! backlog full); the controller knows why the share was what it was.

use safegate_core::names::Reason;

use crate::books::Accounting;

/// The rejections so far by reason, and what the latest decision published.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rejections {
    /// Per [`Reason::ALL`], in its order.
    by_reason: [u64; 4],
    /// Why the share in force is what it is.
    share_reason: Reason,
    /// The counts and the filter's statistics the latest decision read.
    last_share: u64,
    last_full: u64,
    last_interventions: u64,
    last_backups: u64,
}

impl Default for Rejections {
    fn default() -> Self {
        Self {
            by_reason: [0; 4],
            share_reason: Reason::Limit,
            last_share: 0,
            last_full: 0,
            last_interventions: 0,
            last_backups: 0,
        }
    }
}

impl Rejections {
    /// Count the rejections since the latest decision (those of the share under the reason
    /// it was published with; a full backlog is [`Reason::Limit`], the bound reached), then
    /// take this decision's reason for the share it publishes: the backup acted, the filter
    /// cut the nominal share (`interventions` and `backups` are the filter's running
    /// counts), or the nominal's own share. Returns the counts per [`Reason::ALL`].
    pub(super) fn update(&mut self, acc: &Accounting, interventions: u64, backups: u64) -> [u64; 4] {
        let share = acc.rejected.saturating_sub(self.last_share);
        let full = acc.rejected_full.saturating_sub(self.last_full);
        self.by_reason[usize::from(self.share_reason.code())] += share;
        self.by_reason[usize::from(Reason::Limit.code())] += full;
        self.share_reason = if backups > self.last_backups {
            Reason::Backup
        } else if interventions > self.last_interventions {
            Reason::Barrier
        } else {
            Reason::Limit
        };
        (self.last_share, self.last_full) = (acc.rejected, acc.rejected_full);
        (self.last_interventions, self.last_backups) = (interventions, backups);
        self.by_reason
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejections_go_to_the_reason_of_the_share_in_force() {
        let mut r = Rejections::default();
        let acc = |share, full| Accounting { rejected: share, rejected_full: full, ..Accounting::default() };
        // The first decision: nothing rejected yet; the filter cuts the share.
        assert_eq!(r.update(&acc(0, 0), 1, 0), [0; 4]);
        // 5 left out by the cut share, 2 by a full backlog; this decision the backup acts.
        assert_eq!(r.update(&acc(5, 2), 1, 1), [2, 5, 0, 0]);
        // 3 more under the backup's share; then the nominal's own.
        assert_eq!(r.update(&acc(8, 2), 1, 1), [2, 5, 3, 0]);
        assert_eq!(r.update(&acc(9, 2), 1, 1), [3, 5, 3, 0]);
    }
}
