//! Step 5: is the joint feasible set ever empty across the envelope seen? The draft's filter,
//! with and without its CVaR constraint, at every sample inside the safe set, by traffic
//! and health cell.

use safegate_core::boundary::Boundary;
use safegate_core::filter::{Constraint, ConstraintKind, Filter, FilterState};

use super::envelope::Seen;
use super::{Cell, Feasibility, Signal, Telemetry};

pub(super) fn feasibility(tel: &Telemetry, b: &Boundary, seen: &Seen) -> Feasibility {
    let health_env = seen.health.unwrap_or([1.0, 1.0]);
    let mut out = Feasibility {
        checked: false,
        reason: String::new(),
        traffic: seen.traffic(),
        health: seen.health,
        infeasible_probability: 0.0,
        infeasible_joint: 0.0,
        cells: Vec::new(),
    };
    if tel.signal != Some(Signal::Queue) {
        out.reason = "not checked: the filter's constraints are on a queue; the signal is requests in flight".into();
        return out;
    }
    let (Some(thr), Some(offered)) = (&tel.throughput, seen.offered.as_deref()) else {
        out.reason = "not checked: needs a throughput column (the service rate the filter predicts with)".into();
        return out;
    };
    // The filter the draft builds, with and without its CVaR constraint (the backup set is
    // left out: the question is whether ε and ρ alone leave an action).
    let built = b.safety_config(b.barrier.capacity.unwrap_or(1.0)).ok().and_then(|cfg| {
        let keep = |c: &&Constraint| c.kind() != ConstraintKind::BackupSet;
        let joint: Vec<Constraint> = cfg.constraints.iter().filter(keep).copied().collect();
        let prob: Vec<Constraint> = joint.iter().copied().filter(|c| c.kind() != ConstraintKind::Cvar).collect();
        Some((Filter::new(cfg.barrier, &joint).ok()?, Filter::new(cfg.barrier, &prob).ok()?))
    });
    let Some((joint, prob)) = built else {
        out.reason = "not checked: the draft boundary does not build a filter".into();
        return out;
    };
    let dt = b.decision.period;
    // Bins: traffic quartiles × health thirds of the range seen.
    // (The outer edges are the 1st and 99th percentiles; rows beyond them count in the end
    // bins.)
    let tq = seen.traffic_q;
    let hb = [
        health_env[0],
        health_env[0] + (health_env[1] - health_env[0]) / 3.0,
        health_env[0] + 2.0 * (health_env[1] - health_env[0]) / 3.0,
        health_env[1],
    ];
    let mut counts = vec![[0usize; 3]; 12];
    let retries = tel.retries.as_ref();
    let n = tel.len();
    let line = b.barrier.threshold * b.barrier.capacity.unwrap_or(1.0);
    let mut outside = 0usize;
    for i in 0..n {
        // The filter acts inside the safe set; a state already outside is the backup's.
        if tel.x[i] > line {
            outside += 1;
            continue;
        }
        let service = thr[i].max(0.0);
        let retry = retries.map_or(0.0, |r| r[i]);
        let arrivals = offered[i].max(0.0);
        let x = FilterState {
            queue: tel.x[i],
            dt,
            drift: retry - service,
            sigma: ((arrivals + service) * dt).sqrt(),
            var0: (service + retry) * dt,
            prev_admit: 0.0,
            prev_drift: retry - service,
        };
        let p_bad = prob.upper(&x).0 < 0.0;
        let j_bad = joint.upper(&x).0 < 0.0;
        let ti = tq[1..4].iter().filter(|q| offered[i] > **q).count();
        let hi = match &tel.health {
            Some(h) => hb[1..3].iter().filter(|q| h[i] > **q).count(),
            None => 0,
        };
        let c = &mut counts[ti * 3 + hi];
        c[0] += 1;
        c[1] += p_bad as usize;
        c[2] += j_bad as usize;
    }
    let total: [usize; 3] = counts.iter().fold([0; 3], |a, c| [a[0] + c[0], a[1] + c[1], a[2] + c[2]]);
    for ti in 0..4 {
        for hi in 0..3 {
            let c = counts[ti * 3 + hi];
            if c[0] == 0 {
                continue;
            }
            let health = tel.health.is_some().then(|| [hb[hi], hb[hi + 1]]);
            out.cells.push(Cell {
                traffic: [tq[ti], tq[ti + 1]],
                health,
                samples: c[0],
                infeasible_probability: c[1] as f64 / c[0] as f64,
                infeasible_joint: c[2] as f64 / c[0] as f64,
            });
        }
    }
    out.checked = true;
    out.infeasible_probability = total[1] as f64 / total[0].max(1) as f64;
    out.infeasible_joint = total[2] as f64 / total[0].max(1) as f64;
    let also = if outside > 0 {
        format!("; {outside} samples already outside the safe set are the backup's")
    } else {
        String::new()
    };
    out.reason = if total[0] == 0 {
        out.checked = false;
        format!("not checked: no sample inside the safe set{also}")
    } else if total[2] == 0 {
        format!("ε and ρ together leave a feasible admitted rate at every one of the {} states seen inside the safe set{also}", total[0])
    } else {
        format!(
            "no admitted rate satisfies ε and ρ together in {:.2} % of the {} states seen inside the safe set ({:.2} % for ε alone): the backup policy must cover them{also}",
            100.0 * out.infeasible_joint,
            total[0],
            100.0 * out.infeasible_probability
        )
    };
    out
}
