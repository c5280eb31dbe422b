//! A user's telemetry, and the seed's checklist run on it ("Compute Your Own Boundary, a
//! Checklist"): `safegate boundary check`.
//!
//! Two formats are read (docs/boundary-check.md §Telemetry formats):
//!
//! - **CSV** with a header: `time` \[s\], `queue` (or `in_flight`), and optionally `latency`
//!   \[s\], `throughput` and `offered` \[req/s\], `health`, `rejections`, `retries` (counts in
//!   the interval ending at the row; `*_total` columns are cumulative counters), `limit`
//!   and `capacity`.
//! - **Prometheus text format**, a series of scrapes of safegate's own metrics (the live
//!   system's or the tower layer's `/metrics`), one after another, with sample timestamps or
//!   `safegate_model_time_seconds` giving each scrape's time.
//!
//! Either becomes a [`Telemetry`]: one row per sample, every column a rate or a level, so
//! the checks ([`check`]) need not care where it came from. Malformed input is an error
//! naming the line, never a panic.
//!
//! | file | holds |
//! |---|---|
//! | `series.rs` | [`Telemetry`], the [`Signal`] it carries, the limits on what is read |
//! | `read.rs` | [`read_input`]: the input, bounded; [`sniff`], [`parse`], [`parse_as`]: the format and the readers by format; [`TelemetryError`] |
//! | `csv.rs`, `prom.rs` | the CSV reader and the Prometheus scrape reader |
//! | `rates.rs` | counters and per-interval counts as per-second rates, for the readers |
//! | `write.rs` | [`Telemetry::to_csv`] and [`Telemetry::to_prometheus`] |
//! | `options.rs` | [`CheckOptions`], their ranges, and [`CheckError`] (options named by field) |
//! | `report.rs` | [`CheckReport`] and its parts, one per step, and the [`Finding`]s |
//! | `check.rs` | [`check`]: the checklist's steps 1 to 4 (margin, exits, excursions, η and ρ) |
//! | `envelope.rs` | what several steps read of the data: offered traffic, its percentiles, health's range |
//! | `feasibility.rs` | step 5: the draft's filter at every sample inside the safe set, by cell |
//! | `findings.rs` | the failure-mode detectors (baseline drift, stuck limit, retry storm, oscillation, heavy tail) |
//! | `signal.rs` | helpers on a sampled series: intervals, blocks, trend, step fits, runs, spreads, autocorrelation |
//! | `draft.rs` | the draft boundary file, its read-back as `safegate verify --boundary` reads it, and [`write_draft`], which never replaces a file it did not draft |
//! | [`traces`] | generated telemetry from the seed's pool, with injected faults |

mod check;
mod csv;
mod draft;
mod envelope;
mod feasibility;
mod findings;
mod options;
mod prom;
mod rates;
mod read;
mod report;
mod series;
mod signal;
pub mod traces;
mod write;

pub use check::{check, NO_WINDOW_ADVICE};
pub use draft::{write_draft, DraftWriteError, DRAFT_MARK};
pub use options::{CheckError, CheckOptions};
pub(crate) use rates::{counter_to_rate, counts_to_rate, first_above};
pub use read::{parse, parse_as, read_input, sniff, Format, TelemetryError};
pub use report::{Cell, CheckReport, Excursions, ExitCheck, Feasibility, Finding, FindingKind, Margin, Severity};
pub use series::{Signal, Telemetry, MAX_CSV_BYTES, MAX_LEVEL, MAX_PROMETHEUS_BYTES, MAX_RATE, MAX_ROWS};

#[cfg(test)]
mod tests;
