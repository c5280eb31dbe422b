//! `safegate falsify`: the seed's falsification criteria F10–F19, each measured in the
//! model, with a verdict (docs/falsify.md).
//!
//! Rows come from `safegate_studies::falsify` (F10–F18) and `safegate_live::f19` (F19).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use safegate_render::falsify::render;
use safegate_render::reproduce::render_figure_as;
use safegate_studies::falsify::{selected, Measured, Verdict};

/// Flags of `safegate falsify`.
#[derive(Debug, Args)]
pub(crate) struct FalsifyArgs {
    /// Criteria to test (F10 … F19, any case); all of them if none is given.
    #[arg(value_name = "ID")]
    pub(crate) ids: Vec<String>,
    /// Print JSON: the criteria (id, claim, experiment, evidence, verdict, reason) and timings.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write one SVG per figure into this directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) figures: Option<PathBuf>,
    /// Small samples (a few seconds; some verdicts may then be inconclusive).
    #[arg(long)]
    pub(crate) quick: bool,
    /// Seed of every random draw.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
}

pub(crate) fn run(args: &FalsifyArgs) -> Result<ExitCode> {
    let ids = selected(&args.ids)?;
    if let Some(dir) = &args.figures {
        crate::out_dir::create("--figures", dir)?;
    }
    let Measured { criteria, figures, timings, seconds: elapsed } =
        crate::calls::falsify(&ids, args.quick, args.seed, !args.json);

    let mut written = Vec::new();
    if let Some(dir) = &args.figures {
        for f in &figures {
            let path = dir.join(format!("{}.svg", f.id));
            std::fs::write(&path, render_figure_as(f, "safegate falsify"))
                .with_context(|| format!("writing {}", path.display()))?;
            written.push(path);
        }
    }

    if args.json {
        let doc = serde_json::json!({
            "criteria": criteria,
            "effort": if args.quick { "quick" } else { "standard" },
            "seed": args.seed,
            "seconds": elapsed,
            "timings": timings.iter().map(|(ids, s)| serde_json::json!({ "criteria": ids, "seconds": s })).collect::<Vec<_>>(),
            "figures": written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", render(&criteria));
        let count = |v: Verdict| criteria.iter().filter(|c| c.verdict == v).count();
        let timing: Vec<String> = timings.iter().map(|(ids, s)| format!("{ids} {s:.1}s")).collect();
        println!(
            "{} holds, {} falsified, {} inconclusive; {elapsed:.1} s wall on {} threads ({}){}",
            count(Verdict::Holds),
            count(Verdict::Falsified),
            count(Verdict::Inconclusive),
            rayon::current_num_threads(),
            timing.join(", "),
            if args.quick { "; --quick: small samples" } else { "" }
        );
        if let Some(dir) = &args.figures {
            println!("figures: {} ({} files)", dir.display(), written.len());
        }
    }
    // The verdicts are findings, not failures.
    Ok(ExitCode::SUCCESS)
}
