//! loom models of the gate word and the owner protocol, run on the production types
//! (`slots::Gate`, `owner::{Owner, Slot}`) with their own atomics and orderings: built with
//! `RUSTFLAGS="--cfg loom"`, the crate's `sync` module hands them loom's atomics. Every
//! interleaving of requests racing for slots, and of the last handle going away while
//! admitted requests finish (who frees the state, and only after every access to it).
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p safegate-tower --test loom --release --locked
//! ```
//!
//! (scripts/test runs it; without `--cfg loom` this file is empty.)
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::Arc;
use safegate_tower::owner::{Gated, Owner};
use safegate_tower::slots::{offered, taken, Gate, Offer, RETIRED};

fn model() -> loom::model::Builder {
    let mut model = loom::model::Builder::new();
    // Up to two preemptions: the search stays at seconds; the CAS loop's correctness needs one.
    model.preemption_bound = Some(2);
    model
}

/// Three requests, two slots: never more than two inside, every slot comes back, every
/// request is counted once with its own sequence number, and at least two get in.
#[test]
fn never_more_than_the_limit_and_every_slot_comes_back() {
    model().check(|| {
        let limit = 2;
        let gate = Arc::new(Gate::new());
        // Requests actually inside the service, counted independently of the gate word.
        let inside = Arc::new(AtomicU32::new(0));
        let admitted = Arc::new(AtomicU32::new(0));
        // Bit n set when a request got sequence number n.
        let seen = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let (gate, inside, admitted, seen) = (gate.clone(), inside.clone(), admitted.clone(), seen.clone());
                loom::thread::spawn(move || {
                    let (n, outcome) = gate.offer(limit, false, |_| false);
                    let before = seen.fetch_or(1 << n, Ordering::SeqCst);
                    assert_eq!(before & (1 << n), 0, "sequence number {n} given twice");
                    if outcome == Offer::Admitted {
                        admitted.fetch_add(1, Ordering::SeqCst);
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(now <= limit, "{now} requests inside a limit of {limit}");
                        inside.fetch_sub(1, Ordering::SeqCst);
                        assert!(!gate.release(), "a live gate is never freed");
                    } else {
                        assert_eq!(outcome, Offer::Full);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let w = gate.word();
        assert_eq!(taken(w), 0, "every slot given back");
        assert_eq!(offered(w), 3, "every request counted once");
        assert_eq!(seen.load(Ordering::SeqCst), 0b111);
        assert!(admitted.load(Ordering::SeqCst) >= 2, "with three requests and two slots, at least two get in");
    });
}

/// Two new requests (the one numbered 0 is shed) race a queued one retrying for one slot:
/// the shed request never holds a slot, and at most one is inside at once.
#[test]
fn a_shed_request_takes_no_slot_and_a_queued_one_respects_the_limit() {
    model().check(|| {
        let limit = 1;
        let gate = Arc::new(Gate::new());
        let inside = Arc::new(AtomicU32::new(0));
        let enter = move |gate: &Gate, inside: &AtomicU32| {
            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
            assert!(now <= limit, "{now} requests inside a limit of {limit}");
            inside.fetch_sub(1, Ordering::SeqCst);
            gate.release();
        };
        let mut threads = Vec::new();
        for _ in 0..2 {
            let (gate, inside) = (gate.clone(), inside.clone());
            threads.push(loom::thread::spawn(move || {
                let (n, outcome) = gate.offer(limit, false, |n| n == 0);
                assert_eq!(n == 0, outcome == Offer::Shed, "request {n}: {outcome:?}");
                if outcome == Offer::Admitted {
                    enter(&gate, &inside);
                }
            }));
        }
        {
            let (gate, inside) = (gate.clone(), inside.clone());
            threads.push(loom::thread::spawn(move || {
                if gate.try_acquire(limit) {
                    enter(&gate, &inside);
                }
            }));
        }
        for t in threads {
            t.join().unwrap();
        }
        let w = gate.word();
        assert_eq!((offered(w), taken(w)), (2, 0));
    });
}

/// Data whose every access loom checks against every other: an access that does not
/// happen before (or after) a write to it is reported.
struct Tracked(UnsafeCell<u64>);

// SAFETY: the cell is only reached through loom's `with`/`with_mut` and its pointer is
// never dereferenced, so sharing it is no data race; whether the accesses are ordered is
// what loom checks.
#[allow(unsafe_code)]
unsafe impl Sync for Tracked {}

/// A layer's state in miniature: the gate word, data the handles and requests read, and a
/// count of frees.
struct State {
    gate: Gate,
    data: Tracked,
    freed: Arc<AtomicU32>,
}

impl State {
    fn new(freed: &Arc<AtomicU32>) -> Self {
        State { gate: Gate::new(), data: Tracked(UnsafeCell::new(0)), freed: freed.clone() }
    }

    /// A handle or request uses the state (a read loom records).
    fn touch(&self) {
        self.data.0.with(|_| ());
    }
}

impl Gated for State {
    fn gate(&self) -> &Gate {
        &self.gate
    }
}

impl Drop for State {
    /// Freeing is a write to all of the state: loom reports any access that does not
    /// happen before it (the synchronisation the owner protocol's orderings must give).
    fn drop(&mut self) {
        self.data.0.with_mut(|_| ());
        self.freed.fetch_add(1, Ordering::SeqCst);
    }
}

/// The layer's last handle goes away while two admitted requests finish on other threads:
/// the state is freed exactly once, by whichever comes last, and every access to it, the
/// handle's and the requests', happens before the free, whatever the interleaving.
#[test]
fn the_state_is_freed_once_and_after_every_access() {
    model().check(|| {
        let freed = Arc::new(AtomicU32::new(0));
        let owner = Owner::new(State::new(&freed));
        // Two requests admitted while the handle was alive.
        let slots: Vec<_> = (0..2)
            .map(|_| match owner.offer(8, false, |_| false) {
                (Offer::Admitted, Some(slot)) => slot,
                other => panic!("not admitted: {:?}", other.0),
            })
            .collect();
        let threads: Vec<_> = slots
            .into_iter()
            .map(|slot| {
                let freed = freed.clone();
                loom::thread::spawn(move || {
                    // The request still uses the state: it must not be freed yet.
                    assert_eq!(freed.load(Ordering::SeqCst), 0, "state freed under a request");
                    slot.touch();
                    drop(slot);
                })
            })
            .collect();
        // The last handle.
        owner.touch();
        drop(owner);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(freed.load(Ordering::SeqCst), 1, "freed exactly once");
    });
}

/// Handles on two threads each admit a request and go away before it finishes; the main
/// thread's handle goes too: the slots keep the state alive past every handle, the last
/// release frees it once, after every access.
#[test]
fn requests_outlive_their_handles() {
    model().check(|| {
        let freed = Arc::new(AtomicU32::new(0));
        let handle = Arc::new(Owner::new(State::new(&freed)));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (handle, freed) = (handle.clone(), freed.clone());
                loom::thread::spawn(move || {
                    let (outcome, slot) = handle.offer(8, false, |_| false);
                    assert_eq!(outcome, Offer::Admitted);
                    let slot = slot.expect("an admitted request holds a slot");
                    drop(handle);
                    assert_eq!(freed.load(Ordering::SeqCst), 0, "state freed under a request");
                    slot.touch();
                    let w = slot.gate.word();
                    assert!(taken(w) >= 1, "the request's own slot is taken: {w:#x}");
                    drop(slot);
                })
            })
            .collect();
        handle.touch();
        drop(handle);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(freed.load(Ordering::SeqCst), 1, "freed exactly once");
    });
}

/// A retired gate with no slot out is freed by its last handle at once.
#[test]
fn a_handle_without_requests_frees_at_once() {
    model().check(|| {
        let freed = Arc::new(AtomicU32::new(0));
        let owner = Owner::new(State::new(&freed));
        let gate_word_before = owner.gate.word();
        assert_eq!(gate_word_before & RETIRED, 0);
        drop(owner);
        assert_eq!(freed.load(Ordering::SeqCst), 1);
    });
}
