//! The opening: a slow start by round trips, before the climb has a curve to climb.
//!
//! A fresh limiter knows nothing of its backend. Opening at the maximum (the earlier
//! design) never sheds a light load, but under an overload it lets the maximum into a
//! backend that may collapse past a few requests: a knee at `C = 4` with `base = 4 ms`
//! sees 75 requests enter in the first 50-ms period at 1.5× its peak, each held for up to
//! `base·(75/4)²` ≈ 1.4 s, and the backend serves almost nothing until they leave (the
//! first 5-s burst got 298 req/s where later bursts got ~690). Nothing done after such an
//! opening can undo it; only not admitting that far past the knee does.
//!
//! So the opening grows the limit the way TCP's slow start grows its window, gated by
//! delay the way HyStart (Ha & Rhee, "Taming the elephants", 2011) ends slow start on a
//! rising round-trip time: from `open_limit` (2 by default) it doubles once the load has
//! pressed the limit, one round trip (twice the measured service time) and two windows of
//! completions (`2·L`, so that the requests that entered at the new level are among them)
//! have passed, with the service time at its floor `S₀` (the lowest seen): `S ≤ (1 +
//! RISE)·S₀ + latency_floor`. `S` is the mean over the level's own completions (all since
//! the limit last changed, judged once there are half a window of them, at least 2): one
//! completion's time on a starved host is noise, and two of 77 ms at a floor of 51 ms
//! once ended the opening at 2. Two decisions in a row whose `S` is above that bound mean
//! the backend slowed with the load: the knee is between the last level verified at the
//! floor and the one being tried, and the climb starts at the verified level. Reaching the
//! maximum with the service time still at its floor ends the opening there (a fast
//! service: the climb keeps the limit out of the way).
//!
//! A rise at the first level (nothing verified below it) is not blamed on the limit,
//! which has not moved: a host that slows every request alike (a CPU-starved server: a
//! 50-ms handler reading 80 ms whatever the limit) raises the service time as a knee does,
//! and ending there left the limit at 2, where the climb's trials wait a second for their
//! completions (the axum example's flood on a 2-core CI host: 131 of 38,120 requests served
//! in 3 s). The opening takes its floor from such a rise and goes on, at most
//! [`MAX_REBASES`] times. A rise after a doubling cannot be told from a knee by the
//! service time alone; checking it at the level below (step back, measure, resume if as
//! slow) was tried and cost up to a third of the goodput on the small-knee sweep's real
//! timings, so it ends the opening.
//!
//! Failures end it the same way: a backend that answers past its knee with errors (a
//! database out of connections, a `5xx`) instead of slowly is past its knee when the share
//! of failed completions ([`Observation::failed`]) rises more than [`FAIL_RISE`] above the
//! lowest share seen, two decisions in a row. A steady share of failures at every level (a
//! client's bad requests judged as failures) moves nothing.
//!
//! It overshoots the knee by at most one doubling, for about one round trip, and it asks
//! for decisions every [`OPEN_CADENCE`] of the period
//! ([`Policy::next_decision_within`](crate::Policy::next_decision_within)), so a fast
//! service is opened to the maximum in a few milliseconds (7 doublings from 2 to 256) and a
//! knee at 128 with a 10-ms service is reached in about 7 round trips. A load that never
//! presses the limit never doubles it and is never shed.

use super::Peak;
use crate::policy::Observation;

/// The service time may rise by this share of its floor (plus `latency_floor`) before the
/// opening ends: past a collapsing backend's knee `C` the requests that entered at
/// `n ∈ (C, 2C]` take `(n/C)²` times the floor, so a doubling past the knee lifts the mean
/// by more than half; a queue past `W` workers, by the wait of the extra requests.
const RISE: f64 = 0.5;

/// The share of failed completions may rise by this much above the lowest share seen
/// before the opening ends (see the module docs).
const FAIL_RISE: f64 = 0.1;

/// Most floors the opening re-takes after rises at its first level (see the module
/// docs).
const MAX_REBASES: u8 = 3;

/// Decisions in the opening come this share of the period apart (when the actuator can
/// decide that often: the tower layer does, the simulators decide every step anyway).
pub const OPEN_CADENCE: f64 = 0.1;

/// The opening's state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Opening {
    /// The lowest service time seen \[s\] (∞ before the first).
    floor: f64,
    /// When the limit last doubled \[s\] (NaN before the first decision).
    raised_at: f64,
    /// The highest grid point whose service time was seen at the floor.
    verified: Option<usize>,
    /// The load pressed the limit since it last changed.
    pressed: bool,
    /// Completions when the limit last doubled.
    done_at_raise: f64,
    /// The last decision that saw completions saw the service time (or the failures) risen.
    rising: bool,
    /// The lowest share of failed completions seen between two decisions (∞ before).
    fail_floor: f64,
    /// Busy time (latency − wait) and failures when the limit last changed.
    busy_at_raise: f64,
    failed_at_raise: f64,
    /// Completions at the last decision that saw some; offered and admitted at the last
    /// decision.
    completed: f64,
    offered: f64,
    admitted: f64,
    /// Floors re-taken so far (rises at the first level).
    rebases: u8,
}

