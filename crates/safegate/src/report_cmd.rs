//! `safegate report`: reproduce, compare, verify and falsify in one self-contained HTML file
//! (docs/report.md).
//!
//! Each section is measured by the same library functions its own command calls
//! (`crate::calls`); the page is rendered by `safegate_render::report`.

use std::fs::File;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use safegate_core::boundary::Boundary;
use safegate_render::compare::thin_traces;
use safegate_render::report::{self as report_html, Effort, Gathered};
use safegate_sim::Scenario;
use safegate_studies::compare::{compare, run_duration, select_cases, CompareRequest};
use safegate_studies::experiments::{self, Setup};
use safegate_studies::falsify::selected;
use safegate_studies::run::DEFAULT_SCENARIO;
use safegate_studies::verify::VerifyRequest;

use crate::{calls, progress};

/// The boundary files `verify` checks, embedded so the report runs from any directory.
const BOUNDARIES: [(&str, &str); 4] = [
    ("boundaries/seed-80.toml", include_str!("../../../boundaries/seed-80.toml")),
    ("boundaries/seed-80-pool.toml", include_str!("../../../boundaries/seed-80-pool.toml")),
    ("boundaries/gaussian-80.toml", include_str!("../../../boundaries/gaussian-80.toml")),
    ("boundaries/cantelli-80.toml", include_str!("../../../boundaries/cantelli-80.toml")),
];

/// Points kept per queue trace of `compare` on the page: the envelope (first, lowest,
/// highest per bucket) at about 3 points per 10 px of the 810 px plot, which keeps the 13
/// case figures near 1 MB together (at `compare --figures`' 1,600 they are 7 MB).
const TRACE_POINTS: usize = 240;

/// The file written into `--out`.
const FILE_NAME: &str = "safegate-report.html";

/// Flags of `safegate report`.
#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// Directory to write `safegate-report.html` into (created if missing).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub(crate) out: PathBuf,
    /// Small samples everywhere (seconds instead of minutes; some rows may then miss the
    /// seed's tolerance or be inconclusive).
    #[arg(long)]
    pub(crate) quick: bool,
    /// Seed of every random draw.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Print a JSON summary (sections, counts, path, bytes, seconds) instead of a line.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: &ReportArgs) -> Result<ExitCode> {
    // Fail on an unusable --out before the long work, not after it.
    crate::out_dir::create("--out", &args.out)?;
    // The page goes to a partial file first, renamed at the end: a run that fails midway
    // leaves an earlier report as it was.
    let path = args.out.join(FILE_NAME);
    let partial = args.out.join(format!(".{FILE_NAME}.partial"));
    let mut file = File::create(&partial).with_context(|| format!("--out: cannot write {}", partial.display()))?;

    let show = !args.json;
    let gathered = match gather(Effort::new(args.quick, args.seed), show) {
        Ok(g) => g,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    let page = report_html::page(&gathered);
    file.write_all(page.html.as_bytes()).with_context(|| format!("writing {}", partial.display()))?;
    drop(file);
    std::fs::rename(&partial, &path)
        .with_context(|| format!("renaming {} to {}", partial.display(), path.display()))?;
    let bytes = page.html.len();

    if args.json {
        println!("{}", serde_json::to_string_pretty(&report_html::summary(&gathered, &page, &path))?);
    } else {
        println!(
            "{} ({:.0} kB, {} figures) in {:.1} s{}",
            path.display(),
            bytes as f64 / 1000.0,
            page.figures,
            gathered.seconds,
            if gathered.effort.quick { "; --quick: small samples" } else { "" }
        );
    }
    // The verdicts are findings, written into the page; the command succeeded if it wrote it.
    Ok(ExitCode::SUCCESS)
}

/// Run the four sections, progress on stderr when `show`.
fn gather(effort: Effort, show: bool) -> Result<Gathered> {
    let started = Instant::now();
    let note = |what: &str| {
        if show {
            eprintln!("report: {what} ({:.0} s so far)", started.elapsed().as_secs_f64());
        }
    };

    note("reproduce: every experiment against the seed");
    let setup = Setup {
        severity_trials: effort.severity_trials,
        worst_runs: effort.worst_runs,
        imm_trials: effort.imm_trials,
        ..Setup::with_overrides(&[], effort.seed)?
    };
    let all: Vec<_> = experiments::ALL.iter().collect();
    let reproduce = calls::experiments(&setup, &all, show);

    note("compare: every controller with and without the filter");
    let boundary = calls::default_boundary()?;
    let duration = run_duration(effort.compare_duration, &boundary)?;
    let request = CompareRequest {
        cases: select_cases(&[], duration)?,
        boundary,
        policies: Vec::new(),
        seeds: effort.compare_seeds,
        exit_trials: 0,
        curve: true,
        traces: true,
    };
    let cc = request.build()?;
    let pb = progress::bar(1000, "comparing", show);
    let t = Instant::now();
    let compare = compare(&cc, &|f| pb.set_position((f * 1000.0) as u64))?;
    pb.finish_and_clear();
    let compare_seconds = t.elapsed().as_secs_f64();
    let compare = thin_traces(compare, TRACE_POINTS);

    let mut verify = Vec::new();
    for (name, text) in BOUNDARIES {
        note(&format!("verify: {name}"));
        let boundary = Boundary::from_toml(text, &[]).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        let (report, secs) = calls::verify_boundary(verify_request(boundary, &effort)?, name, show)?;
        verify.push((name.to_string(), report, secs));
    }

    note("falsify: F10–F19 (F19 measures the live downstream on loopback)");
    let ids = selected(&[])?;
    let falsify = calls::falsify(&ids, effort.quick, effort.seed, show);

    Ok(Gathered {
        effort,
        reproduce,
        compare,
        compare_seconds,
        verify,
        falsify,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The verify request for a boundary on the seed's λ = 80 band, as `safegate verify
/// --boundary FILE` builds it with the default scenario and nominal.
fn verify_request(boundary: Boundary, effort: &Effort) -> Result<VerifyRequest> {
    let origin = "<embedded band-80>";
    let scenario = Scenario::from_toml(DEFAULT_SCENARIO, origin)?;
    Ok(VerifyRequest {
        base: scenario.config(origin)?,
        gate: scenario.gate.clone(),
        boundary,
        nominal: "open".into(),
        trials: effort.verify_trials,
        traffic_points: effort.traffic_points,
        health_points: effort.health_points,
        seed: effort.seed,
    })
}
