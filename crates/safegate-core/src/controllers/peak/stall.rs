//! Stalls: a level whose requests wait for each other.
//!
//! A backend can lose its throughput in episodes rather than smoothly: in front of a
//! database, two transactions that lock the same rows in opposite orders deadlock, and
//! every transaction queued behind their locks waits with them until the deadlock timeout
//! (PostgreSQL's `deadlock_timeout`, 1 s by default) breaks the cycle. For that second the
//! limit is filled with waiting requests and almost nothing completes. How often it
//! happens rises steeply with the number of transactions in flight (a cycle needs two of
//! them), but between episodes a level past the knee serves as fast as one below it, so
//! the climb's short trials compare a stalled level with a calm one by chance. Measured on
//! PostgreSQL (`bench overload`'s `pg-*` scenarios): at a limit of 15 two-period trials
//! delivered 1,300–1,600 txn/s for two seconds, then one trial saw 31 txn/s with a 200-ms
//! service time; a fixed limit of 3 never stalled.
//!
//! So a trial is *stalled* when its mean service time is more than [`STALL`] times the
//! **service floor** plus `latency_floor`. Its service time is the larger of two readings:
//! the timed requests' mean (busy time over completions), and, on a trial pressed at its
//! limit in most periods, Little's law: the requests in flight (their mean over the
//! period's decisions, times the period) over the completions. The second needs no timed
//! request: the tower layer times one request in `k` under heavy traffic, and on
//! PostgreSQL about two stalls in three had none of their waiting requests timed. The
//! floor is the shortest timed mean of any of the climb's trials (saturated or not; not the
//! opening's per-decision samples, whose minimum is biased low, and in queue mode far below
//! the service time), remembered across trials and bins (a bin's own service time goes
//! stale in 3 s, and a level that stalled had no fresh neighbour to compare with): it rises
//! by half every [`FLOOR_RISE`] seconds unless a trial renews it (a backend that got slower
//! for good is not taken for a stalled one for long), and a stalled trial never renews it.
//!
//! A stall is answered the way TCP answers a loss (no code is taken from any
//! implementation): the limit is **halved** (home goes to the grid point at or below half
//! the stalled level, rounded up; a **quarter** for the first stall within [`FIRST_HOLD`]
//! of the opening's end, which says the opening, judging levels by their service time over
//! a few round trips, climbed into a region that stalls: on PostgreSQL halving from the
//! opening's 17 stalled again at 9, and the climb lost four seconds in a row to stalls
//! whose in-flight transactions a lower limit cannot take back; the climb then regains half
//! the stalled level with momentum and unpaced, as TCP slow-starts back to `ssthresh` after
//! a timeout (RFC 5681): that level was served before the stall, and on PostgreSQL with 128
//! hot rows the paced climb from a quarter took seven seconds at 4 where 8–16 were best),
//! and every level from the
//! stalled one up is kept out of the climb, and out of the app-limited drift, for a hold:
//! [`FIRST_HOLD`] at first, doubled (up to [`MAX_HOLD`]) when the climb stalls again at or
//! above the level that stalled last within two holds of it; a stall lower down starts a
//! fresh hold there (stalls happen at every level, rarer the lower it is). For [`MAX_HOLD`]
//! after a stall the climb goes up without momentum, one grid step per won probe, so it
//! does not double back into the level that stalled, and **paced by its feedback**: at most
//! one step up per stall length (the stalled trial's length, the time a stall took to show;
//! about a second on PostgreSQL, whose deadlocks show after `deadlock_timeout`), as TCP
//! grows its window by one segment per round trip, the time its loss signal takes (steps
//! every trial climbed from 4 to 11 in a second, past stalls not yet seen). A stall's cut
//! stops short of half, at the lowest level between half and the stalled one
//! whose fresh rate keeps [`KEEP`] of the best there: on a coarse grid halving costs more
//! than the stall. Once per episode, as TCP's fast recovery (RFC 6582) halves once for the
//! losses of one window: the first trial after a halving that stalls too measured what was
//! stuck before it (a deadlock's waiters and their retries outlast it), so it
//! sends the climb home again without halving; a second stalled trial in a row halves.
//! While a stall's hold keeps out home's only neighbour above, the climb's hold at home
//! ends with the stall's (probe rounds that could only probe down do not lengthen it).
//!
//! All of that is the answer to a stall that is **news**. Every stall also goes into a
//! model pooled across levels (`hazard.rs`: stalls per pair of requests in flight per
//! second, and their length), which says what share of its time each level keeps serving
//! and the level above which a higher limit can only lose. Once two stalls are pooled, a
//! stall at or under that ceiling is **expected**: the model has priced it in, and the level
//! stays (capped at the ceiling), with no halving, hold or pace. Halving on every stall
//! walked the limit down from the best level to 2–5 on a model whose stalls come every few
//! seconds at its best (1,489 req/s of a best fixed 1,935; with the stalls priced in,
//! 1,800 with the ceiling's cautious estimate, 1,934 with the plain one). A stall's cut
//! never goes below the ceiling either, but the first stall after the opening still cuts
//! to a quarter: the model has nothing pooled yet.
//!
//! A host that stops (a CPU-starved or paused process) looks the same from inside: the
//! requests in service finish late together. But the controller stopped with them, so its
//! next decision came late too: a trial whose latest decision came at least
//! [`HOST_SHARE`] of its slowdown late is the host's, and neither a stall nor a floor. In
//! front of a stalled backend the decisions keep their cadence (the requests turned away
//! keep arriving). A host that stopped is waited out, not answered by halving.
//!
//! What it does not see: a stall that falls in a trial's settle periods, which are not
//! judged; a stall diluted in a long hold at home (a second of three stuck requests among
//! a few thousand completions); and a stall whose waiting requests never complete (their
//! clients gave up and cancelled them, which frees their slots) shows only as a low rate.
//! A rule that also halved on a full limit delivering under a quarter of the best lower
//! level's rate was tried on PostgreSQL and delivered less (0.61–0.93 of the best fixed
//! limit over 20-s runs, against 1.02–1.06 without it): it halved at every stall, down to
//! limits of 1 and 2 where a deadlock is rare but throughput is a third of the top, where
//! the levels that stall now and then deliver the most between stalls.
//!
//! On the in-process collapse backend the service time reaches 4× the floor only at twice
//! the knee, a level the climb's ±10 % probes never reach once past the opening; on a
//! queueing backend, at four times its workers; a health drop of up to 4× is not a stall.
//! None of them is affected in steady state.

