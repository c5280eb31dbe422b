//! A fleet of gate processes sharing one downstream, coordinated by a price over Redis,
//! with an optional coordinator outage: the process supervisor behind `safegate fleet` and
//! the fleet view of `safegate serve`, and the body of one gate process.
//!
//! | file | holds |
//! |---|---|
//! | `plan.rs` | [`Plan`] (a run's settings and their checks), [`parse_outage`], [`default_gamma`], [`GateCommand`] (how a gate process is started) |
//! | `gate.rs` | [`gate`]: one gate process, reporting a [`Line`] of counters every 200 ms on its output |
//! | `play.rs` | [`play`]: the supervisor (gate processes, the downstream, Redis, the outage) and its [`FleetReport`] |
//! | `prometheus.rs` | [`render_metrics`]: every gate's counters in Prometheus's text format |
//! | `error.rs` | [`FleetError`] |

mod error;
mod gate;
mod plan;
mod play;
mod prometheus;

pub use error::FleetError;
pub use gate::{gate, GateSettings, Line};
pub use plan::{default_gamma, parse_outage, GateCommand, Plan, MIN_OUTAGE_SECS};
pub use play::{play, FleetReport, OutageSummary, Second, Tick};
pub use prometheus::render_metrics;
