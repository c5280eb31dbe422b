//! The fleet model's tables in docs/fleet.md: the split between two gates under local
//! controllers and under the price, the price's delay threshold against the analysis, and a
//! sweep of the delay through it.
//!
//! ```sh
//! cargo run --release -p safegate-studies --example fleet_tables
//! ```
//!
//! The tests in `src/fleet/tests.rs` assert these figures within stated tolerances; this
//! prints them.

use safegate_studies::fleet::price::{
    equilibrium, euler_threshold, hayes_threshold, nyquist_threshold, sufficient_threshold,
};
use safegate_studies::fleet::{
    delay_sweep, run_fleet, sweep, threshold, FleetConfig, FleetOutcome, FleetRecord, GateConfig, GatePolicy,
    OscillationTest, PriceConfig,
};

/// Two gates offered 120 req/s each, with `p0` and `p1` executors and price delays 50 and
/// 20 ms.
fn two(p0: u32, p1: u32) -> FleetConfig {
    FleetConfig::two_gates([p0, p1])
}

fn local(cfg: &FleetConfig, names: &[&str]) -> FleetOutcome {
    let mut p: Vec<GatePolicy> = names.iter().enumerate().map(|(i, n)| GatePolicy::named(n, cfg, i).unwrap()).collect();
    run_fleet(cfg, &mut p, FleetRecord::default()).unwrap()
}

fn priced(cfg: &FleetConfig) -> FleetOutcome {
    let mut cfg = cfg.clone();
    cfg.price.get_or_insert_with(PriceConfig::default);
    let mut p: Vec<GatePolicy> = cfg.gates.iter().map(|_| GatePolicy::Priced).collect();
    run_fleet(&cfg, &mut p, FleetRecord::default()).unwrap()
}

fn equal_delays(gain: f64, dt: f64) -> FleetConfig {
    let mut cfg = two(8, 8);
    cfg.gates[1].delay = cfg.gates[0].delay;
    cfg.dt = dt;
    cfg.price = Some(PriceConfig { gain, ..PriceConfig::default() });
    cfg
}

/// Three gates of unequal rate and weight (one with 4 executors), γ = 0.2, c = 100,
/// dt = 2 ms: the threshold case that is not two equal gates.
fn three_weighted() -> FleetConfig {
    let mut three = FleetConfig {
        gates: [(150.0, 50.0), (100.0, 100.0), (90.0, 150.0)]
            .iter()
            .map(|&(rate, weight)| GateConfig { rate, weight, delay: 0.1, ..GateConfig::default() })
            .collect(),
        price: Some(PriceConfig { gain: 0.2, capacity: Some(100.0), ..PriceConfig::default() }),
        dt: 0.002,
        ..FleetConfig::default()
    };
    three.gates[2].executors = 4;
    three
}

