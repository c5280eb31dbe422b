//! The fits against curves with known parameters, the interval, the verdict, bad input.

use super::fit::*;
use super::*;
use crate::LiveError;
use std::time::Duration;

const LEVELS: [f64; 13] = [1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0, 32.0, 48.0, 64.0];

fn curve(f: impl Fn(f64) -> f64) -> Vec<Point> {
    LEVELS.iter().map(|&n| Point { n, throughput: f(n), log_se: 0.0 }).collect()
}

/// A deterministic ±`amp` relative wobble (no generator: the same curve every run).
fn wobble(points: &[Point], amp: f64, log_se: f64) -> Vec<Point> {
    points
        .iter()
        .enumerate()
        .map(|(i, p)| Point { throughput: p.throughput * (1.0 + amp * (1.7 * i as f64).sin()), log_se, ..*p })
        .collect()
}

fn close(got: f64, want: f64, rel: f64) -> bool {
    (got / want - 1.0).abs() <= rel
}

#[test]
fn usl_fit_recovers_lambda_sigma_kappa() {
    for (lambda, sigma, kappa) in [(40.0, 0.05, 0.002), (100.0, 0.0, 0.01), (25.0, 0.2, 0.0), (65.625, 0.0, 0.0625)] {
        let f = fit_usl(&curve(|n| usl(n, lambda, sigma, kappa))).unwrap();
        assert!(close(f.lambda, lambda, 1e-6), "λ {} vs {lambda}", f.lambda);
        assert!((f.sigma - sigma).abs() <= 1e-6, "σ {} vs {sigma}", f.sigma);
        assert!((f.kappa - kappa).abs() <= 1e-7, "κ {} vs {kappa}", f.kappa);
        assert!(f.quality.r2 > 1.0 - 1e-9 && f.quality.rmse < 1e-4, "{:?}", f.quality);
    }
}

#[test]
fn usl_fit_with_noise_stays_near_the_truth() {
    // ±3 % wobble: the parameters move, but by little.
    let f = fit_usl(&wobble(&curve(|n| usl(n, 40.0, 0.05, 0.002)), 0.03, 0.03)).unwrap();
    assert!(close(f.lambda, 40.0, 0.1), "{f:?}");
    assert!((f.sigma - 0.05).abs() < 0.03, "{f:?}");
    assert!((f.kappa - 0.002).abs() < 0.001, "{f:?}");
}

#[test]
fn contention_fit_recovers_s_and_c_at_p_2_and_p_3() {
    for p in [2.0, 3.0] {
        let pts = curve(|n| contention(n, 37.5, 4.0, p));
        let free = fit_contention(&pts, None).unwrap();
        assert!(close(free.rate, 37.5, 1e-6) && close(free.comfortable, 4.0, 1e-6), "{free:?}");
        assert!((free.exponent - p).abs() < 1e-6, "{free:?}");
        assert!(free.exponent_free);
        let fixed = fit_contention(&pts, Some(p)).unwrap();
        assert!(close(fixed.rate, 37.5, 1e-6) && close(fixed.comfortable, 4.0, 1e-6), "{fixed:?}");
        assert!(fixed.quality.log_rmse < 1e-6);
    }
    // A knee between two levels, C = 5.
    let free = fit_contention(&curve(|n| contention(n, 20.0, 5.0, 2.0)), None).unwrap();
    assert!(close(free.comfortable, 5.0, 1e-4) && (free.exponent - 2.0).abs() < 1e-4, "{free:?}");
}

#[test]
fn a_p_3_law_fitted_with_p_2_fits_worse_and_its_tail_exponent_is_3() {
    let pts = curve(|n| contention(n, 37.5, 4.0, 3.0));
    let fit = fit_curve(&pts).unwrap();
    assert!(fit.free.quality.log_rmse < 1e-6);
    assert!(fit.contention.quality.log_rmse > 0.05, "{:?}", fit.contention);
    let tail = fit.tail.unwrap();
    assert!((tail.exponent - 3.0).abs() < 1e-6, "{tail:?}");
}

#[test]
fn tail_slope_interval_covers_the_truth_with_noise() {
    // ±4 % wobble with a stated 4 % error per point: the interval holds 2 and is narrow.
    let pts = wobble(&curve(|n| contention(n, 37.5, 4.0, 2.0)), 0.04, 0.04);
    let t = tail_slope(&pts, 8.0).unwrap();
    assert_eq!(t.points, 9);
    assert!(t.contains(2.0), "{t:?}");
    assert!(t.hi - t.lo < 0.3, "{t:?}");
    // Exact 1/n: a zero-width interval at 2.
    let t = tail_slope(&curve(|n| 600.0 / n), 8.0).unwrap();
    assert!((t.exponent - 2.0).abs() < 1e-12 && t.hi - t.lo < 1e-9, "{t:?}");
}

