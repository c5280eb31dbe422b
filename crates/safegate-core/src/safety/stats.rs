//! What the filter did, counted for reports (`verify`, `compare`) and metrics.

use crate::filter::{ConstraintKind, Decision};

/// Interventions by the constraint that bound, one named counter per kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BoundBy {
    /// [`ConstraintKind::Expectation`].
    pub expectation: u64,
    /// [`ConstraintKind::Chance`].
    pub chance: u64,
    /// [`ConstraintKind::PoissonChance`].
    pub poisson_chance: u64,
    /// [`ConstraintKind::Bernstein`].
    pub bernstein: u64,
    /// [`ConstraintKind::Cvar`].
    pub cvar: u64,
    /// [`ConstraintKind::RateOfClosure`].
    pub rate_of_closure: u64,
    /// [`ConstraintKind::SlewRateOfClosure`].
    pub slew_rate_of_closure: u64,
    /// [`ConstraintKind::BackupSet`].
    pub backup_set: u64,
}

impl BoundBy {
    /// The counter of `kind`.
    pub fn get(&self, kind: ConstraintKind) -> u64 {
        *self.slot(kind)
    }

    fn slot(&self, kind: ConstraintKind) -> &u64 {
        match kind {
            ConstraintKind::Expectation => &self.expectation,
            ConstraintKind::Chance => &self.chance,
            ConstraintKind::PoissonChance => &self.poisson_chance,
            ConstraintKind::Bernstein => &self.bernstein,
            ConstraintKind::Cvar => &self.cvar,
            ConstraintKind::RateOfClosure => &self.rate_of_closure,
            ConstraintKind::SlewRateOfClosure => &self.slew_rate_of_closure,
            ConstraintKind::BackupSet => &self.backup_set,
        }
    }

    fn add(&mut self, kind: ConstraintKind) {
        let c = match kind {
            ConstraintKind::Expectation => &mut self.expectation,
            ConstraintKind::Chance => &mut self.chance,
            ConstraintKind::PoissonChance => &mut self.poisson_chance,
            ConstraintKind::Bernstein => &mut self.bernstein,
            ConstraintKind::Cvar => &mut self.cvar,
            ConstraintKind::RateOfClosure => &mut self.rate_of_closure,
            ConstraintKind::SlewRateOfClosure => &mut self.slew_rate_of_closure,
            ConstraintKind::BackupSet => &mut self.backup_set,
        };
        *c += 1;
    }
}

/// Counters of what the filter did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FilterStats {
    /// Decisions taken (one per period).
    pub decisions: u64,
    /// Decisions where a constraint bound the nominal action.
    pub interventions: u64,
    /// Decisions where no action satisfied every constraint (the backup acted).
    pub infeasible: u64,
    /// Decisions where the backup also shed retries or capped concurrency.
    pub backup_escalations: u64,
    /// Σ nominal admitted rate × dt \[requests\].
    pub nominal_admitted: f64,
    /// Σ throughput given up × dt \[requests\] (Corollary 3's cost, measured).
    pub given_up: f64,
    /// Interventions by the constraint that bound.
    pub bound_by: BoundBy,
    /// Decisions where the filter moved the concurrency cap away from the nominal one.
    pub cap_changes: u64,
    /// Decisions taken on a stalled period's own service rate instead of `ŝ` (its
    /// completions were too few to be the Poisson count at `ŝ`: docs/math.md §State estimates).
    pub stalls: u64,
    /// Stalls confirmed ([`super::STALL_CONFIRM`] stalled periods in a row).
    pub stall_episodes: u64,
    /// Decisions bound (or made infeasible) by the stall regime's condition: a stall was
    /// confirmed within `stall_memory`, and the admission the other constraints allowed was
    /// not safe if completions stopped within the step (docs/math.md §The stall regime).
    pub stall_bound: u64,
}

impl FilterStats {
    /// Share of decisions that were feasible (1 before any decision).
    pub fn feasible_fraction(&self) -> f64 {
        if self.decisions == 0 {
            1.0
        } else {
            1.0 - self.infeasible as f64 / self.decisions as f64
        }
    }

    pub(super) fn record(&mut self, d: &Decision, dt: f64) {
        self.decisions += 1;
        self.nominal_admitted += d.nominal * dt;
        self.given_up += d.given_up * dt;
        if !d.feasible {
            self.infeasible += 1;
        } else if let Some(k) = d.bound_by {
            self.interventions += 1;
            self.bound_by.add(k);
        }
    }
}
