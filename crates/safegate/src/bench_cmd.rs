//! `safegate bench overhead`: the per-request cost of the tower layer, side by side with
//! tower's `ConcurrencyLimit` (and `LoadShed` over it), a no-op service, and, when built
//! with `--features tower-acc`, the `tower-acc` crate's adaptive `ConcurrencyLimit`.
//!
//! Each stack wraps the same no-op service; a request is `poll_ready`, `call`, one poll of
//! the (immediately ready) response future and its drop, driven by hand with a no-op waker
//! so no runtime is measured. Single-threaded, and with two threads each driving its own
//! clone of one stack (shared state, contended atomics). Every figure is the median of
//! `--rounds` rounds, the stacks interleaved within each round; the ratio is the median of
//! the per-round ratios (a paired comparison: a slow stretch of a shared machine slows both
//! stacks of a round alike).

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::process::ExitCode;
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use safegate_tower::AdmissionLayer;
use serde::Serialize;
use tower::limit::ConcurrencyLimitLayer;
use tower::load_shed::LoadShedLayer;
use tower::{Layer, Service};

/// Most requests × rounds per stack and thread: about a minute on two cores.
const MAX_BENCH_REQUESTS: f64 = 2e8;
/// Most rounds: a round costs about 1 ms beyond its requests (its stacks and threads are
/// set up anew), so `--rounds 1e8 --requests 1` was within the request budget and would
/// have run for a day.
const MAX_BENCH_ROUNDS: usize = 10_000;

/// Flags of `safegate bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    #[command(subcommand)]
    what: BenchWhat,
}

#[derive(Debug, Subcommand)]
enum BenchWhat {
    /// Nanoseconds per request of the admission layer vs tower's ConcurrencyLimit and a no-op.
    Overhead(OverheadArgs),
    /// Admission-control stacks side by side under open-loop overload on in-process backends.
    Overload(crate::overload::OverloadArgs),
    /// Jobs per second through our Redis plumbing (enqueue, execute, acknowledge; no-op
    /// job), side by side with apalis-redis (--features peers) on the same Redis.
    Plumbing(crate::bench_plumbing::PlumbingArgs),
    /// Seconds `boundary check` takes on a generated telemetry file of N rows (read, parse,
    /// check; the target: 10⁶ rows in at most 5 s).
    Boundary(crate::boundary_cmd::BenchBoundaryArgs),
}

/// Flags of `safegate bench overhead`.
#[derive(Debug, Args)]
struct OverheadArgs {
    /// Requests per thread per round.
    #[arg(long, default_value_t = 400_000, value_name = "N")]
    requests: u64,
    /// Rounds; each figure is the median over them.
    #[arg(long, default_value_t = 9, value_name = "N")]
    rounds: usize,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
}

/// The service every stack wraps: answers at once.
#[derive(Debug, Clone, Copy)]
struct Noop;

impl Service<()> for Noop {
    type Response = ();
    type Error = Infallible;
    type Future = std::future::Ready<Result<(), Infallible>>;
    #[inline]
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    #[inline]
    fn call(&mut self, _: ()) -> Self::Future {
        std::future::ready(Ok(()))
    }
}

struct NoopWake;
impl Wake for NoopWake {
    fn wake(self: Arc<Self>) {}
}

