//! What a run reports: a summary, and optionally a time series.

use serde::Serialize;

/// Totals and extremes of one run. Counts are requests (fractional in the fluid mode).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Simulated seconds.
    pub duration: f64,
    /// Smallest queue depth seen (after the first step).
    pub queue_min: f64,
    /// Time-averaged queue depth.
    pub queue_mean: f64,
    /// Start of the settled window \[s\] (`run.warmup`).
    pub warmup: f64,
    /// Smallest queue depth at or after the warm-up (the seed's band floor); `None` if the
    /// run ended before the warm-up.
    pub settled_min: Option<f64>,
    /// Largest queue depth at or after the warm-up (the seed's band top).
    pub settled_max: Option<f64>,
    /// Largest queue depth seen.
    pub queue_max: f64,
    /// Queue depth at the end.
    pub queue_final: f64,
    /// Backlog-time `Σ q·dt` [request·s], the seed's social cost.
    pub backlog_time: f64,
    /// Requests offered to the gate (external arrivals plus gated retries).
    pub offered: f64,
    /// Requests admitted into the backlog (including direct retries).
    pub admitted: f64,
    /// Requests the gate rejected.
    pub rejected: f64,
    /// Admitted requests lost because the backlog was full.
    pub dropped: f64,
    /// Requests cleared successfully.
    pub cleared: f64,
    /// Completions that failed downstream and were retried.
    pub retried: f64,
    /// Retries dropped because the policy asked to shed them (included in `retried`).
    pub retries_shed: f64,
    /// Queue depth counted as "drained".
    pub drain_level: f64,
    /// Whether the queue ended at or below `drain_level`.
    pub drained: bool,
    /// When the queue fell to `drain_level` for good (`None` if it ended above it).
    pub drained_at: Option<f64>,
    /// End of the single health dip, for a `dip` schedule.
    pub dip_end: Option<f64>,
    /// Seconds from the dip's end until the queue first fell to `drain_level` (the seed's
    /// recovery delay); `None` if it never did or there was no dip.
    pub recovery_after_dip: Option<f64>,
    /// Mean time in system of cleared requests \[s\] (stochastic mode only).
    pub mean_sojourn: Option<f64>,
    /// Median time in system of cleared requests \[s\] (stochastic mode only).
    pub sojourn_p50: Option<f64>,
    /// 99th percentile of the time in system of cleared requests \[s\] (stochastic mode only).
    pub sojourn_p99: Option<f64>,
    /// Steps (fluid) or random events (stochastic: arrivals and completions) simulated.
    pub events: u64,
}

/// One sample per recorded step.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Series {
    /// Time \[s\].
    pub t: Vec<f64>,
    /// Queue depth.
    pub queue: Vec<f64>,
    /// Health `H(t)`.
    pub health: Vec<f64>,
    /// Fraction of offered arrivals the policy admitted.
    pub admit_fraction: Vec<f64>,
}

impl Series {
    /// Append one sample.
    pub fn push(&mut self, t: f64, q: f64, h: f64, admit: f64) {
        self.t.push(t);
        self.queue.push(q);
        self.health.push(h);
        self.admit_fraction.push(admit);
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.t.len()
    }

    /// Whether there are no samples.
    pub fn is_empty(&self) -> bool {
        self.t.is_empty()
    }
}

/// A finished run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// Totals and extremes.
    pub summary: Summary,
    /// The recorded series, if recording was asked for.
    pub series: Option<Series>,
}

/// How much to record, and whom to tell about progress.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Record every `n`-th step (`None`: no series, the fastest).
    pub record_every: Option<usize>,
    /// Called with the fraction done, about a hundred times per run.
    pub progress: Option<&'a mut dyn FnMut(f64)>,
}

impl std::fmt::Debug for RunOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("record_every", &self.record_every)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// Running extremes, integral and drain bookkeeping shared by every mode, and by any
/// actuator that samples a queue over time (the live system).
#[derive(Debug)]
pub struct Tracker {
    pub(crate) min: f64,
    pub(crate) max: f64,
    pub(crate) integral: f64,
    warmup: f64,
    settled_min: f64,
    settled_max: f64,
    drain_level: f64,
    dip_end: Option<f64>,
    /// Last time the queue was seen above the drain level.
    last_above: Option<f64>,
    /// First time after the dip's end the queue was seen at or below the level.
    recovered_at: Option<f64>,
}

