//! F16 and F17, judged from the filter runs ([`super::filter_runs`]): how often the CVaR
//! constraint binds and what tightening it costs; how often the two-constraint problem has
//! no feasible action and what happens without a backup.

use super::filter_runs::{measure, ArmCell, FilterArm, FilterRuns, Trial};
use super::{Criterion, Effort, Evidence, Figure, Outcome, Verdict};

/// Share of decisions below which a constraint "rarely or never" binds.
pub const RARELY: f64 = 0.001;

/// F16's verdict from the runs.
pub fn judge_f16(r: &FilterRuns) -> (Verdict, String) {
    let share = |arm| r.sum(arm, |t| t.cvar_bound) as f64 / r.sum(arm, |t| t.decisions).max(1) as f64;
    let (joint, tight) = (share(FilterArm::Joint), share(FilterArm::Tight));
    let (dj, sj) = r.given_up_diff(FilterArm::Joint, FilterArm::ProbabilityOnly);
    let (dt, st) = r.given_up_diff(FilterArm::Tight, FilterArm::ProbabilityOnly);
    let measurable = |d: f64, se: f64| d > 0.0 && d > 3.0 * se;
    if measurable(dj, sj) || measurable(dt, st) {
        (
            Verdict::Holds,
            format!(
                "the CVaR constraint binds in {:.3} % of decisions at the shipped ρ and {:.2} % when tightened, and tightening it gives up {dt:+.3} ± {st:.3} req/s more than the probability bound alone (paired, {:.1} standard errors): the condition (both bounds free to tighten) is not met",
                joint * 100.0,
                tight * 100.0,
                dt / st.max(1e-300)
            ),
        )
    } else if joint < RARELY && tight < RARELY {
        (
            Verdict::Falsified,
            format!(
                "the CVaR constraint binds in {:.3} % (shipped) and {:.3} % (tightened) of decisions and costs no measurable throughput: the condition (it rarely or never binds) is met",
                joint * 100.0,
                tight * 100.0
            ),
        )
    } else {
        (
            Verdict::Inconclusive,
            format!(
                "the CVaR constraint binds ({:.3} % shipped, {:.2} % tightened) but its throughput cost ({dt:+.3} ± {st:.3} req/s) is within 3 paired standard errors of zero",
                joint * 100.0,
                tight * 100.0
            ),
        )
    }
}

/// F17's verdict from the runs.
pub fn judge_f17(r: &FilterRuns) -> (Verdict, String) {
    let decisions = r.sum(FilterArm::NoBackupSet, |t| t.decisions);
    let infeasible = r.sum(FilterArm::NoBackupSet, |t| t.infeasible);
    let open = r.sum(FilterArm::NoBackup, |t| t.infeasible);
    if decisions == 0 {
        return (Verdict::Inconclusive, "no decisions were made".into());
    }
    let (with, without) = (r.exits(FilterArm::Joint), r.exits(FilterArm::NoBackup));
    if infeasible == 0 && open == 0 {
        (
            Verdict::Falsified,
            format!("all {decisions} decisions of the two-constraint problem had a feasible action, with and without a backup: the condition (always feasible across the envelope) is met"),
        )
    } else {
        (
            Verdict::Holds,
            format!(
                "{:.2} % of the two-constraint problem's decisions ({infeasible} of {decisions}) have no action meeting both constraints; with no backup at all, trajectories leave the safe set in {} of {} (with the shipped backup: {} of {}): the condition (always feasible without a backup) is not met",
                infeasible as f64 / decisions as f64 * 100.0,
                without.exits,
                without.trials,
                with.exits,
                with.trials
            ),
        )
    }
}

fn setup_line(r: &FilterRuns, effort: &Effort) -> String {
    let cells = r.arm(FilterArm::Joint).count();
    format!(
        "shipped seed-80 boundary in the stepped chain, {} s trajectories, {cells} envelope cells (λ 40–120 × dips to 0.1–1.0), {} trajectories per cell and arm, same seeds across arms",
        r.horizon, effort.filter_trials
    )
}

