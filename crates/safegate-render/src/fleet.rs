//! The figures of the fleet model's suite (`safegate fleet --sim`).

use safegate_studies::fleet::suite::{PriceRun, Suite};

use crate::chart::{render, Line, Panel, Rule, PALETTE};
use crate::numbers::{fixed, number};

/// The figures of `safegate fleet --sim`, each with its file name (`tau` the measured delay threshold, `runs` and `p_star`:
/// [`safegate_studies::fleet::suite::price_around_threshold`]): the price at 0.8× and 1.2× its measured delay threshold, and the tipping
/// curves.
pub fn figures(suite: &Suite, tau: f64, runs: Vec<PriceRun>, p_star: f64) -> Vec<(&'static str, String)> {
    let (tipping, fallback) = (&suite.tipping, &suite.fallback);
    let mut out = Vec::new();
    let mut lines = Vec::new();
    let mut y_max: f64 = 0.0;
    for (k, run) in runs.into_iter().enumerate() {
        y_max = y_max.max(run.price.iter().cloned().fold(0.0, f64::max));
        lines.push(Line {
            name: format!("delay {} s ({}× the threshold)", fixed(run.delay, 3), number(run.factor)),
            color: PALETTE[k],
            x: run.t,
            y: run.price,
            dashed: false,
        });
    }
    let panel = Panel {
        label: "price p".into(),
        y_min: 0.0,
        y_max: y_max * 1.05,
        lines,
        rules: vec![Rule { y: p_star, label: format!("p* = {p_star:.2}") }],
    };
    let svg = render(
        "the price below and above its delay threshold",
        &format!("threshold {tau:.4} s"),
        "time [s]",
        0.0,
        10.0,
        &[panel],
    );
    out.push(("fleet-price-delay.svg", svg));
    let xs: Vec<f64> = tipping.points.iter().map(|p| p.f).collect();
    let top = tipping.points.iter().map(|p| p.freeze.max(p.fallback)).fold(1.0, f64::max);
    let panel = Panel {
        label: "cost (goodput when all freeze / goodput)".into(),
        y_min: 0.0,
        y_max: top * 1.05,
        lines: vec![
            Line {
                name: "freeze".into(),
                color: PALETTE[1],
                x: xs.clone(),
                y: tipping.points.iter().map(|p| p.freeze).collect(),
                dashed: false,
            },
            Line {
                name: format!("fall back ({fallback})"),
                color: PALETTE[0],
                x: xs.clone(),
                y: tipping.points.iter().map(|p| p.fallback).collect(),
                dashed: false,
            },
            Line {
                name: "seed: freeze 1 + f".into(),
                color: PALETTE[1],
                x: vec![0.0, 1.0],
                y: vec![1.0, 2.0],
                dashed: true,
            },
            Line {
                name: "seed: fall back 1.1 + 0.2f".into(),
                color: PALETTE[0],
                x: vec![0.0, 1.0],
                y: vec![1.1, 1.3],
                dashed: true,
            },
        ],
        rules: vec![],
    };
    let svg = render(
        "freeze or fall back: the tipping share",
        &format!(
            "{} gates; f = share of the others falling back; f* = {}",
            tipping.gates,
            tipping.f_star.map_or("none".into(), |f| format!("{f:.3}"))
        ),
        "f",
        0.0,
        1.0,
        &[panel],
    );
    out.push(("fleet-tipping.svg", svg));
    out
}
