//! The verdict of a verification from its cells: `pass` where holding ε (and ρ) is shown
//! in every cell, `fail` where a violation is shown in one, `inconclusive` otherwise, so
//! that no verdict rests on evidence too thin to show either (`verify --trials 1`).

use super::{trials_to_show, CellResult, Outcome, Verdict};

/// Fewest trajectories in the η-tail for the CVaR to be judged against ρ: with fewer, the
/// estimate is the mean of a handful of maxima (with `trials·η < 1`, the largest alone).
pub const MIN_TAIL_TRAJECTORIES: u64 = 10;

/// What the cells show.
pub(super) struct Judgement {
    /// Cells where the filtered arm does not hold ε.
    pub violations: Vec<(f64, f64)>,
    /// Cells whose filtered CVaR exceeds ρ, when the CVaR is judged.
    pub cvar_violations: Vec<(f64, f64)>,
    /// The verdict.
    pub outcome: Outcome,
    /// The verdict with its reasons.
    pub verdict: String,
}

/// Judge `cells` (each run with `trials` trajectories per arm) against ε and, when the
/// boundary bounds it, the CVaR at tail `eta` against `rho`.
pub(super) fn judge(cells: &[&CellResult], eps: f64, rho: Option<f64>, eta: f64, trials: u64) -> Judgement {
    let where_ = |pick: &dyn Fn(&CellResult) -> bool| -> Vec<(f64, f64)> {
        cells.iter().filter(|c| pick(c)).map(|c| (c.traffic, c.health_low)).collect()
    };
    // One verdict per arm (`Verdict`): the filtered arm passes a cell only where it holds ε.
    let violations = where_(&|c| c.filtered.exit_probability.verdict(eps) != Verdict::Holds);
    // Of those, the cells where the frequency is shown to exceed ε (the rest lack the trials
    // to bring the upper limit under it, or sit at ε).
    let exceeded = where_(&|c| c.filtered.exit_probability.verdict(eps) == Verdict::Violates);
    // The CVaR is judged only over a tail of enough trajectories (with fewer, the "CVaR" is
    // the mean of a handful of maxima, or the largest one).
    let tail = trials as f64 * eta;
    let cvar_judged = rho.is_none() || tail >= MIN_TAIL_TRAJECTORIES as f64;
    let cvar_violations = match rho {
        Some(r) if cvar_judged => where_(&|c| c.filtered.cvar.estimate > r),
        _ => vec![],
    };
    let unshown = violations.len() - exceeded.len();
    let outcome = if !exceeded.is_empty() || !cvar_violations.is_empty() {
        Outcome::Fail
    } else if violations.is_empty() && cvar_judged && !cells.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Inconclusive
    };
    let mut why = Vec::new();
    if !exceeded.is_empty() {
        why.push(format!(
            "exit frequency shown above ε (99 % lower limit > ε) in {} cell(s): {:?}",
            exceeded.len(),
            exceeded
        ));
    }
    if !cvar_violations.is_empty() {
        why.push(format!("CVaR above ρ in {} cell(s): {:?}", cvar_violations.len(), cvar_violations));
    }
    if unshown > 0 {
        why.push(format!(
            "ε not shown in {unshown} cell(s): their 99 % interval contains ε (too few trials; with no exit, \
             {} trials per cell show ε = {eps})",
            trials_to_show(eps)
        ));
    }
    if !cvar_judged {
        why.push(format!(
            "CVaR not judged: {trials} trials put {} trajectories in the η = {eta} tail, fewer than \
             {MIN_TAIL_TRAJECTORIES} (at least {} trials)",
            tail.floor(),
            (MIN_TAIL_TRAJECTORIES as f64 / eta).ceil()
        ));
    }
    if cells.is_empty() {
        why.push("no cell was run".to_string());
    }
    let verdict = match outcome {
        Outcome::Pass => format!(
            "pass: in every cell the filtered exit frequency's 99 % upper limit is ≤ ε = {eps}{}",
            if rho.is_some() { " and the CVaR of the overshoot is ≤ ρ" } else { "" }
        ),
        Outcome::Fail => format!("fail: {}", why.join("; ")),
        Outcome::Inconclusive => format!("inconclusive: too few trials to show it either way; {}", why.join("; ")),
    };
    Judgement { violations, cvar_violations, outcome, verdict }
}

#[cfg(test)]
mod tests {
    use super::super::{ArmResult, Cvar, Frequency};
    use super::*;

