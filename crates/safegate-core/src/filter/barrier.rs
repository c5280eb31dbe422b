//! The barrier `h(q) = θ − q/Q` (the seed, "This Model's Own Barrier, Stated Explicitly").

/// The queue-occupancy barrier: safe while `q ≤ θ·Q`.
///
/// # Examples
///
/// ```
/// use safegate_core::filter::Barrier;
///
/// let b = Barrier::new(0.7, 200.0).unwrap();
/// assert_eq!(b.boundary(), 140.0);
/// assert!((b.h(100.0) - 0.2).abs() < 1e-12);
/// assert_eq!(b.headroom(100.0), 40.0);
/// assert!(b.h(150.0) < 0.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Barrier {
    threshold: f64,
    capacity: f64,
}

impl Barrier {
    /// A barrier at occupancy `threshold` ∈ (0, 1) of a queue of `capacity` ∈ [1, 1e8]
    /// (the ranges every θ and capacity share, [`crate::error::check`]).
    pub fn new(threshold: f64, capacity: f64) -> Result<Self, crate::error::RangeError> {
        let threshold = crate::error::check::threshold("threshold", threshold)?;
        let capacity = crate::error::check::capacity("capacity", capacity)?;
        Ok(Self { threshold, capacity })
    }

    /// θ.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// Q.
    pub fn capacity(&self) -> f64 {
        self.capacity
    }

    /// The boundary depth `θ·Q`.
    pub fn boundary(&self) -> f64 {
        self.threshold * self.capacity
    }

    /// `h(q) = θ − q/Q`.
    #[inline]
    pub fn h(&self, q: f64) -> f64 {
        self.threshold - q / self.capacity
    }

    /// Headroom `G = θ·Q − q` \[requests\].
    #[inline]
    pub fn headroom(&self, q: f64) -> f64 {
        self.threshold * self.capacity - q
    }
}
