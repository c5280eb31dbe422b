//! IMM false alarms under heavy-tailed noise (seed, "Trusting the Estimate That Triggers the
//! Boundary"; Falsification Criterion F12).
//!
//! Setup (docs/model.md §How each of the seed's numbers is measured): the truth stays in
//! mode 0 (mean 0) for a 200-step run; the alternate
//! hypothesis has mean 3; noise is N(0, 1), or Student-t with ν = 3 or ν = 1.5 at scale 1;
//! the filter uses a Gaussian likelihood with sd 1 and mixes with probability 0.02 per step
//! before each Bayes update; an alarm is the alternate's posterior above 0.5 for ≥ 5
//! consecutive steps. 30,000 trials per noise law. The seed: 0.03 %, 3.08 %, 12.44 % (a
//! million trials give ≈ 0.038, 3.16, 12.24 %). A row passes when ours is within 3 standard
//! errors of the seed's, the standard error being that of the difference of two independent
//! 30,000-trial estimates.
//!
//! The heavy-tail-robust variant (the same filter with a Student-t likelihood of
//! [`ROBUST_NU`] degrees of freedom, `safegate_core::estimators::Likelihood::StudentT`) runs
//! on the same trials: its false-alarm rate under ν = 1.5 and ν = 3 noise must be below the
//! plain filter's by more than 3 standard errors of the difference, and its detection delay
//! (observations from a real shift of the mean 0 → 3, after [`WARMUP`] steps at 0, to the
//! alarm; Gaussian noise, the same seeds for both) within [`DELAY_TOLERANCE`] steps of the
//! plain filter's.

use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal, StudentT};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use safegate_core::estimators::{ImmConfig, Likelihood, TwoModeImm};

use super::{Figure, Report, Row, Setup};

/// Steps per trial.
pub const STEPS: usize = 200;

/// Degrees of freedom of the robust variant's Student-t likelihood. Chosen so that one
/// observation cannot flip a settled belief (its largest log-likelihood ratio, 3.13, is below
/// the mixing bound ln 49 = 3.89) while it stays close to the Gaussian near the means, where
/// a real shift lands; it is not tuned to the noise (ν = 1.5 would match it).
pub const ROBUST_NU: f64 = 3.0;

/// Steps at the nominal mean before the shift in a detection-delay trial.
pub const WARMUP: usize = 50;

/// Observations after the shift within which an alarm counts as a detection.
pub const MAX_DELAY: usize = 100;

/// How far (in steps) the robust filter's mean detection delay may exceed the plain one's.
pub const DELAY_TOLERANCE: f64 = 2.0;

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

impl Noise {
    fn draw(t: &Option<StudentT<f64>>, rng: &mut Xoshiro256PlusPlus) -> f64 {
        match t {
            Some(t) => t.sample(rng),
            None => StandardNormal.sample(rng),
        }
    }

    fn sampler(self) -> Option<StudentT<f64>> {
        match self {
            Noise::StudentT(nu) => Some(StudentT::new(nu).expect("ν > 0")),
            Noise::Gaussian => None,
        }
    }
}

/// The seed's filter with the robust likelihood ([`ROBUST_NU`]).
pub fn robust_config() -> ImmConfig {
    ImmConfig { likelihood: Likelihood::StudentT { nu: ROBUST_NU }, ..ImmConfig::default() }
}

