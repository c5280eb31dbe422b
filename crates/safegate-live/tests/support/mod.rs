//! Shared by the live system's integration tests: scenarios from TOML, a live run on a
//! private redis-server, and the stochastic simulator's replications of the same scenario.
#![allow(dead_code, unreachable_pub)]

use safegate_core::{Action, Observation, Policy};
use safegate_live::run::{LiveOptions, LivePolicy, LiveReport, LiveRun};
use safegate_sim::variants::variants;
use safegate_sim::{Config, RunOptions, Scenario};

/// Held by each timing-sensitive test: live runs measure wall-clock behaviour, and two at
/// once on a 2-core machine would measure each other.
pub(crate) static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A scenario and its resolved configuration.
pub(crate) fn scenario(toml: &str) -> (Scenario, Config) {
    let s = Scenario::from_toml(toml, "<test>").unwrap();
    let c = s.config("<test>").unwrap();
    (s, c)
}

/// Play `policy` live at `speed` on a private redis-server; `/metrics`' barrier line at
/// the cap (these runs read the report, not the margin).
pub(crate) async fn live_with(cfg: &Config, policy: LivePolicy, speed: f64) -> LiveReport {
    let run =
        LiveRun { cfg: cfg.clone(), opts: LiveOptions { speed, ..LiveOptions::default() }, line: cfg.pool.capacity };
    safegate_live::run::run(&run, policy, &mut |_| {}).await.unwrap()
}

/// Play the scenario's primary policy live at `speed` on a private redis-server.
pub(crate) async fn live(s: &Scenario, cfg: &Config, speed: f64) -> LiveReport {
    let policy = variants(s, false).unwrap().pop().unwrap().policy;
    let line = s.safe_threshold() * cfg.pool.capacity;
    let run = LiveRun { cfg: cfg.clone(), opts: LiveOptions { speed, ..LiveOptions::default() }, line };
    safegate_live::run::run(&run, policy.into(), &mut |_| {}).await.unwrap()
}

/// The backlog averaged over each whole model second `[k, k + 1)`, `k < duration`.
pub(crate) fn per_second(t: &[f64], q: &[f64], duration: f64) -> Vec<f64> {
    let n = duration.floor() as usize;
    let mut sum = vec![0.0; n];
    let mut cnt = vec![0usize; n];
    for (&t, &q) in t.iter().zip(q) {
        let k = t.floor() as usize;
        if k < n {
            sum[k] += q;
            cnt[k] += 1;
        }
    }
    sum.iter().zip(&cnt).map(|(s, &c)| if c > 0 { s / c as f64 } else { f64::NAN }).collect()
}

/// Per-second backlog of `reps` stochastic replications (seeds 1…reps): for each second,
/// the mean, the 5th and the 95th percentile across replications.
pub(crate) fn sim_band(s: &Scenario, cfg: &Config, reps: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut runs: Vec<Vec<f64>> = Vec::new();
    for seed in 1..=reps {
        let mut c = cfg.clone();
        c.seed = seed * 7919;
        let mut policy = variants(s, false).unwrap().pop().unwrap().policy;
        let out = safegate_sim::run_stochastic(&c, &mut policy, RunOptions { record_every: Some(1), progress: None })
            .unwrap();
        let series = out.series.unwrap();
        runs.push(per_second(&series.t, &series.queue, c.duration));
    }
    let n = runs[0].len();
    let mut mean = Vec::with_capacity(n);
    let mut lo = Vec::with_capacity(n);
    let mut hi = Vec::with_capacity(n);
    for k in 0..n {
        let mut v: Vec<f64> = runs.iter().map(|r| r[k]).collect();
        v.sort_by(f64::total_cmp);
        mean.push(v.iter().sum::<f64>() / v.len() as f64);
        let at = |p: f64| v[((p * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)];
        lo.push(at(0.05));
        hi.push(at(0.95));
    }
    (mean, lo, hi)
}

/// The most the pool can clear while the backlog stays at or below `bound` (the safe
/// set): the fluid model at dt 0.01 with the cap at the throughput peak `n = C`, admitting
/// exactly what keeps the backlog within `bound` (docs/live.md §Fidelity).
pub(crate) fn safe_limit(cfg: &Config, bound: f64) -> f64 {
    struct Oracle {
        bound: f64,
        c: u32,
    }
    impl Policy for Oracle {
        fn decide(&mut self, obs: &Observation) -> Action {
            let admit = if obs.queue < self.bound { 1.0 } else { 0.0 };
            Action { admit, concurrency: Some(self.c), shed_retries: false }
        }
        fn name(&self) -> &'static str {
            "safe-set-oracle"
        }
    }
    let mut c = cfg.clone();
    c.dt = 0.01;
    let mut o = Oracle { bound, c: cfg.pool.comfortable.round().max(1.0) as u32 };
    safegate_sim::run_fluid(&c, &mut o, RunOptions::default()).unwrap().summary.cleared
}

/// The project's physical limit over the run \[requests\]: the ideal pool's goodput
/// ([`safegate_studies::compare::physical_limit`]: the fluid model with exactly `min(q, C)`
/// executors, admitting everything) times the duration.
pub(crate) fn physical_limit(cfg: &Config) -> f64 {
    safegate_studies::compare::physical_limit(cfg).unwrap() * cfg.duration
}

/// How many live runs a timing-sensitive measurement may take.
pub(crate) const ATTEMPTS: u32 = 2;

/// Fails the current attempt (of [`attempts`]) with a message, as `assert!` would fail the
/// test.
#[macro_export]
macro_rules! within {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// Whether wall-clock figures are asserted: `SAFEGATE_TIMING=strict` (as
/// `scripts/bench-live` sets it, on a quiet machine). Otherwise a miss is reported, not
/// failed: the test command must pass on a busy machine, where the emulated downstream's
/// services end late and goodput and fidelity fall with them (76 % of the safe limit
/// against the 90 % asserted, seen under a parallel build).
pub(crate) fn strict_timing() -> bool {
    std::env::var_os("SAFEGATE_TIMING").is_some_and(|v| v == "strict")
}

/// Runs `attempt` until it returns `Ok`, at most [`ATTEMPTS`] times. When none passed, it
/// panics with every attempt's failure under [`strict_timing`], and prints them otherwise.
///
/// Only wall-clock measurements go through `within!`; the books (`lost == 0`) and the
/// safety bound are asserted with `assert!` on every run, whatever the machine.
pub(crate) async fn attempts<F, Fut>(name: &str, mut attempt: F)
where
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let mut failures = Vec::new();
    for k in 1..=ATTEMPTS {
        match attempt(k).await {
            Ok(()) => return,
            Err(e) => {
                eprintln!("{name}: attempt {k} of {ATTEMPTS} missed: {e}");
                failures.push(format!("attempt {k}: {e}"));
            }
        }
    }
    if strict_timing() {
        panic!("{name}: every attempt missed:\n{}", failures.join("\n"));
    }
    eprintln!(
        "{name}: the wall-clock figures missed on every attempt (reported, not asserted; \
         `scripts/bench-live` asserts them on a quiet machine):\n{}",
        failures.join("\n")
    );
}