#[test]
fn student_t_quantiles_match_the_table() {
    for (dof, t) in [(1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (5, 2.571), (10, 2.228), (30, 2.042)] {
        assert!(close(student_t_975(dof), t, 2e-3), "dof {dof}: {}", student_t_975(dof));
    }
}

#[test]
fn usl_with_sigma_0_has_a_1_over_n_tail_with_its_own_constant() {
    // Peak matched to the seed's law (C = 4, s = 37.5): κ = 1/16, λ = 37.5·7/4.
    let a = AnalyticUsl::new(37.5, 4.0, &LEVELS).unwrap();
    assert!((a.kappa - 0.0625).abs() < 1e-12 && (a.lambda - 65.625).abs() < 1e-9);
    assert!((fit::usl(4.0, a.lambda, 0.0, a.kappa) - 150.0).abs() < 1e-9);
    assert!((a.constant_ratio - 1.75).abs() < 1e-12 && (a.law_tail_constant - 600.0).abs() < 1e-9);
    // The local exponent tends to 2 (from above past κn = 2).
    let last = a.local_exponents.last().unwrap();
    assert!((last.exponent - 2.0).abs() < 1e-3, "{last:?}");
    assert!(a.local_exponents[0].exponent > 1.9 && a.local_exponents[0].exponent < 2.1);
    // The fitted USL is the curve itself.
    assert!(close(a.fit.usl.kappa, 0.0625, 1e-6) && a.fit.usl.sigma < 1e-8, "{:?}", a.fit.usl);
}

#[test]
fn verdicts_for_a_1_over_n_a_steeper_tail_and_too_few_points() {
    let noisy = |p: f64| wobble(&curve(|n| contention(n, 37.5, 4.0, p)), 0.02, 0.02);
    let (v, why) = judge(&fit_curve(&noisy(2.0)).unwrap());
    assert_eq!(v, Verdict::Holds, "{why}");
    let (v, why) = judge(&fit_curve(&noisy(3.0)).unwrap());
    assert_eq!(v, Verdict::Falsified, "{why}");
    // Only 1, 2, 4, 8, 16: two points past 2C.
    let few: Vec<Point> = [1.0, 2.0, 4.0, 8.0, 16.0]
        .iter()
        .map(|&n| Point { n, throughput: contention(n, 37.5, 4.0, 2.0), log_se: 0.0 })
        .collect();
    let (v, why) = judge(&fit_curve(&few).unwrap());
    assert_eq!(v, Verdict::Inconclusive, "{why}");
    assert_eq!(Verdict::Falsified.label(), "falsified");
    assert_eq!(serde_json::to_string(&Verdict::Holds).unwrap(), "\"holds\"");
}

#[test]
fn degenerate_curves_are_errors_not_panics() {
    let p = |n: f64, x: f64| Point { n, throughput: x, log_se: 0.0 };
    assert_eq!(fit_curve(&[]).unwrap_err(), FitError::TooFewPoints { got: 0, need: 3 });
    assert!(matches!(fit_curve(&[p(1.0, 1.0), p(2.0, 2.0)]), Err(FitError::TooFewPoints { got: 2, .. })));
    assert!(matches!(fit_usl(&[p(1.0, 1.0), p(1.0, 2.0), p(2.0, 2.0)]), Err(FitError::TooFewPoints { got: 2, .. })));
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let pts = [p(1.0, 10.0), p(2.0, bad), p(4.0, 30.0), p(8.0, 20.0)];
        assert!(matches!(fit_curve(&pts), Err(FitError::BadPoint { index: 1, .. })), "{bad}");
        let pts = [p(1.0, 10.0), p(bad, 20.0), p(4.0, 30.0), p(8.0, 20.0)];
        assert!(matches!(fit_contention(&pts, None), Err(FitError::BadPoint { index: 1, .. })), "{bad}");
    }
    // Three points: every fit runs (the free exponent with its knee at the first point).
    let three = [p(1.0, 10.0), p(4.0, 30.0), p(16.0, 8.0)];
    assert!(fit_curve(&three).is_ok());
    let e: LiveError = FitError::TooFewPoints { got: 1, need: 3 }.into();
    assert!(e.to_string().contains("at least 3 points"), "{e}");
}

#[test]
fn options_levels_come_from_c_and_are_checked() {
    assert_eq!(Options::default().levels(), [1, 2, 4, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64]);
    assert_eq!(Options::quick().levels(), [1, 2, 4, 8, 12, 16, 24, 32, 48, 64]);
    assert!(Options::default().check().is_ok() && Options::quick().check().is_ok());
    let o = Options { levels: vec![3, 1, 3], ..Options::quick() };
    assert_eq!(o.levels(), [1, 3]);
    let e = Options { window: Duration::from_secs(60), ..Options::quick() }.check().unwrap_err();
    assert_eq!(e.field, "throughput.window");
    let e = Options { max_request_rate: f64::NAN, ..Options::quick() }.check().unwrap_err();
    assert_eq!(e.field, "throughput.max_request_rate");
}
