//! The seed's drain table (probe and drain rounds after a collapse), measured in the model.

use safegate_core::controllers::cycle::{Cycle, CycleConfig};

use super::report::ProbeCollapseRow;
use safegate_sim::config::Config;
use safegate_sim::health::{DipShape, HealthSchedule, HealthTrack};
use safegate_sim::record::RunOptions;

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
                let out =
                    safegate_sim::fluid::simulate(&cfg, &mut p, RunOptions { record_every: Some(1), progress: None });
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