/// Both criteria from the runs.
pub fn criteria(r: &FilterRuns, effort: &Effort) -> Vec<Criterion> {
    let share = |arm, f: fn(&Trial) -> u64| r.sum(arm, f) as f64 / r.sum(arm, |t| t.decisions).max(1) as f64;
    let (v16, why16) = judge_f16(r);
    let (v17, why17) = judge_f17(r);
    let (dj, sj) = r.given_up_diff(FilterArm::Joint, FilterArm::ProbabilityOnly);
    let (dt, st) = r.given_up_diff(FilterArm::Tight, FilterArm::ProbabilityOnly);
    let f16 = Criterion {
        id: "F16".into(),
        claim: "over the running case's envelope the CVaR constraint rarely or never binds against the probability constraint, so tightening one costs the other nothing measurable".into(),
        experiment: setup_line(r, effort),
        evidence: vec![
            Evidence::new("extra given up, tightened − probability only", dt, format!("req/s (paired se {st:.4})")),
            Evidence::new("decisions bound by CVaR, shipped ρ = 0.05", share(FilterArm::Joint, |t| t.cvar_bound), "share"),
            Evidence::new("decisions bound by CVaR, tightened (η = 0.001, ρ = 0)", share(FilterArm::Tight, |t| t.cvar_bound), "share"),
            Evidence::new("throughput given up, probability only", r.given_up(FilterArm::ProbabilityOnly), "req/s"),
            Evidence::new("throughput given up, shipped joint", r.given_up(FilterArm::Joint), "req/s"),
            Evidence::new("throughput given up, tightened joint", r.given_up(FilterArm::Tight), "req/s"),
            Evidence::new("extra given up, shipped − probability only", dj, format!("req/s (paired se {sj:.4})")),
            Evidence::new("CVaR_0.05 of the overshoot, probability only", r.cvar(FilterArm::ProbabilityOnly), "barrier units"),
            Evidence::new("CVaR_0.05 of the overshoot, tightened", r.cvar(FilterArm::Tight), "barrier units"),
        ],
        verdict: v16,
        reason: why16,
    };
    let with = r.exits(FilterArm::Joint);
    let without = r.exits(FilterArm::NoBackup);
    let worst = r
        .arm(FilterArm::NoBackupSet)
        .map(|c| {
            let d: u64 = c.trials.iter().map(|t| t.decisions).sum();
            let i: u64 = c.trials.iter().map(|t| t.infeasible).sum();
            (i as f64 / d.max(1) as f64, c.traffic, c.health_low)
        })
        .fold((0.0, f64::NAN, f64::NAN), |a, b| if b.0 > a.0 { b } else { a });
    let any = |arm| {
        let cells: Vec<&ArmCell> = r.arm(arm).collect();
        let n: usize = cells.iter().map(|c| c.trials.len()).sum();
        cells.iter().flat_map(|c| &c.trials).filter(|t| t.infeasible > 0).count() as f64 / n.max(1) as f64
    };
    let f17 = Criterion {
        id: "F17".into(),
        claim: "the per-step problem enforcing both the probability and the CVaR constraint always has a feasible action across the envelope, with no backup policy".into(),
        experiment: setup_line(r, effort),
        evidence: vec![
            Evidence::new("decisions with no feasible action, two constraints (no backup set)", share(FilterArm::NoBackupSet, |t| t.infeasible), "share"),
            Evidence::new("trajectories with at least one such decision", any(FilterArm::NoBackupSet), "share"),
            Evidence::new(
                "worst cell's infeasible share, two constraints",
                worst.0,
                format!("share (λ = {:.0}, dips to {:.2})", worst.1, worst.2),
            ),
            Evidence::new("decisions with no feasible action, shipped (with the backup-set constraint)", share(FilterArm::Joint, |t| t.infeasible), "share"),
            Evidence::new("decisions with no feasible action, no backup (nominal passes)", share(FilterArm::NoBackup, |t| t.infeasible), "share"),
            Evidence::new(
                "trajectories leaving the safe set, no backup",
                without.estimate,
                format!("share, {} of {} (99 % CI {:.4}–{:.4}; ε = {})", without.exits, without.trials, without.ci_low, without.ci_high, r.epsilon),
            ),
            Evidence::new(
                "trajectories leaving the safe set, with the backup",
                with.estimate,
                format!("share, {} of {} (99 % CI {:.4}–{:.4})", with.exits, with.trials, with.ci_low, with.ci_high),
            ),
        ],
        verdict: v17,
        reason: why17,
    };
    vec![f16, f17]
}

/// F16 alone.
pub fn f16(effort: &Effort) -> Criterion {
    criteria(&measure(effort, &|_| {}), effort).remove(0)
}

/// F17 alone.
pub fn f17(effort: &Effort) -> Criterion {
    criteria(&measure(effort, &|_| {}), effort).remove(1)
}

/// Both, with a figure of the throughput given up per traffic level.
pub(super) fn run(effort: &Effort, progress: &(dyn Fn(f64) + Sync)) -> Outcome {
    let r = measure(effort, progress);
    let mut fig = Figure::new(
        "f16-given-up",
        "F16: throughput given up to the filter, by traffic (deepest dip)",
        "offered traffic λ [req/s]",
        "given up [req/s]",
    );
    let low = r.cells.iter().map(|c| c.health_low).fold(f64::INFINITY, f64::min);
    for (arm, name) in [
        (FilterArm::ProbabilityOnly, "probability only"),
        (FilterArm::Joint, "joint, shipped ρ"),
        (FilterArm::Tight, "joint, tightened"),
    ] {
        let cells: Vec<&ArmCell> = r.arm(arm).filter(|c| c.health_low == low).collect();
        fig = fig.line(
            name,
            cells.iter().map(|c| c.traffic).collect(),
            cells
                .iter()
                .map(|c| c.trials.iter().map(|t| t.given_up).sum::<f64>() / c.trials.len().max(1) as f64)
                .collect(),
        );
    }
    Outcome { criteria: criteria(&r, effort), figures: vec![fig] }
}