/// Drive `n` requests through `svc`; nanoseconds per request.
fn drive<S>(svc: &mut S, n: u64) -> f64
where
    S: Service<()>,
    S::Error: std::fmt::Debug,
{
    let waker = Waker::from(Arc::new(NoopWake));
    let mut cx = Context::from_waker(&waker);
    let start = Instant::now();
    for _ in 0..n {
        match svc.poll_ready(&mut cx) {
            Poll::Ready(Ok(())) => {}
            other => panic!("the benchmark service is always ready, got {:?}", other.map(|_| ())),
        }
        let mut fut = pin!(svc.call(()));
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(Ok(r)) => {
                black_box(r);
            }
            Poll::Ready(Err(e)) => panic!("the benchmark request failed: {e:?}"),
            Poll::Pending => panic!("the benchmark request did not complete at once"),
        }
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

/// Two threads, each driving its own clone of `svc`; the slower thread's ns per request.
fn drive2<S>(svc: &S, n: u64) -> f64
where
    S: Service<()> + Clone + Send + 'static,
    S::Error: std::fmt::Debug,
{
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let mut s = svc.clone();
            let b = barrier.clone();
            std::thread::spawn(move || {
                b.wait();
                drive(&mut s, n)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("benchmark thread panicked")).fold(0.0, f64::max)
}

/// The figures of one threading mode [ns per request].
#[derive(Debug, Clone, Serialize)]
struct Figures {
    noop_ns: f64,
    concurrency_limit_ns: f64,
    load_shed_concurrency_limit_ns: f64,
    admission_ns: f64,
    tower_acc_ns: Option<f64>,
    /// Median over rounds of the round's `admission / concurrency_limit` (the two run back
    /// to back in each round, so a slow stretch of the machine slows both).
    ratio: f64,
    /// Lowest and highest per-round ratio.
    ratio_range: [f64; 2],
    /// `tower_acc_ns / concurrency_limit_ns`, when built.
    tower_acc_ratio: Option<f64>,
}

#[derive(Debug, Serialize)]
struct Report {
    requests_per_thread: u64,
    rounds: usize,
    #[serde(flatten)]
    single: Figures,
    contended: Figures,
}

/// A boxed benchmark: drive `n` requests on one thread or on two.
type Case = Box<dyn Fn(u64, bool) -> f64>;

fn cases() -> Result<Vec<(&'static str, Case)>> {
    // A limit far above the one request per thread in flight: the benchmark measures the
    // bookkeeping, never a rejection. The barrier's capacity is large too: at the ~10⁷
    // req/s of a no-op service, the filter's Poisson prior on one period's queue change,
    // σ² = (λ + ŝ)·dt, is ~10⁶ requests², and a barrier of 700 would bind.
    const LIMIT: usize = 1000;
    const CAPACITY: u32 = 10_000_000;
    let mut v: Vec<(&'static str, Case)> = Vec::new();
    v.push(("noop", Box::new(|n, two| if two { drive2(&Noop, n) } else { drive(&mut Noop, n) })));
    v.push((
        "concurrency_limit",
        Box::new(|n, two| {
            let s = ConcurrencyLimitLayer::new(LIMIT).layer(Noop);
            if two {
                drive2(&s, n)
            } else {
                drive(&mut s.clone(), n)
            }
        }),
    ));
    v.push((
        "load_shed_concurrency_limit",
        Box::new(|n, two| {
            let s = LoadShedLayer::new().layer(ConcurrencyLimitLayer::new(LIMIT).layer(Noop));
            if two {
                drive2(&s, n)
            } else {
                drive(&mut s.clone(), n)
            }
        }),
    ));
    // Fail early if the layer cannot be built.
    AdmissionLayer::builder().max_concurrency(LIMIT as u32).capacity(CAPACITY).build()?;
    v.push((
        "admission",
        Box::new(|n, two| {
            // The default stack: vegas under the default boundary's safety filter.
            let layer = AdmissionLayer::builder()
                .max_concurrency(LIMIT as u32)
                .capacity(CAPACITY)
                .build()
                .expect("checked above");
            let s = layer.layer(Noop);
            if two {
                drive2(&s, n)
            } else {
                drive(&mut s.clone(), n)
            }
        }),
    ));
    #[cfg(feature = "tower-acc")]
    v.push((
        "tower_acc",
        Box::new(|n, two| {
            let s = tower_acc::ConcurrencyLimitLayer::new(tower_acc::Gradient2::default()).layer(Noop);
            if two {
                drive2(&s, n)
            } else {
                drive(&mut s.clone(), n)
            }
        }),
    ));
    Ok(v)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn measure(cases: &[(&'static str, Case)], n: u64, rounds: usize, two: bool) -> Figures {
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    // Warm-up round (page faults, lazy init, CPU frequency).
    for (_, c) in cases {
        c((n / 10).max(1), two);
    }
    for _ in 0..rounds {
        for (i, (_, c)) in cases.iter().enumerate() {
            samples[i].push(c(n, two));
        }
    }
    let pos = |name: &str| cases.iter().position(|(k, _)| *k == name);
    let get = |name: &str| pos(name).map(|i| median(samples[i].clone()));
    let cl = get("concurrency_limit").unwrap_or(f64::NAN);
    let adm = get("admission").unwrap_or(f64::NAN);
    let acc = get("tower_acc");
    // Paired per round: each round's admission figure over the same round's ConcurrencyLimit.
    let ratios: Vec<f64> = match (pos("admission"), pos("concurrency_limit")) {
        (Some(a), Some(c)) => samples[a].iter().zip(&samples[c]).map(|(x, y)| x / y).collect(),
        _ => vec![f64::NAN],
    };
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Figures {
        noop_ns: get("noop").unwrap_or(f64::NAN),
        concurrency_limit_ns: cl,
        load_shed_concurrency_limit_ns: get("load_shed_concurrency_limit").unwrap_or(f64::NAN),
        admission_ns: adm,
        tower_acc_ns: acc,
        ratio: median(ratios),
        ratio_range: [lo, hi],
        tower_acc_ratio: acc.map(|a| a / cl),
    }
}

/// `safegate bench …`.
pub(crate) fn run(args: &BenchArgs) -> Result<ExitCode> {
    let a = match &args.what {
        BenchWhat::Overhead(a) => a,
        BenchWhat::Overload(a) => return crate::overload::run(a),
        BenchWhat::Plumbing(a) => return crate::bench_plumbing::run(a),
        BenchWhat::Boundary(a) => return crate::boundary_cmd::bench(a),
    };
    if a.requests == 0 || a.rounds == 0 {
        bail!("--requests and --rounds must be at least 1");
    }
    if a.rounds > MAX_BENCH_ROUNDS {
        bail!(
            "--rounds {} is out of range: allowed [1, {MAX_BENCH_ROUNDS}] (each round costs about 1 ms of set-up)",
            a.rounds
        );
    }
    // Five stacks, one and two threads: about 10 requests' work per request and round.
    safegate_sim::limits::budget(
        "--requests",
        a.requests,
        a.requests as f64 * a.rounds as f64,
        MAX_BENCH_REQUESTS,
        "--requests × --rounds requests per stack and thread",
    )?;
    let cases = cases()?;
    let single = measure(&cases, a.requests, a.rounds, false);
    let contended = measure(&cases, a.requests, a.rounds, true);
    let report = Report { requests_per_thread: a.requests, rounds: a.rounds, single, contended };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "safegate bench overhead: {} requests per thread, median of {} rounds (ns per request)",
        a.requests, a.rounds
    );
    println!();
    println!("{:<44} {:>12} {:>16}", "stack", "1 thread", "2 threads");
    let row = |name: &str, x: f64, y: f64| println!("{name:<44} {x:>12.1} {y:>16.1}");
    let (s, c) = (&report.single, &report.contended);
    row("no-op service", s.noop_ns, c.noop_ns);
    row("tower ConcurrencyLimit", s.concurrency_limit_ns, c.concurrency_limit_ns);
    row("tower LoadShed + ConcurrencyLimit", s.load_shed_concurrency_limit_ns, c.load_shed_concurrency_limit_ns);
    row("safegate Admission (default controller)", s.admission_ns, c.admission_ns);
    match (s.tower_acc_ns, c.tower_acc_ns) {
        (Some(x), Some(y)) => row("tower-acc ConcurrencyLimit (Gradient2)", x, y),
        _ => println!("{:<44} {:>12} {:>16}", "tower-acc", "not built", "(--features tower-acc)"),
    }
    println!();
    println!(
        "ratio admission / ConcurrencyLimit, median of per-round ratios: {:.2} (1 thread, rounds {:.2}–{:.2}), \
         {:.2} (2 threads, rounds {:.2}–{:.2})",
        s.ratio, s.ratio_range[0], s.ratio_range[1], c.ratio, c.ratio_range[0], c.ratio_range[1]
    );
    if let (Some(x), Some(y)) = (s.tower_acc_ratio, c.tower_acc_ratio) {
        println!("ratio tower-acc / ConcurrencyLimit:  {x:.2} (1 thread), {y:.2} (2 threads)");
    }
    Ok(ExitCode::SUCCESS)
}
