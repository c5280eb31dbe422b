use super::super::testing::assert_survives_garbage;
use super::curve::grid;
use super::*;
use crate::controllers::{Actuator, Setting};
use crate::estimators::test_rng::SplitMix;
use crate::policy::{Observation, Policy};

/// A backend whose service time grows past a knee: `base·max(1, (n/knee)²)`
/// (collapsing: throughput `n/S(n)` peaks at the knee and falls as `knee²/(base·n)`)
/// or `base·max(1, n/knee)` (flat: `knee` workers, throughput flat past them).
#[derive(Debug, Clone, Copy)]
struct Backend {
    base: f64,
    knee: f64,
    flat: bool,
}

impl Backend {
    fn collapsing(base: f64, knee: f64) -> Self {
        Self { base, knee, flat: false }
    }

    fn service(&self, n: f64) -> f64 {
        let r = (n / self.knee).max(1.0);
        self.base * if self.flat { r } else { r * r }
    }

    /// The top of the curve \[req/s\].
    fn peak(&self) -> f64 {
        self.knee / self.base
    }
}

/// A closed-loop fluid model of the tower layer in reject mode: `lambda` req/s offered,
/// admitted while fewer than the limit are in service (the rest rejected at once), each
/// 1-ms step completing `n·dt/S(n)`.
struct Model {
    obs: Observation,
    n: f64,
    lambda: f64,
    backend: Backend,
    /// Multiplicative noise on each step's completions, uniform in `1 ± noise`.
    noise: f64,
    rng: SplitMix,
    /// Stalls (a deadlock's wait, as in front of a database): `(k, d)` starts one with
    /// probability `k·n²·dt` in each step with `n` in service; for `d` seconds nothing
    /// completes, then everything in service completes at once, having waited the stall.
    stall: Option<(f64, f64)>,
    /// When the stall under way ends (NaN when none is).
    stalled_until: f64,
    /// Whether a stall is the host's: the controller is not run during it either.
    host: bool,
    /// Whether a stall's requests go untimed: they are charged the backend's service time,
    /// not their wait (an actuator that times one request in `k` and charges the others
    /// the timed mean, as the tower layer does under heavy traffic).
    untimed: bool,
    /// Whether the controller reads the load in flight between a step's completions and
    /// their refill (a timer tick's batch of completions not yet replaced by new arrivals).
    read_between: bool,
}

const DT: f64 = 0.001;

/// What a run saw: `(time, limit)` at every decision and `(time, completed, offered,
/// admitted)` at every step.
#[derive(Default)]
struct Trace {
    limits: Vec<(f64, u32)>,
    counts: Vec<(f64, f64, f64, f64)>,
}

impl Trace {
    /// Delivered throughput over `[t0, t1]` \[req/s\].
    fn throughput(&self, t0: f64, t1: f64) -> f64 {
        let at = |t: f64| self.counts.iter().find(|c| c.0 >= t - 1e-9).unwrap_or(self.counts.last().unwrap()).1;
        (at(t1) - at(t0)) / (t1 - t0)
    }

    /// Requests turned away over `[t0, t1]`.
    fn rejected(&self, t0: f64, t1: f64) -> f64 {
        let at = |t: f64| {
            let c = self.counts.iter().find(|c| c.0 >= t - 1e-9).unwrap_or(self.counts.last().unwrap());
            c.2 - c.3
        };
        at(t1) - at(t0)
    }

    /// The limits decided over `[t0, t1]`: (lowest, highest).
    fn range(&self, t0: f64, t1: f64) -> (u32, u32) {
        let ls = self.limits.iter().filter(|l| l.0 >= t0 && l.0 <= t1).map(|l| l.1);
        (ls.clone().min().unwrap(), ls.max().unwrap())
    }

    /// The last time before `t1` a limit outside `[lo, hi]` was in force (`t0` if none since).
    fn settled_since(&self, t0: f64, t1: f64, lo: f64, hi: f64) -> f64 {
        self.limits
            .iter()
            .filter(|l| l.0 >= t0 && l.0 <= t1 && !(lo..=hi).contains(&f64::from(l.1)))
            .map(|l| l.0)
            .fold(t0, f64::max)
    }
}

impl Model {
    fn new(lambda: f64, backend: Backend) -> Self {
        Self {
            obs: Observation::new(0.0, 0.0, 256.0),
            n: 0.0,
            lambda,
            backend,
            noise: 0.0,
            rng: SplitMix(11),
            stall: None,
            stalled_until: f64::NAN,
            host: false,
            untimed: false,
            read_between: false,
        }
    }

    /// Run `p` until `until` seconds, deciding every `every` steps; the limit in force
    /// caps the requests in service.
    fn run(&mut self, p: &mut Peak, until: f64, every: u64, trace: &mut Trace) {
        let mut k = 0u64;
        while self.obs.now < until - 1e-9 {
            let limit = f64::from(p.limit());
            let s = self.backend.service(self.n);
            let jitter = 1.0 + self.noise * (2.0 * self.rng.next_f64() - 1.0);
            let mut done = (self.n * DT / s * jitter).min(self.n);
            let mut latency = done * s;
            if let Some((k, d)) = self.stall {
                if self.obs.now >= self.stalled_until {
                    // The stall is over: what waited through it completes.
                    done = self.n;
                    latency = self.n * if self.untimed { s } else { d };
                    self.stalled_until = f64::NAN;
                } else if self.stalled_until.is_finite() {
                    (done, latency) = (0.0, 0.0);
                } else if self.rng.next_f64() < k * self.n * self.n * DT {
                    self.stalled_until = self.obs.now + d;
                    (done, latency) = (0.0, 0.0);
                }
            }
            self.n -= done;
            let between = self.n;
            let arrivals = self.lambda * DT;
            let admit = arrivals.min((limit - self.n).max(0.0));
            self.n += admit;
            let o = &mut self.obs;
            o.now = ((o.now + DT) * 1e6).round() / 1e6;
            o.completed += done;
            o.latency_total += latency;
            o.offered += arrivals;
            o.admitted += admit;
            o.queue = self.n;
            o.in_service = self.n;
            let frozen = self.host && self.stalled_until.is_finite();
            if k % every == 0 && !frozen {
                let a = if self.read_between {
                    p.decide(&Observation { queue: between, in_service: between, ..*o })
                } else {
                    p.decide(o)
                };
                if p.config().actuator == Actuator::Executors {
                    assert_eq!(a.concurrency, Some(p.limit()));
                }
                trace.limits.push((o.now, p.limit()));
            }
            trace.counts.push((o.now, o.completed, o.offered, o.admitted));
            k += 1;
        }
    }
}

