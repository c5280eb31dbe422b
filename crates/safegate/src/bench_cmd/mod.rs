//! `safegate bench …`: flags, one call into `safegate-bench`, and the rendering.
//!
//! - `command`: the subcommands and their dispatch;
//! - `overhead`: `bench overhead`, the tower layer's cost per request;
//! - `overload`: `bench overload`, limiters side by side under open-loop overload;
//! - `plumbing`: `bench plumbing`, jobs/s through the Redis backlog and executors;
//! - `boundary`: `bench boundary`, the telemetry checklist's speed;
//! - `flags`: a harness's error, its input field named as the flag.

mod boundary;
mod command;
mod flags;
mod overhead;
mod overload;
mod plumbing;

pub(crate) use command::{run, BenchArgs};
