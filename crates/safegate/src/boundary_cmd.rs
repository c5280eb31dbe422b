//! `safegate boundary check TELEMETRY`: the seed's five-step checklist ("Compute Your Own
//! Boundary") on an operator's own telemetry, the failure modes users of today's limiters
//! report, and a draft boundary file to edit and `verify` (docs/boundary-check.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use safegate_core::stats::Verdict;
use safegate_render::boundary::render;
use safegate_render::numbers::number;
use safegate_studies::telemetry::traces::{generate, Fault, TraceSpec};
use safegate_studies::telemetry::{self, CheckError, CheckOptions, CheckReport, DraftWriteError, Format, Telemetry};
use serde::Serialize;

/// Largest telemetry file read: the Prometheus cap (a CSV is held to its smaller one once
/// the format is known).
const MAX_BYTES: u64 = telemetry::MAX_PROMETHEUS_BYTES;

/// `safegate boundary …`.
#[derive(Debug, Args)]
pub(crate) struct BoundaryArgs {
    #[command(subcommand)]
    command: BoundaryCommand,
}

#[derive(Debug, Subcommand)]
enum BoundaryCommand {
    /// The seed's checklist on telemetry (CSV or a Prometheus scrape series): the barrier's
    /// margin, the exit frequency against ε, the excursions' tail, η and ρ, the joint
    /// feasibility across the envelope seen, the failure modes users report; writes a
    /// draft boundary file.
    Check(CheckArgs),
    /// Print an hour of telemetry from the seed's executor pool (the model, seeded), with
    /// or without an injected fault, to try the check on.
    Sample(SampleArgs),
}

/// Flags of `safegate boundary sample`.
#[derive(Debug, Args)]
pub(crate) struct SampleArgs {
    /// The fault to inject.
    #[arg(long, default_value = "clean", value_parser = Fault::ALL.map(|f| f.name()))]
    fault: String,
    /// Seed of every random draw.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seconds of telemetry.
    #[arg(long, default_value_t = 3600.0, value_name = "SECONDS")]
    duration: f64,
    /// Seconds between samples.
    #[arg(long, default_value_t = 0.1, value_name = "SECONDS")]
    dt: f64,
    /// Write Prometheus text-format scrapes (with timestamps) instead of CSV.
    #[arg(long)]
    prometheus: bool,
}

/// Flags of `safegate boundary check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The telemetry (`-`: standard input): a CSV with a header (`time`, `queue` or
    /// `in_flight`, optionally `latency`, `throughput`, `offered`, `health`, `rejections`,
    /// `retries`, `limit`, `capacity`) or Prometheus text-format scrapes of safegate's
    /// metrics (docs/boundary-check.md §Telemetry formats).
    telemetry: PathBuf,
    /// Read as this format instead of guessing.
    #[arg(long, value_parser = ["csv", "prometheus"])]
    format: Option<String>,
    /// Q, the signal's capacity (needed unless the data carry it).
    #[arg(long, value_name = "Q")]
    capacity: Option<f64>,
    /// θ: the safe set is signal ≤ θ·Q.
    #[arg(long, default_value_t = 0.7, value_name = "THETA")]
    threshold: f64,
    /// The proposed ε, the tolerated probability of leaving the safe set within a horizon.
    #[arg(long, default_value_t = 0.01, value_name = "EPS")]
    epsilon: f64,
    /// The horizon ε is over \[s\].
    #[arg(long, default_value_t = 600.0, value_name = "SECONDS")]
    horizon: f64,
    /// η, the CVaR tail fraction.
    #[arg(long, default_value_t = 0.05, value_name = "ETA")]
    eta: f64,
    /// The retry budget as a share of offered load (flagged above twice it).
    #[arg(long, default_value_t = 0.1, value_name = "SHARE")]
    retry_budget: f64,
    /// Where to write the draft boundary file (a file not drafted by this command is never
    /// overwritten).
    #[arg(long, default_value = "boundary-draft.toml", value_name = "PATH")]
    draft: PathBuf,
    /// Do not write the draft.
    #[arg(long, conflicts_with = "draft")]
    no_draft: bool,
    /// Write SVG figures (the signal against its line, the Hill plot) into DIR.
    #[arg(long, value_name = "DIR")]
    figures: Option<PathBuf>,
    /// Print JSON instead of the report.
    #[arg(long)]
    json: bool,
    /// Exit 1 when the data violate ε or a failure mode is flagged (for CI).
    #[arg(long)]
    strict: bool,
}

pub(crate) fn run(args: &BoundaryArgs) -> Result<ExitCode> {
    match &args.command {
        BoundaryCommand::Check(c) => check(c),
        BoundaryCommand::Sample(s) => sample(s),
    }
}

fn sample(a: &SampleArgs) -> Result<ExitCode> {
    let fault = Fault::from_name(&a.fault).context("--fault")?;
    if !(a.dt >= 0.001 && a.dt <= 60.0) {
        bail!("--dt {}: must be between 0.001 and 60 seconds", number(a.dt));
    }
    // (The model steps every 0.1 s at most and the telemetry is held in memory: at most
    // 2,000,000 samples and 20,000,000 model steps, about 200 MB.)
    if !(a.duration >= 10.0 * a.dt && a.duration / a.dt <= 2e6 && a.duration / a.dt.min(0.1) <= 2e7) {
        bail!(
            "--duration {}: must hold at least 10 and at most 2,000,000 samples of --dt {} (and at most 2,000,000 s of the model)",
            number(a.duration),
            number(a.dt)
        );
    }
    let spec = TraceSpec { duration: a.duration, dt: a.dt, ..TraceSpec::new(fault, a.seed) };
    let tel = generate(&spec);
    let text = if a.prometheus { tel.to_prometheus() } else { tel.to_csv() };
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("cannot write the telemetry to standard output")?;
    Ok(ExitCode::SUCCESS)
}

