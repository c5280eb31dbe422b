//! `POST /api/run`: a scenario (TOML text and/or `--set`-style overrides, optionally a
//! registry policy) run by the simulator and answered with the document `safegate run
//! --json` prints. See `docs/serve.md §POST /api/run`.

use std::collections::{BTreeMap, HashMap};

use safegate_core::config_file::bounded_message;
use safegate_core::controllers::PolicySpec;
use safegate_core::safety::SafetyFilter;
use safegate_core::Policy;
use safegate_sim::scenario::HealthKind;
use safegate_sim::variants::{variants, VariantError};
use safegate_sim::{Config, Mode, Outcome, RunOptions, Scenario};
use serde::Deserialize;

use safegate_studies::run::{json_doc, json_stride, run_variants, toml_float, RunReport, DEFAULT_SCENARIO};

/// Most simulation steps (`run.duration / run.dt`, per run) one request may ask for: 40×
/// the embedded scenario's 8000, about 20 ms of fluid simulation. Tighter than
/// [`MAX_STEPS`](safegate_sim::limits::MAX_STEPS) because a page redraws on every slider
/// move.
pub(crate) const MAX_SERVE_STEPS: f64 = 320_000.0;
/// Most events of one stochastic run: its expected arrivals (peak `traffic.rate` ·
/// `run.duration`) plus its health pieces and noise redraws, counted as
/// [`Config::check_for`] counts them against [`MAX_EVENTS`](safegate_sim::limits::MAX_EVENTS).
pub(crate) const MAX_SERVE_EVENTS: f64 = 2_000_000.0;
/// Largest request body \[bytes\].
pub(crate) const MAX_BODY_BYTES: usize = 64 * 1024;
/// Where the request's scenario comes from, as errors name it.
pub(crate) const ORIGIN: &str = "<request>";

/// The body of `POST /api/run`; every field is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunRequest {
    /// A scenario file's text (TOML, the schema of `docs/scenarios.md`); default: the
    /// embedded `scenarios/band-80.toml`.
    #[serde(default)]
    scenario: Option<String>,
    /// Overrides, as `--set KEY=VALUE`: a key → a number, a string, a boolean, or TOML
    /// text in a string that starts with `=` (`"health.kind": "dip"`, `"traffic.rate": 80`).
    #[serde(default)]
    set: BTreeMap<String, serde_json::Value>,
    /// `"gate"` (default): the scenario's `[gate]`; otherwise a registry policy
    /// (`gradient2+pool`, `vegas+retry-budget`, …).
    #[serde(default)]
    policy: Option<String>,
    /// Also run the gate off (or the policy without the boundary's filter) as a baseline.
    #[serde(default)]
    baseline: bool,
    /// Keep every N-th sample (`--every`).
    #[serde(default)]
    every: Option<usize>,
    /// At most this many samples in the series (thins `every` further).
    #[serde(default)]
    points: Option<usize>,
}

/// A request that cannot be run, with the HTTP status it answers with.
#[derive(Debug)]
pub(crate) struct ApiError {
    /// 400 for a malformed request, 413 for one over a size limit.
    pub(crate) status: u16,
    /// What is wrong, naming the field.
    pub(crate) message: String,
}

impl ApiError {
    /// A 400. The message is [`bounded_message`]'s: every error here may quote what the
    /// request sent (a value, a key, a policy name, serde's `invalid type: string "…"`),
    /// which may be as long as the request; it is cut to an excerpt, the whole to at most
    /// [`MESSAGE_CHARS`](safegate_core::config_file::MESSAGE_CHARS) characters.
    pub(crate) fn bad(message: impl Into<String>) -> Self {
        Self { status: 400, message: bounded_message(&message.into()) }
    }
    /// A 413, its message bounded as [`ApiError::bad`]'s.
    fn too_large(message: impl Into<String>) -> Self {
        Self { status: 413, message: bounded_message(&message.into()) }
    }
}

