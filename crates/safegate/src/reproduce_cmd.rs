//! `safegate reproduce`: every worked result of the seed, measured and checked.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use rayon::prelude::*;
use safegate_studies::experiments::{self, Experiment, Figure, Report, Row, Setup, Verdict};

use crate::chart::{self, Line, Panel, Rule};
use crate::progress;

/// Flags of `safegate reproduce`.
#[derive(Debug, Args)]
pub(crate) struct ReproduceArgs {
    /// Run only these experiments or rows (ids, comma-separated; a row id selects its
    /// experiment and keeps that row).
    #[arg(long, value_delimiter = ',', value_name = "ID")]
    pub(crate) only: Vec<String>,
    /// Print a JSON list of rows (id, claim, seed, ours, tolerance, pass, verdict, …).
    #[arg(long)]
    pub(crate) json: bool,
    /// Write one SVG per figure into this directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) figures: Option<PathBuf>,
    /// Change a model constant for every experiment (`--set model.rate=36`): the rows that
    /// depend on it should then fail.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<String>,
    /// Seed of every random draw.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// List the experiments and exit.
    #[arg(long)]
    pub(crate) list: bool,
}

pub(crate) fn run(args: &ReproduceArgs) -> Result<ExitCode> {
    if args.list {
        for e in experiments::ALL {
            println!("{:<10} {}", e.id, e.title);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut overrides = Vec::new();
    for kv in &args.set {
        let (k, v) = kv.split_once('=').with_context(|| format!("--set {kv:?}: expected KEY=VALUE"))?;
        overrides.push((k.trim().to_string(), v.trim().to_string()));
    }
    let setup = Setup::with_overrides(&overrides, args.seed)?;
    let selection = experiments::select(&args.only).map_err(|e| anyhow!("--only {e}"))?;
    let chosen = &selection.experiments;

    if let Some(dir) = &args.figures {
        crate::out_dir::create("--figures", dir)?;
    }
    let started = Instant::now();
    let mut reports = run_experiments(&setup, chosen, !args.json);
    let elapsed = started.elapsed().as_secs_f64();
    for (r, _) in &mut reports {
        selection.keep_rows(r);
    }

    if let Some(dir) = &args.figures {
        for (r, _) in &reports {
            for f in &r.figures {
                let path = dir.join(format!("{}.svg", f.id));
                std::fs::write(&path, render_figure(f)).with_context(|| format!("writing {}", path.display()))?;
            }
        }
    }

    let rows: Vec<(&'static str, &Row)> =
        reports.iter().flat_map(|(r, _)| r.rows.iter().map(move |row| (r.experiment, row))).collect();
    let failed = rows.iter().filter(|(_, r)| r.verdict == Verdict::Fail).count();
    if args.json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|(exp, row)| {
                let mut v = serde_json::to_value(row).expect("rows serialise");
                v["experiment"] = serde_json::Value::from(*exp);
                v
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else {
        print!("{}", render_table(&rows));
        let passed = rows.iter().filter(|(_, r)| r.verdict == Verdict::Pass).count();
        let info = rows.iter().filter(|(_, r)| r.verdict == Verdict::Info).count();
        let timing: Vec<String> = reports.iter().map(|(r, s)| format!("{} {s:.2}s", r.experiment)).collect();
        println!(
            "total: {passed} pass, {failed} fail, {info} info, of {} rows; {elapsed:.2} s wall on {} threads ({})",
            rows.len(),
            rayon::current_num_threads(),
            timing.join(", ")
        );
        if !overrides.is_empty() {
            let list: Vec<String> = overrides.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            println!("model changed from the seed's: {}", list.join(", "));
        }
        if let Some(dir) = &args.figures {
            println!("figures: {}", dir.display());
        }
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Run the experiments in parallel, a progress bar on stderr when `show`: each report with
/// its seconds, in the order given.
pub(crate) fn run_experiments(setup: &Setup, chosen: &[&Experiment], show: bool) -> Vec<(Report, f64)> {
    let pb = progress::bar(chosen.len() as u64, "experiments", show);
    let reports = chosen
        .par_iter()
        .map(|e| {
            let t = Instant::now();
            let r = (e.run)(setup);
            pb.inc(1);
            (r, t.elapsed().as_secs_f64())
        })
        .collect();
    pb.finish_and_clear();
    reports
}

fn render_table(rows: &[(&'static str, &Row)]) -> String {
    let headers = ["id", "claim", "seed", "ours", "tolerance", "verdict"];
    let verdict = |r: &Row| match r.verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "FAIL",
        Verdict::Info => "info",
    };
    let mut notes = Vec::new();
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|(_, r)| {
            let mut id = r.id.clone();
            if let Some(n) = &r.note {
                notes.push((r.id.clone(), n.clone()));
                id = format!("{id} [{}]", notes.len());
            }
            [id, r.claim.clone(), r.seed.clone(), r.ours.clone(), r.tolerance.clone(), verdict(r).to_string()]
        })
        .collect();
    let width = |i: usize| cells.iter().map(|c| c[i].chars().count()).chain([headers[i].len()]).max().unwrap_or(0);
    let w: Vec<usize> = (0..6).map(width).collect();
    let mut s = String::new();
    let line = |s: &mut String, c: &[String]| {
        let parts: Vec<String> =
            c.iter().enumerate().map(|(i, x)| format!("{x}{}", " ".repeat(w[i] - x.chars().count()))).collect();
        let _ = writeln!(s, "| {} |", parts.join(" | "));
    };
    line(&mut s, &headers.map(String::from));
    let _ = writeln!(s, "|{}|", w.iter().map(|n| "-".repeat(n + 2)).collect::<Vec<_>>().join("|"));
    for c in &cells {
        line(&mut s, c);
    }
    if !notes.is_empty() {
        let _ = writeln!(s);
        for (i, (id, n)) in notes.iter().enumerate() {
            let _ = writeln!(s, "[{}] {id}: {n}", i + 1);
        }
    }
    let _ = writeln!(s);
    s
}

fn render_figure(f: &Figure) -> String {
    render_figure_as(f, "safegate reproduce")
}

/// An experiment's figure as an SVG chart, `subtitle` under its title.
pub(crate) fn render_figure_as(f: &Figure, subtitle: &str) -> String {
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for l in &f.lines {
        for (&x, &y) in l.x.iter().zip(&l.y) {
            if x.is_finite() && y.is_finite() {
                x0 = x0.min(x);
                x1 = x1.max(x);
                y0 = y0.min(y);
                y1 = y1.max(y);
            }
        }
    }
    for (y, _) in &f.rules {
        y0 = y0.min(*y);
        y1 = y1.max(*y);
    }
    if x0 >= x1 || x0.is_nan() || x1.is_nan() {
        (x0, x1) = (0.0, 1.0);
    }
    if y0 >= y1 || y0.is_nan() || y1.is_nan() {
        (y0, y1) = (y0.min(0.0), y0.max(0.0) + 1.0);
    }
    let pad = 0.05 * (y1 - y0);
    let y_min = if y0 >= 0.0 && y0 - pad < 0.0 { 0.0 } else { y0 - pad };
    let lines = f
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| Line {
            name: l.name.clone(),
            color: chart::PALETTE[i % chart::PALETTE.len()],
            x: l.x.clone(),
            y: l.y.clone(),
            dashed: false,
        })
        .collect();
    let rules = f.rules.iter().map(|(y, label)| Rule { y: *y, label: label.clone() }).collect();
    let panel = Panel { label: f.y_label.clone(), y_min, y_max: y1 + pad, lines, rules };
    chart::render(&f.title, subtitle, &f.x_label, x0, x1, &[panel])
}
