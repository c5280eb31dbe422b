//! How the scheduler waits: on its own OS thread for a wall clock, or as a tokio task for a
//! tokio clock (which a test may pause).
//!
//! On the wall clock tokio's timers would not do: their granularity is 1 ms, which at speed
//! 10 would bias a 2.7 ms service time by tens of per cent. The thread sleeps on
//! `recv_timeout` and yields for the last [`SPIN`] before a due completion, which wakes it a
//! few microseconds late on average. On a tokio clock the task sleeps on tokio's timers; with
//! the clock paused, model time stands still while any task can run, so replies and the
//! requests they trigger happen at the model instant of the completion, and the timers'
//! millisecond is `1 ms × speed` of model time.

use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use super::channel::Msg;
use super::sched::Scheduler;

/// Longest single wait when nothing is due: the thread re-checks at least this often.
const MAX_WAIT: Duration = Duration::from_millis(250);
/// The last stretch before a due completion that the thread spends yielding rather than
/// asleep, to wake on time (see [`receive`]).
const SPIN: Duration = Duration::from_micros(150);

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

/// The thread's loop: returns on `Shutdown` or when every sender is gone, dropping the
/// requests still in service (their handlers answer 503).
pub(super) fn run_thread(mut sched: Scheduler, rx: Receiver<Msg>) {
    let clock = sched.clock();
    loop {
        let (deadline, timed) = sched.deadline();
        let msg = receive(&rx, deadline, timed);
        let woke = clock.instant();
        let now = clock.at(woke);
        match msg {
            Ok(msg) => {
                if !sched.handle(msg, now) {
                    break;
                }
            }
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {
                if let (Some(d), true) = (deadline, timed) {
                    if woke >= d {
                        let late = (woke - d).as_nanos().min(u64::MAX as u128) as u64;
                        let c = sched.counters();
                        c.wakes.fetch_add(1, AtomicOrdering::Relaxed);
                        c.late_ns.fetch_add(late, AtomicOrdering::Relaxed);
                        c.max_late_ns.fetch_max(late, AtomicOrdering::Relaxed);
                    }
                }
                sched.wake(now);
            }
        }
    }
    sched.stop();
}

/// The task's loop, on tokio's timers: returns on `Shutdown` or when every sender is gone,
/// dropping the requests still in service.
pub(super) async fn run_task(mut sched: Scheduler, mut rx: tokio::sync::mpsc::UnboundedReceiver<Msg>) {
    let clock = sched.clock();
    loop {
        let (deadline, _) = sched.deadline();
        let msg = match deadline {
            None => rx.recv().await,
            Some(d) => tokio::select! {
                biased;
                msg = rx.recv() => msg,
                _ = tokio::time::sleep_until(tokio::time::Instant::from_std(d)) => {
                    sched.wake(clock.now());
                    continue;
                }
            },
        };
        let Some(msg) = msg else { break };
        if !sched.handle(msg, clock.now()) {
            break;
        }
    }
    sched.stop();
}
