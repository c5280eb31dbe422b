//! The processor-sharing scheduler: one dedicated OS thread, one virtual work clock.
//!
//! With `n` requests in service at health `H(t)` each clears work at
//! `r = H(t) · s · min(1, (C/n)²)` (docs/model.md, "The pool" and "Stochastic mode"), so all
//! of them progress at the same rate and one clock `W` (work cleared per request since the
//! start) serves them all: a request entering at `W₀` with work `w` is done when `W` reaches
//! `W₀ + w`. Targets sit in a min-heap. Between events `n` is constant and `H` is piecewise
//! linear in model time, so `W` is integrated exactly and the next completion is solved in
//! closed form (no time step). The thread waits with `recv_timeout` until that instant or
//! the next message; a late wake-up delays the reply but not the model, since `W` is
//! advanced completion by completion to the model time at which each one happened.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering as AtomicOrdering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use safegate_sim::{HealthTrack, Pool, Retries, ServiceLaw};
use tokio::sync::oneshot;

use super::{Faults, Workers};
use crate::ModelClock;

/// Most pieces of the health schedule one solve or integration walks before it gives up
/// and asks to be woken at the point it reached (a schedule at health 0 for a long time).
const MAX_PIECES: usize = 4096;
/// Longest single wait when nothing is due: the thread re-checks at least this often.
const MAX_WAIT: Duration = Duration::from_millis(250);
/// The last stretch before a due completion that the thread spends yielding rather than
/// asleep, to wake on time (see [`receive`]).
const SPIN: Duration = Duration::from_micros(150);

/// How a request left service.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Completion {
    /// Answer 500 (the fault's `error_rate` drew it).
    pub(crate) error: bool,
    /// Wall time to add after service (the fault's `added_latency_ms`).
    pub(crate) added_latency: Duration,
    /// Not served: every worker busy and the queue full ([`Workers`]); answer 503.
    pub(crate) full: bool,
}

/// What the scheduler thread is told.
#[derive(Debug)]
pub(crate) enum Msg {
    /// A request enters service; the reply goes out when its work is done.
    Submit(oneshot::Sender<Completion>),
    /// New faults, in force from now on.
    Faults(Faults),
    /// Stop: waiting requests are dropped (their handlers answer 503).
    Shutdown,
}

/// Counters the scheduler publishes (read by `Downstream::stats`).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Requests in service now.
    pub(crate) in_service: AtomicU32,
    /// Requests whose service completed (including those answered 500).
    pub(crate) served: AtomicU64,
    /// Requests answered 500 by the `error_rate` fault.
    pub(crate) errors: AtomicU64,
    /// Timed wake-ups for a due completion.
    pub(crate) wakes: AtomicU64,
    /// Requests waiting for a worker now.
    pub(crate) waiting: AtomicU32,
    /// Requests turned away with every worker busy and the queue full.
    pub(crate) full: AtomicU64,
    /// Sum of their lateness past the due instant \[ns\].
    pub(crate) late_ns: AtomicU64,
    /// The largest lateness \[ns\].
    pub(crate) max_late_ns: AtomicU64,
    /// `∫ n dt` over model time up to `occupancy_at` \[request-seconds\], as `f64` bits.
    pub(crate) occupancy: AtomicU64,
    /// The model time `occupancy` is current at \[s\], as `f64` bits.
    pub(crate) occupancy_at: AtomicU64,
}

impl Counters {
    /// `∫ n dt` over model time up to `t` \[request-seconds\]: the published integral plus
    /// the requests in service since (read without a lock, so a change between the loads
    /// misplaces at most one event's share).
    pub(crate) fn occupancy(&self, t: f64) -> f64 {
        let n = f64::from(self.in_service.load(AtomicOrdering::Relaxed));
        let at = f64::from_bits(self.occupancy_at.load(AtomicOrdering::Relaxed));
        f64::from_bits(self.occupancy.load(AtomicOrdering::Relaxed)) + n * (t - at).max(0.0)
    }
}

/// One request in service.
#[derive(Debug)]
struct Job {
    /// Work-clock value at which it is done.
    target: f64,
    /// Arrival order, for equal targets.
    seq: u64,
    reply: oneshot::Sender<Completion>,
}

impl PartialEq for Job {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Job {}
impl PartialOrd for Job {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Job {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the smallest target first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.target.total_cmp(&self.target).then_with(|| other.seq.cmp(&self.seq))
    }
}

/// Health over model time as the scheduler sees it: the schedule, or the fault's override.
#[derive(Debug, Clone)]
pub(crate) struct Health<'a> {
    track: &'a HealthTrack,
    fixed: Option<f64>,
}