/// The tower layer's setting for a 256-request pool, 50-ms decisions.
fn pool(actuator: Actuator) -> Peak {
    let s = Setting { capacity: 256.0, executors: 256, period: 0.05 };
    let cfg = PeakConfig::for_setting(actuator, &s);
    assert_eq!((cfg.initial_limit, cfg.max_limit), (8.0, 256.0));
    Peak::new(cfg).unwrap()
}

#[test]
fn grid_is_geometric_and_spans_the_bounds() {
    assert_eq!(
        grid(1, 45, 0.1),
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17, 19, 21, 23, 25, 28, 31, 34, 37, 41, 45]
    );
    assert_eq!(grid(10, 10, 0.1), [10]);
    assert_eq!(grid(0, 3, 1.0), [1, 2, 3]);
    assert!(grid(1, 1_000_000, 0.05).len() < 300);
}

/// On the collapsing curve (knee 32, 10 ms: peak 3200 req/s) offered 1.5× and 3× its
/// peak, from a pool of 256: settled near the knee within 5 s, ≥ 90 % of the peak.
#[test]
fn overload_on_a_collapsing_curve_settles_at_the_knee() {
    let b = Backend::collapsing(0.01, 32.0);
    for actuator in [Actuator::Executors, Actuator::InFlight] {
        // Every millisecond (the simulator's arrivals) and once per period (the tower).
        for every in [1, 50] {
            for (load, preloaded) in [(1.5, false), (3.0, false), (3.0, true)] {
                let mut p = pool(actuator);
                let mut m = Model::new(load * b.peak(), b);
                if preloaded {
                    m.n = 256.0; // deep in collapse when the controller takes over
                }
                let mut t = Trace::default();
                m.run(&mut p, 5.0, every, &mut t);
                let (lo, hi) = t.range(2.5, 5.0);
                let share = t.throughput(2.5, 5.0) / b.peak();
                let since = t.settled_since(0.0, 5.0, 0.8 * 32.0, 1.25 * 32.0);
                println!(
                    "{}/every {every}/{load}x{}: limits [{lo}, {hi}] over 2.5–5 s, in band since {since:.2} s, {:.1} % of peak, home {}",
                    actuator.name(),
                    if preloaded { " preloaded" } else { "" },
                    100.0 * share,
                    p.home()
                );
                assert!(since <= 2.5 && lo as f64 >= 25.6 && hi as f64 <= 40.0, "limits [{lo}, {hi}]");
                assert!(share >= 0.9, "{share}");
            }
        }
    }
}

/// The same with every millisecond's completions off by up to ±50 % (uniform): a
/// period's rate is off by ~2 %, so probes see noise near the tolerance.
#[test]
fn a_noisy_backend_still_settles_at_the_knee() {
    let b = Backend::collapsing(0.01, 32.0);
    for (load, seed) in [(1.5, 1), (3.0, 2), (3.0, 3)] {
        let mut p = pool(Actuator::Executors);
        let mut m = Model::new(load * b.peak(), b);
        m.noise = 0.5;
        m.rng = SplitMix(seed);
        let mut t = Trace::default();
        m.run(&mut p, 10.0, 1, &mut t);
        let (lo, hi) = t.range(2.5, 10.0);
        let share = t.throughput(2.5, 10.0) / b.peak();
        println!("noisy/{load}x/seed {seed}: limits [{lo}, {hi}] over 2.5–10 s, {:.1} % of peak", 100.0 * share);
        // The range includes probes, a grid step or two either side of home.
        assert!(lo as f64 >= 24.0 && hi as f64 <= 40.0, "limits [{lo}, {hi}]");
        assert!(share >= 0.9, "{share}");
    }
}

/// Saturated load read between a batch of completions and its refill: at a knee of 64
/// and 20 ms, each 1-ms step completes 5 % of the limit, so every reading is `0.95·L`
/// (below `L − 1`, within a grid step). It is still a capacity sample: without that the
/// climb took the load for app-limited and drifted up past the knee.
#[test]
fn load_read_between_completions_and_their_refill_is_still_saturated() {
    let b = Backend::collapsing(0.02, 64.0);
    for load in [1.5, 3.0] {
        let mut p = pool(Actuator::InFlight);
        let mut m = Model::new(load * b.peak(), b);
        m.read_between = true;
        let mut t = Trace::default();
        m.run(&mut p, 10.0, 50, &mut t);
        let (lo, hi) = t.range(5.0, 10.0);
        let share = t.throughput(5.0, 10.0) / b.peak();
        println!("read between/{load}x: limits [{lo}, {hi}] over 5–10 s, {:.1} % of peak, home {}", 100.0 * share, p.home());
        assert!(f64::from(p.home()) <= 1.25 * 64.0, "home {}", p.home());
        assert!(share >= 0.9, "{share}");
    }
}

/// Flat past 32 workers: a bigger limit adds latency, not throughput; it settles at
/// most 1.5× the knee.
#[test]
fn a_flat_curve_settles_near_its_knee() {
    let b = Backend { base: 0.01, knee: 32.0, flat: true };
    for load in [1.5, 3.0] {
        let mut p = pool(Actuator::Executors);
        let mut m = Model::new(load * b.peak(), b);
        let mut t = Trace::default();
        m.run(&mut p, 5.0, 1, &mut t);
        let (lo, hi) = t.range(2.5, 5.0);
        let share = t.throughput(2.5, 5.0) / b.peak();
        println!("flat/{load}x: limits [{lo}, {hi}] over 2.5–5 s, {:.1} % of peak, home {}", 100.0 * share, p.home());
        // Probes below the knee (momentum) may reach 0.7 W; the throughput share is what
        // they cost.
        assert!(hi as f64 <= 1.5 * 32.0 && lo >= 22, "[{lo}, {hi}]");
        assert!(share >= 0.9, "{share}");
    }
}

/// At 30 % of the peak it admits everything once past its start (8 in, 9.6 needed),
/// and the limit never falls.
#[test]
fn light_load_is_never_limited() {
    let b = Backend::collapsing(0.01, 32.0);
    let mut p = pool(Actuator::Executors);
    let mut m = Model::new(0.3 * b.peak(), b);
    let mut t = Trace::default();
    m.run(&mut p, 10.0, 1, &mut t);
    let rejected = t.rejected(1.0, 10.0);
    let total = t.rejected(0.0, 10.0) / m.obs.offered;
    println!("light: {rejected:.3} rejected after 1 s, {:.2} % overall, limit {}", 100.0 * total, p.limit());
    assert!(rejected.abs() < 1e-6, "{rejected}");
    assert!(total < 0.01, "{total}");
    assert!(t.limits.windows(2).all(|w| w[1].1 >= w[0].1), "the limit fell");
    assert!((t.throughput(1.0, 10.0) / (0.3 * b.peak()) - 1.0).abs() < 0.01);
}