/// Read the telemetry file (or standard input), bounded in size: at most
/// [`MAX_BYTES`] whatever the file claims (a device reports no size).
fn read_input(path: &Path) -> Result<(String, String)> {
    // The size advice only when the size is the cause (a directory or binary data gets
    // its own cause alone).
    Ok(safegate_studies::telemetry::read_input(path, MAX_BYTES)?)
}

/// Parse as `format` (sniffed when `None`), holding a CSV to its byte cap.
fn parse_input(source: &str, text: &str, format: Option<Format>) -> Result<(Telemetry, Format)> {
    let format = format.unwrap_or_else(|| telemetry::sniff(text));
    if format == Format::Csv && text.len() as u64 > telemetry::MAX_CSV_BYTES {
        bail!(
            "{source}: {} bytes of CSV, more than {} MiB (the most a CSV telemetry file may hold); split it",
            text.len(),
            telemetry::MAX_CSV_BYTES >> 20
        );
    }
    Ok((telemetry::parse_as(source, text, format)?, format))
}

/// Run the checklist. The library names the options by their fields; here they are the
/// flags that set them, in its errors and in the report's advice.
fn run_check(tel: &Telemetry, opts: &CheckOptions, source: &str) -> Result<CheckReport> {
    let mut report = telemetry::check(tel, opts, source).map_err(|e| match e {
        CheckError::Option { source, field, value, rule } => {
            anyhow!("{source}: --{} {}: {rule}", field.replace('_', "-"), shown(value))
        }
        CheckError::UnknownCapacity { source, signal, in_data } => {
            anyhow!("{source}: the {}'s capacity is unknown: pass --capacity Q (or {in_data})", signal.name())
        }
        e => e.into(),
    })?;
    const ADVICE: &str = "(a shorter --horizon, or more data)";
    report.exits.reason = report.exits.reason.replace(telemetry::NO_WINDOW_ADVICE, ADVICE);
    report.draft = report.draft.replace(telemetry::NO_WINDOW_ADVICE, ADVICE);
    Ok(report)
}

/// An option's value as an error echoes it: a number in a bounded width (`1e-320`, not the
/// 320 digits `f64::to_string` writes), anything else as it is.
fn shown(value: String) -> String {
    value.trim().parse::<f64>().map_or(value, number)
}

#[derive(Serialize)]
struct JsonOut<'a> {
    source: &'a str,
    format: Format,
    read_seconds: f64,
    check_seconds: f64,
    draft_path: Option<String>,
    figures: Vec<String>,
    #[serde(flatten)]
    report: &'a CheckReport,
}

fn check(a: &CheckArgs) -> Result<ExitCode> {
    let (source, text) = read_input(&a.telemetry)?;
    let t0 = Instant::now();
    let fmt = a.format.as_deref().map(|f| if f == "csv" { Format::Csv } else { Format::Prometheus });
    let (tel, format) = parse_input(&source, &text, fmt)?;
    drop(text);
    let read_s = t0.elapsed().as_secs_f64();
    let opts = CheckOptions {
        threshold: a.threshold,
        capacity: a.capacity,
        epsilon: a.epsilon,
        horizon: a.horizon,
        eta: a.eta,
        retry_budget: a.retry_budget,
    };
    let t1 = Instant::now();
    let report = run_check(&tel, &opts, &source)?;
    let check_s = t1.elapsed().as_secs_f64();
    let draft_path = if a.no_draft {
        None
    } else {
        if let Some(e) = &report.draft_error {
            bail!(
                "{source}: the draft boundary would not pass `safegate verify --boundary` ({e}); not written to {} (--no-draft prints the report without it)",
                a.draft.display()
            );
        }
        Some(write_draft(&a.draft, &report.draft)?)
    };
    let figures = match &a.figures {
        Some(dir) => figures(dir, &tel, &report)?,
        None => Vec::new(),
    };
    if a.json {
        let out = JsonOut {
            source: &source,
            format,
            read_seconds: read_s,
            check_seconds: check_s,
            draft_path: draft_path.clone(),
            figures,
            report: &report,
        };
        emit(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
    } else {
        emit(&render(&source, format, &report, read_s + check_s, draft_path.as_deref(), &figures))?;
    }
    let bad = report.exits.verdict == Verdict::Violates || !report.flagged().is_empty();
    Ok(if a.strict && bad { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Print the report, a failed write an error (not a panic).
fn emit(text: &str) -> Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).context("cannot write the report to standard output")
}

/// Write the draft (never over a file this command did not draft), its errors naming
/// `--draft`.
fn write_draft(path: &Path, text: &str) -> Result<String> {
    let shown = path.display();
    telemetry::write_draft(path, text).map_err(|e| match e {
        DraftWriteError::Write(e) => anyhow::Error::new(e).context(format!("writing the draft to {shown}")),
        DraftWriteError::Directory => anyhow!("--draft {shown}: {e}"),
        other => anyhow!("--draft {shown}: {other}; choose another --draft PATH (or --no-draft)"),
    })?;
    Ok(path.display().to_string())
}

/// The figures written into `dir`: their paths.
fn figures(dir: &Path, tel: &Telemetry, r: &CheckReport) -> Result<Vec<String>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    for (name, svg) in safegate_render::boundary::figures(tel, r) {
        let path = dir.join(name);
        std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}
