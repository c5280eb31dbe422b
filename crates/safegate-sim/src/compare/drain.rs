//! The seed's drain table, measured in the model: what the probe and drain rounds of the
//! cycle add to the queue after the capacity collapses under the estimate.

use safegate_core::controllers::{Cycle, CycleConfig};
use serde::Serialize;

use crate::config::Config;
use crate::health::{DipShape, HealthSchedule, HealthTrack};
use crate::record::RunOptions;
use crate::run_fluid;

/// The seed's drain table, measured in the model with [`Cycle`].
#[derive(Debug, Clone, Serialize)]
pub struct ProbeCollapseRow {
    /// Capacity after the collapse, as a fraction of the estimate.
    pub capacity: f64,
    /// Queue added by the probe round, abort off \[requests\].
    pub probe: f64,
    /// Queue added by the drain round, abort off.
    pub drain: f64,
    /// The seed's prediction for the probe and drain rounds: `(1.25 − c)·b̂` and
    /// `(0.75 − c)·b̂` per round.
    pub predicted: [f64; 2],
    /// Queue added over probe and drain rounds with the rate-of-closure abort on.
    pub probe_drain_abort: f64,
    /// Peak queue added within the probe and drain rounds, abort off and on.
    pub peak: [f64; 2],
}
/// The seed's drain table in the model: the fluid pool capped at C (capacity 150·H), λ =
/// 200 offered, [`Cycle`] converged on the estimate; at t = 80 s, the start of a probe
/// round, health steps down to `c`. Measures what the probe and drain rounds add.
pub fn probe_collapse(fractions: &[f64]) -> Vec<ProbeCollapseRow> {
    let at = 80.0;
    fractions
        .iter()
        .map(|&c| {
            let cfg = Config {
                traffic: 200.0,
                duration: at + 8.0,
                initial_queue: 30.0,
                health: HealthTrack::new(HealthSchedule::Dip {
                    shape: DipShape { high: 1.0, low: c, hold_high: 0.0, ramp_down: 1e-6, hold_low: 1e6, ramp_up: 1.0 },
                    start: at,
                }),
                ..Config::default()
            };
            let run = |gamma: Option<f64>| {
                let mut p = Cycle::new(CycleConfig {
                    abort_gamma: gamma,
                    imm: None,
                    concurrency: Some(4),
                    ..CycleConfig::default()
                })
                .expect("valid");
                let out = run_fluid(&cfg, &mut p, RunOptions { record_every: Some(1), progress: None });
                let s = out.series.expect("recorded");
                let q = |t: f64| s.queue[s.t.partition_point(|&x| x < t - 1e-9).min(s.queue.len() - 1)];
                let (i0, i1) = (s.t.partition_point(|&x| x < at), s.t.partition_point(|&x| x < at + 2.0));
                let peak = s.queue[i0..i1].iter().cloned().fold(0.0, f64::max) - q(at);
                (q(at + 1.0) - q(at), q(at + 2.0) - q(at + 1.0), peak)
            };
            let (probe, drain, peak0) = run(None);
            let (p1, d1, peak1) = run(Some(CycleConfig::default().abort_gamma.expect("on by default")));
            let est = 150.0;
            ProbeCollapseRow {
                capacity: c,
                probe,
                drain,
                predicted: [(1.25 - c) * est, (0.75 - c) * est],
                probe_drain_abort: p1 + d1,
                peak: [peak0, peak1],
            }
        })
        .collect()
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drain_table_holds_in_the_model() {
        let rows = probe_collapse(&[0.9, 0.6]);
        for r in &rows {
            // Within one 50-ms fluid step of the round's rate.
            let step = 0.05 * 150.0 * (1.25 - r.capacity) + 0.5;
            assert!((r.probe - r.predicted[0]).abs() < step, "{r:?}");
            assert!((r.drain - r.predicted[1]).abs() < step, "{r:?}");
        }
        assert!(rows[0].drain < 0.0 && rows[1].drain > 0.0, "the drain adds below 0.75: {rows:?}");
        assert!(rows[1].probe_drain_abort < 0.5 * (rows[1].probe + rows[1].drain), "{rows:?}");
        assert!(rows[1].peak[1] < rows[1].peak[0]);
    }
}
