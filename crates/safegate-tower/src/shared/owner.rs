//! The owner protocol: who keeps a layer's state alive and who frees it.
//!
//! Handles (the layer, its services, requests waiting in the queue) share an
//! `Arc<Owner<_>>`; an admitted request keeps the state alive by its slot in the gate word
//! instead (a [`Slot`]), so admitting one costs no reference count. The last handle
//! retires the gate word ([`Gate::retire`]); the state is freed by whichever comes last,
//! that handle if no slot is taken, or the release of the last slot ([`Gate::release`]).
//! `tests/loom.rs` runs these types under loom (`cfg(loom)`) with the gate's own atomics
//! and orderings. Not part of the API.

use std::fmt;
use std::ops::Deref;
use std::ptr::NonNull;

use super::slots::{Gate, Offer};

/// State that holds a gate word: the word whose slots and retired mark say who frees it.
pub trait Gated {
    /// The state's gate word.
    fn gate(&self) -> &Gate;
}

/// A handle's share of a state `T` (behind an `Arc`: the `Arc`'s last drop retires the
/// gate). Hands out [`Slot`]s, each of which keeps `T` alive on its own.
pub struct Owner<T: Gated>(NonNull<T>);

/// A slot taken in an [`Owner`]'s gate word: it keeps the state alive until it is dropped,
/// which gives the slot back and, if it was the last slot of a retired gate, frees the
/// state.
pub struct Slot<T: Gated>(NonNull<T>);

// SAFETY: an `Owner` or a `Slot` is a shared reference to a `T` it co-owns, and whichever
// is dropped last frees the `T` on its own thread: handing one to another thread is as safe
// as handing over an `Arc<T>`, which asks the same of `T` (`Send + Sync`).
#[allow(unsafe_code)]
unsafe impl<T: Gated + Send + Sync> Send for Owner<T> {}
// SAFETY: as for `Send`: a shared `Owner` only hands out `&T` and slots.
#[allow(unsafe_code)]
unsafe impl<T: Gated + Send + Sync> Sync for Owner<T> {}
// SAFETY: as for `Owner`.
#[allow(unsafe_code)]
unsafe impl<T: Gated + Send + Sync> Send for Slot<T> {}
// SAFETY: as for `Owner`: a shared `Slot` only hands out `&T`.
#[allow(unsafe_code)]
unsafe impl<T: Gated + Send + Sync> Sync for Slot<T> {}

impl<T: Gated> Owner<T> {
    /// Move `state` to the heap, owned by this first handle.
    pub fn new(state: T) -> Self {
        Owner(NonNull::from(Box::leak(Box::new(state))))
    }

    /// [`Gate::offer`] on the state's gate: what became of the request, and the slot it
    /// took if it took one (admitted, or with `take_anyway` whatever the outcome).
    #[inline]
    pub fn offer(&self, limit: u32, take_anyway: bool, shed: impl Fn(u32) -> bool) -> (Offer, Option<Slot<T>>) {
        let (_, outcome) = self.gate().offer(limit, take_anyway, shed);
        // Not `then_some(Slot(..))`: that would make (and drop, i.e. give back) a slot that
        // was never taken.
        let slot = if take_anyway || outcome == Offer::Admitted { Some(Slot(self.0)) } else { None };
        (outcome, slot)
    }

    /// [`Gate::try_acquire`] on the state's gate: a slot if fewer than `limit` are taken.
    #[inline]
    pub fn try_acquire(&self, limit: u32) -> Option<Slot<T>> {
        if self.gate().try_acquire(limit) {
            Some(Slot(self.0))
        } else {
            None
        }
    }
}

#[allow(unsafe_code)]
impl<T: Gated> Deref for Owner<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the state lives while any handle does (`Drop` below frees it only once
        // the gate is retired and no slot is taken, which needs this handle gone).
        unsafe { self.0.as_ref() }
    }
}

#[allow(unsafe_code)]
impl<T: Gated> Drop for Owner<T> {
    fn drop(&mut self) {
        if self.gate().retire() {
            // SAFETY: the last handle (its `Arc`'s last drop), and no slot taken: nothing
            // else can reach the state.
            unsafe { free(self.0) }
        }
    }
}

#[allow(unsafe_code)]
impl<T: Gated> Deref for Slot<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the slot keeps the state alive until it is given back, in `Drop`.
        unsafe { self.0.as_ref() }
    }
}

#[allow(unsafe_code)]
impl<T: Gated> Drop for Slot<T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the slot keeps the state alive until this release; nothing reads it after.
        let last = unsafe { self.0.as_ref() }.gate().release();
        if last {
            // SAFETY: the last slot of a retired gate: no handle is left (the last one
            // retired it) and no other slot, so nothing else can reach the state.
            unsafe { free(self.0) }
        }
    }
}

/// Free the state.
///
/// # Safety
/// `ptr` came from [`Owner::new`], and the caller is the one party [`Gate::retire`] or
/// [`Gate::release`] told to free it: no handle and no slot is left, so nothing else can
/// reach it.
#[allow(unsafe_code)]
unsafe fn free<T>(ptr: NonNull<T>) {
    // SAFETY: by the caller's contract, the allocation is ours alone.
    drop(unsafe { Box::from_raw(ptr.as_ptr()) });
}

impl<T: Gated + fmt::Debug> fmt::Debug for Owner<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: Gated> fmt::Debug for Slot<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Slot").field(&self.0).finish()
    }
}