/// One trial: the posterior path (if asked) and whether it alarmed.
pub fn trial(noise: Noise, seed: u64, cfg: ImmConfig, path: Option<&mut Vec<f64>>) -> bool {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut imm = TwoModeImm::new(cfg).expect("valid IMM configuration");
    let t = noise.sampler();
    let mut path = path;
    for _ in 0..STEPS {
        let y = Noise::draw(&t, &mut rng);
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

/// Filters fed the same observations: one per configuration (all must share `mean0`, and
/// `mean1` for the delay trials).
fn filters(cfgs: &[ImmConfig]) -> Vec<TwoModeImm> {
    cfgs.iter().map(|&c| TwoModeImm::new(c).expect("valid IMM configuration")).collect()
}

/// Two filters compared on the same seeded trials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paired {
    /// Trials.
    pub trials: u64,
    /// The first filter's rate (for [`compare_false_alarms`], exactly what
    /// [`false_alarm_rate`] gives it on the same seed).
    pub a: f64,
    /// The second filter's rate.
    pub b: f64,
    /// Standard error of `b − a` from the paired outcomes,
    /// `√([(n₁₀ + n₀₁)/n − (b − a)²]/n)` with `n₁₀`, `n₀₁` the discordant trials (McNemar's
    /// setting: Agresti, "Categorical Data Analysis", 3rd ed., 2013, §11.1).
    pub se_diff: f64,
}

impl Paired {
    /// Standard error of one rate, `√(p(1 − p)/n)`.
    pub fn se(&self, p: f64) -> f64 {
        (p * (1.0 - p) / self.trials as f64).sqrt()
    }
}

/// False-alarm rates of filters `a` and `b` on the same noise over `trials` seeded trials (the
/// seeds of [`false_alarm_rate`], so `a`'s rate is the one it reports).
pub fn compare_false_alarms(noise: Noise, trials: u64, seed: u64, a: ImmConfig, b: ImmConfig) -> Paired {
    let cfgs = [a, b];
    let counts = (0..trials)
        .into_par_iter()
        .map(|k| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(trial_seed(seed, noise, k));
            let mut f = filters(&cfgs);
            let t = noise.sampler();
            for _ in 0..STEPS {
                let y = Noise::draw(&t, &mut rng);
                for (imm, c) in f.iter_mut().zip(&cfgs) {
                    imm.update(c.mean0 + y);
                }
            }
            let (x, y) = (f[0].alarmed(), f[1].alarmed());
            [u64::from(x), u64::from(y), u64::from(x && !y), u64::from(y && !x)]
        })
        .reduce(|| [0; 4], |p, q| [p[0] + q[0], p[1] + q[1], p[2] + q[2], p[3] + q[3]]);
    let n = trials.max(1) as f64;
    let (ra, rb) = (counts[0] as f64 / n, counts[1] as f64 / n);
    let d = rb - ra;
    let discordant = (counts[2] + counts[3]) as f64 / n;
    Paired { trials, a: ra, b: rb, se_diff: ((discordant - d * d).max(0.0) / n).sqrt() }
}

/// Detection delays of two filters on the same noise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delays {
    /// Trials.
    pub trials: u64,
    /// Mean delay of each filter over the trials where it detected \[observations\].
    pub mean: [f64; 2],
    /// Standard error of each mean.
    pub se: [f64; 2],
    /// Mean of `b − a` over the trials where both detected, and its standard error.
    pub diff: (f64, f64),
    /// Trials with no alarm within [`MAX_DELAY`] observations of the shift, per filter.
    pub missed: [u64; 2],
}

