//! A loom model of the permit logic: every interleaving of three requests racing for two
//! slots, run on the layer's own `try_acquire`/`release` (generic over the atomic).

use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::Arc;
use safegate_tower::slots::{release, try_acquire, Counter};

/// loom's atomic behind the layer's counter trait.
struct Slots(AtomicU32);

impl Counter for Slots {
    fn current(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }
    fn swap_if(&self, cur: u32, new: u32) -> Result<u32, u32> {
        self.0.compare_exchange_weak(cur, new, Ordering::SeqCst, Ordering::Relaxed)
    }
    fn give_back(&self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Three requests, two slots; loom explores every interleaving with up to two preemptions
/// (the bound keeps the search to seconds; the CAS loop's correctness needs one).
#[test]
fn never_more_than_the_limit_and_every_slot_comes_back() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        let limit = 2;
        let slots = Arc::new(Slots(AtomicU32::new(0)));
        // Requests actually inside the service, counted independently of the slot counter.
        let inside = Arc::new(AtomicU32::new(0));
        let admitted = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let (slots, inside, admitted) = (slots.clone(), inside.clone(), admitted.clone());
                loom::thread::spawn(move || {
                    if try_acquire(&*slots, limit) {
                        admitted.fetch_add(1, Ordering::SeqCst);
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(now <= limit, "{now} requests inside a limit of {limit}");
                        inside.fetch_sub(1, Ordering::SeqCst);
                        release(&*slots);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(slots.0.load(Ordering::SeqCst), 0, "every slot given back");
        assert!(admitted.load(Ordering::SeqCst) >= 2, "with three requests and two slots, at least two get in");
    });
}
