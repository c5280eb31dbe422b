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
use safegate_core::names;

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
    latency.get_or_init(|| histogram!(names::REQUEST_DURATION_SECONDS));
    gauge!(names::LIMIT).set(f64::from(r.limit));
    gauge!(names::IN_FLIGHT).set(f64::from(r.in_flight));
    gauge!(names::WAITING).set(f64::from(r.waiting));
    gauge!(names::BARRIER_MARGIN).set(r.margin);
    let freq = if r.decisions > 0 { r.exits as f64 / r.decisions as f64 } else { 0.0 };
    gauge!(names::OBSERVED_EXIT_FREQUENCY).set(freq);
    counter!(names::DECISIONS_TOTAL).absolute(r.decisions);
    counter!(names::FILTER_INTERVENTIONS_TOTAL).absolute(r.interventions);
    counter!(names::BACKUP_ACTIVATIONS_TOTAL).absolute(r.backup_activations);
    counter!(names::REQUESTS_DROPPED_TOTAL).absolute(r.cancelled);
    counter!(names::REQUESTS_FAILED_TOTAL).absolute(r.errors);
    for (k, c) in r.classes.iter().enumerate() {
        let class = k.to_string();
        for (reason, &n) in c.rejected.iter() {
            counter!(names::REQUESTS_REJECTED_TOTAL, "class" => class.clone(), names::REASON_LABEL => reason.as_str())
                .absolute(n);
        }
        for (reason, &n) in c.would_reject.iter() {
            counter!(names::REQUESTS_DRY_RUN_REJECTED_TOTAL, "class" => class.clone(), names::REASON_LABEL => reason.as_str())
                .absolute(n);
        }
        counter!(names::REQUESTS_OFFERED_TOTAL, "class" => class.clone()).absolute(c.offered);
        counter!(names::REQUESTS_ADMITTED_TOTAL, "class" => class.clone())
            .absolute(c.offered.saturating_sub(c.rejected.total()));
        gauge!(names::ADMIT_SHARE, "class" => class).set(c.share);
    }
}