use super::Peak;

/// A trial is stalled when its service time exceeds this many times the service floor.
pub(super) const STALL: f64 = 4.0;

/// A trial's slow service is the host's when its latest decision came at least this share
/// of the slowdown late.
pub(super) const HOST_SHARE: f64 = 0.5;

/// A stall multiplies the limit by this (rounded up to a grid point at or below).
pub(super) const DECREASE: f64 = 0.5;

/// A stall's cut stops at the lowest level that keeps this share of the best fresh rate
/// between half the stalled level and it (`Peak::keeping`).
pub(super) const KEEP: f64 = 0.75;

/// How long a stall keeps its level out of the climb at first \[s\].
pub(super) const FIRST_HOLD: f64 = 5.0;

/// The longest hold \[s\].
pub(super) const MAX_HOLD: f64 = 40.0;

/// The service floor rises by half each this many seconds without a trial at or below it
/// \[s\].
pub(super) const FLOOR_RISE: f64 = 10.0;

/// The shortest service time seen, and when \[s\] (NaN before the first); and the shortest
/// ever, which never rises, with the lowest level any was seen at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct ServiceFloor {
    value: f64,
    at: f64,
    least: f64,
    lowest_level: u32,
}

impl ServiceFloor {
    pub(super) fn new() -> Self {
        ServiceFloor { value: f64::NAN, at: f64::NAN, least: f64::INFINITY, lowest_level: u32::MAX }
    }

    /// A bound under the service time of every level from `level` up: the shortest service
    /// time ever noted, if one was noted at `level` or below (the shortest of a set that
    /// holds one of those levels is under it, and a level above serves no faster), else
    /// `None`.
    pub(super) fn least_at_or_below(&self, level: u32) -> Option<f64> {
        (self.lowest_level <= level && self.least.is_finite() && self.least > 0.0).then_some(self.least)
    }

    /// Take a service time `s` measured with the limit at `level` into the bound only (the
    /// opening's samples: their minimum is biased low, which keeps the bound a bound, but
    /// too low for the stall rule's floor).
    pub(super) fn note_least(&mut self, s: f64, level: u32) {
        if s.is_finite() && s > 0.0 {
            self.least = self.least.min(s);
            self.lowest_level = self.lowest_level.min(level);
        }
    }

