//! `safegate falsify`: the seed's falsification criteria F10–F19, each measured in the
//! model, with a verdict (docs/falsify.md).
//!
//! Rows come from `safegate_studies::falsify` (F10–F18) as a `Vec<Criterion>`; a criterion
//! measured elsewhere is one more push onto that list (F19, below).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use safegate_studies::falsify::{self, Criterion, Effort, Evidence, Figure, Verdict};

use crate::progress;
use crate::reproduce_cmd::render_figure_as;

/// Every criterion id the command knows, in order.
const ALL_IDS: [&str; 10] = ["F10", "F11", "F12", "F13", "F14", "F15", "F16", "F17", "F18", "F19"];

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

/// The ids asked for, upper-cased and deduplicated in criterion order; an unknown one is the
/// error, named.
pub(crate) fn selected(ids: &[String]) -> Result<Vec<String>> {
    let mut wanted = Vec::new();
    for raw in ids {
        let id = raw.trim().to_ascii_uppercase();
        if !ALL_IDS.contains(&id.as_str()) {
            bail!("unknown criterion {raw:?}: expected one of {}", ALL_IDS.join(", "));
        }
        wanted.push(id);
    }
    Ok(ALL_IDS
        .iter()
        .filter(|id| wanted.is_empty() || wanted.iter().any(|w| w == *id))
        .map(|s| s.to_string())
        .collect())
}

/// F19 from the live downstream emulator: its throughput curve measured on loopback and
/// fitted with the USL and the `(C/n)^p` law (docs/throughput.md).
fn f19(quick: bool) -> Criterion {
    use safegate_live::throughput;
    let claim = "a system with negligible contention (σ ≈ 0) and a real coherency penalty (κ > 0) decays at large concurrency other than as 1/N";
    let experiment = "the live downstream emulator's throughput measured at 1–16·C concurrent clients on loopback, fitted with Gunther's USL and the (C/n)^p law";
    let opts = if quick { throughput::Options::quick() } else { throughput::Options::default() };
    let fitted = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|rt| rt.block_on(throughput::f19(&opts)).map_err(|e| e.to_string()));
    let fit = match fitted {
        Ok(f) => f,
        Err(e) => {
            return Criterion {
                id: "F19".into(),
                claim: claim.into(),
                experiment: experiment.into(),
                evidence: vec![],
                verdict: Verdict::Inconclusive,
                reason: format!("the measurement could not be made: {e}"),
            }
        }
    };
    let m = &fit.measured;
    let mut evidence = Vec::new();
    if let Some(t) = m.tail {
        evidence.push(Evidence::new("measured tail exponent p̂ (2 is 1/n)", t.exponent, "X ∝ n^(1−p)"));
        evidence.push(Evidence::new("its 95 % interval, low", t.lo, ""));
        evidence.push(Evidence::new("its 95 % interval, high", t.hi, ""));
    }
    evidence.push(Evidence::new("USL fit σ", m.usl.sigma, ""));
    evidence.push(Evidence::new("USL fit κ", m.usl.kappa, ""));
    evidence.push(Evidence::new("USL tail constant λ/κ", m.usl.tail_constant(), "req/s·n"));
    evidence.push(Evidence::new(
        "(C/n)² law tail constant s·C²",
        m.contention.rate * m.contention.comfortable.powi(2),
        "req/s·n",
    ));
    evidence.push(Evidence::new("R² of the USL", m.usl.quality.r2, ""));
    evidence.push(Evidence::new("R² of the (C/n)² law", m.contention.quality.r2, ""));
    evidence.push(Evidence::new("wall time of the measurement", fit.wall_seconds, "s"));
    let verdict = fit.verdict;
    Criterion {
        id: "F19".into(),
        claim: claim.into(),
        experiment: experiment.into(),
        evidence,
        verdict,
        reason: format!(
            "{} (the emulator serves at H·s·min(1, (C/n)²) by construction: this shows the measurement recovers the law and that a σ = 0 USL's tail is also 1/n, not that real systems decay as 1/n)",
            fit.reason
        ),
    }
}

/// What [`measure`] found: the criteria asked for, the figures, per-experiment seconds.
#[derive(Debug)]
pub(crate) struct Measured {
    pub(crate) criteria: Vec<Criterion>,
    pub(crate) figures: Vec<Figure>,
    pub(crate) timings: Vec<(String, f64)>,
    pub(crate) seconds: f64,
}

