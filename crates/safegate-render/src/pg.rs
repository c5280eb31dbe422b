//! `safegate pg`'s text and figure: the PostgreSQL service curve with its fits and their
//! residuals (a table and a chart), and the seed's arms live beside the model.

use safegate_live::pg_study::{ArmResult, PgCurve};

use crate::chart::{Line, Panel, PALETTE};
use crate::numbers::fixed;

/// The measured curve with each fit and its relative residual, then the fits' parameters.
pub fn curve_table(c: &PgCurve) -> String {
    let f = &c.fit;
    let mut s = format!(
        "PostgreSQL service curve ({} hot rows, {} ms held, {}, pool {}, {} retries; {} passes of {} s a level)\n\
         {:>4} {:>9} {:>9} {:>8} {:>16} {:>16} {:>16}\n",
        c.spec.rows,
        c.spec.hold_ms,
        c.spec.isolation.name(),
        c.spec.pool,
        c.spec.retries,
        c.passes,
        c.secs,
        "n",
        "X tx/s",
        "failed/s",
        "mean ms",
        "USL (resid)",
        "p=2 (resid)",
        "p free (resid)"
    );
    let cell = |model: f64, x: f64| format!("{:>7.1} ({:>+5.0}%)", model, 100.0 * (x - model) / model);
    for p in &c.levels {
        let n = p.n as f64;
        s += &format!(
            "{:>4} {:>9.1} {:>9.1} {:>8.1} {:>16} {:>16} {:>16}\n",
            p.n,
            p.rate,
            p.failed_rate,
            p.mean_ms,
            cell(f.usl.at(n), p.rate),
            cell(f.contention.at(n), p.rate),
            cell(f.free.at(n), p.rate)
        );
    }
    s += &format!(
        "peak {} tx/s at n = {}\n\
         USL: λ = {}, σ = {}, κ = {} (log rmse {})\n\
         contention law, p = 2: s = {}, knee C = {} (log rmse {})\n\
         contention law, p free: s = {}, C = {}, p = {} (log rmse {})\n",
        fixed(c.peak, 1),
        c.peak_n,
        fixed(f.usl.lambda, 2),
        fixed(f.usl.sigma, 4),
        fixed(f.usl.kappa, 5),
        fixed(f.usl.quality.log_rmse, 3),
        fixed(f.contention.rate, 2),
        fixed(f.contention.comfortable, 2),
        fixed(f.contention.quality.log_rmse, 3),
        fixed(f.free.rate, 2),
        fixed(f.free.comfortable, 2),
        fixed(f.free.exponent, 2),
        fixed(f.free.quality.log_rmse, 3),
    );
    if let Some(t) = &f.tail {
        s += &format!(
            "tail past n = {}: X ∝ n^(1−p) with p = {} [{}, {}] (p = 2 is the seed's 1/n)\n",
            fixed(t.from_n, 1),
            fixed(t.exponent, 2),
            fixed(t.lo, 2),
            fixed(t.hi, 2)
        );
    }
    s
}

/// The curve and its three fits, against n.
pub fn curve_chart(c: &PgCurve) -> String {
    let ns: Vec<f64> = c.levels.iter().map(|p| p.n as f64).collect();
    let top = c.levels.iter().map(|p| p.rate).fold(0.0, f64::max) * 1.15;
    let grid: Vec<f64> =
        (0..=200).map(|k| 1.0 + k as f64 * (ns.last().copied().unwrap_or(1.0) - 1.0) / 200.0).collect();
    let fit = |name: &str, color, at: &dyn Fn(f64) -> f64| Line {
        name: name.into(),
        color,
        x: grid.clone(),
        y: grid.iter().map(|&n| at(n)).collect(),
        dashed: true,
    };
    let f = &c.fit;
    let panel = Panel {
        label: "committed tx/s".into(),
        y_min: 0.0,
        y_max: top.max(1.0),
        lines: vec![
            Line {
                name: "measured X(n)".into(),
                color: PALETTE[0],
                x: ns.clone(),
                y: c.levels.iter().map(|p| p.rate).collect(),
                dashed: false,
            },
            fit("USL", PALETTE[1], &|n| f.usl.at(n)),
            fit("s·n·min(1,(C/n)²)", PALETTE[2], &|n| f.contention.at(n)),
            fit("p free", PALETTE[3], &|n| f.free.at(n)),
        ],
        rules: vec![],
    };
    let subtitle = format!(
        "{} hot rows, {} ms held, {}, pool {}: knee C = {:.1}, peak {:.0} tx/s",
        c.spec.rows,
        c.spec.hold_ms,
        c.spec.isolation.name(),
        c.spec.pool,
        f.contention.comfortable,
        c.peak
    );
    crate::chart::render(
        "PostgreSQL throughput X(n)",
        &subtitle,
        "clients n",
        1.0,
        ns.last().copied().unwrap_or(1.0),
        &[panel],
    )
}

