//! What the checklist reports: one type per step ([`Margin`] to [`Feasibility`]), the
//! failure modes ([`Finding`]), and the whole [`CheckReport`] with its draft boundary.

use safegate_core::estimators::tail::TailReport;
use safegate_core::stats::{Frequency, Verdict};
use serde::Serialize;

/// Step 1: the barrier signal and its margin.
#[derive(Debug, Clone, Serialize)]
pub struct Margin {
    /// `queue` or `in_flight`.
    pub signal: &'static str,
    /// Q.
    pub capacity: f64,
    /// θ.
    pub threshold: f64,
    /// The line θ·Q.
    pub line: f64,
    /// `h = θ·Q − x` at the last sample, in requests.
    pub current: f64,
    /// The smallest `h` seen.
    pub min: f64,
    /// The mean `h`.
    pub mean: f64,
    /// Share of time outside the safe set (`h < 0`).
    pub share_outside: f64,
    /// Samples, and the time they cover \[s\].
    pub samples: usize,
    /// Seconds of data.
    pub duration: f64,
}

/// Step 2: how often the data left the safe set within a horizon.
#[derive(Debug, Clone, Serialize)]
pub struct ExitCheck {
    /// The proposed ε.
    pub epsilon: f64,
    /// The horizon \[s\].
    pub horizon: f64,
    /// Windows of one horizon the data hold, and those with an exit, with the 99 %
    /// Clopper–Pearson interval.
    pub frequency: Frequency,
    /// What the windows show about ε.
    pub verdict: Verdict,
    /// Exit-free windows it would take to show ε.
    pub windows_needed: u64,
    /// Excursions (entries into `h < 0`) per hour of data.
    pub excursions_per_hour: f64,
    /// In words.
    pub reason: String,
}

/// Step 3: the excursions and their tail.
#[derive(Debug, Clone, Serialize)]
pub struct Excursions {
    /// Excursions (maximal stretches with `h < 0`).
    pub count: usize,
    /// Mean and longest duration \[s\].
    pub mean_duration: f64,
    /// Longest duration \[s\].
    pub max_duration: f64,
    /// Peak overshoot of each excursion, as a share of Q (the severities).
    #[serde(skip)]
    pub peaks: Vec<f64>,
    /// Largest peak overshoot, as a share of Q.
    pub worst: f64,
    /// The tail of the peaks.
    pub tail: TailReport,
}

/// Step 4: η and ρ.
#[derive(Debug, Clone, Serialize)]
pub struct Severity {
    /// η.
    pub eta: f64,
    /// Empirical CVaR at η of the per-sample overshoot `max(0, −h)/Q`.
    pub cvar_samples: f64,
    /// Empirical CVaR at η of the excursion peaks (share of Q), if any.
    pub cvar_peaks: Option<f64>,
    /// The suggested ρ.
    pub rho: f64,
    /// Why, and the caveats.
    pub reason: String,
}

/// Step 5, one cell of the envelope.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Traffic range [req/s].
    pub traffic: [f64; 2],
    /// Health range (`None` when there is no health column).
    pub health: Option<[f64; 2]>,
    /// Samples in the cell inside the safe set.
    pub samples: usize,
    /// Share of them with no admitted rate satisfying ε alone.
    pub infeasible_probability: f64,
    /// Share with no admitted rate satisfying ε and ρ together.
    pub infeasible_joint: f64,
}

/// Step 5: is the joint feasible set ever empty, across the envelope seen.
#[derive(Debug, Clone, Serialize)]
pub struct Feasibility {
    /// Whether it could be checked (it needs a throughput column and the queue signal).
    pub checked: bool,
    /// Why not, or what it found.
    pub reason: String,
    /// The envelope seen: traffic [req/s].
    pub traffic: [f64; 2],
    /// The envelope seen: health (`None` without a health column).
    pub health: Option<[f64; 2]>,
    /// Share of the samples inside the safe set where ε alone is infeasible.
    pub infeasible_probability: f64,
    /// Share of them where ε and ρ together are infeasible.
    pub infeasible_joint: f64,
    /// By cell.
    pub cells: Vec<Cell>,
}

/// A failure mode the check looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// The latency baseline drifts (Envoy #11579, Netflix concurrency-limits #165).
    BaselineDrift,
    /// A published limit stuck at its minimum or maximum (Netflix concurrency-limits #137).
    StuckLimit,
    /// Retries beyond the budget.
    RetryStorm,
    /// The control loop oscillates.
    Oscillation,
    /// Excursions with a heavy tail.
    HeavyTail,
}

impl FindingKind {
    /// Every kind.
    pub const ALL: [FindingKind; 5] = [
        FindingKind::BaselineDrift,
        FindingKind::StuckLimit,
        FindingKind::RetryStorm,
        FindingKind::Oscillation,
        FindingKind::HeavyTail,
    ];

    /// Kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::BaselineDrift => "baseline-drift",
            FindingKind::StuckLimit => "stuck-limit",
            FindingKind::RetryStorm => "retry-storm",
            FindingKind::Oscillation => "oscillation",
            FindingKind::HeavyTail => "heavy-tail",
        }
    }
}

/// One failure mode, checked or not, flagged or not.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Which.
    pub kind: FindingKind,
    /// Whether the data had what it takes to check it.
    pub checked: bool,
    /// Whether it was found.
    pub flagged: bool,
    /// The evidence, or what is missing.
    pub evidence: String,
}

/// Everything the check found, and the draft boundary.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// Rows read.
    pub rows: usize,
    /// Columns present.
    pub columns: Vec<&'static str>,
    /// Step 1.
    pub margin: Margin,
    /// Step 2.
    pub exits: ExitCheck,
    /// Step 3.
    pub excursions: Excursions,
    /// Step 4.
    pub severity: Severity,
    /// Step 5.
    pub feasibility: Feasibility,
    /// Beyond the seed: the failure modes users report.
    pub findings: Vec<Finding>,
    /// A boundary file to edit, then `safegate verify`.
    pub draft: String,
    /// Why the draft would not pass `safegate verify --boundary` (read back through the same
    /// parse and range checks), when it would not: such a draft is not written.
    pub draft_error: Option<String>,
}

impl CheckReport {
    /// The kinds flagged.
    pub fn flagged(&self) -> Vec<FindingKind> {
        self.findings.iter().filter(|f| f.flagged).map(|f| f.kind).collect()
    }
}
