use super::*;
use proptest::prelude::*;

fn fed(cfg: PhiConfig, gaps: impl IntoIterator<Item = f64>) -> PhiAccrual {
    let mut d = PhiAccrual::new(cfg).unwrap();
    let mut t = 0.0;
    d.heartbeat(t);
    for g in gaps {
        t += g;
        d.heartbeat(t);
    }
    d
}

fn no_pause() -> PhiConfig {
    PhiConfig { acceptable_pause: 0.0, min_std: 1e-3, ..PhiConfig::default() }
}

/// φ of a standard score against values of the normal upper tail computed independently
/// (`Q(1) = 0.158655…`, `Q(2) = 0.0227501…`, `Q(3) = 0.00134990…`, `Q(10) = 7.61985e−24`).
#[test]
fn phi_of_known_scores() {
    let known = [
        (0.0, std::f64::consts::LOG10_2),
        (1.0, 0.799_545_541_491_970_4),
        (2.0, 1.643_016_080_140_936_8),
        (3.0, 2.869_699_035_929_368_6),
        (5.0, 6.542_645_672_390_654),
        (10.0, 23.118_053_405_486_073),
        (20.0, 88.560_095_343_075_57),
    ];
    for (y, phi) in known {
        let got = phi_of_score(y);
        assert!((got - phi).abs() < 1e-9 * phi.max(1.0), "φ({y}) = {got}, want {phi}");
    }
    assert_eq!(phi_of_score(f64::NEG_INFINITY), 0.0);
    assert_eq!(phi_of_score(f64::INFINITY), f64::INFINITY);
    assert!(phi_of_score(f64::NAN).is_nan());
    assert!(phi_of_score(-50.0) >= 0.0 && phi_of_score(-50.0) < 1e-300);
}

/// Both sides of the switch to the asymptotic series agree, and φ keeps rising past it.
#[test]
fn phi_is_continuous_and_increasing_across_the_switch() {
    let below = phi_of_score(30.0 - 1e-9);
    let at = phi_of_score(30.0);
    assert!((at - below).abs() < 1e-6 * at, "{below} vs {at}");
    assert!(at >= below);
    let mut prev = 0.0;
    let mut y = -10.0;
    while y < 60.0 {
        let p = phi_of_score(y);
        assert!(p.is_finite() && p >= prev, "φ({y}) = {p} < {prev}");
        prev = p;
        y += 0.001;
    }
}

#[test]
fn score_of_phi_inverts() {
    for phi in [0.1, 1.0, 2.0, 8.0, 16.0, 100.0, 250.0, 900.0] {
        let y = score_of_phi(phi);
        assert!((phi_of_score(y) - phi).abs() < 1e-9 * phi, "φ = {phi}: y = {y}");
    }
    assert!(score_of_phi(-1.0).is_nan() && score_of_phi(f64::NAN).is_nan());
    assert_eq!(score_of_phi(0.0), f64::NEG_INFINITY);
}

/// φ at one, two and three standard deviations past the mean of a steady window.
#[test]
fn phi_at_one_two_three_sd() {
    // Alternating 0.9 / 1.1: mean 1, sd 0.1.
    let d = fed(no_pause(), (0..200).map(|i| if i % 2 == 0 { 0.9 } else { 1.1 }));
    let (m, s) = d.law();
    assert!((m - 1.0).abs() < 1e-9 && (s - 0.1).abs() < 1e-9, "{m} {s}");
    let last = d.last_heartbeat().unwrap();
    for (k, want) in [(1.0, 0.799_545_541_491_970_4), (2.0, 1.643_016_080_140_936_8), (3.0, 2.869_699_035_929_368_6)] {
        let got = d.phi(last + 1.0 + k * 0.1);
        assert!((got - want).abs() < 1e-6, "φ at {k} sd = {got}");
    }
}

#[test]
fn the_floor_and_the_pause_apply() {
    let d = fed(PhiConfig::default(), std::iter::repeat_n(1.0, 50));
    assert_eq!(d.law(), (4.0, 0.1));
    let delay = d.detection_delay();
    assert!((delay - (4.0 + 0.1 * score_of_phi(8.0))).abs() < 1e-12);
    let last = d.last_heartbeat().unwrap();
    assert!((d.phi(last + delay) - 8.0).abs() < 1e-6);
    assert!(!d.suspect(last + delay - 1e-3) && d.suspect(last + delay + 1e-3));
}

