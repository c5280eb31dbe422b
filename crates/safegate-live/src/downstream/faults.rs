//! Fault injection: what `POST /admin/faults` sets, its checks and its JSON reading.

use safegate_core::config_file::bounded_message;
use safegate_core::error::{check, RangeError};
use safegate_sim::health::MAX_HEALTH;
use serde::{Deserialize, Serialize};

/// Longest added latency accepted \[ms\] (one hour).
pub const MAX_ADDED_LATENCY_MS: f64 = 3.6e6;

/// The faults in force at the downstream, applied from the moment they are set.
///
/// As JSON (`POST /admin/faults`, `GET /admin/faults`) the keys are the field names; a key
/// left out takes its default, so a POST replaces the whole set (`{}` clears every fault).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Faults {
    /// Health overriding the schedule while set, in `[0, MAX_HEALTH]` (`None`: the
    /// schedule's).
    pub health: Option<f64>,
    /// Wall time added after service \[ms\], in `[0, 3.6e6]`.
    pub added_latency_ms: f64,
    /// Share of requests answered 500 after service, in `[0, 1]`.
    pub error_rate: f64,
    /// While true, work clears at rate 0: requests in service and new ones hang until it
    /// is lifted, then continue where they were.
    pub stall: bool,
}

impl Faults {
    /// Check every value; the error names the field as in the JSON.
    pub fn check(&self) -> Result<(), RangeError> {
        if let Some(h) = self.health {
            check::within("health", h, 0.0, MAX_HEALTH, "[0, 100] (a multiplier of the pool's rate; 1 is healthy)")?;
        }
        check::within("added_latency_ms", self.added_latency_ms, 0.0, MAX_ADDED_LATENCY_MS, "[0, 3.6e6] ms")?;
        check::unit("error_rate", self.error_rate)?;
        Ok(())
    }

    /// Read faults from a JSON body and check them. The message names the offending field
    /// (a wrong type, an unknown key, a value out of range), or says the body is not a
    /// JSON object. It quotes what the body sent (a key, a value, serde's excerpt) only as
    /// a bounded excerpt ([`bounded_message`]): the body may be any length.
    pub fn from_json(body: &[u8]) -> Result<Faults, String> {
        Self::read_json(body).map_err(|e| bounded_message(&e))
    }

    /// [`Faults::from_json`], its messages not yet bounded.
    fn read_json(body: &[u8]) -> Result<Faults, String> {
        let value: serde_json::Value = if body.iter().all(u8::is_ascii_whitespace) {
            serde_json::Value::Object(Default::default())
        } else {
            serde_json::from_slice(body).map_err(|e| format!("faults: not valid JSON: {e}"))?
        };
        let serde_json::Value::Object(map) = value else {
            return Err("faults: expected a JSON object such as {\"health\": 0.5, \"stall\": false}".into());
        };
        let mut f = Faults::default();
        for (key, v) in &map {
            match key.as_str() {
                "health" => {
                    f.health = match v {
                        serde_json::Value::Null => None,
                        _ => Some(number(key, v, "a number in [0, 100] or null")?),
                    }
                }
                "added_latency_ms" => f.added_latency_ms = number(key, v, "a number of ms in [0, 3.6e6]")?,
                "error_rate" => f.error_rate = number(key, v, "a number in [0, 1]")?,
                "stall" => {
                    f.stall =
                        v.as_bool().ok_or_else(|| format!("stall = {v} is not a boolean: expected true or false"))?
                }
                other => {
                    return Err(format!(
                        "unknown field {other:?}: expected health, added_latency_ms, error_rate, stall"
                    ))
                }
            }
        }
        f.check().map_err(|e| e.to_string())?;
        Ok(f)
    }
}

fn number(key: &str, v: &serde_json::Value, expected: &str) -> Result<f64, String> {
    v.as_f64().ok_or_else(|| format!("{key} = {v} is not a number: expected {expected}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_read_and_checked_by_field() {
        let f = Faults::from_json(br#"{"health": 0.5, "added_latency_ms": 3, "error_rate": 0.25, "stall": true}"#);
        assert_eq!(f, Ok(Faults { health: Some(0.5), added_latency_ms: 3.0, error_rate: 0.25, stall: true }));
        assert_eq!(Faults::from_json(b""), Ok(Faults::default()));
        assert_eq!(Faults::from_json(br#"{"health": null}"#), Ok(Faults::default()));
        for (body, field) in [
            (&br#"{"health": -1}"#[..], "health"),
            (br#"{"health": 101}"#, "health"),
            (br#"{"health": "x"}"#, "health"),
            (br#"{"added_latency_ms": -5}"#, "added_latency_ms"),
            (br#"{"error_rate": 1.5}"#, "error_rate"),
            (br#"{"error_rate": null}"#, "error_rate"),
            (br#"{"stall": 1}"#, "stall"),
            (br#"{"stal": true}"#, "stal"),
        ] {
            let e = Faults::from_json(body).unwrap_err();
            assert!(e.contains(field), "{e}");
        }
        assert!(Faults::from_json(b"{").unwrap_err().contains("JSON"));
        assert!(Faults::from_json(b"[1]").unwrap_err().contains("object"));
        let nan = Faults { health: Some(f64::NAN), ..Faults::default() };
        assert_eq!(nan.check().unwrap_err().field, "health");
    }

    /// A 100,000-character value or key is named by its field and quoted as an excerpt.
    #[test]
    fn a_long_value_is_not_echoed_in_full() {
        let long = "x".repeat(100_000);
        let array = format!("[{}1]", "1, ".repeat(50_000));
        for (body, field) in [
            (format!(r#"{{"health": "{long}"}}"#), "health = "),
            (format!(r#"{{"error_rate": {array}}}"#), "error_rate = "),
            (format!(r#"{{"stall": "{long}"}}"#), "stall = "),
            (format!(r#"{{"{long}": 1}}"#), "unknown field"),
            (format!(r#"{{"health": "{long}"#), "not valid JSON"),
        ] {
            let e = Faults::from_json(body.as_bytes()).unwrap_err();
            assert!(e.chars().count() < 1000 && e.contains(field), "{field}: {e}");
        }
    }
}
