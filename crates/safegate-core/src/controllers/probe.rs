//! The ProbeBW pacing-gain cycle the seed's nominal controller borrows from BBR.
//!
//! Eight rounds per cycle: one probing 25 % above the bandwidth estimate, one draining 25 %
//! below it, six cruising at it (Cardwell et al. 2016; the seed, "When the Probe Causes the
//! Cliff It Is Measuring For"). Against a capacity `c` (as a fraction of the estimate) a
//! round at gain `g` adds `g − c` to the queue: the drain round stops draining exactly when
//! `c ≤ 0.75`.

/// BBR's ProbeBW pacing gains: probe, drain, six cruise rounds.
pub const PROBE_BW_GAINS: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];

/// The capacity fraction below which the drain round adds to the queue (`PROBE_BW_GAINS[1]`).
pub const DRAIN_FAILS_AT: f64 = PROBE_BW_GAINS[1];
