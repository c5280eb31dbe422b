//! `safegate reproduce`: every worked result of the seed, measured and checked.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use safegate_render::reproduce::{render_figure, render_table};
use safegate_studies::experiments::{self, Row, Setup, Verdict};

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
    /// depend on it should then fail. A key no selected experiment or row reads (one they
    /// set themselves, as traffic.rate) is refused; the rows a key does not reach are named.
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
    let overrides = crate::set_arg::parse_sets(&args.set)?;
    let setup = Setup::with_overrides(&overrides, args.seed)?;
    let selection = experiments::select(&args.only).map_err(|e| anyhow!("--only {e}"))?;
    // An override no selected experiment or row reads would change nothing and be shown
    // as a change: refused, naming what they read.
    let keys = experiments::check_overrides(&overrides, &selection)?;
    let chosen = &selection.experiments;

    if let Some(dir) = &args.figures {
        crate::out_dir::create("--figures", dir)?;
    }
    let started = Instant::now();
    let mut reports = crate::calls::experiments(&setup, chosen, !args.json);
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
        let list = experiments::rows_json(&rows, &keys);
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
            for key in &keys {
                if let Some(missed) = experiments::rows_not_reading(key, &rows) {
                    println!("  {key} does not reach {missed}");
                }
            }
        }
        if let Some(dir) = &args.figures {
            println!("figures: {}", dir.display());
        }
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