/// A JSON override value as the TOML text `--set` takes.
fn toml_value(key: &str, v: &serde_json::Value) -> Result<String, ApiError> {
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
/// table and no key: it would run every default in silence. `safegate run` refuses an empty
/// file ("the file is empty"); a text sent to the API is refused as well when it has only
/// comments, since nothing in it says which scenario was meant. Every line of a TOML text
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
const NOT_JSON: &str = "is not JSON (JSON numbers are finite; send a string or a finite number)";

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

/// Runs `req` and returns the document `safegate run --json` prints (`chart` is null).
pub(crate) fn run(req: &RunRequest) -> Result<serde_json::Value, ApiError> {
    let (scenario, cfg) = resolve(req)?;
    check_size(&scenario, &cfg)?;
    if req.every == Some(0) || req.points == Some(0) {
        return Err(ApiError::bad("every and points must be at least 1"));
    }
    let steps = cfg.steps();
    let mut stride = json_stride(steps, req.every.unwrap_or(1));
    if let Some(points) = req.points {
        stride = stride.max(steps.div_ceil(points as u64) as usize);
    }
    let line = scenario.safe_threshold() * cfg.pool.capacity;
    let reports = match policy_spec(req)? {
        None => {
            let vs = variants(&scenario, req.baseline).map_err(variant_error)?;
            run_variants(&cfg, vs, stride, line, &mut |_, _| {}).map_err(|e| ApiError::bad(crate::sse::chain(&e)))?
        }
        Some(spec) => run_policy(&scenario, &cfg, &spec, req.baseline, stride, line)?,
    };
    Ok(json_doc(reports, None))
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

/// The request's scenario with its overrides applied, and its resolved configuration.
pub(crate) fn resolve(req: &RunRequest) -> Result<(Scenario, Config), ApiError> {
    let overrides: Vec<(String, String)> =
        req.set.iter().map(|(k, v)| Ok((k.clone(), toml_value(k, v)?))).collect::<Result<_, ApiError>>()?;
    let text = req.scenario.as_deref().unwrap_or(DEFAULT_SCENARIO);
    let scenario = Scenario::from_toml_with(text, ORIGIN, &overrides).map_err(|e| ApiError::bad(e.to_string()))?;
    refuse_files(&scenario)?;
    let cfg = scenario.config(ORIGIN).map_err(|e| ApiError::bad(e.to_string()))?;
    Ok((scenario, cfg))
}

/// Refuses a scenario that would read a file on the host: `Scenario::config` loads
/// `health.file` for `health.kind = "trace"`, and its errors would quote the file's lines
/// (and say whether it exists); `/dev/zero` would be read to the trace limit. Checked on the parsed
/// scenario, before `config`, whichever way it came: the `scenario` text, a `set` override,
/// a TOML body or the live stream's `run`.
fn refuse_files(scenario: &Scenario) -> Result<(), ApiError> {
    let h = &scenario.health;
    if h.file.is_some() || h.kind == HealthKind::Trace {
        return Err(ApiError::bad(format!(
            "{ORIGIN}: health.file: the API takes no file paths, so no health.kind = \"trace\"; traces are for the CLI (safegate run FILE)"
        )));
    }
    Ok(())
}

/// The 400 of a scenario whose runs cannot be built (`safegate_sim::variants`).
pub(crate) fn variant_error(e: VariantError) -> ApiError {
    match e {
        VariantError::Boundary(e) => boundary_error(&e),
        other => ApiError::bad(other.to_string()),
    }
}

/// The 400 of the scenario's `[boundary]` that cannot build a filter:
/// `<request>: boundary: barrier.threshold = 1.5 is out of range: …`, as `safegate run`
/// says `FILE: boundary: …`. Said once: an error that already starts with `boundary: `
/// (`VariantError::Boundary` adds it) does not get a second.
pub(crate) fn boundary_error(e: &dyn std::fmt::Display) -> ApiError {
    let text = e.to_string();
    let text = text.strip_prefix("boundary: ").unwrap_or(&text);
    ApiError::bad(format!("{ORIGIN}: boundary: {text}"))
}

/// The request's policy: `None` for the scenario's gate, else the registry spec.
pub(crate) fn policy_spec(req: &RunRequest) -> Result<Option<PolicySpec>, ApiError> {
    match req.policy.as_deref().map(str::trim).filter(|p| *p != "gate") {
        None => Ok(None),
        Some(name) => name.parse().map(Some).map_err(|e| ApiError::bad(format!("policy: {e}"))),
    }
}

/// Refuses a run over the serve budgets before anything is simulated.
fn check_size(scenario: &Scenario, cfg: &Config) -> Result<(), ApiError> {
    let steps = cfg.duration / cfg.dt;
    if steps > MAX_SERVE_STEPS {
        return Err(ApiError::too_large(format!(
            "run.duration / run.dt = {} / {} = {steps:.0} steps; the server runs at most {MAX_SERVE_STEPS:.0} per request (safegate run allows {:.0e})",
            cfg.duration, cfg.dt, safegate_sim::limits::MAX_STEPS
        )));
    }
    if scenario.run.mode == Mode::Stochastic {
        // As `Config::check_for` counts them: every arrival is an event, and so is every piece
        // of the health schedule and every noise redraw (a 1e-6 s ramp makes 1e8 of them).
        let peak = cfg.peak_traffic();
        let arrivals = peak * cfg.duration;
        let pieces = cfg.health.pieces_within(cfg.duration);
        let events = arrivals + pieces;
        if events.is_nan() || events > MAX_SERVE_EVENTS {
            return Err(ApiError::too_large(format!(
                "a stochastic run of {events:.0} events: peak traffic.rate · run.duration = {arrivals:.0} expected arrivals + {pieces:.0} health pieces and noise redraws (health.hold_high, ramp_down, hold_low, ramp_up, noise_period over run.duration); the server simulates at most {MAX_SERVE_EVENTS:.0} per request"
            )));
        }
    }
    Ok(())
}

/// A registry policy on the scenario, under the filter of its `[boundary]` if it has one
/// (then the policy alone is the baseline, always run, as `safegate run` does for the gate).
fn run_policy(
    scenario: &Scenario,
    cfg: &Config,
    spec: &PolicySpec,
    baseline: bool,
    stride: usize,
    line: f64,
) -> Result<Vec<RunReport>, ApiError> {
    let build = || {
        safegate_studies::compare::policies::build_spec(spec, cfg).map_err(|e| ApiError::bad(format!("policy: {e}")))
    };
    let opts = |stride| RunOptions { record_every: Some(stride), progress: None };
    let run = |policy: &mut dyn Policy| {
        safegate_sim::run(scenario.run.mode, cfg, policy, opts(stride)).map_err(|e| ApiError::bad(e.to_string()))
    };
    let report = |label: String, policy: &'static str, outcome: Outcome, filter| RunReport {
        label,
        policy,
        scenario: scenario.clone(),
        verdict: safegate_studies::run::verdict(cfg, &outcome, line),
        outcome,
        filter,
    };
    let mut plain = build()?;
    let mut out = Vec::new();
    if let Some(b) = &scenario.boundary {
        let safety = b.safety_config(scenario.model.capacity).map_err(|e| boundary_error(&e))?;
        let outcome = run(&mut *plain)?;
        out.push(report(spec.to_string(), plain.name(), outcome, None));
        let mut filter = SafetyFilter::new(safety, build()?).map_err(|e| boundary_error(&e))?;
        let outcome = run(&mut filter)?;
        let name = b.name.clone().unwrap_or_else(|| "boundary".into());
        out.push(report(format!("{spec}, filtered ({name})"), filter.name(), outcome, Some(*filter.stats())));
    } else {
        if baseline {
            let mut open = safegate_core::Open;
            let outcome = run(&mut open)?;
            out.push(report("open".into(), open.name(), outcome, None));
        }
        let outcome = run(&mut *plain)?;
        out.push(report(spec.to_string(), plain.name(), outcome, None));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(body: &str) -> RunRequest {
        parse(body).unwrap()
    }

    #[test]
    fn an_empty_body_runs_the_embedded_scenario_like_safegate_run() {
        let doc = run(&req("")).unwrap();
        assert_eq!(doc["scenario"]["name"], "band-80");
        assert_eq!(doc["label"], "gate on (θ 0.7, sens 1)");
        let max = doc["summary"]["queue_max"].as_f64().unwrap();
        assert!(max < 200.0 && max > 150.0, "the seed's band tops out at 193.9: {max}");
    }

    #[test]
    fn overrides_and_points_shape_the_run() {
        let doc = run(&req(r#"{"set": {"gate.sensitivity": 0, "health.kind": "cycle"}, "points": 400}"#)).unwrap();
        assert_eq!(doc["summary"]["queue_final"].as_f64().unwrap().round(), 200.0, "gate off pins at the cap");
        assert!(doc["series"]["t"].as_array().unwrap().len() <= 401);
    }

    #[test]
    fn a_bad_value_is_a_400_naming_the_field() {
        let e = run(&req(r#"{"set": {"gate.threshold": 1.5}}"#)).unwrap_err();
        assert_eq!(e.status, 400);
        assert!(e.message.contains("gate.threshold"), "{}", e.message);
        let e = run(&req(r#"{"scenario": "[traffic]\nrat = 3"}"#)).unwrap_err();
        assert!(e.message.contains("rat"), "{}", e.message);
        let e = parse(r#"{"sett": {}}"#).unwrap_err();
        assert!(e.message.contains("sett"), "{}", e.message);
    }

    #[test]
    fn an_oversized_run_is_refused_before_it_starts() {
        let e = run(&req(r#"{"set": {"run.duration": 1e6}}"#)).unwrap_err();
        assert_eq!(e.status, 413);
        assert!(e.message.contains("320000"), "{}", e.message);
    }

    /// JSON has no NaN or Infinity; serde said "expected value at line 1 column 26".
    #[test]
    fn a_non_finite_number_is_named_with_its_key() {
        for (body, said) in [
            (r#"{"set": {"run.duration": NaN}}"#, r#"request body: "run.duration": NaN is not JSON"#),
            (r#"{"set": {"traffic.rate": -Infinity}}"#, r#"request body: "traffic.rate": -Infinity is not JSON"#),
            (r#"{"set":{"gate.threshold":Infinity,"x":1}}"#, r#"request body: "gate.threshold": Infinity is not JSON"#),
            (r#"{"baseline": true, "points": nan}"#, r#"request body: "points": nan is not JSON"#),
            (r#"{"set": {"a": 1, "b": [1, 2, -inf]}}"#, r#"request body: "b": -inf is not JSON"#),
            (r#"{"set": {"we\"ird:,{": +INF}}"#, r#"request body: "we\"ird:,{": +INF is not JSON"#),
            ("{\n  \"every\":\n\n      -NaN\n}", r#"request body: "every": -NaN is not JSON"#),
            (r#"{"scenario": "ü é", "points": NaN}"#, r#"request body: "points": NaN is not JSON"#),
            (
                "{\r\n\"set\": {\"é\": 1,\r\n \"traffic.rate\": Infinity}}",
                r#"request body: "traffic.rate": Infinity is not JSON"#,
            ),
            ("NaN", "request body: NaN is not JSON"),
            ("[1, Infinity]", "request body: Infinity is not JSON"),
        ] {
            let e = parse(body).unwrap_err();
            assert_eq!(e.status, 400);
            assert!(e.message.starts_with(said) && e.message.ends_with(NOT_JSON), "{body}: {}", e.message);
        }
        let e = parse_named(r#"{"set": {"traffic.rate": NaN}}"#, "run").unwrap_err();
        assert!(e.message.starts_with(r#"run: "traffic.rate": NaN is not JSON"#), "{}", e.message);
        // Other syntax errors keep serde's message, a NaN in a key's place too.
        for (body, said) in [
            (r#"{NaN: 1}"#, "key must be a string"),
            (r#"{"a": 1, NaN: 2}"#, "key must be a string"),
            (r#"{"points": Nope}"#, "expected value"),
            (r#"{"points": 1,}"#, "trailing comma"),
            (r#"{"points": NaNa}"#, "expected value"),
        ] {
            let e = parse(body).unwrap_err();
            assert!(e.message.contains(said) && !e.message.contains("not JSON"), "{body}: {}", e.message);
        }
        // A string is not a number.
        assert!(parse(r#"{"set": {"traffic.rate": "NaN"}}"#).is_ok());
    }

    /// `VariantError::Boundary` says `boundary: …`, and the API said it again.
    #[test]
    fn a_boundary_error_says_boundary_once() {
        for body in [
            r#"{"set": {"boundary.barrier.threshold": 1e-320}}"#,
            r#"{"set": {"boundary.barrier.threshold": 1.5}}"#,
            r#"{"set": {"boundary.barrier.threshold": -0.5}, "baseline": true}"#,
            r#"{"policy": "gradient2", "set": {"boundary.barrier.threshold": 1.5}}"#,
            r#"{"policy": "vegas+pool", "set": {"boundary.barrier.threshold": 1e-320}}"#,
        ] {
            let e = run(&req(body)).unwrap_err();
            assert_eq!(e.status, 400);
            // Where a range rule is checked is safegate-core's affair: only the prefix is
            // this crate's.
            assert!(
                e.message.starts_with("<request>: ") && e.message.contains("barrier.threshold"),
                "{body}: {}",
                e.message
            );
            assert!(e.message.matches("boundary:").count() <= 1, "{body}: {}", e.message);
        }
    }

    #[test]
    fn a_registry_policy_runs_under_the_boundary() {
        let doc = run(&req(r#"{"policy": "gradient2", "set": {"boundary.barrier.threshold": 0.7}}"#)).unwrap();
        assert_eq!(doc["policy"], "filtered");
        assert_eq!(doc["baseline"]["label"], "gradient2");
        let e = run(&req(r#"{"policy": "nope"}"#)).unwrap_err();
        assert!(e.message.starts_with("policy: unknown policy"), "{}", e.message);
    }

    /// A 100,000-character value is named by its field and quoted as an excerpt: the
    /// message stays under 1,000 characters whichever check refuses it.
    #[test]
    fn an_error_never_echoes_a_long_value_in_full() {
        let long = "x".repeat(100_000);
        let array = format!("[{}1]", "1,".repeat(50_000));
        // serde names no field of a wrong type: the key at the error's position is named.
        for (body, said) in [
            (r#"{"every": -1}"#, r#"request body: "every": invalid value: integer `-1`"#),
            (r#"{"points": [1]}"#, r#"request body: "points": invalid type: sequence"#),
            ("{\n \"scenario\": 3\n}", r#"request body: "scenario": invalid type: integer `3`"#),
        ] {
            let e = parse(body).unwrap_err();
            assert!(e.message.starts_with(said), "{body}: {}", e.message);
        }
        let cases = [
            (parse(&format!(r#"{{"points": "{long}"}}"#)).unwrap_err(), "points"),
            (parse(&format!(r#"{{"{long}": 1}}"#)).unwrap_err(), "unknown field"),
            (run(&req(&format!(r#"{{"set": {{"traffic.rate": {array}}}}}"#))).unwrap_err(), "set.traffic.rate"),
            (run(&req(&format!(r#"{{"set": {{"traffic.rate": "{long}"}}}}"#))).unwrap_err(), "traffic.rate"),
            (run(&req(&format!(r#"{{"set": {{"traffic.{long}": 1}}}}"#))).unwrap_err(), "traffic."),
            (run(&req(&format!(r#"{{"policy": "{long}"}}"#))).unwrap_err(), "policy: unknown policy"),
            (single_valued(vec![("k".into(), long.clone()), ("k".into(), long.clone())]).unwrap_err(), "k: "),
            (known_keys(&HashMap::from([(long.clone(), String::new())]), &["duration"]).unwrap_err(), "duration"),
        ];
        for (e, field) in cases {
            assert_eq!(e.status, 400);
            assert!(e.message.chars().count() < 1000 && e.message.contains(field), "{field}: {}", e.message);
        }
    }
}
