//! Every nominal controller, with and without the safety filter, on the seed's scenarios.
//!
//! For each case (a scenario of the model) and each policy, the stochastic mode runs
//! `seeds` replications with the policy alone and `seeds` with the policy under the
//! [`SafetyFilter`](safegate_core::safety::SafetyFilter) of a boundary, and reports per arm: goodput (and its share of the
//! model's physical limit), backlog-time, p50/p99 sojourn, recovery after each dip, the
//! fraction of time beyond the boundary `θ·cap`, the exit frequency over the run with a 99 %
//! Clopper–Pearson interval, the empirical CVaR of the excursion beyond the boundary, the
//! rejected share and the throughput the filter gave up (Corollary 3's cost, measured).
//!
//! The *physical limit* of a case is the goodput of the fluid model with the ideal pool:
//! exactly `min(q, C)` executors pulling (a fractional count), the same buffer, the same
//! health and traffic — what no admission policy on the real pool can beat by more than
//! noise, and what a concurrency actuator can approach.
//!
//! Optionally (`exit_trials > 0`) the exit frequency and CVaR of the cases inside the
//! boundary's envelope are estimated from that many extra trials of the stepped chain (the
//! fast mode `verify` uses), enough to show a 99 % upper limit below ε (≥ 528 trials with
//! no exit for ε = 0.01).
//!
//! | file | holds |
//! |---|---|
//! | `config.rs` | [`CompareConfig`], [`CompareError`], and the checks of every input before a run |
//! | `run.rs` | [`compare`]: the runs, in parallel, and their report |
//! | `aggregate.rs` | the runs' metrics and their aggregation per arm |
//! | [`cases`] | the seed's scenarios, the physical limit, the envelope |
//! | [`policies`] | policies by name |
//! | `request.rs` | [`CompareRequest`]: what was asked for, checked into a [`CompareConfig`] |
//! | [`report`] | what is reported |
//! | [`probe`] | the seed's drain table |

mod aggregate;
pub mod cases;
mod config;
pub mod policies;
pub mod probe;
pub mod report;
mod request;
mod run;

pub use cases::{default_cases, inside_envelope, physical_limit, select_cases, Case};
pub use config::{CompareConfig, CompareError};
pub use policies::{build_policy, build_spec, default_policies, policy_names};
pub use probe::probe_collapse;
pub use report::{ArmReport, CaseReport, CompareReport, CurvePoint, ProbeCollapseRow, Recovery};
pub use request::{run_duration, CompareRequest, DEFAULT_CURVE_TRAFFIC};
pub use run::{compare, MAX_TRACE_SAMPLES};

#[cfg(test)]
mod tests;
