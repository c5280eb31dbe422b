//! One live run: a scenario of the seed's model played by real processes on loopback
//! (docs/live.md).
//!
//! The run starts (or joins) Redis, the downstream emulator, the executor pool, the load
//! generator and the `/metrics` endpoint; the controller then decides every `run.dt` model
//! seconds with the same policy object the simulator runs (the seed's gate, or the safety
//! filter over it), from what Redis holds: the backlog's length, the jobs in service and
//! the accounting. At the end it reports the same summary as `safegate run` and the job
//! accounting.
//!
//! Files:
//!
//! - `options.rs`: [`LiveOptions`], where Redis and the downstream are, and the limits on
//!   speed and offered rate ([`check_offer_rate`]).
//! - `policy.rs`: [`LivePolicy`], the scenario's policy or a registry one.
//! - `report.rs`: [`Progress`] and [`LiveReport`].
//! - `play.rs`: [`LiveRun`] and [`run`], one run from start to report.
//! - `services.rs`: starting and stopping Redis, the downstream, `/metrics`, the executors
//!   and the load generator.
//! - `control.rs`: the controller's loop, one decision a period.
//! - `reasons.rs`: the enqueue's rejections told by reason, in the tower layer's vocabulary.
//! - `summary.rs`: the report's totals from the accounting.
//! - `columns.rs`: the run beside the model ([`model_column`], [`LiveReport::column`]) and
//!   their JSON document ([`json_document`]).

mod columns;
mod control;
mod options;
mod play;
mod policy;
mod reasons;
mod report;
mod services;
mod summary;

pub(crate) use columns::stochastic;
pub use columns::{json_document, model_column};
pub use options::{
    check_offer_rate, DownstreamTarget, LiveOptions, RedisTarget, MAX_OFFERS_PER_WALL_SECOND, MAX_SPEED,
    UNSENT_WARNING_SHARE,
};
pub use play::{run, LiveRun};
pub use policy::LivePolicy;
pub use report::{LiveReport, LiveSeries, LoadSummary, Progress};