impl Health<'_> {
    /// `(H(t), dH/dt, model time until the linear piece ends)`, clamped to `H ≥ 0`.
    fn piece(&self, t: f64) -> (f64, f64, f64) {
        match self.fixed {
            Some(h) => (h.max(0.0), 0.0, f64::INFINITY),
            None => {
                let (h, slope, left) = self.track.segment(t);
                if h.is_finite() && slope.is_finite() && h >= 0.0 {
                    // A sub-nanosecond piece is stepped over (rounding at a corner).
                    (h, slope, if left > 1e-9 { left } else { 1e-9 })
                } else {
                    (0.0, 0.0, if left > 1e-9 { left } else { 1e-9 })
                }
            }
        }
    }

    /// `∫ H dt` over `[t0, t1]` (exact for piecewise-linear health).
    pub(crate) fn integral(&self, t0: f64, t1: f64) -> f64 {
        let mut t = t0;
        let mut sum = 0.0;
        for _ in 0..MAX_PIECES {
            if !(t < t1) {
                return sum;
            }
            let (h, slope, left) = self.piece(t);
            let tau = left.min(t1 - t);
            sum += (h * tau + 0.5 * slope * tau * tau).max(0.0);
            t += tau;
        }
        // Too many pieces (cannot happen for a checked schedule over a short span): the
        // rest at the current value.
        sum + self.piece(t).0 * (t1 - t).max(0.0)
    }

    /// The model time at which `∫ H dt` from `t0` reaches `need`, or `Err(t)`: not within
    /// the pieces walked, which end at `t` (wake up there and solve again).
    pub(crate) fn reach(&self, t0: f64, need: f64) -> Result<f64, f64> {
        let mut t = t0;
        let mut need = need.max(0.0);
        for _ in 0..MAX_PIECES {
            if need <= 0.0 {
                return Ok(t);
            }
            let (h, slope, left) = self.piece(t);
            let whole = if left.is_finite() { (h * left + 0.5 * slope * left * left).max(0.0) } else { f64::INFINITY };
            if whole >= need {
                // Solve h·τ + slope·τ²/2 = need for the smallest τ ≥ 0 (the rationalised
                // root stays accurate when slope ≈ 0).
                let tau = if slope == 0.0 {
                    if h > 0.0 {
                        need / h
                    } else {
                        return if left.is_finite() { Err(t + left) } else { Err(f64::INFINITY) };
                    }
                } else {
                    let disc = (h * h + 2.0 * slope * need).max(0.0);
                    let den = h + disc.sqrt();
                    if den > 0.0 {
                        2.0 * need / den
                    } else {
                        left
                    }
                };
                return Ok(t + tau.min(left).max(0.0));
            }
            need -= whole;
            t += left;
        }
        Err(t)
    }
}

/// The scheduler's state, owned by its thread.
#[derive(Debug)]
pub(crate) struct Scheduler {
    pool: Pool,
    track: HealthTrack,
    service: ServiceLaw,
    clock: ModelClock,
    rng: Xoshiro256PlusPlus,
    faults: Faults,
    counters: Arc<Counters>,
    /// The virtual work clock.
    work: f64,
    /// Model time `work` is current at.
    t: f64,
    heap: BinaryHeap<Job>,
    seq: u64,
    failures: Retries,
    /// `∫ n dt` over model time up to `occupancy_at`, and the `n` since then.
    occupancy: f64,
    occupancy_at: f64,
    occupancy_n: usize,
    /// The worker pool in front of the service, if any, and the requests waiting for it.
    workers: Option<Workers>,
    waiting: VecDeque<oneshot::Sender<Completion>>,
}

/// Wait for a message until `deadline` (or at most [`MAX_WAIT`]). A futex wait ends some
/// 50–100 µs late (the kernel's timer slack and the wake-up), a few per cent of a service
/// time at speed 10; for a due completion (`precise`) the thread therefore sleeps until
/// [`SPIN`] before the deadline and yields in a loop for the rest.
fn receive(rx: &Receiver<Msg>, deadline: Option<Instant>, precise: bool) -> Result<Msg, RecvTimeoutError> {
    let Some(deadline) = deadline else { return rx.recv_timeout(MAX_WAIT) };
    let wait = deadline.saturating_duration_since(Instant::now());
    let coarse = if precise { wait.saturating_sub(SPIN) } else { wait };
    if !coarse.is_zero() {
        match rx.recv_timeout(coarse.min(MAX_WAIT)) {
            Err(RecvTimeoutError::Timeout) if precise && coarse < MAX_WAIT => {}
            other => return other,
        }
    }
    loop {
        match rx.try_recv() {
            Ok(m) => return Ok(m),
            Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
            Err(TryRecvError::Empty) if Instant::now() >= deadline => return Err(RecvTimeoutError::Timeout),
            Err(TryRecvError::Empty) => std::thread::yield_now(),
        }
    }
}

