//! The text of a verify report.

use std::fmt::Write as _;

use safegate_studies::verify::{ArmResult, CellResult, VerifyReport};

use crate::numbers::{fixed, number, percent_tight, ratio};

fn arm_line(s: &mut String, label: &str, a: &ArmResult) {
    let e = &a.exit_probability;
    let _ = writeln!(
        s,
        "  {label:<11} exit {:>7.4} [99% CI {:.4}–{:.4}] ({}/{})  CVaR {}  worst {}  feasible {:>7}  backup {:>7}  given up {:>6} req/s  goodput {:>6} req/s  mean q {:>6}",
        e.estimate,
        e.ci_low,
        e.ci_high,
        e.exits,
        e.trials,
        fixed(a.cvar.estimate, 4),
        fixed(a.worst_overshoot, 3),
        percent_tight(Some(a.feasible_fraction), 2),
        percent_tight(Some(a.backup_fraction), 2),
        fixed(a.throughput_given_up, 2),
        fixed(a.goodput, 2),
        fixed(a.mean_queue, 1)
    );
}

/// The text `safegate verify` prints.
pub fn render(r: &VerifyReport, path: &str, secs: f64) -> String {
    let mut s = String::new();
    let a = &r.analytic;
    let _ =
        writeln!(s, "safegate verify: {} ({path}), nominal {:?}", r.boundary.clone().unwrap_or_default(), r.nominal);
    let _ = writeln!(
        s,
        "analytic: ε = {} over {} s = {} decisions; per-step ε {:.3e}; union bound {} (valid while feasible); Freedman from empty (α = 1, δ = {}, σ_h = {}): {}",
        number(a.epsilon),
        number(a.horizon),
        a.steps,
        a.step_epsilon,
        fixed(a.union_bound, 4),
        fixed(a.freedman_inputs.delta, 3),
        fixed(a.freedman_inputs.sigma_h, 4),
        fixed(a.freedman, 4)
    );
    let _ = writeln!(s);
    let cell = |s: &mut String, c: &CellResult| {
        let _ = writeln!(s, "λ = {:>6} req/s, dips to H = {}", fixed(c.traffic, 1), fixed(c.health_low, 2));
        arm_line(s, "filtered", &c.filtered);
        arm_line(s, "unfiltered", &c.unfiltered);
    };
    let _ = writeln!(s, "the scenario's own cell:");
    cell(&mut s, &r.scenario);
    let _ = writeln!(s);
    let _ = writeln!(s, "envelope ({} cells):", r.envelope.len());
    for c in &r.envelope {
        cell(&mut s, c);
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "feasible {} of decisions, backup {} (whole envelope); unfiltered violates ε in {} of {} cells",
        percent_tight(Some(r.feasible_fraction), 2),
        percent_tight(Some(r.backup_fraction), 2),
        r.unfiltered_violations,
        r.envelope.len() + 1
    );
    if let Some(c) = &r.cost_floor {
        let _ = writeln!(
            s,
            "Corollary 3 (scenario cell, same seeds): throughput given up {} req/s with the probability constraint alone, {} with CVaR too: {}",
            fixed(c.probability_only, 2),
            fixed(c.joint, 2),
            if c.holds { "the joint cost is never smaller, as it must be" } else { "VIOLATED: the joint filter gave up less" }
        );
    }
    let _ = writeln!(
        s,
        "{:.0} M trajectory-steps in {secs:.1} s ({} M/s)",
        r.trajectory_steps as f64 / 1e6,
        ratio(r.trajectory_steps as f64 / 1e6, secs).map_or("n/a".into(), |x| fixed(x, 1))
    );
    let _ = writeln!(s, "verdict: {}", r.verdict);
    s
}