impl Tracker {
    /// A tracker for a run whose drain level, dip end and warm-up are given.
    pub fn new(drain_level: f64, dip_end: Option<f64>, warmup: f64) -> Self {
        Self {
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            integral: 0.0,
            warmup,
            settled_min: f64::INFINITY,
            settled_max: f64::NEG_INFINITY,
            drain_level,
            dip_end,
            last_above: None,
            recovered_at: None,
        }
    }

    /// Add `q·dt` to the backlog-time integral.
    #[inline]
    pub fn integrate(&mut self, q_dt: f64) {
        self.integral += q_dt;
    }

    /// The queue is `q` at time `t` (a sample point; the integral is kept by the caller).
    #[inline]
    pub fn sample(&mut self, t: f64, q: f64) {
        self.min = self.min.min(q);
        self.max = self.max.max(q);
        if t >= self.warmup - 1e-9 {
            self.settled_min = self.settled_min.min(q);
            self.settled_max = self.settled_max.max(q);
        }
        if q > self.drain_level {
            self.last_above = Some(t);
        } else if self.recovered_at.is_none() {
            if let Some(end) = self.dip_end {
                if t > end {
                    self.recovered_at = Some(t);
                }
            }
        }
    }

    /// Close the run: `resolution` is the time between samples, so "drained at" is the first
    /// sample after the last one above the level (fluid), or the crossing itself (0).
    pub fn finish(self, totals: Totals, q_final: f64, duration: f64, resolution: f64) -> Summary {
        let drained = q_final <= self.drain_level;
        let drained_at = if drained { Some(self.last_above.map_or(0.0, |t| t + resolution)) } else { None };
        Summary {
            duration,
            queue_min: self.min,
            queue_mean: self.integral / duration,
            warmup: self.warmup,
            settled_min: self.settled_min.is_finite().then_some(self.settled_min),
            settled_max: self.settled_max.is_finite().then_some(self.settled_max),
            queue_max: self.max,
            queue_final: q_final,
            backlog_time: self.integral,
            offered: totals.offered,
            admitted: totals.admitted,
            rejected: totals.rejected,
            dropped: totals.dropped,
            cleared: totals.cleared,
            retried: totals.retried,
            retries_shed: totals.retries_shed,
            drain_level: self.drain_level,
            drained,
            drained_at,
            dip_end: self.dip_end,
            recovery_after_dip: match (self.recovered_at, self.dip_end) {
                (Some(t), Some(end)) => Some(t - end),
                _ => None,
            },
            mean_sojourn: totals.mean_sojourn,
            sojourn_p50: totals.sojourn_quantiles.map(|q| q[0]),
            sojourn_p99: totals.sojourn_quantiles.map(|q| q[1]),
            events: totals.events,
        }
    }
}

/// The counters a run keeps, handed to [`Tracker::finish`] (the same meanings as the
/// fields of [`Summary`]).
#[derive(Debug, Default, Clone, Copy)]
pub struct Totals {
    /// Offered to the gate.
    pub offered: f64,
    /// Admitted.
    pub admitted: f64,
    /// Rejected by the gate.
    pub rejected: f64,
    /// Lost to a full backlog.
    pub dropped: f64,
    /// Cleared successfully.
    pub cleared: f64,
    /// Failed and retried.
    pub retried: f64,
    /// Retries shed.
    pub retries_shed: f64,
    /// Mean time in system \[s\].
    pub mean_sojourn: Option<f64>,
    /// The 50th and 99th percentiles of the sojourns.
    pub sojourn_quantiles: Option<[f64; 2]>,
    /// Events simulated (or jobs handled).
    pub events: u64,
}

/// The `p`-quantiles (nearest rank) of `xs`, reordering it; `None` when empty.
pub fn quantiles<const N: usize>(xs: &mut [f32], ps: [f64; N]) -> Option<[f64; N]> {
    if xs.is_empty() {
        return None;
    }
    let mut out = [0.0; N];
    for (o, p) in out.iter_mut().zip(ps) {
        let rank = ((p * xs.len() as f64).ceil() as usize).clamp(1, xs.len()) - 1;
        let (_, v, _) = xs.select_nth_unstable_by(rank, f32::total_cmp);
        *o = f64::from(*v);
    }
    Some(out)
}
