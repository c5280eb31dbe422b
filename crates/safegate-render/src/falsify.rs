//! The text of the falsification criteria, and how their numbers read.

use std::fmt::Write as _;

use safegate_studies::falsify::{Criterion, Evidence};

/// A number as a reader wants it: thousands without decimals, small values with enough digits.
pub fn value(v: f64) -> String {
    if v.is_nan() {
        "—".into()
    } else if v.is_infinite() {
        if v > 0.0 { "∞" } else { "−∞" }.into()
    } else if v == 0.0 {
        "0".into()
    } else if v.fract() == 0.0 || v.abs() >= 1000.0 {
        crate::numbers::fixed(v, 0)
    } else if v.abs() >= 1.0 {
        format!("{v:.3}")
    } else if v.abs() >= 1e-3 {
        format!("{v:.4}")
    } else {
        format!("{v:.2e}")
    }
}

/// One evidence item as a line: name, value, unit.
pub fn evidence_line(e: &Evidence) -> String {
    format!("{}: {} {}", e.name, value(e.value), e.unit)
}

/// The text `safegate falsify` prints: each criterion, its evidence and its verdict.
pub fn render(criteria: &[Criterion]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "| id  | verdict      | key number |");
    let _ = writeln!(s, "|-----|--------------|------------|");
    for c in criteria {
        let key = c.evidence.first().map_or("—".to_string(), evidence_line);
        let _ = writeln!(s, "| {:<3} | {:<12} | {key} |", c.id, c.verdict.label());
    }
    for c in criteria {
        let _ = writeln!(s);
        let _ = writeln!(s, "{} — {}", c.id, c.verdict.label().to_uppercase());
        let _ = writeln!(s, "  condition:  {}", c.claim);
        let _ = writeln!(s, "  experiment: {}", c.experiment);
        for e in &c.evidence {
            let _ = writeln!(s, "  - {}", evidence_line(e));
        }
        let _ = writeln!(s, "  reason:     {}", c.reason);
    }
    let _ = writeln!(s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_well() {
        assert_eq!(value(f64::NAN), "—");
        assert_eq!(value(316_800.0), "316800");
        assert_eq!(value(3.2344), "3.234");
        assert_eq!(value(528.0), "528");
        assert_eq!(value(0.0791), "0.0791");
        assert_eq!(value(2.5e-5), "2.50e-5");
        assert_eq!(value(1e300), "1e300");
        assert_eq!(value(-0.0), "0");
    }
}
