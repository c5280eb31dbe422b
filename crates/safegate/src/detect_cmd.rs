//! `safegate detect`: run the two-mode IMM regime detector (the seed's Definition 2) over a
//! series of values from a file and report its posterior and alarms.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use safegate_core::estimators::{ImmConfig, Likelihood, TwoModeImm};
use safegate_sim::experiments::imm::ROBUST_NU;

/// Inputs this long or shorter print one line per step without `--all`.
const TABLE_MAX: usize = 40;

/// Flags of `safegate detect`.
#[derive(Debug, Args)]
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

/// The values read from the input, with the line each came from.
#[derive(Debug)]
struct Series {
    values: Vec<f64>,
    lines: Vec<usize>,
    column: Option<String>,
}

fn cells(line: &str) -> Vec<&str> {
    line.split(',').map(|c| c.trim().trim_matches('"')).collect()
}

/// Parse one value per line, or a CSV with a header line (chosen by whether the first
/// content line is all numbers).
fn parse(text: &str, column: Option<&str>, source: &str) -> Result<Series> {
    let mut content = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .peekable();
    let Some(&(first_no, first)) = content.peek() else {
        bail!("{source}: no values");
    };
    let head = cells(first);
    let has_header = head.iter().any(|c| c.parse::<f64>().is_err());
    let (idx, width, name) = if has_header {
        content.next();
        let idx = match column {
            Some(want) => head
                .iter()
                .position(|c| *c == want)
                .with_context(|| format!("{source}: unknown column {want:?} (columns: {})", head.join(", ")))?,
            None if head.len() == 1 => 0,
            None => bail!("{source} has {} columns ({}): choose one with --column NAME", head.len(), head.join(", ")),
        };
        (idx, head.len(), Some(head[idx].to_string()))
    } else {
        if let Some(want) = column {
            bail!("--column {want:?}: {source} has no header line (line {first_no} is numeric)");
        }
        if head.len() > 1 {
            bail!(
                "{source}: line {first_no} has {} values; give one value per line, or a header line and --column",
                head.len()
            );
        }
        (0, 1, None)
    };
    let mut series = Series { values: Vec::new(), lines: Vec::new(), column: name };
    for (no, line) in content {
        let row = cells(line);
        if row.len() != width {
            bail!("{source}: line {no} has {} cells, expected {width}", row.len());
        }
        let cell = row[idx];
        let value: f64 = cell.parse().map_err(|_| {
            let col = series.column.as_deref().map(|c| format!(" (column {c:?})")).unwrap_or_default();
            let hint = if cell.is_empty() { "; write NaN for a missing value" } else { "" };
            anyhow::anyhow!("{source}: line {no}: {cell:?} is not a number{col}{hint}")
        })?;
        series.values.push(value);
        series.lines.push(no);
    }
    if series.values.is_empty() {
        bail!("{source}: no values after the header");
    }
    Ok(series)
}

/// The detector's output over a series.
#[derive(Debug)]
struct Detection {
    posterior: Vec<f64>,
    /// Whether the filter is in alarm after each step.
    in_alarm: Vec<bool>,
    /// Steps (0-based) at which an alarm run completes.
    alarms: Vec<usize>,
    /// `(first step of the run above the level, last step in alarm)`, inclusive.
    periods: Vec<(usize, usize)>,
}

fn detect(values: &[f64], cfg: ImmConfig) -> Detection {
    let mut imm = TwoModeImm::new(cfg).expect("checked by the caller");
    let mut d = Detection { posterior: vec![], in_alarm: vec![], alarms: vec![], periods: vec![] };
    let run = cfg.alarm_run as usize;
    for (step, &y) in values.iter().enumerate() {
        d.posterior.push(imm.update(y));
        let now = imm.alarm_now();
        let before = d.in_alarm.last().copied().unwrap_or(false);
        if now && !before {
            d.alarms.push(step);
            d.periods.push((step + 1 - run, step));
        } else if now {
            if let Some(p) = d.periods.last_mut() {
                p.1 = step;
            }
        }
        d.in_alarm.push(now);
    }
    d
}