fn main() {
    println!("| fleet | policies | split (gate 1 / gate 2) | J | J (of goodput/λ) | fleet goodput [req/s] | time above θ·cap |");
    let rows: [(u32, u32, [&str; 2]); 6] = [
        (64, 2, ["open", "open"]),
        (66, 2, ["open", "open"]),
        (64, 2, ["vegas", "vegas"]),
        (32, 8, ["gradient2+pool", "gradient2+pool"]),
        (8, 8, ["open", "cycle+pool"]),
        (64, 2, ["cycle+pool", "cycle+pool"]),
    ];
    for (p0, p1, names) in rows {
        let cfg = two(p0, p1);
        for (label, out) in [(names.join(" / "), local(&cfg, &names)), ("price (50 / 20 ms)".to_string(), priced(&cfg))]
        {
            println!(
                "| P = {p0} / {p1} | {label} | {:.1} % / {:.1} % | {:.3} | {:.3} | {:.1} | {:.2} / {:.2} |",
                100.0 * out.gates[0].share,
                100.0 * out.gates[1].share,
                out.jain,
                out.jain_demand,
                out.goodput,
                out.gates[0].time_above,
                out.gates[1].time_above
            );
        }
    }
    let test = OscillationTest::default();
    println!("\n| γ | c | W | dt | a = γ·c²/W | π/(2a) | Levin–May real | first unstable whole step | measured |");
    let three = three_weighted();
    let cases = [
        equal_delays(0.05, 0.001),
        equal_delays(0.1, 0.002),
        equal_delays(0.02, 0.005),
        three.clone(),
        equal_delays(0.02, 0.1),
        equal_delays(0.05, 0.05),
        equal_delays(0.1, 0.02),
    ];
    for cfg in cases {
        let p = cfg.price.unwrap();
        let c = cfg.priced_capacity(&p, 1.0);
        let eq = equilibrium(&cfg.gates, c, p.gain);
        let a = eq.loop_gain();
        let w: f64 = cfg.gates.iter().map(|g| g.weight).sum();
        let e = euler_threshold(a, cfg.dt).unwrap();
        let run = FleetConfig { duration: 100.0 * hayes_threshold(a), ..cfg.clone() };
        let m = threshold(&run, 2.0 * hayes_threshold(a), &test).unwrap().unwrap();
        println!(
            "| {} | {c} | {w} | {} | {a:.3} /s | {:.4} s | {:.4} s | {} ({:.4} s) | {m:.4} s |",
            p.gain,
            cfg.dt,
            hayes_threshold(a),
            e.real,
            e.steps,
            e.whole
        );
    }
    println!("\n| gates' delays (shares of the longest) | a | sufficient π/(2a) | exact (Nyquist) | measured |");
    let mut het = equal_delays(0.05, 0.001);
    for profile in [vec![1.0, 0.4], vec![1.0, 0.2], vec![1.0, 0.0]] {
        for (g, f) in het.gates.iter_mut().zip(&profile) {
            g.delay = 0.05 * f;
        }
        let eq = equilibrium(&het.gates, 135.0, 0.05);
        let exact = nyquist_threshold(&eq.gains, &profile);
        let limit = exact.unwrap_or(4.0 * sufficient_threshold(&eq.gains));
        let run = FleetConfig { duration: 100.0 * limit, ..het.clone() };
        let m = threshold(&run, 2.0 * limit, &test).unwrap();
        println!(
            "| {profile:?} | {:.3} | {:.4} s | {} | {} |",
            eq.loop_gain(),
            sufficient_threshold(&eq.gains),
            exact.map_or("none".into(), |x| format!("{x:.4} s")),
            m.map_or(format!("none up to {:.2} s", 2.0 * limit), |x| format!("{x:.4} s"))
        );
    }
    let mut t3 = three;
    for (g, d) in t3.gates.iter_mut().zip([0.1, 0.05, 0.02]) {
        g.delay = d;
    }
    let eq = equilibrium(&t3.gates, 100.0, 0.2);
    let exact = nyquist_threshold(&eq.gains, &sweep::delay_profile(&t3)).unwrap();
    let run = FleetConfig { duration: 100.0 * exact, ..t3.clone() };
    let m = threshold(&run, 2.0 * exact, &test).unwrap().unwrap();
    println!(
        "| three gates, [1, 0.5, 0.2], gains {:?} | {:.3} | {:.4} s | {exact:.4} s | {m:.4} s |",
        eq.gains.iter().map(|g| (g * 1000.0).round() / 1000.0).collect::<Vec<_>>(),
        eq.loop_gain(),
        sufficient_threshold(&eq.gains)
    );
    let cfg = FleetConfig { duration: 40.0, ..equal_delays(0.05, 0.002) };
    let h = hayes_threshold(equilibrium(&cfg.gates, 135.0, 0.05).loop_gain());
    let taus: Vec<f64> = [0.5, 0.9, 0.98, 1.02, 1.1, 1.5, 2.0].iter().map(|f| f * h).collect();
    println!("\n| τ / (π/(2a)) | τ | oscillates | amplitude, middle third / p* | amplitude, last third / p* |");
    for p in delay_sweep(&cfg, &taus, &test).unwrap() {
        println!("| {:.2} | {:.3} s | {} | {:.2e} | {:.2e} |", p.tau / h, p.tau, p.oscillates, p.middle, p.amplitude);
    }
}
