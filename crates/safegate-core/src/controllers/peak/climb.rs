//! The climb: where the next trial goes ([`Peak::next_probe`]) and what a finished trial
//! decides ([`Peak::finish_trial`]: a probe won or lost, slow start ends, an app-limited
//! trial drifts the limit up).

use super::trial::{Stage, Trial};
use super::Peak;

/// Between two points of the same throughput, a lower limit wins when its service time is
/// shorter by more than this share (and `latency_floor`) …
const CHEAPER: f64 = 0.05;
/// … and a higher one when its service time is longer by at most this share (or
/// `latency_floor`).
const NO_DEARER: f64 = 0.02;

/// Two rates differ only when they are this many standard errors of their difference
/// apart (and more than `tolerance`): within it they are the same throughput, and service
/// time decides. On a quiet backend the tolerance is the wider; on a noisy one (a database
/// whose lock waits and deadlock timeouts stall every transaction for a while) a probe
/// that won by noise would walk the limit anywhere.
const Z: f64 = 2.0;

/// Most the hold between probe rounds is stretched for a coarse grid and slow probes.
const MAX_SCALE: u32 = 32;

/// Most doublings of the hold between probe rounds (4 periods → 64 at most: 3.2 s at 50 ms).
const MAX_CALM: u32 = 4;

impl Peak {
    /// Start a trial at grid point `i` measuring `len` periods (after a settle if the
    /// limit changes).
    pub(super) fn go(&mut self, i: usize, len: u32) {
        self.stage = if i == self.target { Stage::Measure } else { Stage::Settle(0) };
        self.target = i;
        self.trial = Trial::default();
        self.trial_len = len;
    }

    /// The grid point `stride` steps from home in the current direction, if it differs
    /// from home.
    fn neighbour(&self, up: bool, stride: usize) -> Option<usize> {
        // The opening's bracket (the level whose service time rose is not probed again
        // before the first round ends) and a stalled level's hold.
        let top = self.top();
        // Regaining after a deep cut: momentum up to half the stalled level, not past it.
        let top = match self.regain {
            Some(r) if self.home < r => top.min(r),
            _ => top,
        };
        let i = if up { (self.home + stride).min(top) } else { self.home.saturating_sub(stride) };
        (i != self.home).then_some(i)
    }

    /// The grid point nearest `2·home` above it, if home is not the top.
    fn doubling(&self) -> Option<usize> {
        let want = 2.0 * f64::from(self.grid[self.home]);
        let above = self.home + 1;
        if above >= self.grid.len() {
            return None;
        }
        let j = self.grid.iter().rposition(|&g| f64::from(g) <= want).unwrap_or(above);
        Some(j.max(above))
    }

    /// Whether a probe of grid point `i`, below home, cannot win: by Little's law `i`
    /// requests in flight for a mean time `S(i)` each deliver at most `i/S(i)`, and `S(i)`
    /// is at least the shortest service time `S₀` ever seen at or below `i` (a level's
    /// requests are not served faster for more of them being in flight: the one assumption,
    /// true of queues, locks and the collapse law alike; a backend that got slower since only
    /// makes `S₀` a lower bound than it could be, and the probe runs). When `i/S₀` is short
    /// of home's rate by the margin a win below needs (`tolerance`, and the noise), neither
    /// of a lower level's ways to win (more throughput, or the same for a shorter service
    /// time) is open, and the probe is lost without running it. A home served at the floor
    /// (at or under a knee) is such a level: at a knee of 2 the probe of 1 delivers half,
    /// and cost a tenth of the small-knee sweep's goodput.
    fn cannot_win_below(&self, i: usize, now: f64) -> bool {
        let Some(h) = self.usable(self.home, now) else { return false };
        let Some(least) = self.service_floor.least_at_or_below(self.grid[i]) else { return false };
        let most = f64::from(self.grid[i]) / least;
        // Each level weighed by the share of its time it keeps serving (`hazard.rs`).
        let (most, h) = (
            most * self.hazard.keep(f64::from(self.grid[i])),
            h * self.hazard.keep(f64::from(self.grid[self.home])),
        );
        let margin = (self.cfg.tolerance * h).max(Z * self.rate_error(self.home));
        i < self.home && most.is_finite() && most < h - margin
    }

    /// A probe of the climb lost (run, or not run because it could not win:
    /// `cannot_win_below`): the other side next, or the round is over.
    fn lost(&mut self, now: f64) {
        self.up = !self.up;
        self.losses += 1;
        // No point on the other side (the top, or a stall's hold above home): the round
        // is over. Before, it probed the same side again, and a home of 3 under a held 4
        // spent two trials of every round at 2 on PostgreSQL.
        if self.neighbour(self.up, 1).is_none() {
            self.losses = 2;
        }
        self.stride = 1;
        if self.losses >= 2 {
            self.end_round(now);
        } else {
            self.next_probe(now);
        }
    }

