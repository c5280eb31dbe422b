//! The end of a run: the simulator's totals from the job accounting, and the load
//! generator's counters.

use std::sync::atomic::{AtomicU64, Ordering};

use safegate_sim::record::{quantiles, Totals};

use super::LoadSummary;
use crate::books::Accounting;
use crate::executor::PoolStats;
use crate::loadgen::LoadStats;

/// The totals `safegate run` reports, from the accounting at the end and the executors'
/// sojourn times, converted to model seconds at `speed`.
pub(super) fn totals(acc: &Accounting, pool: Option<&PoolStats>, speed: f64) -> Totals {
    let acked = acc.completed + acc.failed;
    let mut sojourns: Vec<f32> = pool
        .and_then(|p| p.sojourn_us.lock().ok().map(|v| v.iter().map(|&us| (us as f64 * 1e-6 * speed) as f32).collect()))
        .unwrap_or_default();
    Totals {
        offered: acc.offered as f64,
        // As the simulator counts: admitted by the gate, of which `dropped` found the
        // backlog full (the accounting's `admitted` is what entered the backlog).
        admitted: (acc.admitted + acc.rejected_full) as f64,
        rejected: acc.rejected as f64,
        dropped: acc.rejected_full as f64,
        cleared: acc.completed as f64,
        retried: acc.offered_retries as f64,
        retries_shed: 0.0,
        mean_sojourn: (acked > 0).then(|| acc.latency_us as f64 * 1e-6 * speed / acked as f64),
        sojourn_quantiles: quantiles(&mut sojourns, [0.5, 0.99]),
        events: acked,
    }
}

/// The load generator's counters at the end.
pub(super) fn load_summary(load: &LoadStats) -> LoadSummary {
    let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
    LoadSummary {
        arrivals: l(&load.arrivals),
        retries: l(&load.retries),
        abandoned: l(&load.abandoned),
        over_budget: l(&load.over_budget),
        unsent: l(&load.unsent),
    }
}
