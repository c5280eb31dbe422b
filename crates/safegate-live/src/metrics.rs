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

use safegate_core::names::{self, Reason};

use crate::backlog::Accounting;
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

/// Render a snapshot.
pub fn render(s: &Snapshot) -> String {
    let mut o = String::new();
    let a = &s.acc;
    let mut g = |name: &str, kind: &str, help: &str, v: String| {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
    };
    g("safegate_model_time_seconds", "gauge", "Model time of the latest decision.", format!("{}", s.t));
    g(names::LIMIT, "gauge", "Executors allowed to pull work at once.", s.concurrency.unwrap_or(s.slots).to_string());
    g(names::IN_FLIGHT, "gauge", "Jobs in service (delivered, not acknowledged).", a.in_service.to_string());
    g(names::WAITING, "gauge", "Jobs waiting for an executor.", a.in_backlog.saturating_sub(a.in_service).to_string());
    g(
        "safegate_backlog",
        "gauge",
        "Jobs in the backlog (waiting plus in service): the model's q.",
        a.in_backlog.to_string(),
    );
    g("safegate_backlog_bound", "gauge", "The backlog's bound, enforced at the enqueue.", s.bound.to_string());
    g(names::ADMIT_SHARE, "gauge", "Share of offers admitted.", format!("{}", s.admit));
    g(names::BARRIER_MARGIN, "gauge", "The barrier's margin θ·capacity − q [jobs].", format!("{}", s.margin));
    let freq = if s.decisions > 0 { s.exits as f64 / s.decisions as f64 } else { 0.0 };
    g(
        names::OBSERVED_EXIT_FREQUENCY,
        "gauge",
        "Share of decisions taken with the backlog above θ·capacity.",
        format!("{freq}"),
    );
    g(names::DECISIONS_TOTAL, "counter", "Controller decisions.", s.decisions.to_string());
    g(names::FILTER_INTERVENTIONS_TOTAL, "counter", "Decisions the filter changed.", s.interventions.to_string());
    g(names::BACKUP_ACTIVATIONS_TOTAL, "counter", "Backup activations.", s.backup_activations.to_string());
    g(names::REQUESTS_OFFERED_TOTAL, "counter", "Jobs offered to the gate.", a.offered.to_string());
    g(names::REQUESTS_ADMITTED_TOTAL, "counter", "Jobs admitted into the backlog.", a.admitted.to_string());
    g(names::REQUESTS_FAILED_TOTAL, "counter", "Job attempts that failed downstream.", a.failed.to_string());
    let name = names::REQUESTS_REJECTED_TOTAL;
    let _ = writeln!(o, "# HELP {name} Jobs rejected at the enqueue.\n# TYPE {name} counter");
    for (r, n) in Reason::ALL.iter().zip(s.rejected) {
        let _ = writeln!(o, "{name}{{{}=\"{r}\"}} {n}", names::REASON_LABEL);
    }
    let mut g = |name: &str, kind: &str, help: &str, v: String| {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
    };
    g("safegate_jobs_completed_total", "counter", "Jobs completed.", a.completed.to_string());
    g("safegate_jobs_retried_total", "counter", "Retries offered (of failed jobs).", a.offered_retries.to_string());
    g(
        "safegate_jobs_redelivered_total",
        "counter",
        "Jobs given back after their executor died.",
        a.redelivered.to_string(),
    );
    g("safegate_jobs_lost", "gauge", "Admitted jobs unaccounted for (must be 0).", a.lost().to_string());
    o
}

/// Append `s` as one scrape to `out`, every sample stamped with the model time in
/// milliseconds (Prometheus's optional timestamp), so that a series of them reads as one
/// telemetry file.
pub fn render_stamped(s: &Snapshot, out: &mut String) {
    let ms = (s.t * 1000.0).round() as i64;
    for line in render(s).lines() {
        if line.starts_with('#') {
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
}