#[test]
fn empty_and_single_sample_windows_never_panic() {
    let mut d = PhiAccrual::new(PhiConfig::default()).unwrap();
    assert_eq!(d.phi(5.0), 0.0);
    assert!(!d.suspect(1e9));
    assert_eq!(d.samples(), 0);
    d.heartbeat(0.0);
    assert_eq!(d.law(), (1.0 + 3.0, 0.25));
    assert!(d.phi(1.0).is_finite());
    assert!(d.suspect(100.0));
    d.heartbeat(1.0);
    assert_eq!(d.samples(), 1);
    let (m, s) = d.law();
    assert!(m == 4.0 && s == 0.1, "{m} {s}");
    assert!(d.phi(2.0).is_finite());
    let one = fed(PhiConfig { window: 1, ..PhiConfig::default() }, [1.0, 2.0, 3.0]);
    assert_eq!(one.samples(), 1);
    assert_eq!(one.law(), (6.0, 0.1));
}

#[test]
fn bad_times_are_handled() {
    let mut d = fed(PhiConfig::default(), std::iter::repeat_n(1.0, 10));
    let last = d.last_heartbeat().unwrap();
    d.heartbeat(f64::NAN);
    d.heartbeat(f64::INFINITY);
    d.heartbeat(last - 5.0); // out of order
    assert_eq!(d.last_heartbeat(), Some(last));
    assert_eq!(d.samples(), 10);
    assert_eq!(d.phi(f64::NAN), f64::INFINITY);
    assert!(d.suspect(f64::NAN) && d.suspect(f64::NEG_INFINITY));
    let before = d.phi(last - 100.0);
    assert!(before >= 0.0 && before == d.phi(last), "a time before the last heartbeat reads as elapsed 0");
    let mut t = Timeout::new(2.0).unwrap();
    assert!(!t.suspect(10.0) && t.suspicion(10.0) == 0.0);
    t.heartbeat(1.0);
    t.heartbeat(f64::NAN);
    t.heartbeat(-3.0);
    assert_eq!(t.last_heartbeat(), Some(1.0));
    assert!(!t.suspect(2.9) && t.suspect(3.0) && t.suspect(f64::NAN));
    assert_eq!(t.suspicion(0.0), 0.0);
    assert!(Timeout::new(0.0).is_err() && Timeout::new(f64::NAN).is_err());
    assert!(PhiAccrual::new(PhiConfig { window: 0, ..PhiConfig::default() }).is_err());
    assert!(PhiAccrual::new(PhiConfig { min_std: -1.0, ..PhiConfig::default() }).is_err());
    assert!(PhiAccrual::new(PhiConfig { threshold: f64::NAN, ..PhiConfig::default() }).is_err());
}

#[test]
fn the_window_slides_and_the_sums_stay_exact() {
    let mut d = fed(PhiConfig { window: 100, ..no_pause() }, (0..10_000).map(|i| 1.0 + 0.001 * (i % 7) as f64));
    assert_eq!(d.samples(), 100);
    let xs: Vec<f64> = (9_900..10_000).map(|i| 1.0 + 0.001 * (i % 7) as f64).collect();
    let mean = xs.iter().sum::<f64>() / 100.0;
    let (m, _) = d.law();
    assert!((m - mean).abs() < 1e-12);
    d.heartbeat(d.last_heartbeat().unwrap() + 1.0);
    assert_eq!(d.samples(), 100);
}

proptest! {
    /// φ never decreases as time passes without a heartbeat, for any window.
    #[test]
    fn phi_is_monotone_in_elapsed_time(
        gaps in proptest::collection::vec(0.0f64..5.0, 0..50),
        pause in 0.0f64..5.0,
        min_std in 1e-4f64..1.0,
        steps in proptest::collection::vec(0.0f64..3.0, 1..60),
    ) {
        let d = fed(PhiConfig { acceptable_pause: pause, min_std, ..PhiConfig::default() }, gaps);
        let mut t = d.last_heartbeat().unwrap() - 1.0;
        let mut prev = d.phi(t);
        for s in steps {
            t += s;
            let p = d.phi(t);
            prop_assert!(p >= prev && p >= 0.0, "φ({t}) = {p} < {prev}");
            prev = p;
        }
    }
}
