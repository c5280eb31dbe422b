//! `POST /api/run`: a scenario (TOML text and/or `--set`-style overrides, optionally a
//! registry policy) run by the simulator and answered with the document `safegate run
//! --json` prints. See `docs/serve.md §POST /api/run`.

use safegate_core::config_file::bounded_message;
use safegate_core::controllers::PolicySpec;
use safegate_core::safety::SafetyFilter;
use safegate_core::Policy;
use safegate_sim::scenario::HealthKind;
use safegate_sim::variants::{variants, VariantError};
use safegate_sim::{Config, Mode, Outcome, RunOptions, Scenario};

use safegate_studies::run::{json_doc, json_stride, run_variants, RunReport, DEFAULT_SCENARIO};

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

use crate::request::toml_value;
pub(crate) use crate::request::{from_toml, known_keys, parse, parse_named, single_valued, RunRequest};

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
    // One configuration, one physical limit for every run of the request.
    let limit = safegate_studies::run::physical_limit(cfg);
    let report = |label: String, policy: &'static str, outcome: Outcome, filter| RunReport {
        label,
        policy,
        scenario: scenario.clone(),
        verdict: safegate_studies::run::verdict_with_limit(&outcome, line, limit),
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
    use std::collections::HashMap;

    use super::*;
    use crate::request::NOT_JSON;

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
