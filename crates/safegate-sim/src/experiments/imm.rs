//! IMM false alarms under heavy-tailed noise (seed, "Trusting the Estimate That Triggers the
//! Boundary"; Falsification Criterion F12).
//!
//! Setup (MODEL.md): the truth stays in mode 0 (mean 0) for a 200-step run; the alternate
//! hypothesis has mean 3; noise is N(0, 1), or Student-t with ν = 3 or ν = 1.5 at scale 1;
//! the filter uses a Gaussian likelihood with sd 1 and mixes with probability 0.02 per step
//! before each Bayes update; an alarm is the alternate's posterior above 0.5 for ≥ 5
//! consecutive steps. 30,000 trials per noise law. The seed: 0.03 %, 3.08 %, 12.44 % (a
//! million trials give ≈ 0.038, 3.16, 12.24 %). A row passes when ours is within 3 standard
//! errors of the seed's, the standard error being that of the difference of two independent
//! 30,000-trial estimates.

use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal, StudentT};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use safegate_core::estimators::{ImmConfig, TwoModeImm};

use super::{Figure, Report, Row, Setup};

/// Steps per trial.
pub const STEPS: usize = 200;

/// A noise law for the observations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Noise {
    /// N(0, 1).
    Gaussian,
    /// Student-t with `ν` degrees of freedom, scale 1.
    StudentT(f64),
}

impl Noise {
    fn label(&self) -> String {
        match self {
            Noise::Gaussian => "Gaussian".into(),
            Noise::StudentT(nu) => format!("Student-t ν = {nu}"),
        }
    }
}

/// One trial: the posterior path (if asked) and whether it alarmed.
pub fn trial(noise: Noise, seed: u64, cfg: ImmConfig, path: Option<&mut Vec<f64>>) -> bool {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut imm = TwoModeImm::new(cfg).expect("valid IMM configuration");
    let t = match noise {
        Noise::StudentT(nu) => Some(StudentT::new(nu).expect("ν > 0")),
        Noise::Gaussian => None,
    };
    let mut path = path;
    for _ in 0..STEPS {
        let y: f64 = match &t {
            Some(t) => t.sample(&mut rng),
            None => StandardNormal.sample(&mut rng),
        };
        let p = imm.update(cfg.mean0 + y);
        if let Some(v) = path.as_deref_mut() {
            v.push(p);
        }
    }
    imm.alarmed()
}

/// False-alarm rate over `trials` seeded trials (deterministic whatever the thread count).
pub fn false_alarm_rate(noise: Noise, trials: u64, seed: u64, cfg: ImmConfig) -> f64 {
    let alarms: u64 =
        (0..trials).into_par_iter().map(|k| u64::from(trial(noise, trial_seed(seed, noise, k), cfg, None))).sum();
    alarms as f64 / trials as f64
}

fn trial_seed(seed: u64, noise: Noise, k: u64) -> u64 {
    let tag = match noise {
        Noise::Gaussian => 0u64,
        Noise::StudentT(nu) => nu.to_bits(),
    };
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ tag.rotate_left(17) ^ k.wrapping_mul(0xD1B5_4A32_D192_ED03)
}

/// Run the experiment.
pub fn run(setup: &Setup) -> Report {
    let cfg = ImmConfig::default();
    let n = setup.imm_trials.max(1);
    let laws: [(Noise, f64, &str); 3] = [
        (Noise::Gaussian, 0.03, "gaussian"),
        (Noise::StudentT(3.0), 3.08, "t3"),
        (Noise::StudentT(1.5), 12.44, "t1.5"),
    ];
    let mut rows = Vec::new();
    let mut rates = Vec::new();
    for (noise, seed_pct, id) in laws {
        let p = false_alarm_rate(noise, n, setup.seed, cfg);
        rates.push(p);
        let se_ours = (p * (1.0 - p) / n as f64).sqrt() * 100.0;
        let ps = seed_pct / 100.0;
        let se_seed = (ps * (1.0 - ps) / 30_000.0).sqrt() * 100.0;
        let se = (se_ours * se_ours + se_seed * se_seed).sqrt();
        let ours = p * 100.0;
        let ok = (ours - seed_pct).abs() <= 3.0 * se;
        rows.push(
            Row::new(
                &format!("imm-false-alarm-{id}"),
                &format!("IMM false-alarm rate, {} noise, {n} trials [%]", noise.label()),
                format!("{seed_pct:.2}"),
                format!("{ours:.3} (se {se_ours:.3})"),
                &format!("3 se of the difference = ±{:.3}", 3.0 * se),
                ok,
            )
            .values(Some(seed_pct), Some(ours)),
        );
    }
    // "A heavy tail alone raises the false-alarm rate by two to three orders of magnitude."
    let (g, t3, t15) = (rates[0], rates[1], rates[2]);
    let orders = |x: f64| if g > 0.0 { (x / g).log10() } else { f64::INFINITY };
    rows.push(
        Row::info(
            "imm-heavy-tail-ratio",
            "a heavy tail alone raises false alarms by two to three orders of magnitude",
            "103x (ν=3), 415x (ν=1.5)",
            format!("{:.0}x ({:.2} orders), {:.0}x ({:.2} orders)", t3 / g, orders(t3), t15 / g, orders(t15)),
            "the Gaussian rate rests on a handful of alarms at this trial count, so the ratio is uncertain (a million trials give ≈ 83x and 322x: the ν = 3 case is just under two orders)",
        )
        .values(Some(3.08 / 0.03), Some(t3 / g)),
    );

    // Figure: the mean posterior over trials, and one alarming trial per law.
    let mut fig = Figure::new(
        "imm-posterior",
        "IMM posterior of the alternate regime when nothing shifts",
        "step",
        "posterior of mode 1",
    )
    .rule(0.5, "alarm level 0.5");
    let xs: Vec<f64> = (1..=STEPS).map(|i| i as f64).collect();
    for (noise, _, _) in laws {
        let reps = 2000u64.min(n);
        let sums = (0..reps)
            .into_par_iter()
            .map(|k| {
                let mut path = Vec::with_capacity(STEPS);
                trial(noise, trial_seed(setup.seed, noise, k), cfg, Some(&mut path));
                path
            })
            .reduce(
                || vec![0.0; STEPS],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x += y;
                    }
                    a
                },
            );
        fig =
            fig.line(&format!("{} (mean)", noise.label()), xs.clone(), sums.iter().map(|s| s / reps as f64).collect());
        if let Some(k) = (0..n).find(|&k| trial(noise, trial_seed(setup.seed, noise, k), cfg, None)) {
            let mut path = Vec::new();
            trial(noise, trial_seed(setup.seed, noise, k), cfg, Some(&mut path));
            fig = fig.line(&format!("{} (trial {k}, alarmed)", noise.label()), xs.clone(), path);
        }
    }
    Report { experiment: "imm", rows, figures: vec![fig] }
}