/// Each arm live and in the model, then the filter-with-cap against the best fixed one.
pub fn arms_table(results: &[ArmResult], line: f64, epsilon: f64) -> String {
    let mut s = format!(
        "{:<14} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>9} {:>9}\n",
        "arm", "goodput", "model", "backlog", "model", "beyond θ", "model", "failed/s", "p99 s"
    );
    for r in results {
        let (l, m) = (&r.live, &r.model);
        s += &format!(
            "{:<14} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}% {:>9.1}% {:>9.1} {:>9}\n",
            r.label,
            l.goodput,
            m.goodput,
            l.backlog_mean,
            m.backlog_mean,
            100.0 * l.share_beyond,
            100.0 * m.share_beyond,
            l.failed_rate,
            l.sojourn_p99.map_or("n/a".into(), |p| fixed(p, 3))
        );
    }
    let best = results
        .iter()
        .filter(|r| r.label.starts_with("fixed"))
        .max_by(|a, b| a.live.goodput.total_cmp(&b.live.goodput));
    let capped = results.iter().find(|r| r.label == "filter + cap");
    s += &format!("backlog and beyond θ against the line θ·cap = {line:.0} jobs; ε = {epsilon}\n");
    if let (Some(b), Some(c)) = (best, capped) {
        let share = c.live.goodput / b.live.goodput.max(1e-9);
        s += &format!(
            "filter + cap: {:.1} jobs/s = {:.2} of the best fixed concurrency ({}: {:.1}) [target ≥ 0.9: {}]\n",
            c.live.goodput,
            share,
            b.label,
            b.live.goodput,
            if share >= 0.9 { "met" } else { "NOT met" }
        );
    }
    for r in results.iter().filter(|r| r.label.starts_with("filter")) {
        s += &format!(
            "{}: time beyond θ·cap {:.2} % of the run [within ε = {:.0} %: {}]\n",
            r.label,
            100.0 * r.live.share_beyond,
            100.0 * epsilon,
            if r.live.share_beyond <= epsilon { "yes" } else { "NO" }
        );
        s += &excursions(&r.excursions);
    }
    s
}

/// Most excursions [`arms_table`] lists for an arm (the JSON has them all, and the series).
const LISTED: usize = 4;

/// An arm's stretches beyond the line, one line each (at most [`LISTED`]).
fn excursions(all: &[safegate_live::pg_study::Excursion]) -> String {
    let mut s = String::new();
    for e in all.iter().take(LISTED) {
        s += &format!(
            "  beyond the line from {} s to {} s, deepest {:.0} jobs\n",
            fixed(e.start, 2),
            fixed(e.end, 2),
            e.peak
        );
    }
    if all.len() > LISTED {
        s += &format!("  … and {} more (--json has them all, and each arm's series)\n", all.len() - LISTED);
    }
    s
}

#[cfg(test)]
mod tests {
    use safegate_live::pg_study::ArmFigures;

    use super::*;

    fn arm(label: &str, goodput: f64, share_beyond: f64) -> ArmResult {
        let f = ArmFigures {
            goodput,
            backlog_mean: 10.0,
            backlog_max: 20.0,
            share_beyond,
            failed_rate: 0.0,
            sojourn_p99: None,
        };
        ArmResult {
            label: label.into(),
            live: f,
            model: f,
            interventions: None,
            lost: 0,
            excursions: Vec::new(),
            filter: None,
            series: Default::default(),
        }
    }

    #[test]
    fn the_arms_table_judges_the_cap_against_the_best_fixed_and_each_filter_against_epsilon() {
        let rows = [
            arm("filter", 300.0, 0.2),
            arm("filter + cap", 540.0, 0.0),
            arm("fixed 4", 600.0, 0.9),
            arm("fixed 8", 400.0, 0.9),
        ];
        let t = arms_table(&rows, 140.0, 0.01);
        assert!(t.contains("= 0.90 of the best fixed concurrency (fixed 4: 600.0) [target ≥ 0.9: met]"), "{t}");
        assert!(t.contains("filter: time beyond θ·cap 20.00 % of the run [within ε = 1 %: NO]"), "{t}");
        assert!(t.contains("filter + cap: time beyond θ·cap 0.00 % of the run [within ε = 1 %: yes]"), "{t}");
        assert!(t.contains("n/a"), "a p99 with no sample reads n/a: {t}");
        let t = arms_table(&[arm("filter + cap", 500.0, 0.0), arm("fixed 4", 600.0, 0.9)], 140.0, 0.01);
        assert!(t.contains("[target ≥ 0.9: NOT met]"), "{t}");
        // A filtered arm's crossings are listed, at most four, with how many more.
        let mut crossed = arm("filter + cap", 500.0, 0.03);
        crossed.excursions = (0..6)
            .map(|k| safegate_live::pg_study::Excursion { start: f64::from(k), end: f64::from(k) + 0.5, peak: 150.0 })
            .collect();
        let t = arms_table(&[crossed], 140.0, 0.01);
        assert!(t.contains("  beyond the line from 0.00 s to 0.50 s, deepest 150 jobs\n"), "{t}");
        assert_eq!(t.matches("beyond the line from").count(), 4, "{t}");
        assert!(t.contains("… and 2 more"), "{t}");
    }
}
