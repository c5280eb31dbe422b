//! The page of `safegate report`: one HTML file with inline CSS and inline SVG, readable
//! offline and without JavaScript (collapsed parts are `<details>`).

use std::fmt::Write as _;
use std::path::Path;

use safegate_studies::compare::ArmReport;
use safegate_studies::experiments::Verdict;
use safegate_studies::falsify::Verdict as Finding;
use safegate_studies::verify::{ArmResult, VerifyReport};

use crate::falsify::{evidence_line, value};
use crate::markup::escape as esc;
use crate::numbers::{fixed, nonzero, number, percent_tight};
use crate::reproduce::render_figure_as;
use crate::{compare as compare_text, verify as verify_text};

pub use crate::report_data::{Effort, Gathered};

/// Each section's anchor and heading, in page order.
pub const SECTIONS: [(&str, &str); 4] = [
    ("reproduce", "Reproduce: every worked result of the seed"),
    ("compare", "Compare: every controller with and without the filter"),
    ("verify", "Verify: the boundary files over their envelopes"),
    ("falsify", "Falsify: criteria F10–F19"),
];

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.4}\
h1{font-size:1.6em}h2{border-bottom:2px solid #ccc;padding-bottom:.2em;margin-top:2em}\
table{border-collapse:collapse;margin:.8em 0;font-size:.88em}th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}\
th{background:#f2f2f2}td.n{text-align:right;font-variant-numeric:tabular-nums}\
.pass,.holds{color:#006d2c;font-weight:bold}.fail,.falsified{color:#b00;font-weight:bold}.info,.inconclusive{color:#7a5a00;font-weight:bold}\
figure{margin:1em 0}svg{max-width:100%;height:auto;border:1px solid #eee}\
pre{background:#f7f7f7;padding:.6em;overflow-x:auto;font-size:.8em}details{margin:.6em 0}summary{cursor:pointer}\
.meta{color:#555}";

/// The page and how many figures it holds.
#[derive(Debug)]
pub struct Page {
    /// The whole HTML document.
    pub html: String,
    /// Figures inlined in it.
    pub figures: usize,
}

/// A chart inlined: the namespace attribute is implied inside HTML, so it is dropped and
/// the page names no URL.
fn figure(s: &mut String, svg: &str, count: &mut usize) {
    let svg = svg.replacen(r#" xmlns="http://www.w3.org/2000/svg""#, "", 1);
    let _ = writeln!(s, "<figure>{svg}</figure>");
    *count += 1;
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Info => "info",
    }
}

/// The whole page.
pub fn page(g: &Gathered) -> Page {
    let mut s = String::new();
    let mut figures = 0;
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>safegate report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
    );
    let _ = writeln!(s, "<h1>safegate report</h1>");
    let _ = writeln!(
        s,
        "<p class=\"meta\">safegate {}; seed {}; {}; measured in {:.1} s on {} threads.</p>",
        env!("CARGO_PKG_VERSION"),
        g.effort.seed,
        if g.effort.quick {
            "<strong>--quick</strong>: small samples, so some rows may miss the seed's tolerance or be inconclusive"
        } else {
            "each command's default samples"
        },
        g.seconds,
        rayon::current_num_threads()
    );
    let _ = writeln!(s, "<ul>");
    for (id, title) in SECTIONS {
        let _ = writeln!(s, "<li><a href=\"#{id}\">{}</a></li>", esc(title));
    }
    let _ = writeln!(s, "</ul>");
    reproduce(&mut s, g, &mut figures);
    compare(&mut s, g, &mut figures);
    verify(&mut s, g);
    falsify(&mut s, g, &mut figures);
    let _ = writeln!(s, "</body>\n</html>");
    Page { html: s, figures }
}

fn heading(s: &mut String, index: usize) {
    let (id, title) = SECTIONS[index];
    let _ = writeln!(s, "<h2 id=\"{id}\">{}</h2>", esc(title));
}

fn reproduce(s: &mut String, g: &Gathered, figures: &mut usize) {
    heading(s, 0);
    let rows: Vec<_> =
        g.reproduce.iter().flat_map(|(r, _)| r.rows.iter().map(move |row| (r.experiment, row))).collect();
    let count = |v: Verdict| rows.iter().filter(|(_, r)| r.verdict == v).count();
    let _ = writeln!(
        s,
        "<p>{} rows from {} experiments ({:.1} s of computing): <span class=\"pass\">{} pass</span>, <span class=\"fail\">{} fail</span>, <span class=\"info\">{} info</span>. As <code>safegate reproduce</code>.</p>",
        rows.len(),
        g.reproduce.len(),
        g.reproduce.iter().map(|(_, t)| t).sum::<f64>(),
        count(Verdict::Pass),
        count(Verdict::Fail),
        count(Verdict::Info)
    );
    let _ = writeln!(
        s,
        "<table>\n<tr><th>experiment</th><th>id</th><th>claim</th><th>seed</th><th>ours</th><th>tolerance</th><th>verdict</th></tr>"
    );
    for (exp, r) in &rows {
        let note = r.note.as_ref().map_or(String::new(), |n| format!("<br><small>{}</small>", esc(n)));
        let class = verdict_class(r.verdict);
        let _ = writeln!(
            s,
            "<tr id=\"row-{}\"><td>{exp}</td><td><code>{}</code></td><td>{}{note}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{class}</td></tr>",
            esc(&r.id),
            esc(&r.id),
            esc(&r.claim),
            esc(&r.seed),
            esc(&r.ours),
            esc(&r.tolerance)
        );
    }
    let _ = writeln!(s, "</table>");
    for (r, _) in &g.reproduce {
        for f in &r.figures {
            figure(s, &render_figure_as(f, "safegate reproduce"), figures);
        }
    }
}

fn opt(v: Option<f64>, scale: f64, unit: &str) -> String {
    v.map_or("–".into(), |x| format!("{}{unit}", fixed(x * scale, 2)))
}

fn arm_row(s: &mut String, a: &ArmReport, limit: f64) {
    let e = &a.exit_probability;
    let _ = writeln!(
        s,
        "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.3} [{:.3}, {:.3}] ({}/{})</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
        esc(&a.policy),
        if a.filtered { "on" } else { "off" },
        fixed(a.goodput, 1),
        compare_text::limit_ratio(a.goodput, limit),
        opt(a.sojourn_p99, 1.0, " s"),
        percent_tight(Some(a.beyond_boundary), 1),
        e.estimate,
        e.ci_low,
        e.ci_high,
        e.exits,
        e.trials,
        fixed(a.cvar.estimate, 3),
        percent_tight(Some(a.rejected_share), 1),
        a.backup_fraction.map_or("–".into(), |b| percent_tight(Some(b), 2)),
        esc(a.verdict)
    );
}

fn compare(s: &mut String, g: &Gathered, figures: &mut usize) {
    heading(s, 1);
    let r = &g.compare;
    let _ = writeln!(
        s,
        "<p>Boundary θ = {}, ε = {} over {} s (the embedded <code>boundaries/seed-80.toml</code>); {} replication(s) per arm; {} cases; {:.1} s. As <code>safegate compare --seeds {}</code>.</p>",
        number(r.threshold),
        number(r.epsilon),
        number(r.horizon),
        r.seeds,
        r.cases.len(),
        g.compare_seconds,
        r.seeds
    );
    for c in &r.cases {
        let _ = writeln!(
            s,
            "<h3 id=\"case-{}\">{}</h3>\n<p>{} [{}; physical limit {} req/s]</p>",
            esc(&c.name),
            esc(&c.name),
            esc(&c.description),
            if c.inside_envelope { "inside the envelope" } else { "outside the envelope or model" },
            nonzero(c.physical_limit, 1)
        );
        let _ = writeln!(
            s,
            "<table>\n<tr><th>policy</th><th>filter</th><th>goodput [req/s]</th><th>/limit</th><th>p99 sojourn</th><th>beyond θ</th><th>exit frequency [99 % CI] (exits/trials)</th><th>CVaR</th><th>rejected</th><th>backup</th><th>verdict</th></tr>"
        );
        for a in &c.arms {
            arm_row(s, a, c.physical_limit);
        }
        let _ = writeln!(s, "</table>");
    }
    let _ = writeln!(
        s,
        "<details><summary>The full text of <code>safegate compare</code> (recovery, ε per policy, the drain table, goodput vs load)</summary><pre>{}</pre></details>",
        esc(&compare_text::render(r, g.compare_seconds))
    );
    for (_, svg) in compare_text::figures(r) {
        figure(s, &svg, figures);
    }
}

fn verify_arm(s: &mut String, label: &str, a: &ArmResult) {
    let e = &a.exit_probability;
    let _ = write!(
        s,
        "<td>{label}</td><td class=\"n\">{:.4} [{:.4}, {:.4}] ({}/{})</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
        e.estimate,
        e.ci_low,
        e.ci_high,
        e.exits,
        e.trials,
        fixed(a.cvar.estimate, 4),
        percent_tight(Some(a.feasible_fraction), 1),
        percent_tight(Some(a.backup_fraction), 1),
        fixed(a.goodput, 2)
    );
}

fn verify(s: &mut String, g: &Gathered) {
    heading(s, 2);
    let _ = writeln!(
        s,
        "<p>Each file checked by Monte Carlo over its envelope on the seed's λ = 80 band, nominal <code>open</code>: {} trajectories per cell and arm on a {}×{} grid (as <code>safegate verify --boundary FILE --trials {} --traffic-points {} --health-points {}</code>). The headline is the scenario's own cell.</p>",
        g.effort.verify_trials,
        g.effort.traffic_points,
        g.effort.health_points,
        g.effort.verify_trials,
        g.effort.traffic_points,
        g.effort.health_points
    );
    let _ = writeln!(
        s,
        "<table>\n<tr><th>boundary</th><th>pass</th><th>ε</th><th>arm</th><th>exit frequency [99 % CI] (exits/trials)</th><th>CVaR</th><th>feasible</th><th>backup</th><th>goodput [req/s]</th><th>unfiltered violates ε in</th><th>seconds</th></tr>"
    );
    for (name, r, secs) in &g.verify {
        let class = r.outcome.label();
        let _ = write!(
            s,
            "<tr><td rowspan=\"2\"><code>{}</code></td><td rowspan=\"2\" class=\"{class}\">{class}</td><td rowspan=\"2\" class=\"n\">{}</td>",
            esc(name),
            number(r.epsilon)
        );
        verify_arm(s, "filtered", &r.scenario.filtered);
        let _ = writeln!(
            s,
            "<td rowspan=\"2\" class=\"n\">{} of {} cells</td><td rowspan=\"2\" class=\"n\">{secs:.1}</td></tr>",
            r.unfiltered_violations,
            r.envelope.len() + 1
        );
        let _ = write!(s, "<tr>");
        verify_arm(s, "unfiltered", &r.scenario.unfiltered);
        let _ = writeln!(s, "</tr>");
    }
    let _ = writeln!(s, "</table>");
    for (name, r, secs) in &g.verify {
        verify_detail(s, name, r, *secs);
    }
}

fn verify_detail(s: &mut String, name: &str, r: &VerifyReport, secs: f64) {
    let _ = writeln!(
        s,
        "<details><summary><code>{}</code>: {}</summary><pre>{}</pre></details>",
        esc(name),
        esc(&r.verdict),
        esc(&verify_text::render(r, name, secs))
    );
}

fn falsify(s: &mut String, g: &Gathered, figures: &mut usize) {
    heading(s, 3);
    let m = &g.falsify;
    let timing: Vec<String> = m.timings.iter().map(|(ids, t)| format!("{ids} {t:.1} s")).collect();
    let _ = writeln!(
        s,
        "<p>{} criteria in {:.1} s ({}), {} samples, as <code>safegate falsify{}</code>. F19 is measured on the live downstream emulator on loopback, not in the model.</p>",
        m.criteria.len(),
        m.seconds,
        esc(&timing.join(", ")),
        if g.effort.quick { "quick" } else { "standard" },
        if g.effort.quick { " --quick" } else { "" }
    );
    let _ = writeln!(s, "<table>\n<tr><th>id</th><th>verdict</th><th>key number</th></tr>");
    for c in &m.criteria {
        let label = c.verdict.label();
        let key = c.evidence.first().map_or("–".to_string(), evidence_line);
        let _ = writeln!(
            s,
            "<tr><td><a href=\"#{}\">{}</a></td><td class=\"{label}\">{label}</td><td>{}</td></tr>",
            esc(&c.id),
            esc(&c.id),
            esc(&key)
        );
    }
    let _ = writeln!(s, "</table>");
    for c in &m.criteria {
        let label = c.verdict.label();
        let _ = writeln!(s, "<h3 id=\"{}\">{} — <span class=\"{label}\">{label}</span></h3>", esc(&c.id), esc(&c.id));
        let _ = writeln!(
            s,
            "<p><strong>Condition:</strong> {}</p>\n<p><strong>Experiment:</strong> {}</p>",
            esc(&c.claim),
            esc(&c.experiment)
        );
        let _ = writeln!(s, "<table>\n<tr><th>evidence</th><th>value</th><th>unit</th></tr>");
        for e in &c.evidence {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
                esc(&e.name),
                esc(&value(e.value)),
                esc(&e.unit)
            );
        }
        let _ = writeln!(s, "</table>\n<p><strong>Reason:</strong> {}</p>", esc(&c.reason));
    }
    for f in &m.figures {
        figure(s, &render_figure_as(f, "safegate falsify"), figures);
    }
}

/// The summary `safegate report --json` prints for the page `page` of `g`, written to
/// `path`: the file (path, bytes, figures), the effort and seed, the sections, and per
/// section its counts (rows by verdict, cases and arms, each boundary's verdict, the
/// criteria by finding) and seconds.
pub fn summary(g: &Gathered, page: &Page, path: &Path) -> serde_json::Value {
    let rows: Vec<_> = g.reproduce.iter().flat_map(|(r, _)| &r.rows).collect();
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    let arms: usize = g.compare.cases.iter().map(|c| c.arms.len()).sum();
    let found = |v: Finding| g.falsify.criteria.iter().filter(|c| c.verdict == v).count();
    serde_json::json!({
        "path": path.display().to_string(),
        "bytes": page.html.len(),
        "seconds": g.seconds,
        "effort": if g.effort.quick { "quick" } else { "standard" },
        "seed": g.effort.seed,
        "figures": page.figures,
        "sections": SECTIONS.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        "reproduce": {
            "experiments": g.reproduce.len(),
            "rows": rows.len(),
            "pass": count(Verdict::Pass),
            "fail": count(Verdict::Fail),
            "info": count(Verdict::Info),
            "seconds": g.reproduce.iter().map(|(_, s)| s).sum::<f64>(),
        },
        "compare": {
            "cases": g.compare.cases.len(),
            "arms": arms,
            "seeds": g.compare.seeds,
            "seconds": g.compare_seconds,
        },
        "verify": g.verify.iter().map(|(name, r, s)| serde_json::json!({
            "boundary": name, "verdict": r.verdict, "pass": r.pass, "seconds": s,
        })).collect::<Vec<_>>(),
        "falsify": {
            "criteria": g.falsify.criteria.len(),
            "holds": found(Finding::Holds),
            "falsified": found(Finding::Falsified),
            "inconclusive": found(Finding::Inconclusive),
            "seconds": g.falsify.seconds,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_figures_name_no_url() {
        assert_eq!(esc("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
        let mut s = String::new();
        let mut n = 0;
        figure(&mut s, r#"<svg xmlns="http://www.w3.org/2000/svg" width="9"></svg>"#, &mut n);
        assert_eq!((s.trim(), n), (r#"<figure><svg width="9"></svg></figure>"#, 1));
    }

    #[test]
    fn the_summary_counts_each_section_and_names_the_file() {
        use safegate_studies::compare::CompareReport;
        use safegate_studies::falsify::Measured;
        let compare = CompareReport {
            threshold: 0.7,
            epsilon: 0.01,
            horizon: 600.0,
            seeds: 2,
            exit_trials: 0,
            cases: Vec::new(),
            curve: Vec::new(),
            curve_limit: Vec::new(),
            probe_collapse: Vec::new(),
        };
        let falsify = Measured { criteria: Vec::new(), figures: Vec::new(), timings: Vec::new(), seconds: 2.5 };
        let g = Gathered {
            effort: Effort::new(true, 9),
            reproduce: Vec::new(),
            compare,
            compare_seconds: 1.5,
            verify: Vec::new(),
            falsify,
            seconds: 4.0,
        };
        let page = Page { html: "<html></html>".into(), figures: 3 };
        let v = summary(&g, &page, Path::new("out/safegate-report.html"));
        assert_eq!(v["path"], "out/safegate-report.html");
        assert_eq!((v["bytes"].as_u64(), v["figures"].as_u64()), (Some(13), Some(3)));
        assert_eq!((v["effort"].as_str(), v["seed"].as_u64()), (Some("quick"), Some(9)));
        assert_eq!(v["sections"], serde_json::json!(["reproduce", "compare", "verify", "falsify"]));
        assert_eq!(v["reproduce"]["rows"], 0);
        assert_eq!((v["compare"]["seeds"].as_u64(), v["compare"]["seconds"].as_f64()), (Some(2), Some(1.5)));
        assert_eq!(v["verify"], serde_json::json!([]));
        assert_eq!(v["falsify"]["seconds"], 2.5);
    }
}
