//! The draft boundary file: the options, the capacity, ρ and the envelope the data cover,
//! written as TOML with the checklist's findings as comments, and read back as
//! `safegate verify --boundary` reads it.

use safegate_core::boundary::{Boundary, MagnitudeSection};

use super::envelope::Seen;
use super::{CheckOptions, Excursions, ExitCheck, Feasibility, Severity, Telemetry};

/// The draft boundary: the options, the capacity, ρ, and the envelope the data cover.
pub(super) fn draft(tel: &Telemetry, opts: &CheckOptions, capacity: f64, sev: &Severity, seen: &Seen) -> Boundary {
    let mut b = Boundary {
        name: Some("draft".into()),
        description: Some("drafted by safegate boundary check; edit, then safegate verify --boundary".into()),
        ..Boundary::default()
    };
    b.barrier.threshold = opts.threshold;
    b.barrier.capacity = Some(capacity);
    b.probability.epsilon = opts.epsilon;
    b.probability.horizon = opts.horizon;
    b.magnitude = Some(MagnitudeSection {
        eta: opts.eta,
        rho: sev.rho.min(safegate_core::filter::constraint::MAX_RHO),
        ..Default::default()
    });
    let traffic = seen.traffic();
    b.envelope.traffic = [traffic[0].floor(), traffic[1].ceil().max(traffic[0].floor() + 1.0)];
    if let (true, Some(health)) = (tel.health.is_some(), seen.health) {
        b.envelope.health = [(health[0] * 100.0).floor() / 100.0, (health[1] * 100.0).ceil() / 100.0];
    }
    b
}

/// Read the draft back as `safegate verify --boundary` does: the TOML parse, then every
/// range check and the filter's construction.
pub(super) fn verify_draft(text: &str, capacity: f64) -> Result<(), String> {
    let b = Boundary::from_toml(text, &[]).map_err(|e| e.0)?;
    b.safety_config(capacity).map(|_| ()).map_err(|e| e.to_string())
}

pub(super) fn draft_text(b: &Boundary, ex: &Excursions, exits: &ExitCheck, feas: &Feasibility) -> String {
    let mut o = String::new();
    o.push_str("# Drafted by `safegate boundary check` from telemetry. Edit what a reviewer would\n");
    o.push_str("# sign (ε, ρ, the envelope), then check it against the model: `safegate verify --boundary FILE`.\n");
    o.push_str(&format!("# Exits: {}\n", exits.reason));
    o.push_str(&format!("# Excursion peaks: {} ({})\n", ex.tail.class.name(), ex.tail.reason));
    o.push_str(&format!("# Feasibility: {}\n", feas.reason));
    match toml::to_string(b) {
        Ok(t) => o.push_str(&t),
        Err(e) => o.push_str(&format!("# the draft could not be written: {e}\n")),
    }
    o
}
