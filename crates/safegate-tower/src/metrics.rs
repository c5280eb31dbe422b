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

/// The label that names the layer on every series ([`Builder::name`](crate::Builder::name)).
pub(crate) const LAYER_LABEL: &str = "layer";

/// Publish a decision step's report of the layer `layer`; take the histogram handle at
/// the first one.
pub(crate) fn publish(latency: &OnceLock<Histogram>, layer: &str, r: &StepReport) {
    let l = || (LAYER_LABEL, layer.to_string());
    latency.get_or_init(|| histogram!(names::REQUEST_DURATION_SECONDS, LAYER_LABEL => layer.to_string()));
    gauge!(names::LIMIT, LAYER_LABEL => layer.to_string()).set(f64::from(r.limit));
    gauge!(names::IN_FLIGHT, LAYER_LABEL => layer.to_string()).set(f64::from(r.in_flight));
    gauge!(names::WAITING, LAYER_LABEL => layer.to_string()).set(f64::from(r.waiting));
    gauge!(names::BARRIER_MARGIN, LAYER_LABEL => layer.to_string()).set(r.margin);
    let freq = if r.decisions > 0 { r.exits as f64 / r.decisions as f64 } else { 0.0 };
    gauge!(names::OBSERVED_EXIT_FREQUENCY, LAYER_LABEL => layer.to_string()).set(freq);
    counter!(names::DECISIONS_TOTAL, LAYER_LABEL => layer.to_string()).absolute(r.decisions);
    counter!(names::FILTER_INTERVENTIONS_TOTAL, LAYER_LABEL => layer.to_string()).absolute(r.interventions);
    counter!(names::BACKUP_ACTIVATIONS_TOTAL, LAYER_LABEL => layer.to_string()).absolute(r.backup_activations);
    counter!(names::REQUESTS_DROPPED_TOTAL, LAYER_LABEL => layer.to_string()).absolute(r.cancelled);
    counter!(names::REQUESTS_FAILED_TOTAL, LAYER_LABEL => layer.to_string()).absolute(r.errors);
    for (k, c) in r.classes.iter().enumerate() {
        let class = k.to_string();
        let (lk, lv) = l();
        for (reason, &n) in c.rejected.iter() {
            counter!(names::REQUESTS_REJECTED_TOTAL, lk => lv.clone(), "class" => class.clone(), names::REASON_LABEL => reason.as_str())
                .absolute(n);
        }
        for (reason, &n) in c.would_reject.iter() {
            counter!(names::REQUESTS_DRY_RUN_REJECTED_TOTAL, lk => lv.clone(), "class" => class.clone(), names::REASON_LABEL => reason.as_str())
                .absolute(n);
        }
        counter!(names::REQUESTS_OFFERED_TOTAL, lk => lv.clone(), "class" => class.clone()).absolute(c.offered);
        counter!(names::REQUESTS_ADMITTED_TOTAL, lk => lv.clone(), "class" => class.clone())
            .absolute(c.offered.saturating_sub(c.rejected.total()));
        gauge!(names::ADMIT_SHARE, lk => lv, "class" => class).set(c.share);
    }
}