/// What the thread should wait for next.
enum Due {
    /// Nothing in service, or no progress possible: wait for a message.
    Idle,
    /// A completion due at this model time.
    Completion(f64),
    /// Re-evaluate at this model time (the solve did not reach a completion).
    Recheck(f64),
}

impl Scheduler {
    pub(crate) fn new(
        pool: Pool,
        track: HealthTrack,
        service: ServiceLaw,
        clock: ModelClock,
        seed: u64,
        counters: Arc<Counters>,
    ) -> Self {
        let t = clock.now();
        Self {
            pool,
            track,
            service,
            clock,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            faults: Faults::default(),
            counters,
            work: 0.0,
            t,
            heap: BinaryHeap::new(),
            seq: 0,
            failures: Retries::Off,
            occupancy: 0.0,
            occupancy_at: t,
            occupancy_n: 0,
            workers: None,
            waiting: VecDeque::new(),
        }
    }

    /// Put a worker pool in front of the service (`None`: none).
    pub(crate) fn with_workers(mut self, workers: Option<Workers>) -> Self {
        self.workers = workers;
        self
    }

    /// Fail completions with the scenario's retry chance `p(H)` (docs/model.md §Retries).
    pub(crate) fn with_failures(mut self, failures: Retries) -> Self {
        self.failures = failures;
        self
    }

