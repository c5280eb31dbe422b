//! loom models of the gate word, run on the layer's own `offer`/`try_acquire`/`release`/
//! `retire` (generic over the atomic): every interleaving of requests racing for slots, and
//! of the last handle going away while admitted requests finish (who frees the state).

use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use loom::sync::Arc;
use safegate_tower::slots::{offer, offered, release, retire, taken, try_acquire, Counter, Offer, RETIRED};

/// loom's atomic behind the layer's counter trait.
struct Gate(AtomicU64);

impl Counter for Gate {
    fn current(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    fn swap_if(&self, cur: u64, new: u64) -> Result<u64, u64> {
        self.0.compare_exchange_weak(cur, new, Ordering::SeqCst, Ordering::Relaxed)
    }
    fn give_back(&self) -> u64 {
        self.0.fetch_sub(1, Ordering::SeqCst)
    }
    fn mark_retired(&self) -> u64 {
        self.0.fetch_or(RETIRED, Ordering::SeqCst)
    }
}

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
        let gate = Arc::new(Gate(AtomicU64::new(0)));
        // Requests actually inside the service, counted independently of the gate word.
        let inside = Arc::new(AtomicU32::new(0));
        let admitted = Arc::new(AtomicU32::new(0));
        // Bit n set when a request got sequence number n.
        let seen = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let (gate, inside, admitted, seen) = (gate.clone(), inside.clone(), admitted.clone(), seen.clone());
                loom::thread::spawn(move || {
                    let (n, outcome) = offer(&*gate, limit, false, |_| false);
                    let before = seen.fetch_or(1 << n, Ordering::SeqCst);
                    assert_eq!(before & (1 << n), 0, "sequence number {n} given twice");
                    if outcome == Offer::Admitted {
                        admitted.fetch_add(1, Ordering::SeqCst);
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(now <= limit, "{now} requests inside a limit of {limit}");
                        inside.fetch_sub(1, Ordering::SeqCst);
                        release(&*gate);
                    } else {
                        assert_eq!(outcome, Offer::Full);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let w = gate.0.load(Ordering::SeqCst);
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
        let gate = Arc::new(Gate(AtomicU64::new(0)));
        let inside = Arc::new(AtomicU32::new(0));
        let enter = move |gate: &Gate, inside: &AtomicU32| {
            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
            assert!(now <= limit, "{now} requests inside a limit of {limit}");
            inside.fetch_sub(1, Ordering::SeqCst);
            release(gate);
        };
        let mut threads = Vec::new();
        for _ in 0..2 {
            let (gate, inside) = (gate.clone(), inside.clone());
            threads.push(loom::thread::spawn(move || {
                let (n, outcome) = offer(&*gate, limit, false, |n| n == 0);
                assert_eq!(n == 0, outcome == Offer::Shed, "request {n}: {outcome:?}");
                if outcome == Offer::Admitted {
                    enter(&gate, &inside);
                }
            }));
        }
        {
            let (gate, inside) = (gate.clone(), inside.clone());
            threads.push(loom::thread::spawn(move || {
                if try_acquire(&*gate, limit) {
                    enter(&gate, &inside);
                }
            }));
        }
        for t in threads {
            t.join().unwrap();
        }
        let w = gate.0.load(Ordering::SeqCst);
        assert_eq!((offered(w), taken(w)), (2, 0));
    });
}

/// The layer's last handle goes away while two admitted requests finish on other threads:
/// the state is freed exactly once, after every request is done with it, whatever the
/// interleaving (the protocol behind `Owner` and `Permit`).
#[test]
fn the_state_is_freed_once_and_after_its_last_slot() {
    model().check(|| {
        let gate = Arc::new(Gate(AtomicU64::new(0)));
        // Two requests admitted while the handle was alive.
        for _ in 0..2 {
            assert_eq!(offer(&*gate, 8, false, |_| false).1, Offer::Admitted);
        }
        let freed = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (gate, freed) = (gate.clone(), freed.clone());
                loom::thread::spawn(move || {
                    // The request still uses the state: it must not be freed yet.
                    assert_eq!(freed.load(Ordering::SeqCst), 0, "state freed under a request");
                    if release(&*gate) {
                        freed.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        // The last handle.
        if retire(&*gate) {
            freed.fetch_add(1, Ordering::SeqCst);
        }
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(freed.load(Ordering::SeqCst), 1, "freed exactly once");
        let w = gate.0.load(Ordering::SeqCst);
        assert_eq!((offered(w), taken(w), w & RETIRED), (2, 0, RETIRED));
    });
}

/// Dry run (`take_anyway`) takes slots past any limit; the count must never carry into the
/// RETIRED bit (a release would then free the state under a live layer): at `MAX_TAKEN`
/// `offer` aborts the process, as `Arc` does on a reference-count overflow. Run in a child
/// process, which must die of SIGABRT before its word shows RETIRED.
#[test]
fn dry_run_slots_never_reach_the_retired_bit() {
    use safegate_tower::slots::MAX_TAKEN;
    const CHILD: &str = "SAFEGATE_TOWER_OVERFLOW_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let g = std::sync::atomic::AtomicU64::new(u64::from(MAX_TAKEN) - 1);
        assert_eq!(offer(&g, 1, true, |_| false).1, Offer::Full); // the last slot there is
        let _ = offer(&g, 1, true, |_| false); // aborts
        let w = g.load(std::sync::atomic::Ordering::SeqCst);
        println!("survived: word {w:#x}, retired {}", w & RETIRED != 0);
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "dry_run_slots_never_reach_the_retired_bit", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the child survived: {}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr.contains("slots taken at once"), "{stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(6), "SIGABRT expected: {:?}", out.status);
    }
}