/// Detection delay of filters `a` and `b` over `trials` seeded trials, fed the same noise:
/// [`WARMUP`] observations at `mean0`, then observations at `mean1`; the delay is the number
/// of shifted observations up to and including the first one after which the filter is in
/// alarm (its posterior above the level for `alarm_run` steps: at least `alarm_run`, unless a
/// run began before the shift). A trial without an alarm within [`MAX_DELAY`] is missed.
pub fn compare_delays(noise: Noise, trials: u64, seed: u64, a: ImmConfig, b: ImmConfig) -> Delays {
    let cfgs = [a, b];
    // (count, Σd, Σd²) for a, b and b − a.
    type Acc = [(u64, f64, f64); 3];
    let add = |acc: &mut (u64, f64, f64), x: f64| {
        acc.0 += 1;
        acc.1 += x;
        acc.2 += x * x;
    };
    let acc: Acc = (0..trials)
        .into_par_iter()
        .map(|k| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(trial_seed(seed ^ 0x5EED_DE1A, noise, k));
            let mut f = filters(&cfgs);
            let t = noise.sampler();
            for _ in 0..WARMUP {
                let y = Noise::draw(&t, &mut rng);
                for (imm, c) in f.iter_mut().zip(&cfgs) {
                    imm.update(c.mean0 + y);
                }
            }
            let mut delay = [None; 2];
            for step in 1..=MAX_DELAY {
                let y = Noise::draw(&t, &mut rng);
                for ((imm, c), d) in f.iter_mut().zip(&cfgs).zip(delay.iter_mut()) {
                    imm.update(c.mean1 + y);
                    if d.is_none() && imm.alarm_now() {
                        *d = Some(step as f64);
                    }
                }
                if delay.iter().all(Option::is_some) {
                    break;
                }
            }
            let mut acc: Acc = [(0, 0.0, 0.0); 3];
            for (slot, d) in acc.iter_mut().zip(delay) {
                if let Some(d) = d {
                    add(slot, d);
                }
            }
            if let [Some(da), Some(db)] = delay {
                add(&mut acc[2], db - da);
            }
            acc
        })
        .reduce(
            || [(0, 0.0, 0.0); 3],
            |mut p, q| {
                for (x, y) in p.iter_mut().zip(q) {
                    *x = (x.0 + y.0, x.1 + y.1, x.2 + y.2);
                }
                p
            },
        );
    let stats = |(n, s, s2): (u64, f64, f64)| {
        if n == 0 {
            return (f64::NAN, f64::NAN);
        }
        let m = s / n as f64;
        let var = (s2 / n as f64 - m * m).max(0.0) * n as f64 / (n.max(2) - 1) as f64;
        (m, (var / n as f64).sqrt())
    };
    let (ma, sa) = stats(acc[0]);
    let (mb, sb) = stats(acc[1]);
    Delays { trials, mean: [ma, mb], se: [sa, sb], diff: stats(acc[2]), missed: [trials - acc[0].0, trials - acc[1].0] }
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
    let robust = robust_config();
    let nu = ROBUST_NU;
    // Plain and robust on the same trials; the plain rates are those of `false_alarm_rate`.
    let paired: Vec<Paired> =
        laws.iter().map(|&(noise, _, _)| compare_false_alarms(noise, n, setup.seed, cfg, robust)).collect();
    let mut rows = Vec::new();
    let mut rates = Vec::new();
    for ((noise, seed_pct, id), pair) in laws.iter().copied().zip(&paired) {
        let p = pair.a;
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

    // The robust variant on the same trials (F12's fix): fewer false alarms under heavy
    // tails, no more under Gaussian noise, and a comparable detection delay.
    for ((noise, seed_pct, id), pair) in laws.iter().zip(&paired) {
        let (ours, plain_pct, se) = (pair.b * 100.0, pair.a * 100.0, pair.se_diff * 100.0);
        let (ok, tolerance) = if *noise == Noise::Gaussian {
            (ours <= plain_pct + 3.0 * se, format!("≤ plain + 3 paired se of the difference ({:.3})", 3.0 * se))
        } else {
            (ours + 3.0 * se < plain_pct, format!("below plain by > 3 paired se of the difference ({:.3})", 3.0 * se))
        };
        rows.push(
            Row::new(
                &format!("imm-robust-false-alarm-{id}"),
                &format!(
                    "robust IMM (Student-t likelihood, ν = {nu}) false-alarm rate, {} noise, {n} trials [%]",
                    noise.label()
                ),
                format!("{seed_pct:.2} (plain)"),
                format!("{ours:.3} (se {:.3}) vs plain {plain_pct:.3}", pair.se(pair.b) * 100.0),
                &tolerance,
                ok,
            )
            .values(Some(*seed_pct), Some(ours)),
        );
    }
    let d = compare_delays(Noise::Gaussian, n, setup.seed, cfg, robust);
    let ok = d.diff.0 <= DELAY_TOLERANCE && d.missed == [0, 0];
    rows.push(
        Row::new(
            "imm-robust-delay",
            &format!(
                "mean observations from a shift 0 → 3 to the alarm, Gaussian noise, {n} trials: robust (ν = {nu}) vs plain"
            ),
            "—",
            format!(
                "{:.2} vs {:.2} (+{:.2}, paired se {:.3})",
                d.mean[1], d.mean[0], d.diff.0, d.diff.1
            ),
            &format!("robust ≤ plain + {DELAY_TOLERANCE} steps, none missed in {MAX_DELAY}"),
            ok,
        )
        .values(None, Some(d.diff.0))
        .note(format!(
            "5 observations above 0.5 make an alarm, so 5 is the floor; se of the means {:.3} (robust), {:.3} (plain); missed: {} robust, {} plain",
            d.se[1], d.se[0], d.missed[1], d.missed[0]
        )),
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
    let noise = Noise::StudentT(1.5);
    let reps = 2000u64.min(n);
    let sums = (0..reps)
        .into_par_iter()
        .map(|k| {
            let mut path = Vec::with_capacity(STEPS);
            trial(noise, trial_seed(setup.seed, noise, k), robust, Some(&mut path));
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
    fig = fig.line(
        &format!("{}, robust ν = {nu} (mean)", noise.label()),
        xs,
        sums.iter().map(|s| s / reps as f64).collect(),
    );
    Report { experiment: "imm", rows, figures: vec![fig] }
}
