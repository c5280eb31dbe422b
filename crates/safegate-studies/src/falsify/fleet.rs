//! F13–F15: the freeze-or-fall-back game, from [`crate::fleet::stag`] unchanged.
//!
//! The two-player table and the tipping curves are measured in the running case
//! ([`StagConfig::running_case`]: gates of the seed's pool offered 80 req/s each, a
//! dependency sized `C = 2·M`, one health dip while the coordinator is silent, falling back
//! to the seed's probe cycle), exactly as `safegate fleet --sim` measures them, and
//! [`stag::verdicts`] decides; this module only maps its words to [`Verdict`] and its
//! numbers to [`Evidence`].

use super::{Criterion, Effort, Evidence, Outcome, Verdict};
use crate::fleet::stag::{self, StagConfig, SEED_F_STAR};

/// The local controller a gate falls back to (`safegate fleet --sim`'s default).
pub const FALLBACK: &str = "cycle";

/// Offered rate per gate \[req/s\].
pub const RATE: f64 = 80.0;

const CLAIMS: [(&str, &str); 3] = [
    ("F13", "falling back to uncoordinated local control when the price is lost has a bounded cost comparable to or better than freezing's"),
    ("F14", "mutual freezing is the only Nash equilibrium of the freeze/fall-back game, or falling back's worst-case regret exceeds freezing's"),
    ("F15", "the share of others falling back at which falling back pays differs substantially from 1/8, or the cost curves are not near-linear"),
];

/// F13–F15.
pub fn f13_f15(effort: &Effort) -> Outcome {
    let m = effort.fleet_size.max(2);
    let setup = format!(
        "fleet model, running case: gates offered {RATE} req/s, C = 2·M, one dip while the price is silent, fallback `{FALLBACK}`; two-player table and an M = {m} tipping curve"
    );
    let measured = stag::two_player(&StagConfig::running_case(2, FALLBACK, RATE))
        .and_then(|p| stag::tipping(&StagConfig::running_case(m, FALLBACK, RATE)).map(|t| (p, t)));
    let (p, t) = match measured {
        Ok(x) => x,
        Err(e) => {
            let criteria = CLAIMS
                .iter()
                .map(|(id, claim)| Criterion {
                    id: (*id).into(),
                    claim: (*claim).into(),
                    experiment: setup.clone(),
                    evidence: vec![],
                    verdict: Verdict::Inconclusive,
                    reason: format!("the fleet model refused the running case: {e}"),
                })
                .collect();
            return Outcome { criteria, figures: vec![] };
        }
    };
    let verdicts = stag::verdicts(&p, &t);
    let evidence = |id: &str| -> Vec<Evidence> {
        match id {
            "F13" => vec![
                Evidence::new("cost, both fall back", p.both_fallback, "× both-freeze cost (the seed: 1.3)"),
                Evidence::new("cost, lone defector", p.lone_fallback, "× both-freeze cost (the seed: 1.1)"),
                Evidence::new("goodput per gate, both freeze", p.goodput_both_freeze, "req/s"),
            ],
            "F14" => vec![
                Evidence::new("worst-case regret, fall back", p.regret_fallback(), "cost (the seed: 0.1)"),
                Evidence::new("worst-case regret, freeze", p.regret_freeze(), "cost (the seed: 0.7)"),
                Evidence::new(
                    "(freeze, freeze) is a Nash equilibrium",
                    f64::from(u8::from(p.freeze_is_nash())),
                    "1 = yes, 0 = no",
                ),
                Evidence::new(
                    "(fall back, fall back) is a Nash equilibrium",
                    f64::from(u8::from(p.fallback_is_nash())),
                    "1 = yes, 0 = no",
                ),
            ],
            _ => vec![
                Evidence::new(
                    "tipping share f*",
                    t.f_star.unwrap_or(f64::NAN),
                    format!("share of the other {} gates (the seed: {SEED_F_STAR}; null: no crossing)", t.gates - 1),
                ),
                Evidence::new("largest departure from a straight line", t.nonlinearity, "share of the curve's range"),
            ],
        }
    };
    let criteria = CLAIMS
        .iter()
        .map(|(id, claim)| {
            let v = verdicts.iter().find(|v| v.id == *id);
            Criterion {
                id: (*id).into(),
                claim: (*claim).into(),
                experiment: setup.clone(),
                evidence: evidence(id),
                verdict: v.map_or(Verdict::Inconclusive, |v| v.verdict),
                reason: v.map_or_else(|| "fleet::stag gave no verdict".into(), |v| v.evidence.clone()),
            }
        })
        .collect();
    Outcome { criteria, figures: vec![] }
}
