//! Admission-control stacks side by side under open-loop overload, on in-process backends
//! (docs/bench-overload.md).
//!
//! - `settings`: the inputs ([`OverloadSpec`]), checked; the scenarios, their backends and
//!   schedules;
//! - `run`: [`Overload`], the one call that runs every (scenario, stack) pair;
//! - `plan`: [`Plan`], every bench of a sweep over every round, checked up front, and its
//!   [`Outcome`] as one JSON document and the closing text;
//! - `backend`: the in-process backends (collapse, queueing, fast);
//! - the PostgreSQL backend (transactions on hot rows over a pool) and its curve live in
//!   `safegate_live::pg`, shared with the live system;
//! - `stacks`: the limiter stacks compared, ours and the peers (feature `peers`);
//! - `load`: the open-loop generator and what it records;
//! - `histogram`: the generator's latency histogram;
//! - `report`: the figures of a run and a scenario, and the JSON document;
//! - [`sweep`]: the (knee, base time) pairs of a sweep;
//! - [`rounds`]: repeated rounds summed up per scenario (medians of each round's ratio).
//! - [`text`]: a scenario's table and a sweep's and rounds' summaries, as the CLI prints them.

mod backend;
mod histogram;
mod load;
mod plan;
mod report;
pub mod rounds;
mod run;
mod settings;
mod stacks;
pub mod sweep;
pub mod text;

pub use load::{Arrivals, Progress};
pub use plan::{Outcome, Plan, PlanEvent};
pub use report::{Burst, Document, Figures, RunReport, ScenarioReport, Step};
pub use run::{no_progress, Event, Overload};
pub use safegate_live::pg::{CurvePoint, Isolation, PgSpec};
pub use settings::{OverloadSpec, MAX_REQUESTS, MAX_SECS};
pub use stacks::{LOOSE_LIMIT, NOT_BUILT, PEERS_BUILT};
