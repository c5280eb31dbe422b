//! `safegate bound`: the horizon bounds for given margins and noise.

use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Args;
use safegate_core::filter::bound::{freedman, required_margin, ville, HorizonInputs};

/// Flags of `safegate bound` (barrier units: h = θ − q/Q; σ_h = σ_q/Q; δ = ξ_max/Q).
#[derive(Debug, Args)]
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
    /// Steps K in the horizon.
    #[arg(long)]
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
    if !(a.alpha > 0.0 && a.alpha <= 1.0) {
        bail!("--alpha = {} is out of range: allowed (0, 1]", a.alpha);
    }
    if !(a.sigma >= 0.0 && a.sigma.is_finite()) {
        bail!("--sigma = {} is out of range: allowed [0, ∞)", a.sigma);
    }
    if !(a.delta > 0.0 && a.delta.is_finite()) {
        bail!("--delta = {} is out of range: allowed (0, ∞)", a.delta);
    }
    if !a.h0.is_finite() {
        bail!("--h0 = {} is out of range: allowed a finite margin", a.h0);
    }
    let x = HorizonInputs { h0: a.h0, alpha: a.alpha, sigma_h: a.sigma, delta: a.delta, steps: a.steps };
    let f = freedman(&x);
    let v = a.upper.map(|b| ville(a.h0, a.alpha, b, a.steps));
    let inverse = a.epsilon.map(|e| required_margin(&x, e));
    if a.json {
        let doc = serde_json::json!({
            "inputs": x,
            "freedman": f,
            "ville": v,
            "inverse": a.epsilon.map(|e| serde_json::json!({"epsilon": e, "required_h0": inverse.flatten()})),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("inputs: h0 = {}, α = {}, σ_h = {}, δ = {}, K = {}", a.h0, a.alpha, a.sigma, a.delta, a.steps);
        println!(
            "Freedman (Cosner, Culbertson & Ames 2024, Thm 3): λ = {:.4}, s² = {:.4}, P(exit within K) ≤ {:.6}",
            f.lambda, f.s2, f.probability
        );
        match v {
            Some(v) => println!("Ville-type (h ≤ {}): P(exit within K) ≤ {v:.6}", a.upper.unwrap_or_default()),
            None => println!("Ville-type: give --upper B (the barrier's maximum, θ for a queue) to compute it"),
        }
        if let (Some(e), Some(r)) = (a.epsilon, inverse) {
            match r {
                Some(h) => {
                    println!("inverse design: ε = {e} needs h0 ≥ {h:.6} (start at most {h:.6}·Q below the boundary)")
                }
                None => println!("inverse design: no starting margin achieves ε = {e} with this noise over K steps"),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