fn likelihood_text(l: Likelihood) -> String {
    match l {
        Likelihood::Gaussian => "Gaussian likelihood".into(),
        Likelihood::StudentT { nu } => format!("Student-t likelihood, ν = {nu} (robust)"),
    }
}

pub(crate) fn run(a: &DetectArgs) -> Result<ExitCode> {
    let [mean0, mean1] = a.means[..] else {
        bail!("--means takes two values, A,B (got {})", a.means.len());
    };
    let likelihood = if a.robust { Likelihood::StudentT { nu: a.nu } } else { Likelihood::Gaussian };
    let cfg =
        ImmConfig { mean0, mean1, sd: a.sd, switch: a.switch, alarm_level: a.level, alarm_run: a.run, likelihood };
    TwoModeImm::new(cfg).map_err(|e| anyhow::anyhow!("invalid detector settings: {e}"))?;

    let source = a.input.display().to_string();
    let text = if source == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).context("cannot read standard input")?;
        s
    } else {
        std::fs::read_to_string(&a.input).with_context(|| format!("cannot read {source}"))?
    };
    let series = parse(&text, a.column.as_deref(), &source)?;
    let d = detect(&series.values, cfg);
    let skipped = series.values.iter().filter(|v| !v.is_finite()).count();

    if a.json {
        let doc = serde_json::json!({
            "input": source,
            "column": series.column,
            "steps": series.values.len(),
            "skipped": skipped,
            "config": {
                "means": [mean0, mean1],
                "sd": a.sd,
                "switch": a.switch,
                "likelihood": match likelihood {
                    Likelihood::Gaussian => serde_json::json!("gaussian"),
                    Likelihood::StudentT { nu } => serde_json::json!({ "student_t": { "nu": nu } }),
                },
                "alarm_level": a.level,
                "alarm_run": a.run,
            },
            "posterior": d.posterior,
            "alarms": d.alarms,
            "alarm_periods": d.periods,
            "lines": series.lines,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", render(a, &series, &d, cfg, skipped));
    Ok(ExitCode::SUCCESS)
}

fn render(a: &DetectArgs, series: &Series, d: &Detection, cfg: ImmConfig, skipped: usize) -> String {
    let mut s = String::new();
    let n = series.values.len();
    let col = series.column.as_deref().map(|c| format!(" (column {c:?})")).unwrap_or_default();
    let _ = writeln!(s, "safegate detect: {}{col}, {n} values", a.input.display());
    let _ = writeln!(
        s,
        "  two-mode IMM: means {} / {}, scale {}, switch {}, {}; alarm = posterior > {} for ≥ {} steps",
        cfg.mean0,
        cfg.mean1,
        cfg.sd,
        cfg.switch,
        likelihood_text(cfg.likelihood),
        cfg.alarm_level,
        cfg.alarm_run
    );
    if skipped > 0 {
        let _ = writeln!(s, "  {skipped} missing values (NaN) skipped: the filter only mixed at those steps");
    }
    if a.all || n <= TABLE_MAX {
        let _ = writeln!(s, "\n{:>6}  {:>12}  {:>9}  alarm", "step", "value", "posterior");
        for (i, (&v, &p)) in series.values.iter().zip(&d.posterior).enumerate() {
            let flag = if d.alarms.contains(&i) {
                "ALARM"
            } else if d.in_alarm[i] {
                "*"
            } else {
                ""
            };
            let line = format!("{i:>6}  {v:>12.4}  {p:>9.4}  {flag}");
            let _ = writeln!(s, "{}", line.trim_end());
        }
        s.push('\n');
    }
    let above = d.posterior.iter().filter(|&&p| p > cfg.alarm_level).count();
    let (imax, pmax) =
        d.posterior
            .iter()
            .copied()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |b, (i, p)| if p > b.1 { (i, p) } else { b });
    let _ = writeln!(s, "  posterior: max {pmax:.4} at step {imax}; above {} at {above} of {n} steps", cfg.alarm_level);
    if d.alarms.is_empty() {
        let _ = writeln!(s, "  alarms: none");
    } else {
        let steps: Vec<String> = d.alarms.iter().map(|x| x.to_string()).collect();
        let _ = writeln!(
            s,
            "  alarms: {} (steps, 0-based, at which a run completes: {})",
            d.alarms.len(),
            steps.join(", ")
        );
        for &(start, end) in &d.periods {
            let line = |i: usize| series.lines[i];
            let _ = writeln!(
                s,
                "    above {} from step {start} (line {}), alarm at step {}, in alarm to step {end} (line {}){}",
                cfg.alarm_level,
                line(start),
                start + cfg.alarm_run as usize - 1,
                line(end),
                if end + 1 == n { ", the end of the input" } else { "" }
            );
        }
    }
    if !(a.all || n <= TABLE_MAX) {
        let _ = writeln!(s, "  (--all prints every step, --json the posterior)");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_per_line_and_comments() {
        let s = parse("# latency\n1\n\n2.5\n-3e-1\nNaN\n", None, "x").unwrap();
        assert_eq!(s.values[..3], [1.0, 2.5, -0.3]);
        assert!(s.values[3].is_nan() && s.values.len() == 4);
        assert_eq!(s.lines, [2, 4, 5, 6]);
        assert_eq!(s.column, None);
    }

    #[test]
    fn header_and_column_choice() {
        let text = "t,\"queue\",latency\n0,1,2\n1,3,4\n";
        assert_eq!(parse(text, Some("latency"), "f").unwrap().values, [2.0, 4.0]);
        assert_eq!(parse(text, Some("queue"), "f").unwrap().values, [1.0, 3.0]);
        let err = parse(text, None, "f").unwrap_err().to_string();
        assert!(err.contains("3 columns (t, queue, latency)") && err.contains("--column"), "{err}");
        let err = parse(text, Some("lat"), "f").unwrap_err().to_string();
        assert!(err.contains("unknown column \"lat\"") && err.contains("t, queue, latency"), "{err}");
        assert_eq!(parse("value\n1\n2\n", None, "f").unwrap().values, [1.0, 2.0]);
    }

    #[test]
    fn bad_values_name_their_line() {
        let err = parse("v\n1\n2\nabc\n", None, "f").unwrap_err().to_string();
        assert!(err.contains("line 4") && err.contains("\"abc\""), "{err}");
        let err = parse("a,b\n1,2\n3\n", Some("b"), "f").unwrap_err().to_string();
        assert!(err.contains("line 3 has 1 cells, expected 2"), "{err}");
        let err = parse("a,b\n1,\n", Some("b"), "f").unwrap_err().to_string();
        assert!(err.contains("NaN for a missing value"), "{err}");
        assert!(parse("1,2\n", None, "f").unwrap_err().to_string().contains("one value per line"));
        assert!(parse("1\n", Some("x"), "f").unwrap_err().to_string().contains("no header"));
        assert!(parse("\n# nothing\n", None, "f").is_err());
        assert!(parse("only_a_header\n", None, "f").is_err());
    }

    #[test]
    fn alarms_complete_after_the_run_and_periods_span_it() {
        let mut v = vec![0.0; 10];
        v.extend([3.0; 8]);
        v.extend([0.0; 5]);
        let d = detect(&v, ImmConfig::default());
        assert_eq!(d.alarms, [14]);
        // One value at 0 after the belief settled near 0.98 brings it below 0.5 (3.89 − 4.5).
        assert_eq!(d.periods, [(10, 17)]);
        assert!(d.in_alarm[14] && !d.in_alarm[13]);
    }
}