    /// The next probe of the climb from home, or a hold at home if there is no other point.
    fn next_probe(&mut self, now: f64) {
        let c = self.cfg;
        if self.slow_start {
            match self.doubling() {
                Some(j) => return self.go(j, c.trial_periods),
                None => {
                    self.slow_start = false;
                    self.up = false;
                    self.stride = 1;
                }
            }
        }
        let probe = self.neighbour(self.up, self.stride).or_else(|| {
            self.up = !self.up;
            self.stride = 1;
            self.neighbour(self.up, 1)
        });
        match probe {
            Some(i) if i < self.home && self.cannot_win_below(i, now) => self.lost(now),
            Some(i) => self.go(i, c.trial_periods),
            None => self.go(self.home, c.hold_periods),
        }
    }

    /// A trial ended at `now`.
    pub(super) fn finish_trial(&mut self, now: f64) {
        self.expire_stall(now);
        let t = self.trial;
        let i = self.target;
        let saturated = t.saturated();
        if saturated {
            self.record(i, now);
        }
        // A stall (the service time many times its floor) halves the limit, whatever the
        // load: a stalled level fills up with waiting requests.
        if self.stalled_trial(i, now) {
            return;
        }
        if !saturated {
            return self.app_limited(i, t.max_in_flight);
        }
        if i == self.home {
            return match self.usable(i, now) {
                Some(_) => self.next_probe(now),
                None => self.go(i, self.cfg.trial_periods),
            };
        }
        // How much longer than planned this probe ran (waiting for its completions).
        self.stretch = (t.periods / self.cfg.trial_periods.max(1)).clamp(1, 8);
        let Some(p) = self.usable(i, now) else {
            // The noise guard: a probe is compared only once its bin holds enough samples.
            return self.go(i, self.cfg.trial_periods);
        };
        let Some(h) = self.usable(self.home, now) else {
            return self.go(self.home, self.cfg.trial_periods);
        };
        // Each level's rate over time, stalls included: its trials' rate times the share of
        // its time it keeps serving between stalls (`hazard.rs`; 1 before any stall).
        let (kp, kh) = (self.hazard.keep(f64::from(self.grid[i])), self.hazard.keep(f64::from(self.grid[self.home])));
        let (p, h) = (p * kp, h * kh);
        let tol = self.cfg.tolerance;
        // Latency decides between points of the same throughput: a lower limit must buy a
        // shorter service time (a queue past `W` workers), a higher one may cost none (a
        // fast service, whose limit should be out of the way, not at the smallest point
        // that carries today's load).
        let (sp, sh) = (self.bins[i].service, self.bins[self.home].service);
        let known = sp.is_finite() && sh.is_finite();
        // Service time decides between two points of the same throughput: a lower limit
        // wins when it is shorter by more than 5 % and `latency_floor`, a higher one when it
        // is longer by at most 2 % or `latency_floor` (less than a grid step's 10 %, so a
        // queue past `W` workers, whose service time grows with the limit, stops the climb).
        let se = (kp * self.rate_error(i)).hypot(kh * self.rate_error(self.home));
        let margin = (tol * h).max(Z * se);
        let same = h > 0.0 && p >= h - margin;
        let better = p > h + margin;
        let floor = self.cfg.latency_floor;
        // A lower limit bought only with a shorter service time must deliver the same rate
        // within `tolerance` outright, not within the noise: on a noisy backend (a database's
        // stalls) two standard errors can hide a third of the throughput, and the climb walked
        // down from 3 to 2 on PostgreSQL for a service time shorter by its lock waits.
        let same_below = h > 0.0 && p >= h - tol * h;
        let win = if i < self.home {
            better || (same_below && known && sp < sh - (CHEAPER * sh).max(floor))
        } else {
            better || (same && known && sp <= sh + (NO_DEARER * sh).max(floor))
        };
        if win {
            // Momentum, except up a curve that stalled lately: there the climb adds one
            // step at a time (a stall halved the limit; doubling back is what stalled);
            // and except down a plateau: a lower level that won only on service time (the
            // same rate) is one step nearer the knee, not a slope to run down (doubling
            // there probed half the knee, at half its throughput).
            // Up to half the level that stalled after a deeper cut (`regain`), the climb is
            // neither careful nor paced: that level was served before the stall, as TCP's
            // slow start returns to `ssthresh` after a timeout (RFC 5681).
            let regaining = self.regain.is_some_and(|r| i <= r);
            let careful = (i > self.home && self.stalled_lately(now) && !regaining) || (i < self.home && !better);
            if i > self.home && self.stalled_lately(now) && !regaining && self.pace.is_finite() {
                // Paced: the next step up waits as long as the last stall took to show (a
                // deadlock shows after its timeout; steps every 150 ms climbed from 4 to 11
                // in a second on PostgreSQL, past the stalls they could not see yet).
                self.up_at = now + self.pace;
                self.paced = true;
            }
            self.home = i;
            self.losses = 0;
            self.calm = 0;
            if !self.slow_start && !careful {
                self.stride = (2 * self.stride).min(self.max_stride);
            }
            if self.regain.is_some_and(|r| i >= r) {
                // Half the stalled level regained: careful and paced from here on, starting
                // with the next step up.
                self.regain = None;
                self.stride = 1;
                if self.stalled_lately(now) && self.pace.is_finite() {
                    self.up_at = now + self.pace;
                    self.paced = true;
                }
            }
            return self.next_probe(now);
        }
        if self.slow_start {
            // The doubling did not pay: the top is between home and the probe (or at home).
            self.slow_start = false;
            self.up = true;
            self.losses = 0;
            self.stride = 1;
            return self.next_probe(now);
        }
        self.lost(now);
    }

