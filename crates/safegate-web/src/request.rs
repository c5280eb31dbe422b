//! What a request says: the body of `POST /api/run` ([`RunRequest`], parsed from JSON or
//! TOML, with the JSON parser's errors made to name the field and say that NaN is not
//! JSON), and a stream's query ([`single_valued`], [`known_keys`]). Running it is
//! `api.rs`'s.

use std::collections::{BTreeMap, HashMap};

use safegate_studies::run::toml_float;
use serde::Deserialize;

use crate::api::ApiError;

/// The body of `POST /api/run`; every field is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunRequest {
    /// A scenario file's text (TOML, the schema of `docs/scenarios.md`); default: the
    /// embedded `scenarios/band-80.toml`.
    #[serde(default)]
    pub(crate) scenario: Option<String>,
    /// Overrides, as `--set KEY=VALUE`: a key → a number, a string, a boolean, or TOML
    /// text in a string that starts with `=` (`"health.kind": "dip"`, `"traffic.rate": 80`).
    #[serde(default)]
    pub(crate) set: BTreeMap<String, serde_json::Value>,
    /// `"gate"` (default): the scenario's `[gate]`; otherwise a registry policy
    /// (`gradient2+pool`, `vegas+retry-budget`, …).
    #[serde(default)]
    pub(crate) policy: Option<String>,
    /// Also run the gate off (or the policy without the boundary's filter) as a baseline.
    #[serde(default)]
    pub(crate) baseline: bool,
    /// Keep every N-th sample (`--every`).
    #[serde(default)]
    pub(crate) every: Option<usize>,
    /// At most this many samples in the series (thins `every` further).
    #[serde(default)]
    pub(crate) points: Option<usize>,
}

impl RunRequest {
    /// The request with `key` set to `value` over its own `set` and its scenario's value
    /// (the live stream's `duration`), so that the checks of [`resolve`] see the run that
    /// will play.
    pub(crate) fn with_set(mut self, key: &str, value: f64) -> Self {
        self.set.insert(key.to_string(), serde_json::json!(value));
        self
    }
}

/// A JSON override value as the TOML text `--set` takes.
pub(crate) fn toml_value(key: &str, v: &serde_json::Value) -> Result<String, ApiError> {
    match v {
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Ok(i.to_string()),
            (None, Some(f)) => Ok(toml_float(f)),
            _ => Err(ApiError::bad(format!("set.{key}: {n} is not a number TOML can hold"))),
        },
        serde_json::Value::Bool(b) => Ok(b.to_string()),
        serde_json::Value::String(s) => match s.strip_prefix('=') {
            Some(toml) => Ok(toml.to_string()),
            None => Ok(toml_string(s)),
        },
        other => Err(ApiError::bad(format!(
            "set.{key}: expected a number, a string or a boolean (TOML arrays and tables go in a string starting with '='), got {other}"
        ))),
    }
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A request whose body is a scenario file's text (`Content-Type: application/toml`),
/// run as it is; an empty one is refused, as `safegate run` refuses an empty file.
pub(crate) fn from_toml(body: &str) -> Result<RunRequest, ApiError> {
    if let Some(what) = no_table_or_key(body) {
        return Err(ApiError::bad(format!(
            "request body: the scenario is {what} (a scenario needs at least one table or key; POST {{}} as JSON for the embedded scenarios/band-80.toml)"
        )));
    }
    Ok(RunRequest { scenario: Some(body.to_string()), ..RunRequest::default() })
}

/// `Some("empty")` or `Some("empty: comments only")` when the scenario text `text` has no
/// table and no key: it would run every default in silence, and nothing in it says which
/// scenario was meant. `safegate run` refuses the same files ("the file is empty", "the
/// file is only comments": `safegate_sim::scenario::read`). Every line of a TOML text
/// that is neither blank nor a comment is a table header or a key (or a syntax error the
/// parser reports), so the check is line by line.
fn no_table_or_key(text: &str) -> Option<&'static str> {
    let mut lines = text.trim_start_matches('\u{feff}').lines().map(str::trim).filter(|l| !l.is_empty()).peekable();
    if lines.peek().is_none() {
        Some("empty")
    } else if lines.all(|l| l.starts_with('#')) {
        Some("empty: comments only")
    } else {
        None
    }
}

