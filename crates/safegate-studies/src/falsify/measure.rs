//! A selection of criteria measured: which ids were asked for, the experiments that answer
//! them, the figures and how long each took.

use std::time::Instant;

use super::{experiments_for, Criterion, Effort, Figure, IDS};

/// Every criterion id, in order: the model's ([`IDS`]) and F19, which measures a live
/// downstream and so is measured by the caller (see [`measure`]).
pub const ALL_IDS: [&str; 10] = ["F10", "F11", "F12", "F13", "F14", "F15", "F16", "F17", "F18", "F19"];

/// An id that names no criterion, as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown criterion {given:?}: expected one of {}", ALL_IDS.join(", "))]
pub struct UnknownCriterion {
    /// The id as given.
    pub given: String,
}

/// The ids asked for, upper-cased and deduplicated in criterion order (all of them when
/// `ids` is empty); an unknown one is the error, named.
///
/// ```
/// use safegate_studies::falsify::selected;
/// assert_eq!(selected(&["f19".into(), "F10".into()]).unwrap(), ["F10", "F19"]);
/// assert!(selected(&["F9".into()]).is_err());
/// ```
pub fn selected(ids: &[String]) -> Result<Vec<String>, UnknownCriterion> {
    let mut wanted = Vec::new();
    for raw in ids {
        let id = raw.trim().to_ascii_uppercase();
        if !ALL_IDS.contains(&id.as_str()) {
            return Err(UnknownCriterion { given: raw.clone() });
        }
        wanted.push(id);
    }
    Ok(ALL_IDS
        .iter()
        .filter(|id| wanted.is_empty() || wanted.iter().any(|w| w == *id))
        .map(|s| s.to_string())
        .collect())
}

/// What [`measure`] found: the criteria asked for, the figures, per-experiment seconds.
#[derive(Debug)]
pub struct Measured {
    /// The criteria asked for, in order.
    pub criteria: Vec<Criterion>,
    /// The experiments' figures.
    pub figures: Vec<Figure>,
    /// Each experiment's criteria (joined with `–`) and its seconds.
    pub timings: Vec<(String, f64)>,
    /// Seconds for the whole measurement.
    pub seconds: f64,
}

/// Measure the criteria `ids` (as [`selected`] returns them), small samples when `quick`.
/// `progress` is told the fraction of the model's experiments done; `outside` measures a
/// criterion this crate cannot (F19, a live downstream on loopback) and is called once for
/// each such id asked for, after the model's.
pub fn measure(
    ids: &[String],
    quick: bool,
    seed: u64,
    progress: &(dyn Fn(f64) + Sync),
    outside: &mut dyn FnMut(&str) -> Criterion,
) -> Measured {
    let effort = if quick { Effort::quick(seed) } else { Effort::standard(seed) };
    let model_ids: Vec<String> = ids.iter().filter(|id| IDS.contains(&id.as_str())).cloned().collect();
    let chosen = if model_ids.is_empty() { vec![] } else { experiments_for(&model_ids) };

    let started = Instant::now();
    let n = chosen.len().max(1) as f64;
    let mut criteria: Vec<Criterion> = Vec::new();
    let mut figures: Vec<Figure> = Vec::new();
    let mut timings = Vec::new();
    for (i, e) in chosen.iter().enumerate() {
        let t = Instant::now();
        let out = (e.run)(&effort, &|f| progress((i as f64 + f.clamp(0.0, 1.0)) / n));
        progress((i + 1) as f64 / n);
        timings.push((e.ids.join("–"), t.elapsed().as_secs_f64()));
        criteria.extend(out.criteria);
        figures.extend(out.figures);
    }
    for id in ALL_IDS.iter().filter(|id| !IDS.contains(id) && ids.iter().any(|x| x == *id)) {
        let t = Instant::now();
        criteria.push(outside(id));
        timings.push((id.to_string(), t.elapsed().as_secs_f64()));
    }
    criteria.retain(|c| ids.contains(&c.id));
    Measured { criteria, figures, timings, seconds: started.elapsed().as_secs_f64() }
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
}
