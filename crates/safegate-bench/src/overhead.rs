//! The per-request cost of the tower layer, side by side with tower's `ConcurrencyLimit`
//! (and `LoadShed` over it), a no-op service, and, with the feature `tower-acc`, the
//! `tower-acc` crate's adaptive `ConcurrencyLimit`.
//!
//! Each stack wraps the same no-op service; a request is `poll_ready`, `call`, one poll of
//! the (immediately ready) response future and its drop, driven by hand with a no-op waker
//! so no runtime is measured. Single-threaded, and with two threads each driving its own
//! clone of one stack (shared state, contended atomics). Every figure is the median of
//! `rounds` rounds, the stacks interleaved within each round; the ratio is the median of
//! the per-round ratios (a paired comparison: a slow stretch of a shared machine slows both
//! stacks of a round alike).

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use safegate_core::stats::median;
use safegate_core::RangeError;
use safegate_tower::AdmissionLayer;
use serde::Serialize;
use tower::limit::ConcurrencyLimitLayer;
use tower::load_shed::LoadShedLayer;
use tower::{Layer, Service};

use crate::error::{Error, Result};

/// Most requests × rounds per stack and thread: about a minute on two cores.
pub const MAX_REQUESTS: f64 = 2e8;
/// Most rounds: a round costs about 1 ms beyond its requests (its stacks and threads are
/// set up anew), so a million rounds of one request would be within the request budget
/// and run for a day.
pub const MAX_ROUNDS: usize = 10_000;

/// Whether tower-acc's limiter is among the stacks (the feature `tower-acc`).
pub const TOWER_ACC_BUILT: bool = cfg!(feature = "tower-acc");

/// What to measure.
#[derive(Debug, Clone, Copy)]
pub struct OverheadSpec {
    /// Requests per thread per round (at least 1).
    pub requests: u64,
    /// Rounds, each figure the median over them: `[1, MAX_ROUNDS]`.
    pub rounds: usize,
}

/// The figures of one threading mode [ns per request].
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// The no-op service alone.
    pub noop_ns: f64,
    /// tower's `ConcurrencyLimit`.
    pub concurrency_limit_ns: f64,
    /// tower's `LoadShed` over `ConcurrencyLimit`.
    pub load_shed_concurrency_limit_ns: f64,
    /// safegate's admission layer with its default controller.
    pub admission_ns: f64,
    /// tower-acc's `ConcurrencyLimit` (Gradient2), when built.
    pub tower_acc_ns: Option<f64>,
    /// Median over rounds of the round's `admission / concurrency_limit` (the two run back
    /// to back in each round, so a slow stretch of the machine slows both).
    pub ratio: f64,
    /// Lowest and highest per-round ratio.
    pub ratio_range: [f64; 2],
    /// `tower_acc_ns / concurrency_limit_ns`, when built.
    pub tower_acc_ratio: Option<f64>,
}

/// Every figure of a measurement.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Requests per thread per round.
    pub requests_per_thread: u64,
    /// Rounds.
    pub rounds: usize,
    /// One thread.
    #[serde(flatten)]
    pub single: Figures,
    /// Two threads sharing one stack.
    pub contended: Figures,
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

/// A boxed benchmark: drive `n` requests on one thread or on two.
type Case = Box<dyn Fn(u64, bool) -> f64>;

/// One thread or two on a fresh clone of the stack `s`.
fn on<S>(s: S, n: u64, two: bool) -> f64
where
    S: Service<()> + Clone + Send + 'static,
    S::Error: std::fmt::Debug,
{
    if two {
        drive2(&s, n)
    } else {
        drive(&mut s.clone(), n)
    }
}

fn cases() -> Result<Vec<(&'static str, Case)>> {
    // A limit far above the one request per thread in flight: the benchmark measures the
    // bookkeeping, never a rejection. The barrier's capacity is large too: at the ~10⁷
    // req/s of a no-op service, the filter's Poisson prior on one period's queue change,
    // σ² = (λ + ŝ)·dt, is ~10⁶ requests², and a barrier of 700 would bind.
    const LIMIT: usize = 1000;
    const CAPACITY: u32 = 10_000_000;
    let mut v: Vec<(&'static str, Case)> = Vec::new();
    v.push(("noop", Box::new(|n, two| on(Noop, n, two))));
    v.push(("concurrency_limit", Box::new(|n, two| on(ConcurrencyLimitLayer::new(LIMIT).layer(Noop), n, two))));
    v.push((
        "load_shed_concurrency_limit",
        Box::new(|n, two| on(LoadShedLayer::new().layer(ConcurrencyLimitLayer::new(LIMIT).layer(Noop)), n, two)),
    ));
    // Fail early if the layer cannot be built.
    AdmissionLayer::builder()
        .max_concurrency(LIMIT as u32)
        .capacity(CAPACITY)
        .build()
        .map_err(|e| Error::failed("building the admission layer", e))?;
    v.push((
        "admission",
        Box::new(|n, two| {
            // The default stack: `peak` (reject mode: the nominal alone under the barrier's cap).
            let layer = AdmissionLayer::builder()
                .max_concurrency(LIMIT as u32)
                .capacity(CAPACITY)
                .build()
                .expect("checked above");
            on(layer.layer(Noop), n, two)
        }),
    ));
    #[cfg(feature = "tower-acc")]
    v.push((
        "tower_acc",
        Box::new(|n, two| {
            on(tower_acc::ConcurrencyLimitLayer::new(tower_acc::Gradient2::default()).layer(Noop), n, two)
        }),
    ));
    Ok(v)
}

/// The names of the stacks [`overhead`] measures (`noop`, `concurrency_limit`,
/// `load_shed_concurrency_limit`, `admission`, and `tower_acc` when built).
pub fn stack_names() -> Result<Vec<&'static str>> {
    Ok(cases()?.into_iter().map(|(k, _)| k).collect())
}

