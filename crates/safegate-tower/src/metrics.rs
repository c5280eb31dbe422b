//! Prometheus-style metrics through the `metrics` facade (feature `metrics`).
//!
//! Counters and gauges are published once per decision period from the step's
//! [`StepReport`] (`Counter::absolute`), so the hot path pays nothing for them; the
//! request-duration histogram is recorded per request through a handle taken at the first
//! decision, after the application has installed its recorder. Names follow the Prometheus
//! conventions (<https://prometheus.io/docs/practices/naming/>): `_total` counters, base
//! units.

use std::sync::OnceLock;

use ::metrics::{counter, gauge, histogram, Histogram};

use crate::shared::StepReport;

/// Record one request's time in the layer \[ns\] in the histogram, once it is taken.
#[inline]
pub(crate) fn record_latency(latency: &OnceLock<Histogram>, ns: u64) {
    if let Some(h) = latency.get() {
        h.record(ns as f64 * 1e-9);
    }
}

/// Publish a decision step's report; take the histogram handle at the first one.
pub(crate) fn publish(latency: &OnceLock<Histogram>, r: &StepReport) {
    latency.get_or_init(|| histogram!("safegate_request_duration_seconds"));
    gauge!("safegate_limit").set(f64::from(r.limit));
    gauge!("safegate_in_flight").set(f64::from(r.in_flight));
    gauge!("safegate_waiting").set(f64::from(r.waiting));
    gauge!("safegate_barrier_margin").set(r.margin);
    let freq = if r.decisions > 0 { r.exits as f64 / r.decisions as f64 } else { 0.0 };
    gauge!("safegate_observed_exit_frequency").set(freq);
    counter!("safegate_decisions_total").absolute(r.decisions);
    counter!("safegate_filter_interventions_total").absolute(r.interventions);
    counter!("safegate_backup_activations_total").absolute(r.backup_activations);
    counter!("safegate_requests_dropped_total").absolute(r.cancelled);
    counter!("safegate_requests_failed_total").absolute(r.errors);
    for (k, c) in r.classes.iter().enumerate() {
        let class = k.to_string();
        for (reason, &n) in c.rejected.iter() {
            counter!("safegate_requests_rejected_total", "class" => class.clone(), "reason" => reason.as_str())
                .absolute(n);
        }
        for (reason, &n) in c.would_reject.iter() {
            counter!("safegate_requests_dry_run_rejected_total", "class" => class.clone(), "reason" => reason.as_str())
                .absolute(n);
        }
        counter!("safegate_requests_offered_total", "class" => class.clone()).absolute(c.offered);
        counter!("safegate_requests_admitted_total", "class" => class.clone())
            .absolute(c.offered.saturating_sub(c.rejected.total()));
        gauge!("safegate_admit_share", "class" => class).set(c.share);
    }
}
