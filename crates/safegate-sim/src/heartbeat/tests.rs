use super::*;

fn jittery(pauses: Pauses) -> HeartbeatProcess {
    HeartbeatProcess { interval: 1.0, jitter_sd: 0.1, pauses }
}

/// More threshold: never more false suspicions, never a shorter detection (the rows share
/// one trace, so this holds exactly, not only in expectation).
#[test]
fn more_threshold_fewer_false_suspicions_longer_detection() {
    let process = jittery(Pauses::Pareto { probability: 0.01, scale: 0.5, shape: 1.5 });
    for pause in [0.0, 3.0] {
        let mut s = Sweep::standard(process, 20.0, 7);
        s.phi.acceptable_pause = pause;
        let rows = sweep(&s).unwrap();
        assert_eq!(rows.len(), 26);
        for kind in [DetectorKind::Phi, DetectorKind::Timeout] {
            let r: Vec<_> = rows.iter().filter(|r| r.detector == kind).collect();
            for w in r.windows(2) {
                assert!(w[1].false_per_hour <= w[0].false_per_hour, "{w:?}");
                assert!(w[1].detection_mean >= w[0].detection_mean, "{w:?}");
                assert!(w[1].detection_p99 >= w[0].detection_p99, "{w:?}");
            }
            assert!(r[0].false_per_hour > r[r.len() - 1].false_per_hour, "{kind:?}: {r:?}");
        }
    }
}

/// Akka's defaults (φ 8, 3 s pause, 0.1 s floor) on a 1 s ± 0.1 s process: a crash is
/// detected within a few seconds, and a live process is almost never suspected.
#[test]
fn phi_8_detects_a_crash_within_a_few_seconds() {
    let rows = sweep(&Sweep::standard(jittery(Pauses::None), 10.0, 3)).unwrap();
    let r = rows.iter().find(|r| r.detector == DetectorKind::Phi && r.threshold == 8.0).unwrap();
    assert!(r.detection_mean > 3.0 && r.detection_mean < 5.0, "{r:?}");
    assert!(r.detection_p99 < 5.5, "{r:?}");
    assert_eq!(r.false_per_hour, 0.0, "{r:?}");
}

/// One heartbeat in 100 is 10 s late: any timeout under 10 intervals suspects each of them
/// (36 an hour), and a φ detector with no acceptable pause learns the pauses into its
/// standard deviation.
#[test]
fn fixed_pauses_give_their_rate() {
    let mut s = Sweep::standard(jittery(Pauses::OneIn { k: 100, length: 10.0 }), 50.0, 11);
    s.timeouts = vec![3.0];
    let rows = sweep(&s).unwrap();
    let t = rows.iter().find(|r| r.detector == DetectorKind::Timeout).unwrap();
    assert!((t.false_per_hour - 36.0).abs() < 4.0, "{t:?}");
}

#[test]
fn sweep_refuses_bad_input() {
    let mut s = Sweep::standard(jittery(Pauses::None), 1.0, 1);
    s.hours = f64::NAN;
    assert!(sweep(&s).is_err());
    let mut s = Sweep::standard(HeartbeatProcess { interval: -1.0, jitter_sd: 0.1, pauses: Pauses::None }, 1.0, 1);
    assert!(sweep(&s).is_err());
    s.process.interval = 1.0;
    s.phi_thresholds = vec![0.0];
    assert!(sweep(&s).is_err());
    let s = Sweep::standard(jittery(Pauses::OneIn { k: 0, length: 1.0 }), 1.0, 1);
    assert!(sweep(&s).is_err());
}
