//! The runs `safegate run` makes of one scenario: the seed's gate as configured, and beside
//! it either the same gate under the safety filter of the scenario's boundary, or (when
//! asked for) the pool with the gate off as a baseline.

use safegate_core::boundary::Boundary;
use safegate_core::filter::FilterError;
use safegate_core::safety::{FilterStats, SafetyFilter};
use safegate_core::{Action, Observation, Policy, RangeError, SeedGate};

use crate::scenario::{Scenario, ScenarioError};

/// The policy of one run: the seed's gate, alone or under the filter.
#[derive(Debug, Clone)]
pub enum VariantPolicy {
    /// The seed's gate (sensitivity 0: off).
    Gate(SeedGate),
    /// The seed's gate as the nominal controller of a safety filter.
    Filtered(Box<SafetyFilter<SeedGate>>),
}

impl Policy for VariantPolicy {
    fn decide(&mut self, obs: &Observation) -> Action {
        match self {
            VariantPolicy::Gate(g) => g.decide(obs),
            VariantPolicy::Filtered(f) => f.decide(obs),
        }
    }
    fn name(&self) -> &'static str {
        match self {
            VariantPolicy::Gate(g) => g.name(),
            VariantPolicy::Filtered(f) => f.name(),
        }
    }
}

impl VariantPolicy {
    /// The filter's counts so far (`None` for the gate alone).
    pub fn filter_stats(&self) -> Option<FilterStats> {
        match self {
            VariantPolicy::Filtered(f) => Some(*f.stats()),
            VariantPolicy::Gate(_) => None,
        }
    }
}

/// One labelled run.
#[derive(Debug, Clone)]
pub struct Variant {
    /// How it is labelled in tables and charts (`gate on (θ 0.7, sens 1)`, `gate off`,
    /// `filtered (seed-80)`).
    pub label: String,
    /// The scenario it runs (the baseline's has the gate's sensitivity at 0).
    pub scenario: Scenario,
    /// Its policy.
    pub policy: VariantPolicy,
}

/// Why the runs of a scenario cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum VariantError {
    /// The scenario's gate is out of range.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The scenario's boundary cannot build a filter for its pool.
    #[error("boundary: {0}")]
    Boundary(RangeError),
    /// The filter cannot be built around the gate.
    #[error("{0}")]
    Filter(FilterError),
}

/// The runs of `scenario`, in the order they are reported (the one to compare against
/// first):
/// - with a boundary (the scenario's `[boundary]`, or one the caller put in its place): the
///   gate alone, then the gate under the boundary's filter;
/// - without one: the gate with its sensitivity at 0 when `baseline` is asked for and the
///   gate is on, then the gate as configured.
///
/// ```
/// use safegate_sim::variants::variants;
/// use safegate_sim::Scenario;
///
/// let s = Scenario::default();
/// let labels = |v: Vec<safegate_sim::variants::Variant>| v.into_iter().map(|v| v.label).collect::<Vec<_>>();
/// assert_eq!(labels(variants(&s, false).unwrap()), ["gate on (θ 0.7, sens 1)"]);
/// assert_eq!(labels(variants(&s, true).unwrap()), ["gate off", "gate on (θ 0.7, sens 1)"]);
/// ```
pub fn variants(scenario: &Scenario, baseline: bool) -> Result<Vec<Variant>, VariantError> {
    let gate = scenario.gate()?;
    let gate_label = if gate.sensitivity() > 0.0 {
        format!("gate on (θ {}, sens {})", gate.threshold(), gate.sensitivity())
    } else {
        "gate off".to_string()
    };
    let variant = |label: String, scenario: Scenario, policy| Variant { label, scenario, policy };
    let mut out = Vec::new();
    if let Some(b) = &scenario.boundary {
        let safety = b.safety_config(scenario.model.capacity).map_err(VariantError::Boundary)?;
        out.push(variant(gate_label, scenario.clone(), VariantPolicy::Gate(gate)));
        let name = b.name.clone().unwrap_or_else(|| "boundary".into());
        let filter = SafetyFilter::new(safety, gate).map_err(VariantError::Filter)?;
        out.push(variant(format!("filtered ({name})"), scenario.clone(), VariantPolicy::Filtered(Box::new(filter))));
    } else {
        if baseline && gate.sensitivity() > 0.0 {
            let mut off = scenario.clone();
            off.gate.sensitivity = 0.0;
            let policy = VariantPolicy::Gate(off.gate()?);
            out.push(variant("gate off".to_string(), off, policy));
        }
        out.push(variant(gate_label, scenario.clone(), VariantPolicy::Gate(gate)));
    }
    Ok(out)
}

