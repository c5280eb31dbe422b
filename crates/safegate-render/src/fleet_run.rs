//! What `safegate fleet` prints after a run of its gate processes: each gate's figures, the
//! fleet while the coordinator was up, and the fleet through an outage and after it.

use std::fmt::Write as _;

use safegate_live::fleet::{FleetReport, Second};

/// `writeln!` into a `String`, which cannot fail.
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

/// What `safegate fleet` prints after a run of its processes (`secs` long): each gate's
/// admitted and succeeded rates, grants, silences, unpriced decisions and mode at the end;
/// the fleet while the coordinator was up; and, with an outage, the fleet through it and
/// after.
pub fn live_text(r: &FleetReport, secs: f64) -> String {
    let mut out = String::new();
    outln!(
        out,
        "safegate fleet: {} gates ({}), demand {:.0} req/s against a bound of {:.0} req/s",
        r.nodes,
        r.mode,
        r.demand,
        r.capacity
    );
    outln!(
        out,
        "{:<6}{:>14}{:>14}{:>10}{:>10}{:>10}  mode at the end",
        "gate",
        "admitted/s",
        "succeeded/s",
        "grants",
        "silences",
        "unpriced"
    );
    for g in &r.gates {
        outln!(
            out,
            "{:<6}{:>14.1}{:>14.1}{:>10}{:>10}{:>10}  {}",
            g.id,
            g.admitted as f64 / secs,
            g.succeeded as f64 / secs,
            g.grants,
            g.silences,
            g.unpriced,
            g.mode
        );
    }
    let up: Vec<&Second> = r.seconds.iter().filter(|s| s.coordinator_up && s.t > 2.0).collect();
    if !up.is_empty() {
        let mean = up.iter().map(|s| s.admitted).sum::<f64>() / up.len() as f64;
        let ok = up.iter().map(|s| s.succeeded).sum::<f64>() / up.len() as f64;
        let j = up.iter().map(|s| s.jain).sum::<f64>() / up.len() as f64;
        outln!(
        out,
            "coordinator up: admitted {mean:.1} req/s ({:.0} % of the bound), succeeded {ok:.1} req/s, mean Jain {j:.3}",
            100.0 * mean / r.capacity
        );
    }
    if let Some(o) = r.outage.as_ref().filter(|o| o.measured_seconds == 0) {
        outln!(
        out,
            "coordinator down {:.0}–{:.0} s: not measured (no whole second was sampled inside it; the gates or the machine fell behind)",
            o.start,
            o.start + o.length
        );
    } else if let Some(o) = &r.outage {
        outln!(
        out,
            "coordinator down {:.0}–{:.0} s: admitted worst second {:.1} req/s ({:.0} % of the bound), mean {:.1} ({:.0} %); succeeded {:.1} req/s; decisions without a fresh price {}; fair again {}",
            o.start,
            o.start + o.length,
            o.worst_second,
            100.0 * o.worst_second / r.capacity,
            o.mean_admitted,
            100.0 * o.admitted_share_of_bound,
            o.mean_succeeded,
            o.unpriced_decisions,
            o.fair_again_after.map_or("never".to_string(), |t| format!("{:.2} s ({:.1} refresh intervals) after it returned", t, t * 1e3 / r.refresh_ms as f64))
        );
        outln!(out, "after the outage: succeeded {:.1} req/s over the run's last quarter", o.succeeded_at_end);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use safegate_live::fleet::{Line, OutageSummary};

    /// A report of a two-gate fleet (one gate's line given), with `outage`.
    fn report(outage: Option<OutageSummary>) -> FleetReport {
        let second = |t: f64, up: bool| Second { t, admitted: 60.0, succeeded: 50.0, jain: 0.9, coordinator_up: up };
        FleetReport {
            nodes: 2,
            mode: "hybrid",
            capacity: 60.0,
            demand: 120.0,
            seconds: vec![second(1.0, true), second(3.0, true), second(5.0, false)],
            gates: vec![Line {
                id: "g0".into(),
                admitted: 300,
                succeeded: 250,
                grants: 40,
                mode: "priced".into(),
                ..Line::default()
            }],
            outage,
            refresh_ms: 250,
        }
    }

    #[test]
    fn a_live_fleet_reads_per_gate_then_the_fleet_up_and_through_its_outage() {
        let text = live_text(&report(None), 10.0);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "safegate fleet: 2 gates (hybrid), demand 120 req/s against a bound of 60 req/s");
        assert!(lines[2].starts_with("g0") && lines[2].contains("30.0") && lines[2].ends_with("  priced"), "{text}");
        // Only the seconds after the first two with the coordinator up are summed up.
        assert_eq!(
            lines[3],
            "coordinator up: admitted 60.0 req/s (100 % of the bound), succeeded 50.0 req/s, mean Jain 0.900"
        );
        assert_eq!(lines.len(), 4);
        let outage = OutageSummary {
            start: 4.0,
            length: 2.0,
            worst_second: 30.0,
            mean_admitted: 45.0,
            admitted_share_of_bound: 0.75,
            mean_succeeded: 40.0,
            succeeded_at_end: 55.0,
            fair_again_after: None,
            unpriced_decisions: 7,
            measured_seconds: 2,
        };
        let text = live_text(&report(Some(outage.clone())), 10.0);
        assert!(
            text.contains("coordinator down 4–6 s: admitted worst second 30.0 req/s (50 % of the bound)"),
            "{text}"
        );
        assert!(text.contains("fair again never\nafter the outage: succeeded 55.0 req/s"), "{text}");
        let unmeasured = OutageSummary { measured_seconds: 0, ..outage };
        let text = live_text(&report(Some(unmeasured)), 10.0);
        assert!(text.contains("4–6 s: not measured") && !text.contains("after the outage"), "{text}");
    }
}
