//! Every gate's counters in Prometheus's text format, as `/metrics` serves them during a
//! fleet run.

use std::fmt::Write as _;

use safegate_core::fleet::lease::Mode;

use super::Line;

/// Every gate's counters in Prometheus's text format.
pub fn render_metrics(lines: &[Line]) -> String {
    let mut o = String::new();
    type Metric = (&'static str, &'static str, &'static str, fn(&Line) -> f64);
    let metrics: [Metric; 7] = [
        ("safegate_requests_offered_total", "counter", "Arrivals at the gate.", |l| l.offered as f64),
        ("safegate_requests_admitted_total", "counter", "Requests admitted to the dependency.", |l| l.admitted as f64),
        ("safegate_requests_failed_total", "counter", "Admitted requests that failed or timed out.", |l| {
            l.failed as f64
        }),
        ("safegate_fleet_grants_total", "counter", "Refreshes the coordinator answered.", |l| l.grants as f64),
        ("safegate_fleet_silences_total", "counter", "Refreshes that failed.", |l| l.silences as f64),
        (
            "safegate_fleet_decisions_without_price_total",
            "counter",
            "Admission decisions taken without a fresh price.",
            |l| l.unpriced as f64,
        ),
        ("safegate_limit", "gauge", "The admitted rate in force [req/s].", |l| l.limit),
    ];
    for (name, kind, help, get) in metrics {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for l in lines {
            let _ = writeln!(o, "{name}{{gate=\"{}\"}} {}", l.id, get(l));
        }
    }
    // A state set: 1 for the mode of the gate's latest decision, 0 for the others.
    let name = "safegate_fleet_gate_mode";
    let _ =
        writeln!(o, "# HELP {name} The mode of the gate's latest decision (1) among all modes.\n# TYPE {name} gauge");
    for l in lines {
        for m in Mode::ALL {
            let _ = writeln!(o, "{name}{{gate=\"{}\",mode=\"{}\"}} {}", l.id, m.name(), u8::from(l.mode == m.name()));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use safegate_studies::fleet::jain;

    #[test]
    fn metrics_count_decisions_without_a_price_per_gate() {
        let l = Line { id: "g3".into(), unpriced: 17, limit: 18.75, mode: "share".into(), ..Line::default() };
        let m = render_metrics(&[l]);
        assert!(m.contains("safegate_fleet_gate_mode{gate=\"g3\",mode=\"share\"} 1"), "{m}");
        assert!(m.contains("safegate_fleet_gate_mode{gate=\"g3\",mode=\"granted\"} 0"), "{m}");
        assert!(m.contains("safegate_fleet_decisions_without_price_total{gate=\"g3\"} 17"), "{m}");
        assert!(m.contains("safegate_limit{gate=\"g3\"} 18.75"), "{m}");
        assert!((jain(&[1.0, 1.0]) - 1.0).abs() < 1e-12 && jain(&[0.0, 0.0]) == 1.0);
    }
}