    /// The floor at `now`: the last low, risen by half per [`FLOOR_RISE`] since (NaN before
    /// the first sample).
    pub(super) fn at(&self, now: f64) -> f64 {
        let age = (now - self.at).max(0.0);
        self.value * 1.5f64.powf(age / FLOOR_RISE)
    }

    /// Take a service time `s` seen at `now` with the limit at `level` (not a stalled
    /// trial's).
    pub(super) fn note(&mut self, s: f64, now: f64, level: u32) {
        if !(s.is_finite() && s > 0.0) {
            return;
        }
        self.note_least(s, level);
        let floor = self.at(now);
        if floor.is_nan() || s <= floor {
            (self.value, self.at) = (s, now);
        }
    }
}

impl Peak {
    /// If the trial that just ended at grid point `i` stalled, act on it ([`Peak::stall_at`])
    /// and say so; otherwise let its service time renew the floor.
    pub(super) fn stalled_trial(&mut self, i: usize, now: f64) -> bool {
        let t = self.trial;
        if t.completed <= 0.0 {
            return false;
        }
        let timed = t.busy / t.completed;
        // Little's law on a trial pressed at its limit (most of its periods): the mean time in flight
        // is what was in flight over what left. It needs no timed request, so it sees a
        // stall whose waiting requests an actuator that times one request in `k` missed.
        let little = if t.saturated() { t.held / t.completed } else { f64::NAN };
        let service = if little > timed { little } else { timed };
        let floor = self.service_floor.at(now);
        if !(floor.is_finite() && service > STALL * floor + self.cfg.latency_floor) {
            self.service_floor.note(timed, now, self.grid[i]);
            self.hazard.calm(t.elapsed, t.held, now);
            self.recovering = false;
            return false;
        }
        // A host that stopped running the controller (a starved or paused process: its
        // decisions came late) stopped its requests too: their wait is the host's, not a
        // stall.
        if t.late > 0.0 && t.late >= HOST_SHARE * (service - floor) {
            return false;
        }
        // A stall showed only now, this trial's length after what caused it: the climb
        // moves up at most one step per that long while stalls are recent.
        self.pace = t.elapsed.clamp(self.cfg.interval, MAX_HOLD);
        self.up_at = now + self.pace;
        // One halving per episode (as TCP's fast recovery halves once for the losses of one
        // window, RFC 6582): the first trial after a halving that stalls too is forgiven,
        // since it measured what was stuck before the halving (on PostgreSQL a deadlock's
        // waiters, and their retries, outlast the first trial after it); the climb goes home
        // again. A second one in a row is a stall of the halved level, and halves it.
        let aftermath = std::mem::take(&mut self.recovering);
        self.hazard.stall(t.elapsed, !aftermath, now);
        if aftermath {
            self.go(self.home, self.cfg.trial_periods);
            return true;
        }
        self.recovering = true;
        let top = self.hazard_top();
        if self.hazard.settled() && i <= top {
            // An expected stall: at a level the pooled stalls already price in (`hazard.rs`),
            // where the time it cost is less than a lower limit would. Cutting on every
            // such stall walked the limit down from the best level (12 → 3 on a model
            // whose best is 15); the level stays, capped at the model's best.
            self.home = self.home.min(top);
            self.go(self.home, self.cfg.trial_periods);
            return true;
        }
        self.stall_at(i, now);
        self.up = true;
        self.slow_start = false;
        self.stride = 1;
        self.losses = 0;
        self.calm = 0;
        self.go(self.home, self.cfg.trial_periods);
        true
    }

