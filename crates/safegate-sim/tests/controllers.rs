//! The nominal controllers (safegate_core::controllers) on the seed's pool: short stochastic
//! runs (≤ 120 simulated seconds each) checking they behave as their sources say they
//! should, and that none of them breaks the simulator's bookkeeping.

use safegate_core::controllers::{build, with_retry_budget, Actuator, Gradient2, Gradient2Config, Setting, NAMES};
use safegate_core::{Action, Observation, Open, Policy};
use safegate_sim::{run_stochastic, Config, HealthSchedule, HealthTrack, Retries, RetryPath, RunOptions, Summary};

/// λ = 80 at full health (no dips) for `secs`: the pool is stable only while at most 7
/// executors run (μ(7) = 85.7, μ(8) = 75 req/s), so an uncapped pool pins once a burst
/// fills it.
fn flat(secs: f64) -> Config {
    Config { duration: secs, health: HealthTrack::new(HealthSchedule::Constant { level: 1.0 }), ..Config::default() }
}

/// The seed's λ = 80 on the repeating 19 s health cycle (down to 0.1), for `secs`.
fn cycle(secs: f64) -> Config {
    Config { duration: secs, ..Config::default() }
}

/// Wraps a policy and integrates its concurrency cap over time, separately over the time
/// the pool had a backlog (more requests than the cap).
struct CapMeter<P> {
    inner: P,
    last: Option<(f64, f64, bool)>,
    time: f64,
    cap_time: f64,
    backlog_time: f64,
    backlog_cap_time: f64,
}

impl<P: Policy> CapMeter<P> {
    fn new(inner: P) -> Self {
        Self { inner, last: None, time: 0.0, cap_time: 0.0, backlog_time: 0.0, backlog_cap_time: 0.0 }
    }
    fn mean_cap(&self) -> f64 {
        self.cap_time / self.time
    }
    fn mean_cap_backlogged(&self) -> f64 {
        self.backlog_cap_time / self.backlog_time
    }
}

impl<P: Policy> Policy for CapMeter<P> {
    fn decide(&mut self, o: &Observation) -> Action {
        let a = self.inner.decide(o);
        if let Some((t0, cap, backlog)) = self.last {
            let dt = o.now - t0;
            self.time += dt;
            self.cap_time += cap * dt;
            if backlog {
                self.backlog_time += dt;
                self.backlog_cap_time += cap * dt;
            }
        }
        let cap = a.concurrency.map_or(f64::NAN, f64::from);
        self.last = Some((o.now, cap, o.queue > cap));
        a
    }
    fn name(&self) -> &'static str {
        self.inner.name()
    }
}

fn show(label: &str, s: &Summary) {
    println!(
        "{label:32} q mean {:6.1} max {:5} final {:5}  cleared {:6} rejected {:6} dropped {:5} retries shed {:5}",
        s.queue_mean, s.queue_max, s.queue_final, s.cleared, s.rejected, s.dropped, s.retries_shed
    );
}

#[test]
fn gradient2_on_executors_finds_the_service_curve_peak_where_the_open_pool_pins() {
    let cfg = flat(120.0);
    let open = run_stochastic(&cfg, &mut Open, RunOptions::default()).unwrap().summary;
    show("open", &open);
    assert!(open.queue_max >= 200.0 && open.dropped > 0.0, "the open pool should fill and lose work");

    let g = Gradient2::new(Gradient2Config::for_setting(Actuator::Executors, &Setting::default())).unwrap();
    let mut meter = CapMeter::new(g);
    let s = run_stochastic(&cfg, &mut meter, RunOptions::default()).unwrap().summary;
    show("gradient2 / executors", &s);
    println!(
        "  cap: mean {:.2}, while backlogged {:.2} ({:.1} s backlogged), final {}",
        meter.mean_cap(),
        meter.mean_cap_backlogged(),
        meter.backlog_time,
        meter.inner.limit()
    );
    assert!(s.queue_max < 100.0, "queue max {}", s.queue_max);
    assert!(s.queue_mean < 15.0, "queue mean {}", s.queue_mean);
    assert_eq!((s.dropped, s.rejected), (0.0, 0.0));
    assert!(s.cleared > open.cleared);
    // Under a backlog it holds the cap between C = 4 and 7, clear of the 8 busy executors
    // at which the pool clears only 75 req/s.
    let busy = meter.mean_cap_backlogged();
    assert!((4.0..=7.0).contains(&busy), "cap while backlogged {busy}");
    assert!((4.0..=8.0).contains(&meter.mean_cap()));
}

