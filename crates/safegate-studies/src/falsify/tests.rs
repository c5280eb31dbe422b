//! Each criterion's verdict logic on constructed evidence (one case per verdict), and the
//! quick experiments' shape.

use super::feasibility::{judge_f16, judge_f17};
use super::filter_runs::{ArmCell, FilterArm, FilterRuns, Trial};
use super::*;

fn at(n: u64, per_alpha: [[f64; 3]; 4]) -> severity::AtSize {
    severity::AtSize { n, cvar: per_alpha.map(|v| v.to_vec()) }
}

#[test]
fn f10_verdicts() {
    // Light tail ≈ 3.2; heavy tails 10× above it in every replicate: holds.
    let sizes = [at(1_000, [[3.0, 3.2, 3.4], [40.0, 45.0, 50.0], [80.0, 90.0, 99.0], [60.0, 70.0, 80.0]])];
    assert_eq!(severity::judge(&sizes).0, Verdict::Holds);
    // Every tail within 2× the light one: the probability bound alone bounds severity.
    let flat = [3.0, 3.1, 3.2];
    let sizes = [at(1_000, [flat, flat, flat, flat]), at(10_000, [flat, flat, flat, [3.0, 3.2, 5.0]])];
    assert_eq!(severity::judge(&sizes).0, Verdict::Falsified);
    // Heavier but overlapping, not growing: inconclusive.
    let sizes = [at(1_000, [flat, [3.0, 8.0, 20.0], flat, flat]), at(10_000, [flat, [3.0, 8.0, 20.0], flat, flat])];
    assert_eq!(severity::judge(&sizes).0, Verdict::Inconclusive);
    // Growth at α = 1 alone is enough.
    let sizes = [at(1_000, [flat, flat, flat, [5.0, 6.0, 7.0]]), at(100_000, [flat, flat, flat, [12.0, 14.0, 16.0]])];
    let (v, why) = severity::judge(&sizes);
    assert_eq!(v, Verdict::Holds, "{why}");
    assert!(why.contains("grows"), "{why}");
    assert_eq!(severity::judge(&[]).0, Verdict::Inconclusive);
}

/// The filter in the loop: heavier bursts, larger overshoots, on the same seeds.
#[test]
fn f10_in_the_loop_heavier_bursts_overshoot_more() {
    let r = severity_loop::run(&[3.0, 1.1], 40, 1);
    assert_eq!(r.len(), 4);
    let (light, heavy) = (r[0], r[2]);
    assert!(!light.joint && !heavy.joint && r[1].joint);
    assert!(heavy.cvar > 10.0 * light.cvar, "{r:?}");
    assert!(heavy.exits.exits >= light.exits.exits, "{r:?}");
}

#[test]
fn f10_exact_cvar() {
    // α = 3: x_m = 2^(−1/3), VaR = x_m·20^(1/3), CVaR = 1.5·VaR.
    let v = severity::cvar_exact(3.0, 0.05);
    assert!((v - 1.5 * 2f64.powf(-1.0 / 3.0) * 20f64.powf(1.0 / 3.0)).abs() < 1e-12, "{v}");
    assert!(severity::cvar_exact(1.0, 0.05).is_infinite());
}

#[test]
fn f11_verdicts() {
    assert_eq!(probe::judge(0.0, 0.0, 0.0, 187, None).0, Verdict::Falsified);
    assert_eq!(probe::judge(0.7, 0.3, 0.0, 10, Some(36)).0, Verdict::Holds);
    assert_eq!(probe::judge(0.7, 0.001, 1.0, 187, Some(241)).0, Verdict::Holds);
    let (v, why) = probe::judge(0.7, 0.0, 0.0, 187, Some(36));
    assert_eq!(v, Verdict::Inconclusive);
    assert!(why.contains("36 rounds"), "{why}");
}

#[test]
fn f11_step_collapses_fail_below_three_quarters_and_slow_ramps_do_not() {
    // A step to 0.7 makes the drain round add; to 0.8 it does not (0.75 is the line).
    assert!(probe::collapse(0.7, 0, 0).drain_failed);
    assert!(!probe::collapse(0.8, 0, 3).drain_failed);
    // A ramp over 256 rounds falls ~3 % a cycle: the drain round keeps draining.
    assert!(!probe::collapse(0.1, 256, 0).drain_failed);
    let t = probe::longest_failing_ramp(0.1).unwrap();
    assert!((8..256).contains(&t), "{t}");
    assert!(!(0..8).any(|o| probe::collapse(0.1, t + 1, o).drain_failed));
}

#[test]
fn f12_verdicts() {
    let g = regime::Rate::new(1, 30_000);
    assert_eq!(regime::judge(g, &[regime::Rate::new(900, 30_000)]).0, Verdict::Holds);
    assert_eq!(regime::judge(g, &[regime::Rate::new(1, 30_000)]).0, Verdict::Falsified);
    // 3 in 1,000 against 0 in 1,000: intervals overlap, and 3 > 2× the Gaussian upper limit.
    let (v, _) = regime::judge(regime::Rate::new(0, 1_000), &[regime::Rate::new(9, 1_000)]);
    assert_eq!(v, Verdict::Inconclusive);
}

