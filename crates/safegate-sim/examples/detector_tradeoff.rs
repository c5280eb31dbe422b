//! The failure detectors' trade-off in docs/fleet.md: false suspicions per hour against
//! detection time, for φ-accrual and a fixed timeout, on a seeded heartbeat process of 200
//! hours (1 s interval, 0.1 s jitter, with and without Pareto pauses).
//!
//! ```sh
//! cargo run --release -p safegate-sim --example detector_tradeoff
//! ```

use safegate_sim::heartbeat::{sweep, DetectorKind, HeartbeatProcess, Pauses, Sweep};

fn jittery(pauses: Pauses) -> HeartbeatProcess {
    HeartbeatProcess { interval: 1.0, jitter_sd: 0.1, pauses }
}

fn main() {
    let pareto = jittery(Pauses::Pareto { probability: 0.01, scale: 0.5, shape: 1.5 });
    for (process, pause) in [(pareto, 3.0), (pareto, 0.0), (jittery(Pauses::None), 3.0)] {
        let mut s = Sweep::standard(process, 200.0, 2026);
        s.phi.acceptable_pause = pause;
        println!("\n{:?}, acceptable pause {pause} s", process.pauses);
        println!("| detector | threshold | false suspicions / h | detection mean [s] | detection p99 [s] |");
        println!("|---|---|---|---|---|");
        for r in sweep(&s).unwrap() {
            if r.detector == DetectorKind::Timeout && pause == 0.0 {
                continue;
            }
            let name = match r.detector {
                DetectorKind::Phi => "φ",
                DetectorKind::Timeout => "timeout (intervals)",
            };
            println!(
                "| {name} | {} | {:.3} | {:.2} | {:.2} |",
                r.threshold, r.false_per_hour, r.detection_mean, r.detection_p99
            );
        }
    }
}
