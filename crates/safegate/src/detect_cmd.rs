//! `safegate detect`: run the two-mode IMM regime detector (the seed's Definition 2) over a
//! series of values from a file and report its posterior and alarms.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use safegate_core::estimators::{run_series, ImmConfig, Likelihood};
use safegate_render::detect;
use safegate_sim::series_text::{parse_series, SeriesTextError};
use safegate_studies::experiments::imm::ROBUST_NU;

/// Most bytes of a series read (file or standard input).
pub(crate) const MAX_BYTES: u64 = 128 << 20;

/// Most values `--json` or `--all` print one line or entry for.
pub(crate) const MAX_PRINTED: usize = 1_000_000;

/// Flags of `safegate detect`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub(crate) struct DetectArgs {
    /// The series: one value per line, or a CSV with a header line (`-`: standard input).
    /// Blank lines and lines starting with `#` are skipped; `NaN` is a missing value (the
    /// detector only mixes at that step).
    #[arg(long, value_name = "FILE")]
    pub(crate) input: PathBuf,
    /// The column to read from a CSV with a header (needed when it has several columns).
    #[arg(long, value_name = "NAME")]
    pub(crate) column: Option<String>,
    /// Means of the nominal and the alternate regime, `m₀,m₁` (`--means=-1,2` for a negative
    /// first value).
    #[arg(long, value_delimiter = ',', value_name = "A,B", default_values_t = [0.0, 3.0])]
    pub(crate) means: Vec<f64>,
    /// Scale of the likelihood of each regime (sd of the Gaussian, scale of the Student-t).
    #[arg(long, default_value_t = 1.0, value_name = "S")]
    pub(crate) sd: f64,
    /// Probability per step of switching regime (the IMM's mixing).
    #[arg(long, default_value_t = 0.02, value_name = "P")]
    pub(crate) switch: f64,
    /// Use the heavy-tail-robust Student-t likelihood instead of the Gaussian: the evidence of
    /// one value is bounded, so (at the default ν and switch) one outlier cannot flip a settled
    /// belief (docs/detect.md).
    #[arg(long)]
    pub(crate) robust: bool,
    /// Degrees of freedom of the robust likelihood (smaller: more robust, slower; the default
    /// is the one `safegate reproduce --only imm` measures).
    #[arg(long, requires = "robust", value_name = "V", default_value_t = ROBUST_NU)]
    pub(crate) nu: f64,
    /// Posterior of the alternate regime above which a step counts toward an alarm.
    #[arg(long, default_value_t = 0.5, value_name = "L")]
    pub(crate) level: f64,
    /// Consecutive steps above the level that make an alarm.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub(crate) run: u32,
    /// Print every step, however long the input (otherwise only inputs of at most 40 values).
    #[arg(long)]
    pub(crate) all: bool,
    /// Print JSON: `posterior` (one per value), `alarms` (0-based steps at which an alarm run
    /// completes), `alarm_periods`, `config`, … (docs/detect.md).
    #[arg(long)]
    pub(crate) json: bool,
}

/// The message of a series that cannot be read, naming the input and the flags.
fn series_error(source: &str, e: SeriesTextError) -> anyhow::Error {
    match e {
        SeriesTextError::ColumnNeeded { columns } => {
            // At most 12 names (a header of 100,000 columns is not echoed whole).
            let shown: Vec<&str> = columns.iter().take(12).map(String::as_str).collect();
            let more = columns.len().saturating_sub(shown.len());
            let tail = if more > 0 { format!(", … {more} more") } else { String::new() };
            anyhow!(
                "{source} has {} columns ({}{tail}): choose one with --column NAME",
                columns.len(),
                shown.join(", ")
            )
        }
        SeriesTextError::NoHeader { want, line } => {
            anyhow!("--column {want:?}: {source} has no header line (line {line} is numeric)")
        }
        SeriesTextError::SeveralValues { line, count } => {
            anyhow!("{source}: line {line} has {count} values; give one value per line, or a header line and --column")
        }
        SeriesTextError::TooMany { line, limit } => {
            anyhow!("{source}: more than {limit} values (line {line} is one too many; the most a series may hold); split it")
        }
        other => anyhow!("{source}: {other}"),
    }
}

pub(crate) fn run(a: &DetectArgs) -> Result<ExitCode> {
    let [mean0, mean1] = a.means[..] else {
        bail!("--means takes two values, A,B (got {})", a.means.len());
    };
    let likelihood = if a.robust { Likelihood::StudentT { nu: a.nu } } else { Likelihood::Gaussian };
    let cfg =
        ImmConfig { mean0, mean1, sd: a.sd, switch: a.switch, alarm_level: a.level, alarm_run: a.run, likelihood };
    cfg.check().map_err(|e| anyhow!("invalid detector settings: {e}"))?;

    let source = a.input.display().to_string();
    let mib = MAX_BYTES >> 20;
    let text = if source == "-" {
        safegate_sim::input::read_bounded(std::io::stdin().lock(), MAX_BYTES)
            .map_err(|e| anyhow!("standard input: {e}; a series is read up to {mib} MiB"))?
    } else {
        safegate_sim::input::read_text(&a.input, MAX_BYTES)
            .map_err(|e| anyhow!("cannot read {source}: {e}; a series is read up to {mib} MiB"))?
    };
    let series = parse_series(&text, a.column.as_deref()).map_err(|e| series_error(&source, e))?;
    drop(text);
    let n = series.values.len();
    if series.values.iter().all(|v| v.is_nan()) {
        bail!("{source}: all {n} values are missing (NaN): no observation to detect a regime from");
    }
    if (a.json || a.all) && n > MAX_PRINTED {
        bail!(
            "{source}: {n} values, more than the {MAX_PRINTED} {} prints one entry for; drop it (the summary reads any series) or split the input",
            if a.json { "--json" } else { "--all" }
        );
    }
    let d = run_series(cfg, &series.values).map_err(|e| anyhow!("invalid detector settings: {e}"))?;
    if a.json {
        let doc = detect::json(&source, &series, &d, &cfg);
        let mut text = serde_json::to_string_pretty(&doc)?;
        drop(doc);
        text.push('\n');
        return emit(&text);
    }
    emit(&detect::text(&source, &series, &d, cfg, a.all))
}

/// Print the output; a failed write is an error, not a panic.
fn emit(text: &str) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).context("cannot write to standard output")?;
    Ok(ExitCode::SUCCESS)
}