/// The backend's service time doubles and its knee halves mid-run (peak 3200 → 800),
/// then recovers: the limit follows within 5 s each time.
#[test]
fn a_health_step_is_followed() {
    let healthy = Backend::collapsing(0.01, 32.0);
    let sick = Backend::collapsing(0.02, 16.0);
    for load in [1.5, 3.0] {
        let mut p = pool(Actuator::Executors);
        let mut m = Model::new(load * healthy.peak(), healthy);
        let mut t = Trace::default();
        m.run(&mut p, 5.0, 1, &mut t);
        m.backend = sick;
        m.run(&mut p, 12.0, 1, &mut t);
        let since = t.settled_since(5.0, 12.0, 0.8 * 16.0, 1.25 * 16.0);
        let (lo, hi) = t.range(10.0, 12.0);
        let share = t.throughput(10.0, 12.0) / sick.peak();
        println!(
            "step/{load}x: in [12.8, 20] from {since:.2} s (step at 5 s), limits [{lo}, {hi}] over 10–12 s, {:.1} % of peak",
            100.0 * share
        );
        assert!(since <= 10.0, "{since}");
        assert!(share >= 0.9, "{share}");
        m.backend = healthy;
        m.run(&mut p, 19.0, 1, &mut t);
        let since = t.settled_since(12.0, 19.0, 0.8 * 32.0, 1.25 * 32.0);
        let share = t.throughput(17.0, 19.0) / healthy.peak();
        println!("recovery/{load}x: in [25.6, 40] from {since:.2} s (step at 12 s), {:.1} % of peak", 100.0 * share);
        assert!(since <= 17.0, "{since}");
        assert!(share >= 0.9, "{share}");
    }
}

#[test]
fn bounds_are_respected() {
    let b = Backend::collapsing(0.01, 32.0);
    // A maximum below the knee: it climbs to the maximum and holds it.
    let cfg = PeakConfig { actuator: Actuator::Executors, max_limit: 20.0, ..PeakConfig::default() };
    let mut p = Peak::new(cfg).unwrap();
    let mut m = Model::new(2.0 * b.peak(), b);
    let mut t = Trace::default();
    m.run(&mut p, 5.0, 1, &mut t);
    assert_eq!(t.range(2.5, 5.0).1, 20);
    assert!(t.limits.iter().all(|l| l.1 <= 20));
    // A minimum above the knee: it never goes below it. (Closed start: the fluid model
    // never abandons a request, so an opening at the maximum of 1000 would take ~10 s
    // to drain; the tower's clients give up and cancel.)
    let cfg = PeakConfig {
        actuator: Actuator::Executors,
        min_limit: 40.0,
        initial_limit: 40.0,
        open_start: false,
        ..PeakConfig::default()
    };
    let mut p = Peak::new(cfg).unwrap();
    let mut m = Model::new(2.0 * b.peak(), b);
    let mut t = Trace::default();
    m.run(&mut p, 5.0, 1, &mut t);
    assert_eq!(t.range(2.5, 5.0).0, 40);
    // The setting's pool of 8 on executors: a grid of 1..=8, opening at 2.
    let p = Peak::new(PeakConfig::for_setting(Actuator::Executors, &Setting::default())).unwrap();
    assert_eq!((p.limit(), p.grid.len()), (2, 8));
    assert!(p.is_opening());
}

#[test]
fn the_curve_learns_the_peak() {
    let b = Backend::collapsing(0.01, 32.0);
    let mut p = pool(Actuator::Executors);
    let mut m = Model::new(3.0 * b.peak(), b);
    m.run(&mut p, 5.0, 1, &mut Trace::default());
    let best = p.curve().max_by(|a, b| a.rate.total_cmp(&b.rate)).unwrap();
    assert!((28..=37).contains(&best.limit), "{best:?}");
    assert!((best.rate / b.peak() - 1.0).abs() < 0.1, "{best:?}");
    assert!((best.service / b.service(f64::from(best.limit)) - 1.0).abs() < 0.15, "{best:?}");
    assert!(!p.in_slow_start());
}

#[test]
fn bad_config_is_refused() {
    let d = PeakConfig::default();
    let field = |c: PeakConfig| Peak::new(c).unwrap_err().field;
    assert_eq!(field(PeakConfig { max_limit: 2e6, ..d }), "max_limit");
    assert_eq!(field(PeakConfig { initial_limit: 0.5, ..d }), "initial_limit");
    assert_eq!(field(PeakConfig { step: 0.01, ..d }), "step");
    assert_eq!(field(PeakConfig { tolerance: f64::NAN, ..d }), "tolerance");
    assert_eq!(field(PeakConfig { interval: 0.0, ..d }), "interval");
    assert_eq!(field(PeakConfig { trial_periods: 0, ..d }), "trial_periods");
    assert_eq!(field(PeakConfig { weight: 0.0, ..d }), "weight");
    assert_eq!(field(PeakConfig { shift: -1.0, ..d }), "shift");
    assert_eq!(field(PeakConfig { min_samples: 0, ..d }), "min_samples");
}

#[test]
fn garbage_never_yields_a_bad_action() {
    assert_survives_garbage(&mut Peak::new(PeakConfig::default()).unwrap());
    let mut p = Peak::new(PeakConfig::for_setting(Actuator::Executors, &Setting::default())).unwrap();
    assert_survives_garbage(&mut p);
    assert!((1..=8).contains(&p.limit()));
}