fn runs(cvar_bound: [u64; 2], extra_tight: f64, infeasible: u64) -> FilterRuns {
    let mut cells = Vec::new();
    for arm in FilterArm::ALL {
        let trials = (0..20)
            .map(|k| {
                let wiggle = (k % 3) as f64 * 0.01;
                Trial {
                    decisions: 1000,
                    cvar_bound: match arm {
                        FilterArm::Joint => cvar_bound[0],
                        FilterArm::Tight => cvar_bound[1],
                        _ => 0,
                    },
                    infeasible: if matches!(arm, FilterArm::NoBackup | FilterArm::NoBackupSet) {
                        infeasible
                    } else {
                        0
                    },
                    given_up: 29.0 + wiggle + if arm == FilterArm::Tight { extra_tight } else { 0.0 },
                    exit: arm == FilterArm::NoBackup && infeasible > 0 && k == 0,
                    overshoot: 0.0,
                }
            })
            .collect();
        cells.push(ArmCell { arm, traffic: 80.0, health_low: 0.1, trials });
    }
    FilterRuns { horizon: 600.0, epsilon: 0.01, cells }
}

#[test]
fn f16_verdicts() {
    assert_eq!(judge_f16(&runs([0, 200], 0.1, 0)).0, Verdict::Holds);
    assert_eq!(judge_f16(&runs([0, 0], 0.0, 0)).0, Verdict::Falsified);
    let (v, why) = judge_f16(&runs([0, 200], 0.0, 0));
    assert_eq!(v, Verdict::Inconclusive, "{why}");
}

#[test]
fn f16_paired_difference() {
    let r = runs([0, 0], 0.25, 0);
    let (d, se) = r.given_up_diff(FilterArm::Tight, FilterArm::ProbabilityOnly);
    assert!((d - 0.25).abs() < 1e-12 && se < 1e-12, "{d} {se}");
}

#[test]
fn f17_verdicts() {
    assert_eq!(judge_f17(&runs([0, 0], 0.0, 0)).0, Verdict::Falsified);
    let (v, why) = judge_f17(&runs([0, 0], 0.0, 79));
    assert_eq!(v, Verdict::Holds);
    assert!(why.contains("7.90 %") && why.contains("safe set in 1 of 20"), "{why}");
    let empty = FilterRuns { horizon: 600.0, epsilon: 0.01, cells: vec![] };
    assert_eq!(judge_f17(&empty).0, Verdict::Inconclusive);
}

#[test]
fn f18_verdicts() {
    assert_eq!(bootstrap::judge(Some(2.0), 10.0, 12.0).0, Verdict::Falsified);
    assert_eq!(bootstrap::judge(Some(2.0), 316_800.0, 12.0).0, Verdict::Holds);
    assert_eq!(bootstrap::judge(None, 50.0, 12.0).0, Verdict::Inconclusive);
}

#[test]
fn f18_warmup_is_the_first_trustworthy_checkpoint() {
    let rec = [(10, 0.5, 0.0, 0.01), (20, 0.96, 0.10, 0.02), (50, 0.97, 0.04, 0.03)];
    assert_eq!(bootstrap::warmup(&rec), Some((50, 0.03)));
    assert_eq!(bootstrap::warmup(&rec[..2]), None);
}

#[test]
fn verdicts_serialise_as_their_labels() {
    for v in [Verdict::Holds, Verdict::Falsified, Verdict::Inconclusive] {
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(json, format!("\"{}\"", v.label()));
        assert_eq!(serde_json::from_str::<Verdict>(&json).unwrap(), v);
    }
}

#[test]
fn experiments_cover_every_id_once_and_select_by_id() {
    let mut ids: Vec<&str> = EXPERIMENTS.iter().flat_map(|e| e.ids.iter().copied()).collect();
    assert_eq!(ids, IDS);
    ids.dedup();
    assert_eq!(ids.len(), IDS.len());
    assert_eq!(experiments_for(&[]).len(), EXPERIMENTS.len());
    let sel = experiments_for(&["F17".into(), "F16".into(), "F10".into()]);
    assert_eq!(sel.iter().map(|e| e.ids[0]).collect::<Vec<_>>(), ["F10", "F16"]);
}

/// The quick F10–F12 and F18 in the model: the seed's claims stand where the model can say.
#[test]
fn quick_model_experiments() {
    let e = Effort::quick(1);
    let f10 = f10(&e).criteria.remove(0);
    assert_eq!(f10.verdict, Verdict::Holds, "{}", f10.reason);
    let f11 = f11().criteria.remove(0);
    // About 72 % of the envelope's depths are below 0.75, and every step collapse there fails.
    let below = f11.get("envelope depths with capacity below 0.75 of the estimate").unwrap();
    assert!((below - 65.0 / 91.0).abs() < 1e-9, "{below}");
    let step = f11.get("drain failures, step collapses").unwrap();
    assert!((step - below).abs() < 0.02, "{:?}", f11.evidence);
    // The running case's own dip (1 → 0.1 over 5 s) fails at the bottom of its ramp.
    assert_eq!(f11.verdict, Verdict::Holds, "{}", f11.reason);
    let f12 = f12(&e).criteria.remove(0);
    assert_eq!(f12.verdict, Verdict::Holds, "{}", f12.reason);
    let f18 = f18(&e).criteria.remove(0);
    assert_eq!(f18.get("exit-free horizons before the 99 % upper limit reaches ε"), Some(528.0));
}
