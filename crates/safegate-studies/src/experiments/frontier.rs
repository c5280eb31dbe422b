//! The achievable region of ε against the severity bound (seed, "The Two Bounds Trade
//! Against Each Other, Not for Free"; Corollary 3).
//!
//! An illustrative model, as the seed says: a fixed budget `m_p + m_c = 4` split between a
//! probability margin, `ε(m_p) = exp(−m_p²/2v)` (v = 1), and a CVaR margin,
//! `S(m_c) = S₀/(1 + m_c/k)` (S₀ = 100, k = 1). m_p = 0 … 4 gives ε = 1, .607, .135, .011,
//! .0003 against S = 20, 25, 33.3, 50, 100, and no split improves both.

use super::{Figure, Report, Row, Setup};

/// `ε(m_p) = exp(−m_p²/(2v))`.
pub fn epsilon(m_p: f64, v: f64) -> f64 {
    (-m_p * m_p / (2.0 * v)).exp()
}

/// `S(m_c) = S₀/(1 + m_c/k)`.
pub fn severity_bound(m_c: f64, s0: f64, k: f64) -> f64 {
    s0 / (1.0 + m_c / k)
}

/// Format like the seed's table (1, .607, .135, .011, .0003).
fn seed_style(x: f64) -> String {
    if x >= 0.9995 {
        "1".into()
    } else if x >= 0.001 {
        format!("{x:.3}").trim_start_matches('0').to_string()
    } else {
        format!("{x:.4}").trim_start_matches('0').to_string()
    }
}

/// Run the experiment.
pub fn run(_setup: &Setup) -> Report {
    let total = 4.0;
    let seed_eps = ["1", ".607", ".135", ".011", ".0003"];
    let seed_s = [20.0, 25.0, 33.3, 50.0, 100.0];
    let splits: Vec<f64> = (0..=4).map(f64::from).collect();
    let eps: Vec<f64> = splits.iter().map(|&m| epsilon(m, 1.0)).collect();
    let sev: Vec<f64> = splits.iter().map(|&m| severity_bound(total - m, 100.0, 1.0)).collect();
    let ours_eps: Vec<String> = eps.iter().map(|&e| seed_style(e)).collect();
    let ours_s: Vec<String> = sev.iter().map(|s| format!("{s:.1}").trim_end_matches(".0").to_string()).collect();
    let eps_ok = ours_eps.iter().zip(seed_eps).all(|(a, b)| a == b);
    let s_ok = sev.iter().zip(seed_s).all(|(a, b)| (a - b).abs() < 0.05 + 1e-9);
    // No split improves both, checked on a fine sweep.
    let fine: Vec<(f64, f64)> = (0..=400)
        .map(|i| i as f64 * total / 400.0)
        .map(|m| (epsilon(m, 1.0), severity_bound(total - m, 100.0, 1.0)))
        .collect();
    let trade = fine.windows(2).all(|w| w[1].0 < w[0].0 && w[1].1 > w[0].1);
    let rows = vec![
        Row::new(
            "frontier-epsilon",
            "ε at m_p = 0 … 4 (v = 1)",
            seed_eps.join(", "),
            ours_eps.join(", "),
            "equal at the seed's precision",
            eps_ok,
        ),
        Row::new(
            "frontier-severity",
            "S at m_c = 4 … 0 (S₀ = 100, k = 1)",
            "20, 25, 33.3, 50, 100",
            ours_s.join(", "),
            "±0.05",
            s_ok,
        ),
        Row::new(
            "frontier-trade",
            "tightening one bound strictly worsens the other, across the whole sweep",
            "strict trade",
            if trade { "strict trade (401 splits)" } else { "not strict" },
            "strictly monotone",
            trade,
        ),
    ];
    let fig = Figure::new(
        "frontier",
        "Achievable region: m_p + m_c = 4 split between ε and S",
        "severity bound S",
        "log10 ε",
    )
    .line("frontier (fine sweep)", fine.iter().map(|p| p.1).collect(), fine.iter().map(|p| p.0.log10()).collect())
    .line("the seed's five splits", sev.clone(), eps.iter().map(|e| e.log10()).collect());
    Report { experiment: "frontier", rows, figures: vec![fig] }
}
