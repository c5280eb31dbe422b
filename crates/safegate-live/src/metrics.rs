//! `/metrics` in Prometheus's text format while a live run goes on. The names shared with
//! the tower layer come from [`safegate_core::names`] and mean the same (a job is a
//! request); rejections carry the same `reason` labels ([`Reason`]). `safegate_backlog*`,
//! `safegate_model_time_seconds` and `safegate_jobs_*` are the live system's own.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;

use metrics::{counter, describe_counter, describe_gauge, gauge};
use metrics_exporter_prometheus::PrometheusBuilder;
use safegate_core::names::{self, Reason};

use crate::books::Accounting;
use crate::LiveError;

/// What `/metrics` shows: the latest period's state.
#[derive(Debug, Clone, Copy, Default)]
pub struct Snapshot {
    /// Model time \[s\].
    pub t: f64,
    /// The accounting.
    pub acc: Accounting,
    /// Admission share published.
    pub admit: f64,
    /// Executors allowed (`None`: all).
    pub concurrency: Option<u32>,
    /// Slots in the pool.
    pub slots: u32,
    /// Controller decisions so far.
    pub decisions: u64,
    /// Filter interventions so far (0 without a filter).
    pub interventions: u64,
    /// Backup activations so far.
    pub backup_activations: u64,
    /// Backlog bound.
    pub bound: u64,
    /// The barrier's margin `θ·capacity − q` at the latest decision \[jobs\].
    pub margin: f64,
    /// Decisions taken with the backlog above `θ·capacity`.
    pub exits: u64,
    /// Jobs rejected at the enqueue, per [`Reason::ALL`] in its order.
    pub rejected: [u64; 4],
}

/// Render a snapshot in Prometheus's text format, through the `metrics` facade and its
/// Prometheus exporter (a recorder of its own per rendering, installed nowhere, so two
/// runs in one process never mix their series).
pub fn render(s: &Snapshot) -> String {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || publish(s));
    handle.render()
}

/// Record `s` into the current recorder: gauges and counters, each with its help text.
fn publish(s: &Snapshot) {
    let a = &s.acc;
    let g = |name: &'static str, help: &'static str, v: f64| {
        describe_gauge!(name, help);
        gauge!(name).set(v);
    };
    let c = |name: &'static str, help: &'static str, v: u64| {
        describe_counter!(name, help);
        counter!(name).absolute(v);
    };
    g("safegate_model_time_seconds", "Model time of the latest decision.", s.t);
    g(names::LIMIT, "Executors allowed to pull work at once.", f64::from(s.concurrency.unwrap_or(s.slots)));
    g(names::IN_FLIGHT, "Jobs in service (delivered, not acknowledged).", a.in_service as f64);
    g(names::WAITING, "Jobs waiting for an executor.", a.in_backlog.saturating_sub(a.in_service) as f64);
    g("safegate_backlog", "Jobs in the backlog (waiting plus in service): the model's q.", a.in_backlog as f64);
    g("safegate_backlog_bound", "The backlog's bound, enforced at the enqueue.", s.bound as f64);
    g(names::ADMIT_SHARE, "Share of offers admitted.", s.admit);
    g(names::BARRIER_MARGIN, "The barrier's margin θ·capacity − q [jobs].", s.margin);
    let freq = if s.decisions > 0 { s.exits as f64 / s.decisions as f64 } else { 0.0 };
    g(names::OBSERVED_EXIT_FREQUENCY, "Share of decisions taken with the backlog above θ·capacity.", freq);
    c(names::DECISIONS_TOTAL, "Controller decisions.", s.decisions);
    c(names::FILTER_INTERVENTIONS_TOTAL, "Decisions the filter changed.", s.interventions);
    c(names::BACKUP_ACTIVATIONS_TOTAL, "Backup activations.", s.backup_activations);
    c(names::REQUESTS_OFFERED_TOTAL, "Jobs offered to the gate.", a.offered);
    c(names::REQUESTS_ADMITTED_TOTAL, "Jobs admitted into the backlog.", a.admitted);
    c(names::REQUESTS_FAILED_TOTAL, "Job attempts that failed downstream.", a.failed);
    describe_counter!(names::REQUESTS_REJECTED_TOTAL, "Jobs rejected at the enqueue.");
    for (r, n) in Reason::ALL.iter().zip(s.rejected) {
        counter!(names::REQUESTS_REJECTED_TOTAL, names::REASON_LABEL => r.as_str()).absolute(n);
    }
    c("safegate_jobs_completed_total", "Jobs completed.", a.completed);
    c("safegate_jobs_retried_total", "Retries offered (of failed jobs).", a.offered_retries);
    c("safegate_jobs_redelivered_total", "Jobs given back after their executor died.", a.redelivered);
    g("safegate_jobs_lost", "Admitted jobs unaccounted for (must be 0).", a.lost() as f64);
}

/// Append `s` as one scrape to `out`, every sample stamped with the model time in
/// milliseconds (Prometheus's optional timestamp), so that a series of them reads as one
/// telemetry file.
pub fn render_stamped(s: &Snapshot, out: &mut String) {
    let ms = (s.t * 1000.0).round() as i64;
    for line in render(s).lines() {
        // Help and type lines carry no sample, and the exporter separates its families
        // with blank lines: stamped, those read as a sample named by its timestamp.
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let _ = writeln!(out, "{line} {ms}");
    }
}

/// A running `/metrics` server.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl MetricsServer {
    /// Serve `state` on `addr`.
    pub async fn start(addr: SocketAddr, state: Arc<Mutex<Snapshot>>) -> Result<Self, LiveError> {
        let listener = TcpListener::bind(addr).await.map_err(|source| LiveError::Bind {
            addr,
            what: "the metrics endpoint",
            error: source,
        })?;
        let addr = listener.local_addr().unwrap_or(addr);
        let app = Router::new().route(
            "/metrics",
            get(move || {
                let s = state.lock().map(|s| *s).unwrap_or_default();
                async move { ([("content-type", "text/plain; version=0.0.4")], render(&s)) }
            }),
        );
        let (stop, mut rx) = watch::channel(false);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.changed().await;
                })
                .await;
        });
        Ok(Self { addr, stop, task })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop serving.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), self.task).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_margin_and_the_exit_frequency_are_published() {
        let acc = Accounting { admitted: 150, in_backlog: 150, ..Accounting::default() };
        let s = Snapshot { acc, decisions: 8, exits: 2, margin: -10.0, slots: 8, bound: 200, ..Snapshot::default() };
        let text = render(&s);
        assert!(text.contains("\nsafegate_barrier_margin -10\n"), "{text}");
        assert!(text.contains("\nsafegate_observed_exit_frequency 0.25\n"), "{text}");
        // Before the first decision there is no frequency to speak of: 0, not NaN.
        let text = render(&Snapshot::default());
        assert!(text.contains("\nsafegate_observed_exit_frequency 0\n"), "{text}");
    }

    #[test]
    fn a_stamped_scrape_is_samples_only_each_with_its_time() {
        let s = Snapshot { t: 2.5, slots: 8, bound: 200, ..Snapshot::default() };
        let mut out = String::new();
        render_stamped(&s, &mut out);
        assert!(out.lines().count() > 10, "{out}");
        for line in out.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(fields.len(), 3, "name, value, time: {line:?}");
            assert!(fields[0].starts_with("safegate_"), "{line:?}");
            assert_eq!(fields[2], "2500", "{line:?}");
        }
    }
}
