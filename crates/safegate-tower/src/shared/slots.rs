//! The gate word ([`Gate`]): one `AtomicU64` holding the offered count (high 32 bits,
//! wrapping) and the slots taken (low 32 bits), so that a request is counted, shed or
//! admitted in one compare-and-swap. Its atomic is `crate::sync`'s: under `cfg(loom)`
//! `tests/loom.rs` checks every interleaving of a few threads on this very code and these
//! orderings. Not part of the API.

use crate::sync::{AtomicU64, Ordering};

/// One offered request in the gate word.
pub const OFFER: u64 = 1 << 32;

/// The gate word's retired mark (bit 31): the layer's last handle is gone, and the
/// release of the last slot frees its state.
pub const RETIRED: u64 = 1 << 31;

/// Most slots ever taken at once. Limits are far below (`max_concurrency` ≤ 10⁶); only
/// a dry run takes slots past its limit, and reaching this needs 2³⁰ requests in the
/// service at once, i.e. leaked (`mem::forget`) response futures. Past it
/// [`Gate::offer`] aborts, as `Arc` does on a reference-count overflow: the count must
/// never carry into [`RETIRED`], which would free the state under a live layer.
pub const MAX_TAKEN: u32 = 1 << 30;

/// The offered count (mod 2³²) of a gate word.
#[inline]
pub fn offered(word: u64) -> u32 {
    (word >> 32) as u32
}

/// The slots taken of a gate word.
#[inline]
pub fn taken(word: u64) -> u32 {
    word as u32 & !(RETIRED as u32)
}

/// What [`Gate::offer`] did with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// A slot was free and is now the request's.
    Admitted,
    /// The admission share turned it away (no slot taken unless `take_anyway`).
    Shed,
    /// Every slot up to the limit is taken (no slot taken unless `take_anyway`).
    Full,
}

/// The gate word of a layer.
///
/// Orderings: taking a slot is a `SeqCst` compare-and-swap (`Relaxed` when it fails and
/// the loop retries); giving one back ([`Gate::release`]) and retiring ([`Gate::retire`])
/// are `SeqCst` read-modify-writes. The owner protocol needs at least `AcqRel` on those
/// two: whichever of them frees the state must see every access made before the others
/// (`tests/loom.rs`, `the_state_is_freed_once_and_after_every_access`); `SeqCst` also
/// orders them against the queue's `SeqCst` waiting count, so that a release and a
/// waiter that just counted itself do not both miss each other.
#[derive(Debug)]
pub struct Gate(AtomicU64);

impl Gate {
    /// A gate with no request offered and no slot taken.
    pub fn new() -> Self {
        Gate(AtomicU64::new(0))
    }

    /// A gate whose word is `word` (for tests that start near a bound).
    #[cfg(test)]
    pub(crate) fn with_word(word: u64) -> Self {
        Gate(AtomicU64::new(word))
    }

    /// The word now (relaxed: a reading for counts, not for synchronisation).
    #[inline]
    pub fn word(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Count one offered request and, unless `shed(n)` turns it away (`n` its sequence
    /// number, the offered count before it) or `limit` slots are taken, give it a slot;
    /// with `take_anyway` (dry run) it takes a slot whatever the outcome. One
    /// compare-and-swap loop: every request gets its own `n`, and without `take_anyway`
    /// the slots taken never pass `limit`, whatever the interleaving.
    #[inline]
    pub fn offer(&self, limit: u32, take_anyway: bool, shed: impl Fn(u32) -> bool) -> (u32, Offer) {
        debug_assert!(limit <= MAX_TAKEN);
        let mut cur = self.word();
        loop {
            if take_anyway && taken(cur) >= MAX_TAKEN {
                overflow();
            }
            let n = offered(cur);
            let outcome = if shed(n) {
                Offer::Shed
            } else if taken(cur) >= limit {
                Offer::Full
            } else {
                Offer::Admitted
            };
            let slot = u64::from(take_anyway || outcome == Offer::Admitted);
            match self.0.compare_exchange_weak(cur, cur.wrapping_add(OFFER + slot), Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => return (n, outcome),
                Err(v) => cur = v,
            }
        }
    }

    /// Take one slot for a request already counted (one that waited in the queue) if
    /// fewer than `limit` are taken.
    #[inline]
    pub fn try_acquire(&self, limit: u32) -> bool {
        debug_assert!(limit <= MAX_TAKEN);
        let mut cur = self.word();
        loop {
            if taken(cur) >= limit {
                return false;
            }
            match self.0.compare_exchange_weak(cur, cur + 1, Ordering::SeqCst, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(v) => cur = v,
            }
        }
    }

    /// Give back a slot taken by [`Gate::offer`] or [`Gate::try_acquire`]: true when it
    /// was the last slot of a retired gate, and the caller is the one to free the state.
    #[inline]
    pub fn release(&self) -> bool {
        let before = self.0.fetch_sub(1, Ordering::SeqCst);
        before & RETIRED != 0 && taken(before) == 1
    }

    /// Mark the gate retired (its last handle is gone, no request can be offered any
    /// more): true when no slot is taken, and the caller is the one to free the state;
    /// otherwise the release of the last slot is ([`Gate::release`]). Exactly one of the
    /// two says so, whatever the interleaving.
    #[inline]
    pub fn retire(&self) -> bool {
        taken(self.0.fetch_or(RETIRED, Ordering::SeqCst)) == 0
    }
}

impl Default for Gate {
    fn default() -> Self {
        Gate::new()
    }
}

#[cold]
#[inline(never)]
fn overflow() -> ! {
    eprintln!("safegate-tower: {MAX_TAKEN} slots taken at once (leaked response futures in dry run); aborting");
    std::process::abort()
}