#[test]
fn latency_limiters_on_executors_keep_the_queue_short_at_full_health() {
    let cfg = flat(120.0);
    for name in ["vegas", "envoy-gradient"] {
        let mut meter = CapMeter::new(build(name, Actuator::Executors, &Setting::default()).unwrap());
        let s = run_stochastic(&cfg, &mut meter, RunOptions::default()).unwrap().summary;
        show(&format!("{name} / executors"), &s);
        println!("  cap: mean {:.2}, while backlogged {:.2}", meter.mean_cap(), meter.mean_cap_backlogged());
        assert!(s.queue_max < 100.0 && s.queue_mean < 15.0, "{name}: {s:?}");
        assert_eq!(s.dropped, 0.0, "{name}");
        assert!(meter.mean_cap_backlogged() <= 7.0, "{name}");
    }
}

#[test]
fn in_flight_limiters_and_credits_never_let_the_backlog_overflow() {
    // On the health cycle the pool cannot keep up during a dip; a limiter on requests in the
    // system sheds at the door instead of losing admitted work at the full backlog.
    let cfg = cycle(120.0);
    let open = run_stochastic(&cfg, &mut Open, RunOptions::default()).unwrap().summary;
    show("open", &open);
    assert!(open.dropped > 1000.0);
    for name in ["gradient2", "vegas", "envoy-gradient", "static", "credits"] {
        let mut p = build(name, Actuator::InFlight, &Setting::default()).unwrap();
        let s = run_stochastic(&cfg, &mut p, RunOptions::default()).unwrap().summary;
        show(&format!("{name} / in-flight"), &s);
        assert_eq!(s.dropped, 0.0, "{name}");
        assert!(s.queue_max < 100.0, "{name}: {}", s.queue_max);
        // Not by shedding everything: it clears at least what the open pool clears.
        assert!(s.cleared >= 0.95 * open.cleared, "{name}: {} vs {}", s.cleared, open.cleared);
    }
}

#[test]
fn every_controller_runs_on_both_actuators_deterministically() {
    let cfg = cycle(40.0);
    for act in [Actuator::InFlight, Actuator::Executors] {
        for name in NAMES {
            let run = || {
                let mut p = build(name, act, &Setting::default()).unwrap();
                run_stochastic(&cfg, &mut p, RunOptions { record_every: Some(20), ..RunOptions::default() }).unwrap()
            };
            let (a, b) = (run(), run());
            assert_eq!(a, b, "{name}/{}", act.name());
            let s = &a.summary;
            // Every offered request is rejected or admitted; every admitted one is dropped,
            // cleared, retried or still in the queue.
            assert_eq!(s.offered, s.rejected + s.admitted, "{name}");
            assert_eq!(s.admitted, s.dropped + s.cleared + s.retried + s.queue_final, "{name}");
            assert!(s.cleared > 500.0, "{name}/{}: {}", act.name(), s.cleared);
            let series = a.series.unwrap();
            assert!(series.admit_fraction.iter().all(|x| (0.0..=1.0).contains(x)), "{name}");
        }
    }
}

#[test]
fn sre_throttle_acts_only_when_the_backend_fails_requests() {
    let s = Setting::default();
    let quiet =
        run_stochastic(&flat(60.0), &mut build("sre-throttle", Actuator::InFlight, &s).unwrap(), RunOptions::default())
            .unwrap();
    assert_eq!(quiet.summary.rejected, 0.0, "accepts ≈ requests: never throttles");
    // Retries that rise as health falls (90 % at zero health): in a dip most completions fail.
    let failing = Config { retries: Retries::Health { probability: 0.9, path: RetryPath::Gate }, ..cycle(120.0) };
    let open = run_stochastic(&failing, &mut Open, RunOptions::default()).unwrap().summary;
    let t =
        run_stochastic(&failing, &mut build("sre-throttle", Actuator::InFlight, &s).unwrap(), RunOptions::default())
            .unwrap()
            .summary;
    show("open, failing backend", &open);
    show("sre-throttle, failing backend", &t);
    assert!(t.rejected > 0.0);
}

#[test]
fn a_retry_budget_sheds_a_retry_storm() {
    let s = Setting::default();
    // Half of all completions fail and come back through the gate: ~37 retries/s against a
    // budget of 0.2 · 80 + 10 = 26/s.
    let storm = Config { retries: Retries::Constant { probability: 0.5, path: RetryPath::Gate }, ..cycle(120.0) };
    let open = run_stochastic(&storm, &mut Open, RunOptions::default()).unwrap().summary;
    let mut budgeted = with_retry_budget(Box::new(Open), &s);
    assert_eq!(budgeted.name(), "open");
    let b = run_stochastic(&storm, &mut budgeted, RunOptions::default()).unwrap().summary;
    show("open, retry storm", &open);
    show("open + retry budget, retry storm", &b);
    assert_eq!(open.retries_shed, 0.0);
    assert!(b.retries_shed > 0.0);
    // Fewer retries re-enter, so less admitted work is lost at the full backlog.
    assert!(b.dropped < open.dropped, "{} vs {}", b.dropped, open.dropped);
}
