//! Prometheus-style metrics through the `metrics` facade (feature `metrics`).
//!
//! Counters and gauges are published once per decision period from the layer's atomics
//! (`Counter::absolute`), so the hot path pays nothing for them; the request-duration
//! histogram is recorded per request through a handle taken at the first decision, after
//! the application has installed its recorder. Names follow the Prometheus conventions
//! (<https://prometheus.io/docs/practices/naming/>): `_total` counters, base units.

use std::sync::atomic::Ordering;

use crate::error::Reason;
use crate::shared::{Controller, Shared};

/// Record one request's time in the layer [ns].
#[inline]
pub(crate) fn record_latency(sh: &Shared, ns: u64) {
    if let Some(h) = sh.latency.get() {
        h.record(ns as f64 * 1e-9);
    }
}

/// Publish counters and gauges after a decision.
pub(crate) fn publish(sh: &Shared, c: &Controller, limit: u32, shares: &[f64]) {
    sh.latency.get_or_init(|| metrics::histogram!("safegate_request_duration_seconds"));
    metrics::gauge!("safegate_limit").set(f64::from(limit));
    metrics::gauge!("safegate_in_flight")
        .set(f64::from(crate::shared::slots::taken(sh.gate.0.load(Ordering::Relaxed))));
    metrics::gauge!("safegate_waiting").set(f64::from(sh.waiting.0.load(Ordering::Relaxed)));
    metrics::gauge!("safegate_barrier_margin").set(c.last_margin);
    let freq = if c.decisions > 0 { c.exits as f64 / c.decisions as f64 } else { 0.0 };
    metrics::gauge!("safegate_observed_exit_frequency").set(freq);
    let stats = c.filter.stats();
    metrics::counter!("safegate_decisions_total").absolute(c.decisions);
    metrics::counter!("safegate_filter_interventions_total").absolute(stats.interventions);
    metrics::counter!("safegate_backup_activations_total").absolute(stats.infeasible);
    let d = &sh.done.0;
    metrics::counter!("safegate_requests_dropped_total").absolute(d.cancelled.load(Ordering::Relaxed));
    metrics::counter!("safegate_requests_failed_total").absolute(d.errors.load(Ordering::Relaxed));
    for (k, cs) in sh.classes.iter().enumerate() {
        let class = k.to_string();
        // Called at the end of a step: the offered counts it read.
        let offered = c.last_offered[k];
        let mut rejected = 0;
        for r in Reason::ALL {
            let n = cs.rejected[r.index()].load(Ordering::Relaxed);
            rejected += n;
            metrics::counter!("safegate_requests_rejected_total", "class" => class.clone(), "reason" => r.as_str())
                .absolute(n);
            let w = cs.would_reject[r.index()].load(Ordering::Relaxed);
            metrics::counter!("safegate_requests_dry_run_rejected_total", "class" => class.clone(), "reason" => r.as_str())
                .absolute(w);
        }
        metrics::counter!("safegate_requests_offered_total", "class" => class.clone()).absolute(offered);
        metrics::counter!("safegate_requests_admitted_total", "class" => class.clone())
            .absolute(offered.saturating_sub(rejected));
        metrics::gauge!("safegate_admit_share", "class" => class).set(shares[k]);
    }
}
