//! What `safegate fleet --sim` prints: the suite's measurements
//! ([`safegate_studies::fleet::suite`]) as text or JSON, its SVG figures, and a fleet
//! file's runs.

use std::process::ExitCode;

use anyhow::Result;
use safegate_studies::fleet::suite::{self, price_around_threshold, Suite, SuiteError};
use serde_json::json;

/// The suite's figures written into `dir`: their paths.
fn figures(dir: &std::path::Path, suite: &Suite, tau: f64) -> Result<Vec<String>> {
    use anyhow::Context as _;
    crate::out_dir::create("--figures", dir)?;
    let mut written = Vec::new();
    let (runs, p_star) = price_around_threshold(&suite.delay.fleet, tau)?;
    for (name, svg) in safegate_render::fleet::figures(suite, tau, runs, p_star) {
        let path = dir.join(name);
        std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

/// `safegate fleet --sim`: the suite's measurements as text or JSON, and its figures.
pub(crate) fn run(
    fallback: &str,
    fleet_size: usize,
    as_json: bool,
    figure_dir: Option<&std::path::Path>,
) -> Result<ExitCode> {
    let suite = suite::run(fallback, fleet_size).map_err(|e| match e {
        SuiteError::FleetSize(n) => anyhow::anyhow!("--fleet-size {n}: expected 2 to 64"),
        SuiteError::Fallback(f) => {
            anyhow::anyhow!("--fallback {f:?}: not a registry policy (see `safegate compare --help`)")
        }
        other => other.into(),
    })?;
    let written = match (figure_dir, suite.delay.measured) {
        (Some(dir), Some(tau)) => figures(dir, &suite, tau)?,
        _ => Vec::new(),
    };
    if as_json {
        let doc = safegate_render::fleet::suite_json(&suite, &written);
        println!("{}", serde_json::to_string(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", safegate_render::fleet::suite_text(&suite, fleet_size)?);
    for w in &written {
        println!("figure: {w}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `safegate fleet --sim --scenario FILE`: the file's fleet uncoordinated and, if it has a
/// price, priced (under `boundary`'s filter when given).
pub(crate) fn run_file(
    path: &std::path::Path,
    local: &str,
    boundary: Option<&std::path::Path>,
    as_json: bool,
) -> Result<ExitCode> {
    let origin = path.display().to_string();
    let file = suite::run_file(path, local, boundary).map_err(|e| match e {
        SuiteError::Local { local, error } => anyhow::anyhow!("--local {local}: {error}"),
        SuiteError::Boundary(e) => anyhow::anyhow!("--boundary: {e}"),
        other => other.into(),
    })?;
    if as_json {
        let doc = json!({
            "scenario": origin,
            "runs": file.runs.iter().map(|(l, o)| json!({ "label": l, "outcome": o })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", safegate_render::fleet::file_runs_text(&file)?);
    Ok(ExitCode::SUCCESS)
}