    fn arm(exits: u64, trials: u64, cvar: f64) -> ArmResult {
        ArmResult {
            exit_probability: Frequency::from_counts(exits, trials),
            cvar: Cvar { estimate: cvar, eta: 0.05, rho: Some(0.05) },
            worst_overshoot: cvar,
            feasible_fraction: 1.0,
            backup_fraction: 0.0,
            intervention_fraction: 0.0,
            throughput_given_up: 0.0,
            admitted_rate: 80.0,
            goodput: 75.0,
            mean_queue: 100.0,
        }
    }

    fn cell(exits: u64, trials: u64, cvar: f64) -> CellResult {
        CellResult {
            traffic: 80.0,
            health_low: 0.1,
            filtered: arm(exits, trials, cvar),
            unfiltered: arm(trials, trials, 1.0),
        }
    }

    fn outcome(cells: &[CellResult], rho: Option<f64>, trials: u64) -> (Outcome, String) {
        let refs: Vec<&CellResult> = cells.iter().collect();
        let j = judge(&refs, 0.01, rho, 0.05, trials);
        (j.outcome, j.verdict)
    }

    /// Issue "`verify --trials 1` says fail (too few trials)": evidence too thin to show
    /// either way is inconclusive, in the verdict and its words, never a fail or a pass.
    #[test]
    fn too_few_trials_are_inconclusive_not_a_fail() {
        for trials in [1, 2, 20, 527] {
            let (o, v) = outcome(&[cell(0, trials, 0.0)], None, trials);
            assert_eq!(o, Outcome::Inconclusive, "{trials}: {v}");
            assert!(v.starts_with("inconclusive: ") && v.contains("528 trials"), "{v}");
        }
        // An exit in one trajectory of one is not shown to exceed ε = 0.01 either.
        assert_eq!(outcome(&[cell(1, 1, 0.3)], None, 1).0, Outcome::Inconclusive);
        // Enough trials with no exit: a pass; exits shown above ε: a fail.
        assert_eq!(outcome(&[cell(0, 528, 0.0)], None, 528).0, Outcome::Pass);
        let (o, v) = outcome(&[cell(0, 528, 0.0), cell(40, 528, 0.0)], None, 528);
        assert_eq!(o, Outcome::Fail, "{v}");
        assert!(v.starts_with("fail: exit frequency shown above ε"), "{v}");
        // A shown violation fails even beside a cell still short of evidence.
        let (o, v) = outcome(&[cell(0, 100, 0.0), cell(40, 100, 0.0)], None, 100);
        assert_eq!(o, Outcome::Fail, "{v}");
        assert!(v.contains("ε not shown in 1 cell(s)"), "{v}");
        // No cell at all: no verdict.
        assert_eq!(outcome(&[], None, 1000).0, Outcome::Inconclusive);
    }

    /// The CVaR is judged against ρ only over a tail of enough trajectories: over one
    /// trajectory's maximum it is neither a pass nor a fail.
    #[test]
    fn the_cvar_is_judged_only_over_a_tail_of_enough_trajectories() {
        let (o, v) = outcome(&[cell(0, 1, 0.9)], Some(0.05), 1);
        assert_eq!(o, Outcome::Inconclusive, "{v}");
        assert!(v.contains("CVaR not judged: 1 trials put 0 trajectories in the η = 0.05 tail"), "{v}");
        assert!(v.contains("at least 200 trials"), "{v}");
        // 528 trials put 26 in the tail: judged.
        assert_eq!(outcome(&[cell(0, 528, 0.01)], Some(0.05), 528).0, Outcome::Pass);
        let (o, v) = outcome(&[cell(0, 528, 0.2)], Some(0.05), 528);
        assert_eq!(o, Outcome::Fail, "{v}");
        assert!(v.starts_with("fail: CVaR above ρ"), "{v}");
        // Enough trials to show ε = 0.05 (104) but not for the CVaR's tail: inconclusive.
        let c = cell(0, 150, 0.01);
        let j = judge(&[&c], 0.05, Some(0.05), 0.05, 150);
        assert_eq!(j.outcome, Outcome::Inconclusive, "{}", j.verdict);
        assert!(!j.verdict.contains("ε not shown") && j.verdict.contains("CVaR not judged"), "{}", j.verdict);
        assert_eq!(judge(&[&c], 0.05, None, 0.05, 150).outcome, Outcome::Pass);
    }
}