    /// Both sides lost: hold at home until the next round.
    fn end_round(&mut self, now: f64) {
        self.losses = 0;
        self.ceiling = None;
        // Probing costs throughput in proportion to how far a probe is from home and how
        // long it takes: the hold between rounds grows with both (`coarseness`, and
        // `stretch`: a slow backend's probes wait for their completions), so that the
        // share of time spent probing stays about the same on every backend.
        let scale = (self.coarseness() * self.stretch).min(MAX_SCALE);
        let mut hold = self.cfg.hold_periods.saturating_mul(1 << self.calm.min(MAX_CALM)).saturating_mul(scale);
        // The level above home is a stall's, held out: hold until the stall's hold ends,
        // no longer (a doubled hold kept a limit of 2 four seconds past it on PostgreSQL,
        // at 0.6 of the best fixed limit). Until then the rounds, which can only probe
        // down, grow calmer as any other: each probe below costs throughput (a third of
        // it from 3 to 2), and a round every 0.8 s cost 7 % on PostgreSQL.
        if self.top() <= self.home {
            // Whichever keeps the level above home out: the stall's hold, the pace, or both.
            let held = self.stalled.filter(|&(c, _)| c <= self.home + 1);
            let stall = held.map_or(f64::NAN, |(_, until)| until);
            let until = if self.paced { stall.max(self.up_at) } else { stall };
            if until.is_finite() {
                let left = ((until - now) / self.cfg.interval).ceil().max(1.0);
                hold = hold.min(left as u32); // saturating cast
            }
        }
        self.calm += 1;
        self.go(self.home, hold);
    }

    /// How much coarser than `step` the grid is around home, rounded up (at least 1): at
    /// small limits the neighbours are whole requests apart (home 2 probes 1 and 3, ±50 %
    /// where the grid's step is 10 %), and each probe costs as much more throughput, so the
    /// hold between probe rounds is that much longer (the same share of time lost to
    /// probing as on a fine grid).
    fn coarseness(&self) -> u32 {
        let h = f64::from(self.grid[self.home]);
        let up = self.grid.get(self.home + 1).map_or(0.0, |&g| f64::from(g) - h);
        let down = self.home.checked_sub(1).map_or(0.0, |i| h - f64::from(self.grid[i]));
        let rel = up.max(down) / h;
        (rel / self.cfg.step).ceil().clamp(1.0, 16.0) as u32
    }

    /// The trial at grid point `i` did not fill the limit: never lower it; drift up when
    /// the load came near it, but not into a stalled level's hold.
    fn app_limited(&mut self, i: usize, max_in_flight: f64) {
        let mut h = self.home.max(i);
        let cap = self.stalled.map_or(self.grid.len() - 1, |(c, _)| c.saturating_sub(1));
        let near = max_in_flight >= (1.0 - self.cfg.step) * f64::from(self.grid[h]);
        if h + 1 < self.grid.len() && h < cap && near {
            h += 1;
        }
        self.home = h;
        self.losses = 0;
        self.calm = 0;
        self.ceiling = None;
        if !self.slow_start {
            self.up = true;
            self.stride = 1;
        }
        self.go(h, self.cfg.trial_periods);
    }
}
