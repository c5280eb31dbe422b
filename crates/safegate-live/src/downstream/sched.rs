//! The processor-sharing scheduler's model: one virtual work clock for every request in
//! service.
//!
//! With `n` requests in service at health `H(t)` each clears work at
//! `r = H(t) · s · min(1, (C/n)²)` (docs/model.md, "The pool" and "Stochastic mode"), so all
//! of them progress at the same rate and one clock `W` (work cleared per request since the
//! start) serves them all: a request entering at `W₀` with work `w` is done when `W` reaches
//! `W₀ + w`. Targets sit in a min-heap. Between events `n` is constant and `H` is piecewise
//! linear in model time, so `W` is integrated exactly and the next completion is solved in
//! closed form (no time step). How the scheduler waits for that instant is `driver.rs`'s
//! job; a late wake-up delays the reply but not the model, since `W` is advanced completion
//! by completion to the model time at which each one happened.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use safegate_sim::{HealthTrack, Pool, Retries, ServiceLaw};
use tokio::sync::oneshot;

use super::channel::{Completion, Counters, Msg};
use super::health::Health;
use super::{Faults, Workers};
use crate::ModelClock;

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

/// The scheduler's state, owned by its thread or task (`driver.rs`).
#[derive(Debug)]
pub(super) struct Scheduler {
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
    pub(super) fn new(
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
    pub(super) fn with_workers(mut self, workers: Option<Workers>) -> Self {
        self.workers = workers;
        self
    }

    /// Fail completions with the scenario's retry chance `p(H)` (docs/model.md §Retries).
    pub(super) fn with_failures(mut self, failures: Retries) -> Self {
        self.failures = failures;
        self
    }

    fn health(&self) -> Health<'_> {
        Health::new(&self.track, self.faults.health)
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

    /// The clock the scheduler reads.
    pub(super) fn clock(&self) -> ModelClock {
        self.clock
    }

    /// The counters it publishes.
    pub(super) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The instant to wake at next (`None`: only a message wakes it), and whether a
    /// completion is due then (rather than a re-evaluation).
    pub(super) fn deadline(&self) -> (Option<Instant>, bool) {
        match self.due() {
            Due::Idle => (None, false),
            Due::Completion(t) => (Some(self.clock.instant_at(t)), true),
            Due::Recheck(t) => (Some(self.clock.instant_at(t)), false),
        }
    }

    /// Act on `msg` received at model time `now`; false on `Shutdown`.
    pub(super) fn handle(&mut self, msg: Msg, now: f64) -> bool {
        match msg {
            Msg::Submit(reply) => {
                self.advance(now);
                self.arrive(reply);
            }
            Msg::Faults(f) => {
                // Up to now under the old faults, from now on under the new ones.
                self.advance(now);
                self.faults = f;
            }
            Msg::Shutdown => return false,
        }
        true
    }

    /// Woken with no message at model time `now`: complete what is due.
    pub(super) fn wake(&mut self, now: f64) {
        self.advance(now);
    }

    /// Drop every request in service or waiting (their handlers answer 503).
    pub(super) fn stop(&mut self) {
        self.heap.clear();
        self.waiting.clear();
        self.counters.waiting.store(0, AtomicOrdering::Relaxed);
        self.publish_in_service();
    }
}
