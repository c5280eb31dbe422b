//! A fleet of admission gates sharing one dependency: noticing that the coordinator went
//! silent, and what each gate admits until it speaks again.
//!
//! A coordinator publishes a price and per-gate grants with leases (expiry times). When it
//! goes silent, each gate must decide on its own what to admit.
//!
//! - [`detector`]: failure detectors for the coordinator's heartbeats (φ accrual and a
//!   plain timeout). Their trade-off between false suspicions and detection time is
//!   measured by the simulator (`safegate_sim::heartbeat`).
//! - [`lease`]: [`lease::GrantKeeper`], the per-gate state machine that turns the latest
//!   grant, the coordinator's reachability and the local controller's proposal into the
//!   limit to apply, under one of three loss-of-price policies (freeze, fall back, or the
//!   safe hybrid), with a learning period after the coordinator returns.
//!
//! Pure code: time is passed in, in seconds; nothing here reads a clock or does I/O.
//! Design and measurements: `docs/fleet.md`.

pub mod detector;
pub mod lease;