/// Small knees, fresh limiter, overloaded from the first instant (1.5× and 3× the peak):
/// the opening doubles from 2 and stops within one doubling of the knee, so the first
/// second already delivers most of the peak (≥ 0.6 here, where a 10-ms service's probes
/// wait for their completions; an opening at the maximum let 256 requests
/// into a backend that collapses past a few, and delivered almost nothing for its first
/// second), and the next seconds at least 0.9 of it.
#[test]
fn small_knees_are_not_overrun_by_the_opening() {
    for knee in [2.0, 3.0, 4.0, 6.0, 8.0, 16.0, 32.0, 128.0] {
        for (base, load) in [(0.002, 1.5), (0.004, 3.0), (0.01, 1.5), (0.01, 3.0)] {
            let b = Backend::collapsing(base, knee);
            let mut p = pool(Actuator::InFlight);
            let mut m = Model::new(load * b.peak(), b);
            let mut t = Trace::default();
            m.run(&mut p, 3.0, 5, &mut t);
            assert!(!p.is_opening(), "knee {knee}, base {base}: the opening ended");
            let first = t.throughput(0.0, 1.0) / b.peak();
            let later = t.throughput(1.0, 3.0) / b.peak();
            assert!(first >= 0.6, "knee {knee}, base {base}, {load}×: first second {first:.2} of the peak");
            assert!(later >= 0.9, "knee {knee}, base {base}, {load}×: seconds 1–3 {later:.2} of the peak");
            // Never more than one doubling past the knee.
            assert!(
                t.limits.iter().all(|l| f64::from(l.1) <= 2.0 * knee + 2.0),
                "knee {knee}: {:?}",
                t.range(0.0, 3.0)
            );
        }
    }
}

/// A fast service under a load that presses the limit: the opening doubles every round
/// trip at the service's floor, and reaches the maximum within tens of milliseconds, so
/// almost nothing is turned away.
#[test]
fn a_fast_service_is_opened_to_the_maximum_at_once() {
    // 0.5 ms of service at 100 req/ms: ~50 in service (the model completes at most what is
    // in service each 1-ms step, so it cannot carry a faster service at this load).
    let b = Backend { base: 5e-4, knee: 1e6, flat: true };
    let mut p = pool(Actuator::InFlight);
    let mut m = Model::new(1e5, b);
    let mut t = Trace::default();
    m.run(&mut p, 1.0, 5, &mut t);
    // The load needs ~100 in service: the limit passes it and stays out of its way.
    let reached = t.limits.iter().find(|l| l.1 >= 101).map(|l| l.0);
    assert!(reached.is_some_and(|at| at <= 0.05), "256 reached at {reached:?}");
    assert!(t.limits.iter().filter(|l| l.0 >= 0.05).all(|l| l.1 >= 101), "{:?}", t.range(0.05, 1.0));
    // What the opening turns away is its first ~25 ms of a load that needs 50 times its
    // first limit; nothing after.
    let shed = t.rejected(0.0, 1.0) / m.obs.offered;
    assert!(shed <= 0.03, "{shed}");
    assert!(t.rejected(0.05, 1.0) == 0.0, "{}", t.rejected(0.05, 1.0));
}

/// A host that slows every request alike (a CPU-starved server: a 50-ms handler reads
/// 150 ms whatever the limit) from the opening's third request is not a knee: the rise
/// comes at the first level, where the limit has not moved, so the limit did not cause it.
/// The opening takes its floor from the rise and goes on to what the load needs instead of
/// ending at 2, where the climb's trials wait seconds for their completions.
#[test]
fn a_host_slowdown_at_the_first_level_is_not_taken_for_a_knee() {
    let mut p = pool(Actuator::InFlight);
    let limits = discrete_run(&mut p, 0.05, |i| if i >= 2 { 0.1 } else { 0.0 }, 3.0);
    let top = limits.iter().map(|l| l.1).max().unwrap();
    assert!(top >= 128, "the opening stopped at {top}: {:?}", &limits[..limits.len().min(80)]);
}

/// Requests of a fixed service time (a handler that sleeps), one by one: the limit is kept
/// full by an endless load, the layer decides every 5 ms, and the requests admitted at
/// the `i`-th admitted takes `extra(i)` longer (a host's hiccup, a host slowed).
/// Returns the limits decided.
fn discrete_run(p: &mut Peak, service: f64, extra: impl Fn(usize) -> f64, until: f64) -> Vec<(f64, u32)> {
    let mut obs = Observation::new(0.0, 0.0, 256.0);
    let mut inside: Vec<(f64, f64)> = Vec::new(); // (admitted at, leaves at)
    let (mut admitted, mut limits) = (0usize, Vec::new());
    let mut k = 0u64;
    while obs.now < until {
        obs.now = ((obs.now + DT) * 1e6).round() / 1e6;
        let now = obs.now;
        inside.retain(|&(at, leave)| {
            let gone = leave <= now + 1e-9;
            if gone {
                obs.completed += 1.0;
                obs.latency_total += leave - at;
            }
            !gone
        });
        let limit = p.limit() as usize;
        obs.offered += 10.0;
        while inside.len() < limit {
            let s = service + extra(admitted);
            inside.push((now, now + s));
            admitted += 1;
            obs.admitted += 1.0;
        }
        obs.in_service = inside.len() as f64;
        obs.queue = obs.in_service;
        if k % 5 == 0 {
            p.decide(&obs);
            limits.push((now, p.limit()));
        }
        k += 1;
    }
    limits
}

/// Two requests of a 50-ms handler delayed to 77 ms (a CPU-starved host's late wake-ups)
/// right after the opening's first doubling, at two decisions in a row, do not end it: a level is judged by the mean
/// of its own completions, not by one decision's one completion (on a 2-core CI host that
/// ended the opening at 2 and the axum example served 131 requests in a 3-s flood).
#[test]
fn a_hiccup_of_two_requests_does_not_end_the_opening() {
    // Requests 6 and 7 are the first admitted at a limit of 4 (2 + 2 + 2 at the first
    // level); delayed by 27 and 32 ms they leave at two decisions in a row, each alone.
    let mut p = pool(Actuator::InFlight);
    let limits = discrete_run(&mut p, 0.05, |i| match i {
        6 => 0.027,
        7 => 0.032,
        _ => 0.0,
    }, 1.5);
    let top = limits.iter().map(|l| l.1).max().unwrap();
    assert!(top >= 128, "the opening stopped at {top}: {:?}", &limits[..limits.len().min(80)]);
}

/// A backend that stalls (a deadlock's one-second wait, as PostgreSQL's
/// `deadlock_timeout`) at a rate growing with the square of the requests in it: between
/// stalls its curve climbs to a knee at 32, but a level that high stalls several times a
/// second. A fixed limit `L` delivers `X(L)/(1 + L²/240)`: 1,935 req/s at its best
/// (`L` = 15–16), 1,519 at the knee. With the stall rule off the climb compares mostly calm
/// trials and wanders past the knee (measured: 1,233 req/s, limits 15–67); halving on each
/// stall keeps it lower (1,539, limits 1–23), and so low that halving on every stall walked it
/// down to 2–15 (1,489: stalls at the best level come every few seconds). An
/// additive-increase, multiplicative-decrease sawtooth under random stalls does not sit at
/// the best fixed limit (0.8 of it here). Pricing the stalls in (`hazard.rs`): 1,934,
/// limits 11–19, with the plain estimate's ceiling; 1,800, limits 9–21, with the cautious
/// one (`s − √s` stalls).
#[test]
fn a_backend_that_stalls_is_held_where_stalls_are_rare() {
    let b = Backend::collapsing(0.004, 32.0);
    let mut p = pool(Actuator::InFlight);
    let mut m = Model::new(3.0 * b.peak(), b);
    m.stall = Some((1.0 / 240.0, 1.0));
    let mut t = Trace::default();
    m.run(&mut p, 60.0, 5, &mut t);
    let good = t.throughput(5.0, 60.0);
    assert!(good >= 0.9 * 1935.0, "{good:.0} req/s; limits {:?}", t.range(5.0, 60.0));
}