/// Parses a JSON request body into a run request (an empty body: every default).
pub(crate) fn parse(body: &str) -> Result<RunRequest, ApiError> {
    parse_named(body, "request body")
}

/// [`parse`] for JSON that arrives as `what` (the request body, the live stream's `run`
/// parameter), which errors name. The JSON must be an object: serde would take an array as
/// the fields in order (`[]` would run the defaults). A `scenario` given with no table or
/// key is refused; one left out (or null) is the embedded scenario.
pub(crate) fn parse_named(body: &str, what: &str) -> Result<RunRequest, ApiError> {
    if body.trim().is_empty() {
        return Ok(RunRequest::default());
    }
    let value: serde_json::Value = serde_json::from_str(body).map_err(|e| json_error(body, what, &e))?;
    if !value.is_object() {
        let kind = match value {
            serde_json::Value::Array(_) => "an array",
            serde_json::Value::String(_) => "a string",
            serde_json::Value::Number(_) => "a number",
            serde_json::Value::Bool(_) => "a boolean",
            _ => "null",
        };
        return Err(ApiError::bad(format!(
            "{what}: expected a JSON object {{\"scenario\", \"set\", \"policy\", …}}, got {kind}"
        )));
    }
    // Parsed again from the text so that errors keep their line and column.
    let req: RunRequest = serde_json::from_str(body).map_err(|e| json_error(body, what, &e))?;
    if let Some(empty) = req.scenario.as_deref().and_then(no_table_or_key) {
        return Err(ApiError::bad(format!(
            "{what}: scenario is {empty} (a scenario needs at least one table or key; leave \"scenario\" out for the embedded scenarios/band-80.toml)"
        )));
    }
    Ok(req)
}

/// The 400 of JSON `body` (arriving as `what`) that serde could not read. JSON has no NaN
/// and no Infinity, which serde reports as "expected value at line 1 column 26"; a bare
/// `NaN`, `Infinity` or `-Infinity` (in any case, `inf` too) at the error's position is
/// named instead, with the key it is the value of:
/// `request body: "run.duration": NaN is not JSON (…)`.
///
/// A value of the wrong type is named by its key too (serde says only "invalid type:
/// string \"…\", expected usize at line 1 column 100013"): `request body: "points": invalid
/// type: …`.
fn json_error(body: &str, what: &str, e: &serde_json::Error) -> ApiError {
    match non_finite_at(body, e) {
        Some((token, Some(key))) => ApiError::bad(format!("{what}: {key}: {token} {NOT_JSON}")),
        Some((token, None)) => ApiError::bad(format!("{what}: {token} {NOT_JSON}")),
        None => match data_key(body, e) {
            Some(key) => ApiError::bad(format!("{what}: {key}: {e}")),
            None => ApiError::bad(format!("{what}: {e}")),
        },
    }
}

/// The byte offset in `body` of the position serde's error `e` gives (its line is 1-based,
/// its column counts bytes from the line's start), on a character boundary.
fn error_offset(body: &str, e: &serde_json::Error) -> usize {
    let line_start: usize = body.split_inclusive('\n').take(e.line().saturating_sub(1)).map(str::len).sum();
    let at = (line_start + e.column().saturating_sub(1)).min(body.len());
    (0..=at).rev().find(|&i| body.is_char_boundary(i)).unwrap_or(0)
}

/// The key (JSON-quoted) whose value serde's data error `e` (a wrong type or value) is
/// about: serde reports it at the end of the value, so the key is the one [`value_key`]
/// finds there. `None` for other errors, or where no key is open (an unknown field's
/// error is at its key, and serde names that field itself).
fn data_key(body: &str, e: &serde_json::Error) -> Option<String> {
    if !e.is_data() || e.line() == 0 {
        return None;
    }
    value_key(&body[..error_offset(body, e)]).flatten()
}

/// What [`json_error`] says of a non-finite number.
pub(crate) const NOT_JSON: &str = "is not JSON (JSON numbers are finite; send a string or a finite number)";