impl Opening {
    pub(super) fn new() -> Self {
        Opening {
            floor: f64::INFINITY,
            raised_at: f64::NAN,
            verified: None,
            pressed: false,
            done_at_raise: f64::NAN,
            rising: false,
            fail_floor: f64::INFINITY,
            busy_at_raise: f64::NAN,
            failed_at_raise: f64::NAN,
            completed: f64::NAN,
            offered: f64::NAN,
            admitted: f64::NAN,
            rebases: 0,
        }
    }

    /// The limit changed (or the floor was re-taken) at `obs`: the level's sample starts
    /// here, and the load must press the new limit before it is verified.
    fn restart_level(&mut self, obs: &Observation, busy: f64) {
        self.raised_at = obs.now;
        self.done_at_raise = obs.completed;
        self.busy_at_raise = busy;
        self.failed_at_raise = obs.failed;
        self.pressed = false;
    }
}

impl Peak {
    /// One decision of the opening; ends it (and starts the climb) when the service time
    /// rose or the maximum was reached.
    pub(super) fn open_step(&mut self, obs: &Observation) {
        let Some(mut o) = self.open else { return };
        let busy = obs.latency_total - obs.wait_total;
        if o.completed.is_nan() {
            (o.completed, o.offered, o.admitted) = (obs.completed, obs.offered, obs.admitted);
            o.restart_level(obs, busy);
        }
        let limit = f64::from(self.limit());
        let turned_away = (obs.offered - o.offered) - (obs.admitted - o.admitted) > 0.5;
        let filled = self.cfg.actuator.in_flight(obs).is_some_and(|v| v >= 1.0 && v >= limit - 1.0);
        o.pressed |= filled || turned_away;
        o.offered = obs.offered;
        o.admitted = obs.admitted;
        // The level's sample: every completion since the limit last changed, judged once it
        // holds half a window (at least 2). One completion's service time on a starved host
        // is noise (two of 77 ms at a floor of 51 ms ended the opening at 2 on CI); the mean
        // of the level's requests is what the limit did.
        let fresh = obs.completed - o.completed;
        let done = obs.completed - o.done_at_raise;
        let service = (busy - o.busy_at_raise) / done;
        let sampled = done >= (0.5 * limit).max(2.0) && service.is_finite() && service >= 0.0;
        if !(fresh >= 1.0 && sampled) {
            // Nothing completed since the last look, too few at this level (or garbage).
            self.open = Some(o);
            return;
        }
        let fail_share = ((obs.failed - o.failed_at_raise) / done).clamp(0.0, 1.0);
        o.completed = obs.completed;
        let slower = o.floor.is_finite() && service > (1.0 + RISE) * o.floor + self.cfg.latency_floor;
        let failing = o.fail_floor.is_finite() && fail_share > o.fail_floor + FAIL_RISE;
        let risen = slower || failing;
        // Two decisions in a row: a past-the-knee rise persists (the slow requests keep
        // coming back), a scheduler's hiccup on a fast service does not.
        let rose = risen && o.rising;
        o.rising = risen;
        if risen && !rose {
            self.open = Some(o);
            return;
        }
        if rose && o.verified.is_none() && o.rebases < MAX_REBASES {
            // Risen at the first level: the limit did not move, so it did not cause it.
            o.rising = false;
            o.rebases += 1;
            o.floor = service;
            o.fail_floor = fail_share;
            o.restart_level(obs, busy);
            self.open = Some(o);
            return;
        }
        if rose {
            // Past the knee: the climb starts from the last level served at the floor, and
            // its first round stays under the level that rose (a bracket only when a level
            // below it was verified: otherwise that level is home).
            self.ceiling = o.verified.map(|_| self.target);
            let home = o.verified.unwrap_or(self.target);
            return self.end_opening(home, obs.now);
        }
        o.floor = o.floor.min(service);
        // The climb's bound under every level's service time (`climb.rs`) starts here.
        self.service_floor.note_least(service, self.grid[self.target]);
        o.fail_floor = o.fail_floor.min(fail_share);
        // One round trip at this level, the load pressing it, the service at its floor; and
        // two windows of completions since the limit doubled, so that the requests that
        // entered at the new level (the slowest, past a knee) are among those measured.
        let round_trip = obs.now - o.raised_at >= 2.0 * service;
        let windows = done >= 2.0 * limit;
        if o.pressed && round_trip && windows {
            o.verified = Some(self.target);
            let last = self.grid.len() - 1;
            if self.target == last {
                return self.end_opening(last, obs.now);
            }
            let want = 2.0 * limit;
            self.target = self.grid.iter().rposition(|&g| f64::from(g) <= want).unwrap_or(last).max(self.target + 1);
            self.home = self.target;
            o.restart_level(obs, busy);
        }
        self.open = Some(o);
    }

    /// End the opening at `now` with the climb's home at grid point `home`.
    fn end_opening(&mut self, home: usize, now: f64) {
        self.open = None;
        self.opened_at = now;
        self.home = home;
        self.slow_start = false;
        self.up = true;
        self.stride = 1;
        self.losses = 0;
        self.calm = 0;
        self.load = Default::default();
        self.go(home, self.cfg.trial_periods);
    }
}