/// A pool 1.5× above a collapsing backend with a knee of 64, after 3 s of climbing: the
/// peak, the model, the trace and home's limit (at least 32).
fn climbed_below_a_knee_of_64() -> (Peak, Model, Trace, u32) {
    let b = Backend::collapsing(0.004, 64.0);
    let mut p = pool(Actuator::InFlight);
    let mut m = Model::new(1.5 * b.peak(), b);
    let mut t = Trace::default();
    m.run(&mut p, 3.0, 5, &mut t);
    let before = p.home();
    assert!(before >= 32, "the climb reached {before} below a knee of 64");
    (p, m, t, before)
}

impl Model {
    /// Start one stall of a second now (no other after it); returns when it started.
    fn stall_once(&mut self, p: &mut Peak, t: &mut Trace) -> f64 {
        self.stall = Some((1e9, 1.0));
        self.run(p, self.obs.now + 0.002, 5, t);
        self.stall = Some((0.0, 1.0));
        self.obs.now
    }
}

/// A stall halves the limit and keeps the level that stalled out of the climb for the
/// hold: one trial whose service time is 50 times the floor, on a backend otherwise at its
/// floor below a knee of 64.
#[test]
fn a_stall_halves_the_limit_and_holds_its_level_out() {
    let (mut p, mut m, mut t, before) = climbed_below_a_knee_of_64();
    // One second in which everything in service waits, then completes at once.
    let stalled_at = m.stall_once(&mut p, &mut t);
    m.run(&mut p, stalled_at + 1.5, 5, &mut t);
    let after = p.home();
    // Half the level that stalled: home's, or a probe's one grid step above it.
    assert!(f64::from(after) <= 0.6 * f64::from(before), "home {before} → {after} after a stall");
    // Held below the level that stalled for the hold (5 s from the stall's end).
    let held = t.range(stalled_at + 1.2, stalled_at + 5.0);
    assert!(held.1 < before, "limits {held:?} after a stall at {before}");
}

/// The same stall with none of its requests timed (they are charged the floor's service
/// time): Little's law on the trial (requests in flight over those that left) sees it.
#[test]
fn a_stall_none_of_whose_requests_was_timed_halves_the_limit() {
    let (mut p, mut m, mut t, before) = climbed_below_a_knee_of_64();
    m.untimed = true;
    let stalled_at = m.stall_once(&mut p, &mut t);
    m.run(&mut p, stalled_at + 1.5, 5, &mut t);
    let after = p.home();
    assert!(f64::from(after) <= 0.6 * f64::from(before), "home {before} → {after} after an untimed stall");
}

/// A stall followed at once by another (a deadlock's waiters and their retries, which
/// outlast the first trial after the halving) halves the limit once, not twice: the first
/// stalled trial after a halving measured what was stuck before it.
#[test]
fn a_stall_and_its_aftermath_halve_the_limit_once() {
    let (mut p, mut m, mut t, before) = climbed_below_a_knee_of_64();
    let stalled_at = m.stall_once(&mut p, &mut t);
    while p.home() == before && m.obs.now < stalled_at + 1.5 {
        m.run(&mut p, m.obs.now + 0.005, 5, &mut t);
    }
    let halved = p.home();
    let again = m.stall_once(&mut p, &mut t);
    m.run(&mut p, again + 1.5, 5, &mut t);
    let after = p.home();
    assert!(f64::from(halved) <= 0.6 * f64::from(before), "home {before} → {halved} after the first stall");
    assert!(after >= halved, "home {before} → {halved} → {after}: halved again for the same episode");
}

/// After a stall the level that stalled comes back once its hold ends, also on a coarse
/// grid where it is home's only neighbour above: the probe rounds that could only probe
/// down in the meantime do not lengthen the climb's hold at home (on PostgreSQL, a limit of
/// 2 held four seconds past a stall's hold at 0.6 of the best fixed limit).
#[test]
fn a_stalled_level_comes_back_when_its_hold_ends() {
    let b = Backend::collapsing(0.004, 3.0);
    let mut p = pool(Actuator::InFlight);
    let mut m = Model::new(1.5 * b.peak(), b);
    let mut t = Trace::default();
    m.run(&mut p, 3.0, 5, &mut t);
    let before = p.home();
    assert_eq!(before, 3, "the climb settled at {before} on a knee of 3");
    // The trial under way ends stalled: ten requests that waited a second each.
    let stalled_at = m.obs.now;
    p.target = p.home;
    p.trial = super::trial::Trial { periods: 2, saturated: 2, completed: 10.0, good: 10.0, elapsed: 0.1, busy: 10.0, held: 0.3, late: 0.001, ..Default::default() };
    p.finish_trial(stalled_at);
    assert!(p.home() < before, "home {} after a stall at {before}", p.home());
    m.run(&mut p, stalled_at + 10.0, 5, &mut t);
    let back = t.limits.iter().find(|l| l.0 > stalled_at + 1.5 && l.1 >= before).map(|l| l.0 - stalled_at);
    // The hold runs 5 s from the stall.
    assert!(back.is_some_and(|s| s <= 6.5), "level {before} back {back:?} s after the stall");
}

/// A host that stops for a second (a starved or paused process: the requests in service and
/// the controller stop together, then the requests complete late) is not a stalled
/// backend: its decisions came late by as much, so the limit is not halved.
#[test]
fn a_host_that_stops_is_not_a_stalled_backend() {
    let (mut p, mut m, mut t, before) = climbed_below_a_knee_of_64();
    // Stop while a trial measures (a settle's periods are not judged).
    while !(p.stage == super::trial::Stage::Measure && p.trial.periods >= 1) {
        m.run(&mut p, m.obs.now + 0.001, 1, &mut t);
    }
    m.host = true;
    let stopped_at = m.stall_once(&mut p, &mut t);
    m.run(&mut p, stopped_at + 2.5, 5, &mut t);
    let (lo, _) = t.range(stopped_at, stopped_at + 2.5);
    assert!(f64::from(lo) >= 0.8 * f64::from(before), "limits down to {lo} from {before} after the host stopped");
}

