//! What several steps read of the data, derived once: the offered traffic per row, its
//! percentiles, and health's range.

use safegate_core::stats::quantile_sorted;

use super::Telemetry;

/// Offered traffic per row: the `offered` column, else completions plus rejections.
fn traffic(tel: &Telemetry) -> Option<Vec<f64>> {
    if let Some(o) = &tel.offered {
        return Some(o.clone());
    }
    let thr = tel.throughput.as_ref()?;
    Some(match &tel.rejections {
        Some(r) => thr.iter().zip(r).map(|(a, b)| a + b).collect(),
        None => thr.clone(),
    })
}

/// What several steps read of the data, derived once: the offered traffic per row, its
/// percentiles (1st, 25th, 50th, 75th, 99th: the envelope's edges and the feasibility
/// bins), and health's range.
#[derive(Debug)]
pub(super) struct Seen {
    pub(super) offered: Option<Vec<f64>>,
    pub(super) traffic_q: [f64; 5],
    pub(super) health: Option<[f64; 2]>,
}

impl Seen {
    pub(super) fn of(tel: &Telemetry) -> Self {
        let offered = traffic(tel);
        let traffic_q = offered.as_ref().map_or([0.0; 5], |v| {
            let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
            s.sort_unstable_by(f64::total_cmp);
            [0.01f64, 0.25, 0.5, 0.75, 0.99].map(|p| quantile_sorted(&s, p).unwrap_or(f64::NAN))
        });
        let health = tel.health.as_ref().map(|h| {
            [h.iter().copied().fold(f64::INFINITY, f64::min), h.iter().copied().fold(f64::NEG_INFINITY, f64::max)]
        });
        Seen { offered, traffic_q, health }
    }

    /// The envelope's traffic: between the 1st and 99th percentiles.
    pub(super) fn traffic(&self) -> [f64; 2] {
        [self.traffic_q[0], self.traffic_q[4]]
    }
}
