//! The text of a verify report.

use std::fmt::Write as _;

use safegate_studies::verify::{ArmResult, CellResult, VerifyReport};

fn arm_line(s: &mut String, label: &str, a: &ArmResult) {
    let e = &a.exit_probability;
    let _ = writeln!(
        s,
        "  {label:<11} exit {:>7.4} [99% CI {:.4}–{:.4}] ({}/{})  CVaR {:.4}  worst {:.3}  feasible {:>6.2}%  backup {:>6.2}%  given up {:>6.2} req/s  goodput {:>6.2} req/s  mean q {:>6.1}",
        e.estimate,
        e.ci_low,
        e.ci_high,
        e.exits,
        e.trials,
        a.cvar.estimate,
        a.worst_overshoot,
        a.feasible_fraction * 100.0,
        a.backup_fraction * 100.0,
        a.throughput_given_up,
        a.goodput,
        a.mean_queue
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
        "analytic: ε = {} over {} s = {} decisions; per-step ε {:.3e}; union bound {:.4} (valid while feasible); Freedman from empty (α = 1, δ = {:.3}, σ_h = {:.4}): {:.4}",
        a.epsilon, a.horizon, a.steps, a.step_epsilon, a.union_bound, a.freedman_inputs.delta, a.freedman_inputs.sigma_h, a.freedman
    );
    let _ = writeln!(s);
    let cell = |s: &mut String, c: &CellResult| {
        let _ = writeln!(s, "λ = {:>6.1} req/s, dips to H = {:.2}", c.traffic, c.health_low);
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
        "feasible {:.2}% of decisions, backup {:.2}% (whole envelope); unfiltered violates ε in {} of {} cells",
        r.feasible_fraction * 100.0,
        r.backup_fraction * 100.0,
        r.unfiltered_violations,
        r.envelope.len() + 1
    );
    if let Some(c) = &r.cost_floor {
        let _ = writeln!(
            s,
            "Corollary 3 (scenario cell, same seeds): throughput given up {:.2} req/s with the probability constraint alone, {:.2} with CVaR too: {}",
            c.probability_only,
            c.joint,
            if c.holds { "the joint cost is never smaller, as it must be" } else { "VIOLATED: the joint filter gave up less" }
        );
    }
    let _ = writeln!(
        s,
        "{:.0} M trajectory-steps in {secs:.1} s ({:.1} M/s)",
        r.trajectory_steps as f64 / 1e6,
        r.trajectory_steps as f64 / secs / 1e6
    );
    let _ = writeln!(s, "verdict: {}", r.verdict);
    s
}