/// A trial faster than the service floor renews it, even when its decisions came a little
/// late (as every decision of the tower layer does: the step runs at the first timed
/// request after the period): the host guard is for slow trials only. Before, a late
/// decision of 1 ms kept the floor from renewing, and it rose by half every 10 s.
#[test]
fn a_fast_trial_with_late_decisions_renews_the_floor() {
    let mut p = pool(Actuator::InFlight);
    p.service_floor.note(0.010, 0.0, 1);
    p.trial = super::trial::Trial { periods: 2, saturated: 2, completed: 100.0, good: 100.0, elapsed: 0.1, busy: 0.4, held: 0.4, late: 0.001, ..Default::default() };
    let i = p.target;
    assert!(!p.stalled_trial(i, 1.0));
    let floor = p.service_floor.at(1.0);
    assert!((floor - 0.004).abs() < 1e-12, "floor {floor} after a trial of 4 ms");
}

/// A climb settled at home 3 on a coarse grid, its bins filled by hand: the peak, home's grid
/// index, and the time.
fn settled_at_three(now: f64) -> (Peak, usize) {
    let mut p = Peak::new(PeakConfig { open_start: false, ..PeakConfig::default() }).unwrap();
    let home = p.grid.iter().position(|&g| g == 3).unwrap();
    p.home = home;
    p.slow_start = false;
    let bin = |rate: f64, service: f64| super::curve::Bin {
        rate,
        service,
        samples: 8,
        trials: 4,
        at: now,
        var: 200.0 * 200.0,
        factor: 0.25,
    };
    p.bins[home] = bin(540.0, 0.0055);
    p.bins[home - 1] = bin(380.0, 0.0045);
    (p, home)
}

/// A saturated trial of two 50-ms periods with `completed` successes at an even rate,
/// `busy` seconds of service and `held` request-seconds in flight.
fn two_periods(completed: f64, busy: f64, held: f64) -> super::trial::Trial {
    let rate = completed / 0.1;
    super::trial::Trial {
        periods: 2,
        saturated: 2,
        completed,
        good: completed,
        elapsed: 0.1,
        busy,
        held,
        rate_sum: 2.0 * rate,
        rate_sq: 2.0 * rate * rate,
        ..Default::default()
    }
}

/// On a noisy backend a lower limit does not win on its shorter service time when it
/// delivers less than home by more than the tolerance, however wide the noise: two
/// standard errors of PostgreSQL's stalls hid a third of the throughput, and the climb
/// walked down from 3 to 2 (fails before: `same` allowed `Z·se`).
#[test]
fn a_lower_limit_must_deliver_as_much_to_win_on_service_time() {
    let now = 10.0;
    let (mut p, home) = settled_at_three(now);
    p.target = home - 1;
    p.up = false;
    // A probe at 2 as its bin says: 380/s, 4.5 ms.
    p.trial = two_periods(38.0, 38.0 * 0.0045, 0.2);
    p.service_floor.note(0.004, now, 1);
    p.finish_trial(now);
    assert_eq!(p.home(), 3, "home {} after a probe at 2 that delivered 30 % less", p.home());
}

/// With the level above home held out by a stall, a lost probe below ends the round (no
/// second probe of the same side), and the rounds grow calmer (fails before: two probes at
/// 2 per round, and the hold between rounds never grew).
#[test]
fn a_round_with_only_one_side_probes_it_once_and_calms_down() {
    let now = 10.0;
    let (mut p, home) = settled_at_three(now);
    p.stalled = Some((home + 1, now + 30.0));
    p.target = home - 1;
    p.up = false;
    p.trial = two_periods(38.0, 38.0 * 0.0045, 0.2);
    p.service_floor.note(0.004, now, 1);
    p.finish_trial(now);
    assert_eq!((p.home(), p.limit()), (3, 3), "the round did not end at home");
    assert!(p.trial_len > p.cfg.trial_periods, "a hold of {} periods at home", p.trial_len);
    assert_eq!(p.calm, 1, "the round did not count as calm");
}

/// The first stall within a hold of the opening's end cuts the limit to a quarter (the
/// opening overshot into a region that stalls: halving from 17 stalled again at 9 on
/// PostgreSQL); a first stall long after the opening, and any later one, halve it.
#[test]
fn a_first_stall_soon_after_the_opening_cuts_to_a_quarter() {
    let at = |g: u32, p: &Peak| p.grid.iter().position(|&x| x == g).unwrap();
    let mut p = pool(Actuator::InFlight);
    p.opened_at = 1.0;
    let i = at(17, &p);
    p.home = i;
    p.stall_at(i, 2.0);
    assert_eq!(p.home(), 5, "17 → {} on a stall 1 s after the opening", p.home());
    // A second stall halves.
    let j = at(10, &p);
    p.home = j;
    p.stall_at(j, 20.0);
    assert_eq!(p.home(), 5, "10 → {} on a later stall", p.home());
    // A first stall long after the opening halves too.
    let mut q = pool(Actuator::InFlight);
    q.opened_at = 1.0;
    q.home = i;
    q.stall_at(i, 30.0);
    assert_eq!(q.home(), 9, "17 → {} on a first stall 29 s after the opening", q.home());
}

/// A stall at 4 with 3 known to keep most of the rate stops the cut at 3, not 2 (on
/// PostgreSQL 2 delivered 380 txn/s, 3 540, 4 700 between stalls); with nothing fresh known
/// below, it halves (fails before: always half).
#[test]
fn a_stall_on_a_coarse_grid_cuts_to_the_level_that_keeps_the_rate() {
    let now = 10.0;
    let (mut p, three) = settled_at_three(now);
    let four = three + 1;
    p.bins[four] = super::curve::Bin { rate: 100.0, ..p.bins[three] };
    p.home = four;
    p.stall_at(four, now);
    assert_eq!(p.home(), 3, "4 → {} with 3 keeping 540 of 540", p.home());
    // Stale bins: half.
    let (mut q, _) = settled_at_three(now);
    q.home = four;
    q.stall_at(four, now + 10.0);
    assert_eq!(q.home(), 2, "4 → {} with nothing fresh below", q.home());
}

