//! The library calls several commands share (`report` runs the sections of `reproduce`,
//! `compare`, `verify` and `falsify`), with the binary's progress bars on stderr and the
//! library's errors named by the flags that set the fields. Commands call these, never
//! each other.

use std::time::Instant;

use anyhow::{anyhow, Result};
use safegate_core::boundary::Boundary;
use safegate_studies::experiments::{run_many, Experiment, Report, Setup};
use safegate_studies::falsify::{self, Measured};
use safegate_studies::verify::{verify, VerifyError, VerifyReport, VerifyRequest};

use crate::progress;

/// The boundary `compare` and the report enforce by default: boundaries/seed-80.toml.
const DEFAULT_BOUNDARY: &str = include_str!("../../../boundaries/seed-80.toml");

/// The embedded boundaries/seed-80.toml, parsed.
pub(crate) fn default_boundary() -> Result<Boundary> {
    Boundary::from_toml(DEFAULT_BOUNDARY, &[]).map_err(|e| anyhow!("<embedded seed-80>: {e}"))
}

/// Refuse the overrides `scenario` (from `origin`) does not read in `mode` (`None`: in any
/// mode): each would change nothing, and a run that echoed it would mislead.
pub(crate) fn refuse_unread(
    scenario: &safegate_sim::Scenario,
    overrides: &[(String, String)],
    mode: Option<safegate_sim::Mode>,
    origin: &str,
) -> Result<()> {
    let unread = scenario.unread_overrides(overrides, mode);
    if unread.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = unread.iter().map(|u| format!("{}: {}", u.key, u.why)).collect();
    Err(anyhow!("{origin}: an override this run does not read would change nothing: {}", list.join("; ")))
}

/// Run the experiments in parallel, a progress bar on stderr when `show`: each report with
/// its seconds, in the order given.
pub(crate) fn experiments(setup: &Setup, chosen: &[&Experiment], show: bool) -> Vec<(Report, f64)> {
    let pb = progress::bar(chosen.len() as u64, "experiments", show);
    let reports = run_many(setup, chosen, &|| pb.inc(1));
    pb.finish_and_clear();
    reports
}

/// Build and run a verification with a progress bar on stderr when `show`: the report and
/// its seconds. `file` names the boundary in errors; the request's fields are the flags.
pub(crate) fn verify_boundary(request: VerifyRequest, file: &str, show: bool) -> Result<(VerifyReport, f64)> {
    let vc = request.build().map_err(|e| match e {
        VerifyError::Boundary(e) => anyhow!("{file}: {e}"),
        VerifyError::Nominal(name) => {
            anyhow!("--nominal {:?}: expected open or seed-gate", safegate_core::config_file::excerpt(&name))
        }
        VerifyError::Setting(e) if e.field == "trials" && e.value == "0" => anyhow!("--trials must be at least 1"),
        // The request's fields are the flags that set them.
        VerifyError::Setting(mut e) => {
            e.field = format!("--{}", e.field.replace('_', "-"));
            e.into()
        }
    })?;
    let pb = progress::bar(1000, "verifying", show);
    let started = Instant::now();
    let report = verify(&vc, &|f| pb.set_position((f * 1000.0) as u64))?;
    pb.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    Ok((report, secs))
}

/// Measure the falsification criteria `ids` (as [`falsify::selected`] returns them), small
/// samples when `quick`, progress on stderr when `show`; F19 measures the live downstream.
pub(crate) fn falsify(ids: &[String], quick: bool, seed: u64, show: bool) -> Measured {
    let pb = progress::bar(1000, "falsifying", show);
    let mut live = |_: &str| {
        pb.finish_and_clear();
        if show {
            eprintln!("F19: measuring the live downstream's throughput curve on loopback …");
        }
        match crate::runtime::runtime() {
            Ok(rt) => rt.block_on(safegate_live::f19::criterion(quick)),
            Err(e) => safegate_live::f19::unmeasured(&e.to_string()),
        }
    };
    let measured = falsify::measure(ids, quick, seed, &|f| pb.set_position((f * 1000.0) as u64), &mut live);
    pb.finish_and_clear();
    measured
}
