//! `safegate bound`: the horizon bounds for given margins and noise.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use safegate_core::filter::bound::{horizon_report, HorizonInputs};
use safegate_render::numbers::{fixed, nonzero, number};

/// Flags of `safegate bound` (barrier units: h = θ − q/Q; σ_h = σ_q/Q; δ = ξ_max/Q).
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub(crate) struct BoundArgs {
    /// Starting margin h₀ = θ − q₀/Q.
    #[arg(long)]
    pub(crate) h0: f64,
    /// Decay α ∈ (0, 1] of the expectation condition E[h⁺] ≥ α·h.
    #[arg(long, default_value_t = 1.0)]
    pub(crate) alpha: f64,
    /// Std of one step's change of h (σ_q/Q).
    #[arg(long)]
    pub(crate) sigma: f64,
    /// Bound on one step's upward surprise of the queue, in h units (ξ_max/Q).
    #[arg(long)]
    pub(crate) delta: f64,
    /// Steps K in the horizon (at least 1: a bound over no step says nothing).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) steps: u64,
    /// Upper bound B of h for the Ville-type bound (default: h₀ plus one δ per step is not
    /// assumed; give the barrier's maximum, θ for a queue barrier).
    #[arg(long)]
    pub(crate) upper: Option<f64>,
    /// Also solve the inverse design: the smallest margin that gives this ε.
    #[arg(long)]
    pub(crate) epsilon: Option<f64>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(a: &BoundArgs) -> Result<ExitCode> {
    // The inputs' names → the flags that set them.
    let flag = |mut e: safegate_core::RangeError| {
        e.field = format!("--{}", if e.field == "sigma_h" { "sigma" } else { e.field.as_str() });
        e
    };
    let x = HorizonInputs::new(a.h0, a.alpha, a.sigma, a.delta, a.steps).map_err(flag)?;
    let r = horizon_report(&x, a.upper, a.epsilon).map_err(flag)?;
    if a.json {
        // Through a JSON value: its keys print sorted, as they always have.
        println!("{}", serde_json::to_string_pretty(&serde_json::to_value(r)?)?);
        return Ok(ExitCode::SUCCESS);
    }
    let f = r.freedman;
    println!(
        "inputs: h0 = {}, α = {}, σ_h = {}, δ = {}, K = {}",
        number(x.h0),
        number(x.alpha),
        number(x.sigma_h),
        number(x.delta),
        x.steps
    );
    println!(
        "Freedman (Cosner, Culbertson & Ames 2024, Thm 3): λ = {}, s² = {}, P(exit within K) ≤ {}",
        nonzero(f.lambda, 4),
        nonzero(f.s2, 4),
        fixed(f.probability, 6)
    );
    match (r.ville, a.upper) {
        (Some(v), Some(b)) => println!("Ville-type (h ≤ {}): P(exit within K) ≤ {}", number(b), fixed(v, 6)),
        _ => println!("Ville-type: give --upper B (the barrier's maximum, θ for a queue) to compute it"),
    }
    if let Some(i) = r.inverse {
        let eps = number(i.epsilon);
        match i.required_h0 {
            Some(h) if h.is_finite() => {
                let h = nonzero(h, 6);
                println!("inverse design: ε = {eps} needs h0 ≥ {h} (start at most {h}·Q below the boundary)")
            }
            // α^K underflows to 0: no finite margin survives K steps of decay.
            Some(_) => println!(
                "inverse design: ε = {eps} needs a starting margin beyond any finite number (α^K = {} over K steps)",
                number(x.alpha.powf(x.steps as f64))
            ),
            None => println!("inverse design: no starting margin achieves ε = {eps} with this noise over K steps"),
        }
    }
    Ok(ExitCode::SUCCESS)
}
