//! Every gate's counters in Prometheus's text format, as `/metrics` serves them during a
//! fleet run: through the `metrics` facade and its Prometheus exporter, with the names of
//! [`safegate_core::names`] (a gate's admitted rate is [`names::ADMIT_RATE`], not the
//! concurrency limit's name).

use metrics::{counter, describe_counter, describe_gauge, gauge};
use metrics_exporter_prometheus::PrometheusBuilder;
use safegate_core::fleet::lease::Mode;
use safegate_core::names;

use super::Line;

/// Every gate's counters in Prometheus's text format, each series labelled `gate`.
pub fn render_metrics(lines: &[Line]) -> String {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || publish(lines));
    handle.render()
}

/// Record every gate's counters into the current recorder.
fn publish(lines: &[Line]) {
    type Counter = (&'static str, &'static str, fn(&Line) -> u64);
    let counters: [Counter; 6] = [
        (names::REQUESTS_OFFERED_TOTAL, "Arrivals at the gate.", |l| l.offered),
        (names::REQUESTS_ADMITTED_TOTAL, "Requests admitted to the dependency.", |l| l.admitted),
        (names::REQUESTS_FAILED_TOTAL, "Admitted requests that failed or timed out.", |l| l.failed),
        ("safegate_fleet_grants_total", "Refreshes the coordinator answered.", |l| l.grants),
        ("safegate_fleet_silences_total", "Refreshes that failed.", |l| l.silences),
        ("safegate_fleet_decisions_without_price_total", "Admission decisions taken without a fresh price.", |l| {
            l.unpriced
        }),
    ];
    for (name, help, get) in counters {
        describe_counter!(name, help);
        for l in lines {
            counter!(name, "gate" => l.id.clone()).absolute(get(l));
        }
    }
    describe_gauge!(names::ADMIT_RATE, "The admitted rate in force [req/s].");
    // A state set: 1 for the mode of the gate's latest decision, 0 for the others.
    let mode = "safegate_fleet_gate_mode";
    describe_gauge!(mode, "The mode of the gate's latest decision (1) among all modes.");
    for l in lines {
        gauge!(names::ADMIT_RATE, "gate" => l.id.clone()).set(l.limit);
        for m in Mode::ALL {
            gauge!(mode, "gate" => l.id.clone(), "mode" => m.name()).set(f64::from(u8::from(l.mode == m.name())));
        }
    }
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
        assert!(m.contains("safegate_admit_rate{gate=\"g3\"} 18.75"), "{m}");
        assert!((jain(&[1.0, 1.0]) - 1.0).abs() < 1e-12 && jain(&[0.0, 0.0]) == 1.0);
    }
}