/// The four runs of the main job on `scenario`, in the order of its story:
/// 1. `no gate`: the gate's sensitivity at 0 (the open pool);
/// 2. the seed's gate as the scenario configures it;
/// 3. the same gate under the safety filter of `filter` (admission only);
/// 4. the same gate under the safety filter of `pool`, a boundary whose `[concurrency]`
///    table also lets the filter cap the pool's concurrency.
///
/// The scenario's own `[boundary]`, if any, plays no part: each filtered run carries its
/// boundary in its scenario.
///
/// ```
/// use safegate_core::boundary::Boundary;
/// use safegate_sim::variants::arms;
/// use safegate_sim::Scenario;
///
/// let (f, p) = (Boundary { name: Some("f".into()), ..Boundary::default() }, Boundary { name: Some("p".into()), ..Boundary::default() });
/// let labels: Vec<String> = arms(&Scenario::default(), &f, &p).unwrap().into_iter().map(|v| v.label).collect();
/// assert_eq!(labels, ["no gate", "seed gate (θ 0.7, sens 1)", "filter (f)", "filter + concurrency cap (p)"]);
/// ```
pub fn arms(scenario: &Scenario, filter: &Boundary, pool: &Boundary) -> Result<Vec<Variant>, VariantError> {
    let gate = scenario.gate()?;
    let mut open = scenario.clone();
    open.gate.sensitivity = 0.0;
    open.boundary = None;
    let off = open.gate()?;
    let mut gated = scenario.clone();
    gated.boundary = None;
    let filtered = |b: &Boundary, label: &str| -> Result<Variant, VariantError> {
        let safety = b.safety_config(scenario.model.capacity).map_err(VariantError::Boundary)?;
        let f = SafetyFilter::new(safety, gate).map_err(VariantError::Filter)?;
        let name = b.name.clone().unwrap_or_else(|| "boundary".into());
        let scenario = Scenario { boundary: Some(b.clone()), ..scenario.clone() };
        Ok(Variant { label: format!("{label} ({name})"), scenario, policy: VariantPolicy::Filtered(Box::new(f)) })
    };
    Ok(vec![
        Variant { label: "no gate".into(), scenario: open, policy: VariantPolicy::Gate(off) },
        Variant {
            label: format!("seed gate (θ {}, sens {})", gate.threshold(), gate.sensitivity()),
            scenario: gated,
            policy: VariantPolicy::Gate(gate),
        },
        filtered(filter, "filter")?,
        filtered(pool, "filter + concurrency cap")?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(v: &[Variant]) -> Vec<&str> {
        v.iter().map(|v| v.label.as_str()).collect()
    }

    #[test]
    fn the_gate_and_its_baseline() {
        let s = Scenario::default();
        let v = variants(&s, true).unwrap();
        assert_eq!(labels(&v), ["gate off", "gate on (θ 0.7, sens 1)"]);
        assert_eq!(v[0].scenario.gate.sensitivity, 0.0);
        assert_eq!(v[1].scenario, s);
        assert!(v.iter().all(|v| v.policy.filter_stats().is_none() && v.policy.name() == "seed-gate"));
        // A gate that is off has no baseline beside it.
        let mut off = Scenario::default();
        off.gate.sensitivity = 0.0;
        assert_eq!(labels(&variants(&off, true).unwrap()), ["gate off"]);
    }

    #[test]
    fn a_boundary_puts_the_filter_beside_the_gate() {
        let b = Boundary { name: Some("b".into()), ..Boundary::default() };
        let mut s = Scenario { boundary: Some(b), ..Scenario::default() };
        for baseline in [false, true] {
            let v = variants(&s, baseline).unwrap();
            assert_eq!(labels(&v), ["gate on (θ 0.7, sens 1)", "filtered (b)"]);
            assert!(v.iter().all(|v| v.scenario == s));
            assert!(v[0].policy.filter_stats().is_none());
            assert_eq!(v[1].policy.filter_stats(), Some(FilterStats::default()));
        }
        s.boundary.as_mut().unwrap().name = None;
        assert_eq!(variants(&s, false).unwrap()[1].label, "filtered (boundary)");
    }

    #[test]
    fn the_four_arms_run_the_same_scenario_under_their_own_policies() {
        let f = Boundary { name: Some("f".into()), ..Boundary::default() };
        let mut p = Boundary { name: Some("p".into()), ..Boundary::default() };
        p.barrier.threshold = 0.6;
        let s = Scenario { boundary: Some(Boundary::default()), ..Scenario::default() };
        let v = arms(&s, &f, &p).unwrap();
        assert_eq!(labels(&v), ["no gate", "seed gate (θ 0.7, sens 1)", "filter (f)", "filter + concurrency cap (p)"]);
        assert_eq!(v[0].scenario.gate.sensitivity, 0.0);
        assert_eq!(v[1].scenario.gate, s.gate);
        assert!(v[0].scenario.boundary.is_none() && v[1].scenario.boundary.is_none());
        assert_eq!(v[2].scenario.boundary.as_ref().unwrap().name.as_deref(), Some("f"));
        assert_eq!(v[3].scenario.boundary.as_ref().unwrap().barrier.threshold, 0.6);
        assert!(v[..2].iter().all(|v| v.policy.filter_stats().is_none()));
        assert!(v[2..].iter().all(|v| v.policy.filter_stats() == Some(FilterStats::default())));
        assert!(v.iter().all(|v| v.scenario.model == s.model && v.scenario.traffic == s.traffic));
    }

    #[test]
    fn bad_inputs_are_errors() {
        let mut b = Boundary::default();
        b.barrier.threshold = 1.5;
        let s = Scenario { boundary: Some(b), ..Scenario::default() };
        let e = variants(&s, false).unwrap_err();
        assert!(matches!(&e, VariantError::Boundary(r) if r.field == "barrier.threshold"), "{e}");
        assert!(e.to_string().starts_with("boundary: barrier.threshold = 1.5"), "{e}");
        let mut s = Scenario::default();
        s.gate.threshold = 2.0;
        let e = variants(&s, true).unwrap_err();
        assert!(matches!(&e, VariantError::Scenario(ScenarioError::Invalid { .. })), "{e}");
    }
}