    fn health(&self) -> Health<'_> {
        Health { track: &self.track, fixed: self.faults.health }
    }

    /// Each request's rate factor `s·min(1, (C/n)²)` at the current `n`, 0 when stalled.
    fn per_request(&self) -> f64 {
        if self.faults.stall {
            return 0.0;
        }
        let n = self.heap.len() as f64;
        if n <= 0.0 {
            return 0.0;
        }
        let c = self.pool.comfortable;
        let f = if n <= c { self.pool.rate } else { self.pool.rate * (c / n) * (c / n) };
        if f.is_finite() && f > 0.0 {
            f
        } else {
            0.0
        }
    }

    /// The next event, from the state at `self.t`.
    fn due(&self) -> Due {
        let Some(top) = self.heap.peek() else { return Due::Idle };
        let f = self.per_request();
        if f <= 0.0 {
            return Due::Idle;
        }
        match self.health().reach(self.t, (top.target - self.work).max(0.0) / f) {
            Ok(tc) => Due::Completion(tc),
            Err(t) if t.is_finite() => Due::Recheck(t),
            Err(_) => Due::Idle,
        }
    }

    /// Bring the work clock to model time `now`, completing every request whose target is
    /// reached on the way (each at its own completion time, with `n` changing there).
    fn advance(&mut self, now: f64) {
        while !self.heap.is_empty() {
            match self.due() {
                Due::Completion(tc) if tc <= now => {
                    let target = self.heap.peek().map_or(self.work, |j| j.target);
                    self.work = self.work.max(target);
                    self.t = self.t.max(tc);
                    while self.heap.peek().is_some_and(|j| j.target <= self.work) {
                        if let Some(job) = self.heap.pop() {
                            self.complete(job);
                        }
                    }
                    // Workers freed at `tc` start on the queue there.
                    self.refill();
                }
                Due::Recheck(tr) if tr <= now => {
                    let f = self.per_request();
                    self.work += f * self.health().integral(self.t, tr);
                    self.t = tr;
                }
                _ => {
                    let f = self.per_request();
                    if f > 0.0 && now > self.t {
                        // Stays short of the top target (its completion is after `now`).
                        let top = self.heap.peek().map_or(f64::INFINITY, |j| j.target);
                        self.work = (self.work + f * self.health().integral(self.t, now)).min(top);
                    }
                    break;
                }
            }
        }
        self.t = self.t.max(now);
        self.publish_in_service();
    }

    /// Publish the count in service at `self.t`, integrating the previous one up to it.
    fn publish_in_service(&mut self) {
        if self.t > self.occupancy_at {
            self.occupancy += self.occupancy_n as f64 * (self.t - self.occupancy_at);
            self.occupancy_at = self.t;
        }
        self.occupancy_n = self.heap.len();
        let c = &self.counters;
        c.occupancy.store(self.occupancy.to_bits(), AtomicOrdering::Relaxed);
        c.occupancy_at.store(self.occupancy_at.to_bits(), AtomicOrdering::Relaxed);
        c.in_service.store(self.heap.len() as u32, AtomicOrdering::Relaxed);
    }

    fn complete(&mut self, job: Job) {
        // The job is off the heap: the count is right before its reply is (a client that
        // reads the state after its answer sees itself gone).
        self.publish_in_service();
        // The fault's error rate, and the scenario's failure chance p(H) at the completion's
        // health (docs/model.md §Retries: a completion fails with p(H) and comes back).
        let p_model =
            if self.failures.enabled() { self.failures.probability(self.health().piece(self.t).0) } else { 0.0 };
        let p = 1.0 - (1.0 - self.faults.error_rate) * (1.0 - p_model);
        let error = p > 0.0 && self.rng.random::<f64>() < p;
        let ms = self.faults.added_latency_ms;
        let added_latency = if ms.is_finite() && ms > 0.0 { Duration::from_secs_f64(ms / 1e3) } else { Duration::ZERO };
        self.counters.served.fetch_add(1, AtomicOrdering::Relaxed);
        if error {
            self.counters.errors.fetch_add(1, AtomicOrdering::Relaxed);
        }
        // The handler may have gone (client disconnected): nothing to do then.
        let _ = job.reply.send(Completion { error, added_latency, full: false });
    }

    /// A request arrives: into service, into the queue, or turned away (with [`Workers`]).
    fn arrive(&mut self, reply: oneshot::Sender<Completion>) {
        match self.workers {
            Some(w) if self.heap.len() >= w.slots as usize => {
                if self.waiting.len() < w.queue as usize {
                    self.waiting.push_back(reply);
                    self.counters.waiting.store(self.waiting.len() as u32, AtomicOrdering::Relaxed);
                } else {
                    self.counters.full.fetch_add(1, AtomicOrdering::Relaxed);
                    let _ = reply.send(Completion { error: false, added_latency: Duration::ZERO, full: true });
                }
            }
            _ => self.admit(reply),
        }
    }

    /// Free workers take waiting requests, at the current work clock.
    fn refill(&mut self) {
        let Some(w) = self.workers else { return };
        while self.heap.len() < w.slots as usize {
            let Some(reply) = self.waiting.pop_front() else { break };
            self.admit(reply);
        }
        self.counters.waiting.store(self.waiting.len() as u32, AtomicOrdering::Relaxed);
    }

    fn admit(&mut self, reply: oneshot::Sender<Completion>) {
        let w = self.service.sample(&mut self.rng);
        let w = if w.is_finite() && w >= 0.0 { w } else { 1.0 };
        self.seq += 1;
        self.heap.push(Job { target: self.work + w, seq: self.seq, reply });
        self.publish_in_service();
    }

    /// The thread's loop: returns on `Shutdown` or when every sender is gone, dropping the
    /// requests still in service (their handlers answer 503).
    pub(crate) fn run(mut self, rx: Receiver<Msg>) {
        loop {
            let (deadline, timed) = match self.due() {
                Due::Idle => (None, false),
                Due::Completion(t) => (Some(self.clock.instant_at(t)), true),
                Due::Recheck(t) => (Some(self.clock.instant_at(t)), false),
            };
            let msg = receive(&rx, deadline, timed);
            let woke = Instant::now();
            let now = self.clock.at(woke);
            match msg {
                Ok(Msg::Submit(reply)) => {
                    self.advance(now);
                    self.arrive(reply);
                }
                Ok(Msg::Faults(f)) => {
                    // Up to now under the old faults, from now on under the new ones.
                    self.advance(now);
                    self.faults = f;
                }
                Ok(Msg::Shutdown) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    if let (Some(d), true) = (deadline, timed) {
                        if woke >= d {
                            let late = (woke - d).as_nanos().min(u64::MAX as u128) as u64;
                            self.counters.wakes.fetch_add(1, AtomicOrdering::Relaxed);
                            self.counters.late_ns.fetch_add(late, AtomicOrdering::Relaxed);
                            self.counters.max_late_ns.fetch_max(late, AtomicOrdering::Relaxed);
                        }
                    }
                    self.advance(now);
                }
            }
        }
        self.heap.clear();
        self.waiting.clear();
        self.counters.waiting.store(0, AtomicOrdering::Relaxed);
        self.publish_in_service();
    }
}

#[cfg(test)]
impl<'a> Health<'a> {
    pub(crate) fn for_test(track: &'a HealthTrack, fixed: Option<f64>) -> Self {
        Health { track, fixed }
    }
}
