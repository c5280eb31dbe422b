//! What a live run reports: progress while it runs, the report at the end.

use std::net::SocketAddr;

use safegate_core::safety::FilterStats;
use safegate_sim::{Series, Summary};
use serde::Serialize;

use crate::books::Accounting;
use crate::downstream::DownstreamStats;

/// Progress, about four times a second.
#[derive(Debug, Clone, Serialize)]
pub struct Progress {
    /// Model time \[s\].
    pub t: f64,
    /// The run's length \[model s\].
    pub duration: f64,
    /// The backlog.
    pub queue: u64,
    /// Admission share.
    pub admit: f64,
    /// Executors allowed.
    pub concurrency: Option<u32>,
    /// The accounting.
    pub acc: Accounting,
    /// Where `/metrics` is served (the port bound for `--metrics …:0`), if it is.
    pub metrics: Option<SocketAddr>,
    /// With the executors outside the run ([`LiveOptions::executors`] off): the command an
    /// executor process joins it with (Redis URL, namespace, downstream, slots).
    ///
    /// [`LiveOptions::executors`]: super::LiveOptions::executors
    pub join: Option<String>,
}

/// The live run's own series beside the simulator's.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LiveSeries {
    /// Executors allowed at each sample (−1: all).
    pub concurrency: Vec<i32>,
    /// Jobs in service at each sample.
    pub in_service: Vec<u64>,
}

/// What a live run reports.
#[derive(Debug, Clone, Serialize)]
pub struct LiveReport {
    /// The policy's name.
    pub policy: &'static str,
    /// Model seconds per wall second.
    pub speed: f64,
    /// Wall seconds the run took.
    pub wall_seconds: f64,
    /// Redis (password elided).
    pub redis: String,
    /// The summary, as `safegate run` gives it.
    pub summary: Summary,
    /// Backlog, health and admission share at every decision.
    pub series: Series,
    /// Concurrency and jobs in service at every decision.
    pub live: LiveSeries,
    /// The job accounting at the end.
    pub accounting: Accounting,
    /// `admitted − completed − failed − in_backlog` (must be 0).
    pub lost: i64,
    /// Arrivals the generator made; retries; abandoned failed jobs; offers it could not send.
    pub load: LoadSummary,
    /// The filter's counters, if one ran.
    pub filter: Option<FilterStats>,
    /// The downstream emulator's counters, if it ran here.
    pub downstream: Option<DownstreamStats>,
    /// Decisions taken, and periods the controller could not read Redis.
    pub decisions: u64,
    /// Decisions the controller's period allows over the run (`duration / dt`, with the
    /// period at least 0.5 ms of wall time): far more than `decisions` means the controller
    /// could not keep its pace (Redis or the cores were saturated).
    pub planned_decisions: u64,
    /// Controller periods lost to Redis errors.
    pub controller_errors: u64,
    /// The scrapes kept ([`LiveOptions::scrape_every`](super::LiveOptions::scrape_every)), in Prometheus's text format.
    #[serde(skip)]
    pub scrapes: Option<String>,
}

/// The load generator's counters at the end.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct LoadSummary {
    /// First attempts.
    pub arrivals: u64,
    /// Retries offered.
    pub retries: u64,
    /// Failed jobs not retried.
    pub abandoned: u64,
    /// Of those, for want of retry budget.
    pub over_budget: u64,
    /// Offers never made (Redis unavailable, or the generator's own limit).
    pub unsent: u64,
}

impl Progress {
    /// One status line: model time, backlog, share, executors and the books.
    pub fn line(&self) -> String {
        let k = self.concurrency.map_or("all".to_string(), |k| k.to_string());
        let a = &self.acc;
        format!(
            "t {:>6.1}/{:.0} s  q {:>4}  admit {:>4.2}  executors {k:>3}  offered {}  admitted {}  done {}  failed {}  redelivered {}  lost {}",
            self.t, self.duration, self.queue, self.admit, a.offered, a.admitted, a.completed, a.failed, a.redelivered, a.lost()
        )
    }
}

impl LiveReport {
    /// What a reader should doubt about the run: offers never made (over
    /// [`UNSENT_WARNING_SHARE`](super::UNSENT_WARNING_SHARE) of them), or a controller that
    /// took under 80 % of its planned decisions. Empty when neither.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        let tried = self.load.arrivals + self.load.retries;
        if tried > 0 && self.load.unsent as f64 > super::UNSENT_WARNING_SHARE * tried as f64 {
            w.push(format!(
                "{} of {tried} offers ({:.1} %) were never made (Redis unavailable, or more than the load \
                 generator could send at {}×): the live run carried a lighter load than its scenario's",
                self.load.unsent,
                100.0 * self.load.unsent as f64 / tried as f64,
                self.speed
            ));
        }
        if (self.decisions as f64) < 0.8 * self.planned_decisions as f64 {
            w.push(format!(
                "the controller took {} of its {} planned decisions: Redis or the cores were saturated, \
                 and the gate acted less often than the scenario's run.dt",
                self.decisions, self.planned_decisions
            ));
        }
        w
    }

    /// The job accounting as a text table.
    pub fn accounting_table(&self) -> String {
        let (a, l) = (&self.accounting, &self.load);
        let rows: [(&str, String); 13] = [
            ("offered", format!("{} ({} retries)", a.offered, a.offered_retries)),
            ("admitted", format!("{} ({} retries)", a.admitted, a.admitted_retries)),
            ("rejected by the share", a.rejected.to_string()),
            ("rejected, backlog full", a.rejected_full.to_string()),
            ("completed", a.completed.to_string()),
            ("failed (attempts)", a.failed.to_string()),
            ("retried", l.retries.to_string()),
            ("abandoned after failing", format!("{} ({} over budget)", l.abandoned, l.over_budget)),
            ("in backlog at the end", format!("{} ({} in service)", a.in_backlog, a.in_service)),
            ("redelivered", a.redelivered.to_string()),
            ("lost", format!("{} (admitted − completed − failed − in backlog; must be 0)", self.lost)),
            ("unsent offers", l.unsent.to_string()),
            (
                "controller",
                format!(
                    "{} decisions, {} periods without Redis; {:.1} s wall; redis {}",
                    self.decisions, self.controller_errors, self.wall_seconds, self.redis
                ),
            ),
        ];
        let mut s = String::from("job accounting\n");
        for (k, v) in rows {
            s.push_str(&format!("  {k:<26}{v}\n"));
        }
        s
    }
}