/// After a stall the climb moves up at most one step per stall length (the time the stall
/// took to show): a won probe above home does not let the next probe go higher before then
/// (fails before: a step up every trial, 4 to 11 in a second on PostgreSQL).
#[test]
fn after_a_stall_the_climb_is_paced_by_the_stall_length() {
    let now = 10.0;
    let (mut p, three) = settled_at_three(now);
    // A stall one second long, far above.
    p.last_stall = now - 1.0;
    p.pace = 1.0;
    p.up_at = now - 0.5;
    p.target = three + 1;
    p.up = true;
    // The probe at 4 wins outright.
    p.bins[three + 1] = super::curve::Bin { rate: 700.0, var: 1.0, ..p.bins[three] };
    p.trial = two_periods(70.0, 70.0 * 0.0045, 0.4);
    p.bins[three].var = 1.0;
    p.service_floor.note(0.004, now, 1);
    p.finish_trial(now);
    assert_eq!(p.home(), 4, "the probe at 4 did not win");
    // No probe above 4 for the pace (1 s).
    let mut t = now;
    while t < now + 0.9 {
        t += 0.05;
        p.trial = two_periods(70.0, 0.3, 0.4);
        p.finish_trial(t);
        assert!(p.limit() <= 4, "limit {} at {:.2} s, 1-s pace from {now}", p.limit(), t - now);
    }
}

/// After the first stall's quarter cut the climb regains half of the stalled level as TCP
/// slow-starts back to `ssthresh` after a timeout: with momentum and unpaced; past half it
/// is careful and paced again (fails before: one step per stall length from the quarter,
/// 4 to 10 took seven seconds on PostgreSQL with 128 hot rows).
#[test]
fn after_the_first_stall_the_climb_regains_half_unpaced() {
    let at = |g: u32, p: &Peak| p.grid.iter().position(|&x| x == g).unwrap();
    let now = 2.0;
    let mut p = pool(Actuator::InFlight);
    p.open = None;
    p.slow_start = false;
    p.opened_at = 1.0;
    p.service_floor.note(0.004, now, 1);
    // Every level from 5 up serves more than the one below it (between stalls).
    for j in at(5, &p)..=at(21, &p) {
        p.bins[j] = super::curve::Bin {
            rate: 100.0 * f64::from(p.grid[j]),
            service: 0.005,
            samples: 8,
            trials: 4,
            at: now,
            var: 1.0,
            factor: 0.25,
        };
    }
    let i = at(17, &p);
    p.home = i;
    p.target = i;
    // A stalled trial at 17: 2 completions in 0.1 s with 17 in flight.
    p.trial = two_periods(2.0, 1.0, 1.7);
    assert!(p.stalled_trial(i, now));
    assert_eq!(p.home(), 5, "17 → {} on the first stall after the opening", p.home());
    // A stall that took a second to show: nothing goes up before a second has passed.
    p.pace = 1.0;
    p.up_at = now + p.pace;
    let mut t = now;
    let mut regained = f64::NAN;
    while t < now + 2.2 {
        t += 0.1;
        let g = f64::from(p.limit());
        p.trial = two_periods(10.0 * g, 10.0 * g * 0.005, 0.1 * g);
        p.finish_trial(t);
        if p.home() >= 9 && regained.is_nan() {
            regained = t;
        }
        // Past half, paced again: the next step up waits a stall length.
        assert!(p.limit() <= 9, "limit {} at {:.1} s: past half within a stall length", p.limit(), t - now);
    }
    assert!(regained <= now + 1.6, "9 regained at {:.1} s after the stall", regained - now);
    assert!(p.regain.is_none(), "the regain did not end at half");
}

/// Once stalls are pooled (`hazard.rs`), a stall at a level under the model's ceiling is
/// expected: the level stays (fails before: every stall halved it, 10 → 5); a stall above
/// the ceiling still cuts, to no lower than the ceiling; and the climb never probes past it.
#[test]
fn a_priced_in_stall_keeps_its_level_and_the_climb_stays_under_the_ceiling() {
    let now = 100.0;
    let at = |g: u32, p: &Peak| p.grid.iter().rposition(|&x| x <= g).unwrap();
    let mut p = pool(Actuator::InFlight);
    p.open = None;
    p.slow_start = false;
    p.service_floor.note(0.004, now, 1);
    // 60 s at 10 in flight (45 pairs, about 1,170 pair-seconds once decayed over 30 s) and
    // three stalls of 1 s: k ≈ 3/1,170 per pair-second, D = 1 s; the ceiling 1/√(k·D/2)
    // takes the cautious count 3 − √3, so it is about 43.
    for s in 0..60 {
        p.hazard.calm(1.0, 10.0, now - 60.0 + f64::from(s));
    }
    for _ in 0..3 {
        p.hazard.stall(1.0, true, now);
    }
    let ceiling = p.hazard.ceiling();
    assert!(ceiling > 38.0 && ceiling < 48.0, "ceiling {ceiling}");
    let ten = at(10, &p);
    p.home = ten;
    p.target = ten;
    // A stalled trial at 10: 2 completions in 0.1 s with 10 in flight (0.5 s each by Little).
    p.trial = two_periods(2.0, 2.0 * 0.5, 1.0);
    assert!(p.stalled_trial(ten, now));
    assert_eq!(p.home(), 10, "home {} after a priced-in stall at 10", p.home());
    assert!(p.stalled.is_none(), "a priced-in stall held its level out");
    // The climb's top is the ceiling's grid point.
    assert!(f64::from(p.grid[p.top()]) <= ceiling.round(), "top {} over a ceiling of {ceiling:.1}", p.grid[p.top()]);
    // A stall far above the ceiling cuts, but not below it.
    let high = at(100, &p);
    p.home = high;
    p.target = high;
    p.recovering = false;
    p.trial = two_periods(2.0, 2.0 * 0.5, 10.0);
    assert!(p.stalled_trial(high, now + 1.0));
    let (cut, from) = (f64::from(p.home()), f64::from(p.grid[high]));
    assert!(cut < from && cut >= p.hazard.ceiling().round().min(50.0), "{from} → {cut} with a ceiling of {:.1}", p.hazard.ceiling());
}

/// Requests one by one as the bench's collapse backend serves them: Poisson arrivals at
/// `lambda` (seeded), each admitted while fewer than the limit are inside and held for
/// `base·max(1, (n/knee)²)` with `n` counted at its entry, itself included. As the tower
/// layer does: a decision when one is due at an arrival, one arrival in `timed` timed, and
/// every departure between two decisions charged the mean of the timed ones among them
/// (the last known mean when none was). The limit is `fixed`, or `peak`'s. Returns the
/// limit at every decision and the completions per second within 100 ms of their arrival.
fn poisson_run(knee: f64, base: f64, lambda: f64, seed: u64, fixed: Option<u32>, timed: u64) -> (Vec<(f64, u32)>, Vec<f64>) {
    poisson_run_for(3, knee, base, lambda, seed, fixed, timed)
}

