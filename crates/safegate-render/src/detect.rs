//! What `safegate detect` prints: the two-mode IMM detector's run over a series
//! ([`safegate_core::estimators::run_series`]) as a verdict, a text report, or one JSON
//! document (docs/detect.md).

use std::fmt::Write as _;

use safegate_core::estimators::{Detection, ImmConfig, Likelihood};
use safegate_sim::series_text::TextSeries;
use serde_json::{json, Value};

/// Inputs this long or shorter print one line per step without `--all`.
pub const TABLE_MAX: usize = 40;

/// The run's verdict: `alarm` when an alarm completed, `inconclusive` when the series is
/// shorter than an alarm's run (no alarm there is no evidence of none), else `none`.
pub fn verdict(d: &Detection, steps: usize, cfg: &ImmConfig) -> &'static str {
    if !d.alarms.is_empty() {
        "alarm"
    } else if steps < cfg.alarm_run as usize {
        "inconclusive"
    } else {
        "none"
    }
}

/// The JSON document of a run over `series` read from `input`: the verdict, the values
/// skipped, the detector's settings, the posterior at every step, the alarms, the periods
/// in alarm and the line of each value.
pub fn json(input: &str, series: &TextSeries, d: &Detection, cfg: &ImmConfig) -> Value {
    json!({
        "input": input,
        "column": series.column,
        "steps": series.values.len(),
        "verdict": verdict(d, series.values.len(), cfg),
        "skipped": d.skipped,
        "config": {
            "means": [cfg.mean0, cfg.mean1],
            "sd": cfg.sd,
            "switch": cfg.switch,
            "likelihood": match cfg.likelihood {
                Likelihood::Gaussian => json!("gaussian"),
                Likelihood::StudentT { nu } => json!({ "student_t": { "nu": nu } }),
            },
            "alarm_level": cfg.alarm_level,
            "alarm_run": cfg.alarm_run,
        },
        "posterior": d.posterior,
        "alarms": d.alarms,
        "alarm_periods": d.periods,
        "lines": series.lines,
    })
}

fn likelihood_text(l: Likelihood) -> String {
    match l {
        Likelihood::Gaussian => "Gaussian likelihood".into(),
        Likelihood::StudentT { nu } => format!("Student-t likelihood, ν = {nu} (robust)"),
    }
}

/// The text report of a run over `series` read from `input`: the detector's settings, one
/// line per step (when `every_step`, or for at most [`TABLE_MAX`] values), the posterior's
/// peak, and the alarms with the lines of their periods.
pub fn text(input: &str, series: &TextSeries, d: &Detection, cfg: ImmConfig, every_step: bool) -> String {
    let mut s = String::new();
    let n = series.values.len();
    let table = every_step || n <= TABLE_MAX;
    let col = series.column.as_deref().map(|c| format!(" (column {c:?})")).unwrap_or_default();
    let _ = writeln!(s, "safegate detect: {input}{col}, {n} values");
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
    if d.skipped > 0 {
        let _ = writeln!(s, "  {} missing values (NaN) skipped: the filter only mixed at those steps", d.skipped);
    }
    if table {
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
    let above = d.steps_above(cfg.alarm_level);
    let (imax, pmax) = d.peak();
    let _ = writeln!(s, "  posterior: max {pmax:.4} at step {imax}; above {} at {above} of {n} steps", cfg.alarm_level);
    if d.alarms.is_empty() && n < cfg.alarm_run as usize {
        let _ = writeln!(
            s,
            "  alarms: inconclusive — {n} values, fewer than the {} steps above the level an alarm needs (--run)",
            cfg.alarm_run
        );
    } else if d.alarms.is_empty() {
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
    if !table {
        let _ = writeln!(s, "  (--all prints every step, --json the posterior)");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use safegate_core::estimators::run_series;

    fn series(values: Vec<f64>) -> TextSeries {
        let lines = (1..=values.len()).collect();
        TextSeries { values, lines, column: None }
    }

    #[test]
    fn a_run_reads_as_its_verdict_text_and_document() {
        let cfg = ImmConfig::default();
        let mut values = vec![0.0; 10];
        values.extend([3.0; 8]);
        let s = series(values);
        let d = run_series(cfg, &s.values).unwrap();
        assert_eq!(verdict(&d, 18, &cfg), "alarm");
        let t = text("x.txt", &s, &d, cfg, false);
        assert!(t.starts_with("safegate detect: x.txt, 18 values\n"), "{t}");
        assert!(t.contains("    14  ") && t.contains("ALARM"), "one line per step at 18 values: {t}");
        assert!(t.contains("alarm at step 14, in alarm to step 17 (line 18), the end of the input"), "{t}");
        assert!(!t.contains("--all prints"), "{t}");
        let v = json("x.txt", &s, &d, &cfg);
        assert_eq!(v["verdict"], "alarm");
        assert_eq!(v["alarms"], json!([14]));
        assert_eq!(v["alarm_periods"], json!([[10, 17]]));
        assert_eq!(v["config"]["likelihood"], "gaussian");
        assert_eq!(v["config"]["means"], json!([0.0, 3.0]));
    }

    #[test]
    fn a_short_series_is_inconclusive_and_a_long_one_prints_no_table() {
        let cfg = ImmConfig { likelihood: Likelihood::StudentT { nu: 4.0 }, ..ImmConfig::default() };
        let short = series(vec![0.0; 3]);
        let d = run_series(cfg, &short.values).unwrap();
        assert_eq!(verdict(&d, 3, &cfg), "inconclusive");
        let t = text("-", &short, &d, cfg, false);
        assert!(t.contains("alarms: inconclusive — 3 values, fewer than the 5 steps"), "{t}");
        assert!(t.contains("Student-t likelihood, ν = 4 (robust)"), "{t}");
        assert_eq!(json("-", &short, &d, &cfg)["config"]["likelihood"], json!({ "student_t": { "nu": 4.0 } }));
        let long = series(vec![0.0; TABLE_MAX + 1]);
        let d = run_series(cfg, &long.values).unwrap();
        assert_eq!(verdict(&d, TABLE_MAX + 1, &cfg), "none");
        let t = text("-", &long, &d, cfg, false);
        assert!(!t.contains("posterior  alarm") && t.contains("--all prints every step"), "{t}");
        assert!(text("-", &long, &d, cfg, true).contains("posterior  alarm"));
    }
}