/// The bare non-finite number at the position of syntax error `e` in `body`, as written,
/// and the key (JSON-quoted) of the innermost object it stands in, if any; `None` when the
/// error is elsewhere, or the token is not in a value's place (`{NaN: 1}` keeps serde's
/// "key must be a string").
fn non_finite_at(body: &str, e: &serde_json::Error) -> Option<(String, Option<String>)> {
    if !e.is_syntax() || e.line() == 0 {
        return None;
    }
    // The error points at the offending byte or the one after it (`-Infinity` fails at the
    // `I`, `nan` at the `a`, a trailing `NaN` at the `N`).
    let at = error_offset(body, e);
    let bytes = body.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.';
    let mut start = at;
    if !bytes.get(start).is_some_and(|&b| word(b)) {
        start = start.checked_sub(1).filter(|&s| word(bytes[s]))?;
    }
    while start > 0 && word(bytes[start - 1]) {
        start -= 1;
    }
    let end = start + bytes[start..].iter().take_while(|&&b| word(b)).count();
    let token = &body[start..end];
    let unsigned = token.strip_prefix(['+', '-']).unwrap_or(token).to_ascii_lowercase();
    if !matches!(unsigned.as_str(), "nan" | "inf" | "infinity") {
        return None;
    }
    let key = value_key(&body[..start])?;
    Some((token.to_string(), key))
}

/// The key of the innermost object whose value (or a value in an array under it) comes
/// right after `prefix`, a JSON text read without error up to its end: `Some(None)` at the
/// top level or in arrays only, `None` when what comes next is an object's key, not a
/// value.
fn value_key(prefix: &str) -> Option<Option<String>> {
    /// An open object (its current key, and whether a key comes next) or array.
    enum Open {
        Object { key: Option<String>, wants_key: bool },
        Array,
    }
    let mut stack: Vec<Open> = Vec::new();
    let mut chars = prefix.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                // The string's end: the next quote not escaped.
                let mut escaped = false;
                let mut end = prefix.len();
                for (j, c) in chars.by_ref() {
                    match c {
                        _ if escaped => escaped = false,
                        '\\' => escaped = true,
                        '"' => {
                            end = j + 1;
                            break;
                        }
                        _ => {}
                    }
                }
                if let Some(Open::Object { key, wants_key: true }) = stack.last_mut() {
                    *key = Some(prefix[i..end].to_string());
                }
            }
            '{' => stack.push(Open::Object { key: None, wants_key: true }),
            '[' => stack.push(Open::Array),
            '}' | ']' => {
                stack.pop();
            }
            ':' => {
                if let Some(Open::Object { wants_key, .. }) = stack.last_mut() {
                    *wants_key = false;
                }
            }
            ',' => {
                if let Some(Open::Object { wants_key, .. }) = stack.last_mut() {
                    *wants_key = true;
                }
            }
            _ => {}
        }
    }
    if let Some(Open::Object { wants_key: true, .. }) = stack.last() {
        return None;
    }
    let innermost = stack.iter().rev().find_map(|o| match o {
        Open::Object { key, .. } => Some(key.clone()),
        Open::Array => None,
    });
    Some(innermost.flatten())
}

/// A stream's query as a map, each key given once: a repeated key (`duration=10&duration=20`,
/// however it is encoded) is a 400 naming it, as `safegate live` refuses a repeated flag,
/// rather than one of its values taken in silence.
pub(crate) fn single_valued(pairs: Vec<(String, String)>) -> Result<HashMap<String, String>, ApiError> {
    let mut query = HashMap::with_capacity(pairs.len());
    for (key, value) in &pairs {
        if query.insert(key.clone(), value.clone()).is_some() {
            let values: Vec<String> = pairs.iter().filter(|(k, _)| k == key).map(|(_, v)| format!("{v:?}")).collect();
            return Err(ApiError::bad(format!(
                "{}: query parameter given {} times ({}); give it once",
                key_name(key),
                values.len(),
                values.join(", ")
            )));
        }
    }
    Ok(query)
}

/// A query key as errors name it.
fn key_name(key: &str) -> String {
    if key.is_empty() {
        "(an empty key)".to_string()
    } else {
        key.to_string()
    }
}

/// Refuses a stream's query with a key not in `keys` (a 400 naming it and listing `keys`),
/// so that a typo does not start a run on the defaults.
pub(crate) fn known_keys(query: &HashMap<String, String>, keys: &[&str]) -> Result<(), ApiError> {
    let mut unknown: Vec<&str> = query.keys().map(String::as_str).filter(|k| !keys.contains(k)).collect();
    unknown.sort_unstable();
    match unknown.first() {
        None => Ok(()),
        Some(k) => {
            Err(ApiError::bad(format!("{}: unknown query parameter; expected one of {}", key_name(k), keys.join(", "))))
        }
    }
}
