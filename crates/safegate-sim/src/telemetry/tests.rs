use super::traces::{generate, Fault, TraceSpec};
use super::*;

/// The acceptance case: over generated traces with fixed seeds, every fault is flagged in
/// ≥ 95 % of its traces, and ≤ 5 % of the (trace, check) pairs without that fault are
/// flagged.
#[test]
fn flags_injected_faults_and_spares_clean_traces() {
    let seeds = 0..20u64;
    let (mut hits, mut faults, mut false_flags, mut negatives) = (0, 0, 0, 0);
    let mut misses = Vec::new();
    for fault in Fault::ALL {
        for seed in seeds.clone() {
            let tel = generate(&TraceSpec::new(fault, 1000 + seed));
            let r = check(&tel, &CheckOptions::default(), "generated").unwrap();
            let flagged = r.flagged();
            for kind in FindingKind::ALL {
                let injected = fault.finding() == Some(kind);
                let raised = flagged.contains(&kind);
                if injected {
                    faults += 1;
                    hits += raised as usize;
                    if !raised {
                        misses.push(format!("{} seed {seed}: missed", fault.name()));
                    }
                } else {
                    negatives += 1;
                    false_flags += raised as usize;
                    if raised {
                        misses.push(format!("{} seed {seed}: false {}", fault.name(), kind.name()));
                    }
                }
            }
        }
    }
    let detection = hits as f64 / faults as f64;
    let false_rate = false_flags as f64 / negatives as f64;
    eprintln!("detection {hits}/{faults}, false flags {false_flags}/{negatives}: {misses:?}");
    assert!(detection >= 0.95, "detection {hits}/{faults}: {misses:?}");
    assert!(false_rate <= 0.05, "false flags {false_flags}/{negatives}: {misses:?}");
}