/// [`poisson_run`] over `until` seconds.
fn poisson_run_for(
    until: usize,
    knee: f64,
    base: f64,
    lambda: f64,
    seed: u64,
    fixed: Option<u32>,
    timed: u64,
) -> (Vec<(f64, u32)>, Vec<f64>) {
    let until_s = until as f64;
    let mut p = pool(Actuator::InFlight);
    let mut rng = SplitMix(seed);
    let mut obs = Observation::new(0.0, 0.0, 256.0);
    let mut inside: Vec<(f64, f64, bool)> = Vec::new(); // (admitted at, leaves at, timed)
    let (mut timed_n, mut timed_sum, mut departed, mut mean) = (0.0, 0.0, 0.0, base);
    let (mut limits, mut good) = (Vec::new(), vec![0.0; until]);
    let (mut next_decision, mut now) = (0.0, 0.0);
    loop {
        now += -(1.0 - rng.next_f64()).ln() / lambda;
        if now >= until_s {
            break;
        }
        inside.retain(|&(at, leave, t)| {
            let gone = leave <= now;
            if gone {
                departed += 1.0;
                if t {
                    timed_n += 1.0;
                    timed_sum += leave - at;
                }
                if leave - at <= 0.1 {
                    good[(leave as usize).min(until - 1)] += 1.0;
                }
            }
            !gone
        });
        obs.now = now;
        obs.in_service = inside.len() as f64;
        obs.queue = obs.in_service;
        if fixed.is_none() && now >= next_decision {
            if timed_n > 0.0 {
                mean = timed_sum / timed_n;
            }
            obs.completed += departed;
            obs.latency_total += departed * mean;
            (timed_n, timed_sum, departed) = (0.0, 0.0, 0.0);
            p.decide(&obs);
            limits.push((now, p.limit()));
            next_decision = now + p.next_decision_within().unwrap_or(0.05);
        }
        obs.offered += 1.0;
        if inside.len() < fixed.unwrap_or_else(|| p.limit()) as usize {
            let n = inside.len() as f64 + 1.0;
            let r = (n / knee).max(1.0);
            inside.push((now, now + base * r * r, obs.offered as u64 % timed == 0));
            obs.admitted += 1.0;
        }
    }
    (limits, good)
}

/// A probe below home that cannot win is not run. At a knee of 2 the climb's lower
/// neighbour is 1, which delivers at most `1/S₀` (one request at a time, each at least the
/// shortest service time seen at 1), half of what 2 delivers: once 1 was measured, every
/// later round skips it (before: a probe of 1 every round, 0.89 of the knee's fixed limit
/// over 5 s in this model, seeds 1–12; after, 0.93). A home past a flat knee is not
/// skipped down from (`a_flat_curve_settles_near_its_knee`): nothing was measured below it
/// that bounds the lower level's service time.
#[test]
fn a_probe_below_that_cannot_win_is_not_run() {
    for (knee, base, load) in [(2.0, 0.005, 1.5), (2.0, 0.01, 1.5), (2.0, 0.005, 3.0)] {
        let lambda = load * knee / base;
        let (mut ours, mut oracle) = (0.0, 0.0);
        for seed in 1..=12 {
            let (_, fixed) = poisson_run_for(5, knee, base, lambda, seed, Some(knee as u32), 1);
            let (limits, good) = poisson_run_for(5, knee, base, lambda, seed, None, 1);
            oracle += fixed.iter().sum::<f64>();
            ours += good.iter().sum::<f64>();
            // Visits to 1: a run of decisions at a limit of 1.
            let visits = limits.windows(2).filter(|w| w[1].1 == 1 && w[0].1 != 1).count();
            assert!(visits <= 1, "knee {knee}, {base}, {load}×, seed {seed}: {visits} probes of 1 in 5 s");
        }
        let share = ours / oracle;
        println!("knee {knee}, {} ms, {load}×: {share:.3} of the knee's fixed limit", base * 1e3);
        assert!(share >= 0.92, "knee {knee}, {base}, {load}×: {share:.3}");
    }
}

/// The opening judges each level by the mean service time of the level's own
/// completions. The tower layer times one arrival in `k`; aimed at 16 timed arrivals per
/// 50-ms period, an overload admitting one arrival in six at a knee of 2–4 times one
/// completion every ~13 ms, so most of the opening's 5-ms decisions charged the new level's
/// completions the level below's latency: the opening doubled once more past the knee
/// (measured on the bench: to 16 at a knee of 4, 335–349 good/s in the first second where
/// the knee serves 600). Timed as the layer now aims (16 per decision interval: every
/// arrival at these rates), it never passes one doubling past the knee, and its first second
/// serves at least 0.7 of a fixed limit at the knee in the same model (0.72–0.96; timed one
/// in eight, 0.41 where it overshot).
#[test]
fn sampled_timing_does_not_carry_the_opening_past_a_small_knee() {
    let mut overshoots_when_thinned = 0;
    for (knee, base, load) in [(2.0, 0.005, 1.5), (2.0, 0.01, 3.0), (4.0, 0.005, 1.5), (4.0, 0.005, 3.0), (8.0, 0.002, 3.0)] {
        let lambda = load * knee / base;
        for seed in 1..=6 {
            let (_, oracle) = poisson_run(knee, base, lambda, seed, Some(knee as u32), 1);
            let (limits, good) = poisson_run(knee, base, lambda, seed, None, 1);
            let top = limits.iter().filter(|l| l.0 < 1.0).map(|l| l.1).max().unwrap();
            let first = good[0] / oracle[0];
            println!("knee {knee}, {} ms, {load}×, seed {seed}: top {top}, first second {first:.2} of the knee's", base * 1e3);
            assert!(f64::from(top) <= 2.0 * knee, "knee {knee}, {base}, {load}×, seed {seed}: opened to {top}");
            assert!(first >= 0.7, "knee {knee}, {base}, {load}×, seed {seed}: first second {first:.2} of the knee's");
            let (thinned, _) = poisson_run(knee, base, lambda, seed, None, 8);
            overshoots_when_thinned += usize::from(thinned.iter().any(|l| l.0 < 1.0 && f64::from(l.1) > 2.0 * knee));
        }
    }
    // The cause, shown: one arrival in eight timed carries some openings past one doubling.
    assert!(overshoots_when_thinned >= 4, "{overshoots_when_thinned} of 30");
}
