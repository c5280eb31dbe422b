//! Freeze or fall back when the coordinator goes quiet (seed, "Is Freezing Even a Stable
//! Choice?" and "From Two Controllers to a Fleet", Proposition 4).
//!
//! Costs (lower is better): both freeze 1.0, both fall back 1.3, a lone fallback 1.1, a lone
//! freezer 2.0. Both symmetric profiles are Nash equilibria (a Stag Hunt); minimax regret is
//! 0.7 for freezing against 0.1 for falling back. For a fleet, with `f` the share of others
//! falling back, costs interpolate linearly: `C_freeze = 1 + f`, `C_fallback = 1.1 + 0.2f`,
//! crossing at `f* = 0.125`, whatever the fleet size. The best-response sweep and a best-
//! response dynamic over a fleet of `M` controllers check that the threshold is where the
//! fleet tips.

use super::{Figure, Report, Row, Setup};

/// A symmetric 2×2 cost game: `cost[mine][theirs]`, 0 = freeze, 1 = fall back.
pub const COSTS: [[f64; 2]; 2] = [[1.0, 2.0], [1.1, 1.3]];

/// Whether the symmetric profile (a, a) is a Nash equilibrium (no cheaper deviation).
pub fn is_nash(cost: &[[f64; 2]; 2], a: usize) -> bool {
    cost[a][a] <= cost[1 - a][a]
}

/// Worst-case regret of action `a`: over the opponent's actions, my cost minus the best.
pub fn regret(cost: &[[f64; 2]; 2], a: usize) -> f64 {
    (0..2).map(|theirs| cost[a][theirs] - cost[0][theirs].min(cost[1][theirs])).fold(0.0, f64::max)
}

/// Costs when a share `f` of the others fall back (linear interpolation of the corners).
pub fn fleet_costs(cost: &[[f64; 2]; 2], f: f64) -> (f64, f64) {
    let freeze = cost[0][0] + f * (cost[0][1] - cost[0][0]);
    let fallback = cost[1][0] + f * (cost[1][1] - cost[1][0]);
    (freeze, fallback)
}

/// The share of fallback at which both actions cost the same.
pub fn threshold(cost: &[[f64; 2]; 2]) -> f64 {
    let slope = (cost[0][1] - cost[0][0]) - (cost[1][1] - cost[1][0]);
    (cost[1][0] - cost[0][0]) / slope
}

/// Best-response dynamic: `m` controllers, `defectors` of them falling back at first; each
/// round every freezer re-decides against the others' shares. Returns the final count.
pub fn cascade(cost: &[[f64; 2]; 2], m: usize, defectors: usize) -> usize {
    let mut b = defectors.min(m);
    loop {
        // A freezer sees b of the other m − 1 falling back.
        let f = b as f64 / (m - 1).max(1) as f64;
        let (fr, fb) = fleet_costs(cost, f);
        if fb < fr && b < m {
            b = m; // every freezer's best response flips at once
        } else {
            return b;
        }
    }
}

/// Run the experiment.
pub fn run(_setup: &Setup) -> Report {
    let c = &COSTS;
    let nash_f = is_nash(c, 0);
    let nash_b = is_nash(c, 1);
    let (rf, rb) = (regret(c, 0), regret(c, 1));
    let fstar = threshold(c);
    let mut rows = vec![
        Row::new(
            "stag-hunt-nash",
            "both (freeze, freeze) and (fallback, fallback) are Nash equilibria",
            "both Nash",
            format!(
                "freeze: {}, fallback: {}",
                if nash_f { "Nash" } else { "not Nash" },
                if nash_b { "Nash" } else { "not Nash" }
            ),
            "both",
            nash_f && nash_b,
        ),
        Row::new(
            "stag-hunt-regret",
            "worst-case regret: freeze 0.7, fallback 0.1 (seven times larger)",
            "0.7 / 0.1 (7x)",
            format!("{rf:.1} / {rb:.1} ({:.0}x)", rf / rb),
            "±1e-9",
            (rf - 0.7).abs() < 1e-9 && (rb - 0.1).abs() < 1e-9,
        ),
        Row::close("fleet-threshold", "fleet defection threshold f* from 1 + f = 1.1 + 0.2f", 0.125, fstar, 1e-9, 3),
    ];
    // Sweep over f: best response is freeze below f*, fallback above.
    let fs: Vec<f64> = (0..=40).map(|i| i as f64 / 40.0).collect();
    let sweep_ok = fs.iter().all(|&f| {
        let (fr, fb) = fleet_costs(c, f);
        if f < fstar - 1e-12 {
            fr < fb
        } else if f > fstar + 1e-12 {
            fb < fr
        } else {
            (fr - fb).abs() < 1e-12
        }
    });
    // Fleets of different sizes tip at the same share.
    let sizes = [9usize, 17, 81, 801];
    let tips: Vec<String> = sizes
        .iter()
        .map(|&m| {
            let first = (0..=m).find(|&d| cascade(c, m, d) == m).unwrap_or(m);
            format!("M={m}: {first} ({:.3})", first as f64 / (m - 1) as f64)
        })
        .collect();
    let tip_ok = sizes.iter().all(|&m| {
        let first = (0..=m).find(|&d| cascade(c, m, d) == m).unwrap_or(m) as f64 / (m - 1) as f64;
        first > fstar - 1e-9 && first <= fstar + 1.0 / (m - 1) as f64 + 1e-9
    });
    rows.push(Row::new(
        "fleet-sweep",
        "below f* freezing is every controller's best response, above it falling back; the same share tips fleets of any size",
        "f* = 0.125 regardless of M",
        format!("sweep f = 0 … 1 consistent: {}; smallest tipping defection: {}", if sweep_ok { "yes" } else { "no" }, tips.join(", ")),
        "tipping share within one controller of f*",
        sweep_ok && tip_ok,
    ));
    // Consistency of the split the seed quotes from its previous part.
    let lo = 97.05 / 2.95;
    let hi = 97.15 / 2.85;
    rows.push(Row::info(
        "starvation-split",
        "uncoordinated split 97.1 % vs 2.9 % is \"roughly 33.6-to-1\" (quoted from the series' part 2)",
        "33.6 : 1",
        format!("97.1/2.9 = {:.1} : 1; rounding allows {lo:.1}–{hi:.1}", 97.1 / 2.9),
        "arithmetic on the seed's own figures; the simulation behind them is in an earlier part, not this seed",
    ));
    let fig = Figure::new(
        "fleet-threshold",
        "Freeze or fall back: cost against the share falling back",
        "share of others falling back f",
        "cost",
    )
    .line("freeze: 1 + f", fs.clone(), fs.iter().map(|&f| fleet_costs(c, f).0).collect())
    .line("fall back: 1.1 + 0.2f", fs.clone(), fs.iter().map(|&f| fleet_costs(c, f).1).collect());
    Report { experiment: "game", rows, figures: vec![fig] }
}