/// Measure the criteria `ids` (as [`selected`] returns them), small samples when `quick`,
/// progress on stderr when `show`; F19 is the live measurement.
pub(crate) fn measure(ids: &[String], quick: bool, seed: u64, show: bool) -> Measured {
    let effort = if quick { Effort::quick(seed) } else { Effort::standard(seed) };
    let model_ids: Vec<String> = ids.iter().filter(|id| falsify::IDS.contains(&id.as_str())).cloned().collect();
    let chosen = if model_ids.is_empty() { vec![] } else { falsify::experiments_for(&model_ids) };

    let started = Instant::now();
    let pb = progress::bar(1000, "falsifying", show);
    let n = chosen.len().max(1) as f64;
    let mut criteria: Vec<Criterion> = Vec::new();
    let mut figures: Vec<Figure> = Vec::new();
    let mut timings = Vec::new();
    for (i, e) in chosen.iter().enumerate() {
        let t = Instant::now();
        let out = (e.run)(&effort, &|f| pb.set_position(((i as f64 + f.clamp(0.0, 1.0)) / n * 1000.0) as u64));
        pb.set_position(((i + 1) as f64 / n * 1000.0) as u64);
        timings.push((e.ids.join("–"), t.elapsed().as_secs_f64()));
        criteria.extend(out.criteria);
        figures.extend(out.figures);
    }
    pb.finish_and_clear();
    if ids.iter().any(|id| id == "F19") {
        if show {
            eprintln!("F19: measuring the live downstream's throughput curve on loopback …");
        }
        let t = Instant::now();
        criteria.push(f19(quick));
        timings.push(("F19".into(), t.elapsed().as_secs_f64()));
    }
    criteria.retain(|c| ids.contains(&c.id));
    Measured { criteria, figures, timings, seconds: started.elapsed().as_secs_f64() }
}

pub(crate) fn run(args: &FalsifyArgs) -> Result<ExitCode> {
    let ids = selected(&args.ids)?;
    if let Some(dir) = &args.figures {
        crate::out_dir::create("--figures", dir)?;
    }
    let Measured { criteria, figures, timings, seconds: elapsed } = measure(&ids, args.quick, args.seed, !args.json);

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

/// A number as a reader wants it: thousands without decimals, small values with enough digits.
pub(crate) fn value(v: f64) -> String {
    if v.is_nan() {
        "—".into()
    } else if v.is_infinite() {
        if v > 0.0 { "∞" } else { "−∞" }.into()
    } else if v == 0.0 {
        "0".into()
    } else if v.fract() == 0.0 || v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.3}")
    } else if v.abs() >= 1e-3 {
        format!("{v:.4}")
    } else {
        format!("{v:.2e}")
    }
}

pub(crate) fn evidence_line(e: &Evidence) -> String {
    format!("{}: {} {}", e.name, value(e.value), e.unit)
}

fn render(criteria: &[Criterion]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "| id  | verdict      | key number |");
    let _ = writeln!(s, "|-----|--------------|------------|");
    for c in criteria {
        let key = c.evidence.first().map_or("—".to_string(), evidence_line);
        let _ = writeln!(s, "| {:<3} | {:<12} | {key} |", c.id, c.verdict.label());
    }
    for c in criteria {
        let _ = writeln!(s);
        let _ = writeln!(s, "{} — {}", c.id, c.verdict.label().to_uppercase());
        let _ = writeln!(s, "  condition:  {}", c.claim);
        let _ = writeln!(s, "  experiment: {}", c.experiment);
        for e in &c.evidence {
            let _ = writeln!(s, "  - {}", evidence_line(e));
        }
        let _ = writeln!(s, "  reason:     {}", c.reason);
    }
    let _ = writeln!(s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_case_insensitive_ordered_and_unknown_ones_named() {
        let ids = selected(&["f17".into(), "F10".into(), "f10".into()]).unwrap();
        assert_eq!(ids, ["F10", "F17"]);
        assert_eq!(selected(&[]).unwrap().len(), 10);
        let e = selected(&["F9".into()]).unwrap_err().to_string();
        assert!(e.contains("\"F9\"") && e.contains("F19"), "{e}");
    }

    #[test]
    fn values_read_well() {
        assert_eq!(value(f64::NAN), "—");
        assert_eq!(value(316_800.0), "316800");
        assert_eq!(value(3.2344), "3.234");
        assert_eq!(value(528.0), "528");
        assert_eq!(value(0.0791), "0.0791");
        assert_eq!(value(2.5e-5), "2.50e-5");
    }
}