    /// A stall at grid point `i` at `now`: home to half of `i` (never above home), and the
    /// levels from `i` up held out (see the module docs for the hold).
    pub(super) fn stall_at(&mut self, i: usize, now: f64) {
        // The first stall within a hold of the opening's end says the opening climbed into
        // a region that stalls: it judged each level by its service time over a few round
        // trips, and a deadlock shows only after its timeout. There the cut is a quarter:
        // halving from the opening's overshoot (17 on PostgreSQL, best fixed limit 4–6) stalled
        // again at 9, and the climb lost four seconds in a row to stalls.
        let first = self.last_stalled.is_none() && now - self.opened_at <= FIRST_HOLD;
        let cut = if first { DECREASE * DECREASE } else { DECREASE };
        let again = now - self.last_stall <= 2.0 * self.stall_hold && self.last_stalled.is_some_and(|c| i >= c);
        self.stall_hold = if again { (2.0 * self.stall_hold).min(MAX_HOLD) } else { FIRST_HOLD };
        self.last_stall = now;
        self.last_stalled = Some(i);
        self.stalled = Some((i, now + self.stall_hold));
        let half = (f64::from(self.grid[i]) * cut).ceil();
        let halved = self.grid.iter().rposition(|&g| f64::from(g) <= half).unwrap_or(0);
        let to = if first { halved } else { self.keeping(halved, i, now) };
        // After the quarter, the climb regains half of `i` with momentum and unpaced.
        let half_point = self.grid.iter().rposition(|&g| f64::from(g) <= (f64::from(self.grid[i]) * DECREASE).ceil());
        self.regain = if first { half_point.filter(|&r| r > to) } else { None };
        // No lower than the level the pooled stalls say is best (`hazard.rs`), below the
        // one that stalled: a stall at a level that rarely stalls is not worth half of it.
        // The ceiling is finite only once stalls are pooled (`StallHazard::settled`).
        let priced = !first && self.hazard.settled();
        let to = if priced { to.max(self.hazard_top().min(i.saturating_sub(1))) } else { to };
        self.home = self.home.min(to);
    }

    /// Where a stall at grid point `i` sends home, given the halved point `halved` (at or
    /// below `i`): the lowest point in `[halved, i)` whose fresh rate keeps [`KEEP`] of the
    /// best fresh rate there, `halved` when none is known. On a coarse grid halving costs
    /// more than the stall: from 4 to 2 on PostgreSQL halved the throughput (380 against
    /// 700 txn/s between stalls) for the whole hold, while a stall at 4 came every ten
    /// seconds or so; 3 kept 540.
    fn keeping(&self, halved: usize, i: usize, now: f64) -> usize {
        if halved >= i {
            return halved;
        }
        // Two passes over the few points, so that a decision allocates nothing.
        // Each weighed by the share of its time it keeps serving between stalls (`hazard.rs`).
        let rates = || {
            (halved..=i).filter_map(|j| self.usable(j, now).map(|r| (j, r * self.hazard.keep(f64::from(self.grid[j])))))
        };
        let best = rates().map(|r| r.1).fold(0.0, f64::max);
        if !(best > 0.0) {
            return halved;
        }
        rates().find(|&(j, r)| j < i && r >= KEEP * best).map_or(halved, |r| r.0)
    }

    /// The highest grid point the climb may probe or drift to now: below the opening's
    /// ceiling and a held-out stalled level, and not above home while the climb is paced.
    pub(super) fn top(&self) -> usize {
        let last = self.grid.len() - 1;
        let top = self.ceiling.map_or(last, |c| c.saturating_sub(1).min(last));
        // Not past the level above which stalls cost more than a higher limit can deliver
        // (`hazard.rs`), nor below home (a cut is the stall's to make).
        let top = top.min(self.hazard_top().max(self.home));
        let top = if self.paced { top.min(self.home) } else { top };
        self.stalled.map_or(top, |(c, _)| c.saturating_sub(1).min(top))
    }

    /// The highest grid point at or below the pooled stalls' ceiling
    /// ([`StallHazard::ceiling`](super::hazard::StallHazard::ceiling), rounded), the last
    /// point before any stall.
    pub(super) fn hazard_top(&self) -> usize {
        let c = self.hazard.ceiling().round();
        self.grid.iter().rposition(|&g| f64::from(g) <= c).unwrap_or(0)
    }

    /// Whether the last stall was within [`MAX_HOLD`] of `now` (the climb goes up without
    /// momentum then).
    pub(super) fn stalled_lately(&self, now: f64) -> bool {
        now - self.last_stall < MAX_HOLD
    }

    /// Forget a hold that has run out (called before a probe is chosen).
    pub(super) fn expire_stall(&mut self, now: f64) {
        if self.stalled.is_some_and(|(_, until)| now >= until) {
            self.stalled = None;
        }
        self.paced = self.stalled_lately(now) && now < self.up_at;
        // The regain ends at half the stalled level, however home got there (an app-limited
        // drift too), and with the stall's memory.
        if self.regain.is_some_and(|r| self.home >= r) || !self.stalled_lately(now) {
            self.regain = None;
        }
    }
}
