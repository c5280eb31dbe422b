//! The backlog in Redis: a stream with one consumer group, admission at the enqueue by a
//! server-side script, acknowledgements that count, and a reaper that gives a dead
//! executor's jobs back to the pool (docs/live.md §The backlog: a stream with a consumer group).
//!
//! Keys, under a namespace `ns`:
//!
//! | key | type | what |
//! |---|---|---|
//! | `ns:jobs` | stream, group `executors` | the backlog: every admitted job until it is acknowledged; `XLEN` is the model's `q` (waiting plus in service) |
//! | `ns:gate` | hash | the controller's decision: `admit` (share in \[0, 1\]), `conc` (executors allowed, −1 = all), `bound` (backlog cap) |
//! | `ns:count` | hash | the job accounting, each field changed only inside a script |
//! | `ns:failed` | list | failed jobs waiting for the load generator's retry decision |
//! | `ns:hb:CONSUMER` | string with an expiry | an executor's heartbeat |
//! | `ns:slot:I` | string with an expiry | the consumer holding executor slot `I` |
//!
//! Every change of the accounting happens inside one script together with the stream
//! operation it accounts for, so `admitted = completed + failed + XLEN` holds at every
//! instant, whatever crashes between two scripts.
//!
//! Files:
//!
//! - `scripts.rs`: the Lua scripts (enqueue, acknowledge, oldest wait, reap, heartbeat,
//!   slot).
//! - `records.rs`: [`Admission`], [`Accounting`], [`Delivery`].
//! - `connect.rs`: [`check_namespace`], the reconnecting connection, [`redact`].
//! - `store.rs`: the [`Backlog`] handle, connecting, creating the group, [`Backlog::reset`].
//! - `gate.rs`: the controller's and producers' operations (publish, offer, accounting).
//! - `consumers.rs`: the executors' operations (fetch, ack, heartbeat, slots, reap).

mod connect;
mod consumers;
mod gate;
mod records;
mod scripts;
mod store;

pub(crate) use connect::connect_manager;
pub use connect::{check_namespace, redact};
pub use records::{Accounting, Admission, Delivery};
pub use scripts::GROUP;
pub use store::Backlog;
