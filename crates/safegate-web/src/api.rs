//! `POST /api/run`: a scenario (TOML text and/or `--set`-style overrides, optionally a
//! registry policy) run by the simulator and answered with the document `safegate run
//! --json` prints. See `docs/serve.md §POST /api/run`.

use std::collections::BTreeMap;

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
    pub(crate) fn bad(message: impl Into<String>) -> Self {
        Self { status: 400, message: message.into() }
    }
    fn too_large(message: impl Into<String>) -> Self {
        Self { status: 413, message: message.into() }
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
            "set.{key}: expected a number, a string or a boolean, got {other}; TOML arrays and tables go in a string starting with '='"
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
/// run as it is.
pub(crate) fn from_toml(body: &str) -> RunRequest {
    RunRequest { scenario: Some(body.to_string()), ..RunRequest::default() }
}

/// Parses a JSON request body into a run request (an empty body: every default).
pub(crate) fn parse(body: &str) -> Result<RunRequest, ApiError> {
    parse_named(body, "request body")
}

/// [`parse`] for JSON that arrives as `what` (the request body, the live stream's `run`
/// parameter), which errors name. The JSON must be an object: serde would take an array as
/// the fields in order (`[]` would run the defaults).
pub(crate) fn parse_named(body: &str, what: &str) -> Result<RunRequest, ApiError> {
    if body.trim().is_empty() {
        return Ok(RunRequest::default());
    }
    let value: serde_json::Value = serde_json::from_str(body).map_err(|e| ApiError::bad(format!("{what}: {e}")))?;
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
    serde_json::from_str(body).map_err(|e| ApiError::bad(format!("{what}: {e}")))
}

/// Refuses a stream's query with a key not in `keys` (a 400 naming it and listing `keys`),
/// so that a typo does not start a run on the defaults.
pub(crate) fn known_keys(query: &std::collections::HashMap<String, String>, keys: &[&str]) -> Result<(), ApiError> {
    let mut unknown: Vec<&str> = query.keys().map(String::as_str).filter(|k| !keys.contains(k)).collect();
    unknown.sort_unstable();
    match unknown.first() {
        None => Ok(()),
        Some(k) => {
            let k = if k.is_empty() { "(an empty key)".to_string() } else { (*k).to_string() };
            Err(ApiError::bad(format!("{k}: unknown query parameter; expected one of {}", keys.join(", "))))
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
            let vs = variants(&scenario, req.baseline).map_err(|e| match e {
                VariantError::Boundary(_) => ApiError::bad(format!("{ORIGIN} boundary: {e}")),
                other => ApiError::bad(other.to_string()),
            })?;
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
        let safety =
            b.safety_config(scenario.model.capacity).map_err(|e| ApiError::bad(format!("{ORIGIN} boundary: {e}")))?;
        let outcome = run(&mut *plain)?;
        out.push(report(spec.to_string(), plain.name(), outcome, None));
        let mut filter =
            SafetyFilter::new(safety, build()?).map_err(|e| ApiError::bad(format!("{ORIGIN} boundary: {e}")))?;
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

    #[test]
    fn a_registry_policy_runs_under_the_boundary() {
        let doc = run(&req(r#"{"policy": "gradient2", "set": {"boundary.barrier.threshold": 0.7}}"#)).unwrap();
        assert_eq!(doc["policy"], "filtered");
        assert_eq!(doc["baseline"]["label"], "gradient2");
        let e = run(&req(r#"{"policy": "nope"}"#)).unwrap_err();
        assert!(e.message.starts_with("policy: unknown policy"), "{}", e.message);
    }
}