/// A stack named `name` (one of [`stack_names`]), built once, as a function that drives
/// `n` more requests through it on this thread, as [`overhead`] does for one thread: the
/// workload of `examples/instructions.rs`, which warms it up (the clock's calibration, the
/// sampling's adaptation) and then counts the instructions of the requests alone under
/// callgrind (a count does not depend on the host's speed that day).
pub fn driver(name: &str) -> Result<Box<dyn FnMut(u64)>> {
    fn boxed<S>(s: S) -> Box<dyn FnMut(u64)>
    where
        S: Service<()> + 'static,
        S::Error: std::fmt::Debug,
    {
        let mut s = s;
        Box::new(move |n| {
            drive(&mut s, n);
        })
    }
    const LIMIT: usize = 1000;
    const CAPACITY: u32 = 10_000_000;
    Ok(match name {
        "noop" => boxed(Noop),
        "concurrency_limit" => boxed(ConcurrencyLimitLayer::new(LIMIT).layer(Noop)),
        "load_shed_concurrency_limit" => {
            boxed(LoadShedLayer::new().layer(ConcurrencyLimitLayer::new(LIMIT).layer(Noop)))
        }
        "admission" => boxed(
            AdmissionLayer::builder()
                .max_concurrency(LIMIT as u32)
                .capacity(CAPACITY)
                .build()
                .map_err(|e| Error::failed("building the admission layer", e))?
                .layer(Noop),
        ),
        #[cfg(feature = "tower-acc")]
        "tower_acc" => boxed(tower_acc::ConcurrencyLimitLayer::new(tower_acc::Gradient2::default()).layer(Noop)),
        other => {
            let known = stack_names()?;
            return Err(Error::input("stack", format!("unknown stack {other:?}; known are {}", known.join(", "))));
        }
    })
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
    let get = |name: &str| pos(name).and_then(|i| median(&samples[i]));
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
        ratio: median(&ratios).unwrap_or(f64::NAN),
        ratio_range: [lo, hi],
        tower_acc_ratio: acc.map(|a| a / cl),
    }
}

/// Check `spec`: an error names the field (`requests`, `rounds`).
pub fn check(spec: &OverheadSpec) -> Result<()> {
    if spec.requests == 0 {
        return Err(RangeError::new("requests", spec.requests, "at least 1").into());
    }
    if !(1..=MAX_ROUNDS).contains(&spec.rounds) {
        return Err(RangeError::new(
            "rounds",
            spec.rounds,
            format!("[1, {MAX_ROUNDS}] (each round costs about 1 ms of set-up)"),
        )
        .into());
    }
    // Five stacks, one and two threads: about 10 requests' work per request and round.
    safegate_core::limits::budget(
        "requests",
        spec.requests,
        spec.requests as f64 * spec.rounds as f64,
        MAX_REQUESTS,
        "requests × rounds requests per stack and thread",
    )?;
    Ok(())
}

/// Measure every stack, one thread and two, over `spec.rounds` rounds.
pub fn overhead(spec: &OverheadSpec) -> Result<Report> {
    check(spec)?;
    let cases = cases()?;
    let single = measure(&cases, spec.requests, spec.rounds, false);
    let contended = measure(&cases, spec.requests, spec.rounds, true);
    Ok(Report { requests_per_thread: spec.requests, rounds: spec.rounds, single, contended })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_measurement_has_every_figure() {
        let r = overhead(&OverheadSpec { requests: 200, rounds: 2 }).expect("measured");
        for f in [&r.single, &r.contended] {
            for x in [f.noop_ns, f.concurrency_limit_ns, f.load_shed_concurrency_limit_ns, f.admission_ns, f.ratio] {
                assert!(x.is_finite() && x > 0.0, "{f:?}");
            }
            assert!(f.ratio_range[0] <= f.ratio && f.ratio <= f.ratio_range[1], "{f:?}");
            assert_eq!(f.tower_acc_ns.is_some(), TOWER_ACC_BUILT);
        }
    }

    #[test]
    fn bad_inputs_name_the_field() {
        let field = |requests, rounds| check(&OverheadSpec { requests, rounds }).unwrap_err().field().map(String::from);
        assert_eq!(field(0, 9).as_deref(), Some("requests"));
        assert_eq!(field(1, 0).as_deref(), Some("rounds"));
        assert_eq!(field(1, MAX_ROUNDS + 1).as_deref(), Some("rounds"));
        assert_eq!(field(1_000_000_000, 9).as_deref(), Some("requests"));
    }
}
