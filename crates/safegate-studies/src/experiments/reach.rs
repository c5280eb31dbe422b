//! Which scenario keys each experiment reads from its [`Setup`], and which overrides
//! (`safegate reproduce --set KEY=VALUE`) reach the experiments and rows a run selects.
//!
//! The experiments read the setup's model ([`Setup::base`]) but set much of it themselves as
//! the seed's setup requires: λ, the health schedule's kind and start, the run's length,
//! its start and drain level, the gate's θ. An override of one of those would be shown as a
//! change of the model while every row ran as before; [`check_overrides`] refuses it,
//! naming the experiments and rows it could not reach and what they do read. Each
//! experiment states what it reads in [`Experiment::reads`], by groups of rows; the
//! experiment's tests hold the statements to what the rows show.

use std::fmt;

use safegate_sim::scenario::{Scenario, ScenarioError};

use super::{Experiment, Selection};

/// The scenario keys a group of an experiment's rows reads from the [`Setup`](super::Setup).
#[derive(Debug, Clone, Copy)]
pub struct Reads {
    /// Row-id prefixes of the rows the group is for; empty: every row no earlier group
    /// claims.
    pub rows: &'static [&'static str],
    /// The keys: a section (`model`, `retries`) stands for every key under it.
    pub keys: &'static [&'static str],
}

/// What a fluid run of the experiments takes from the setup's model
/// ([`Setup::model`](super::Setup)): the pool, the dip's shape (as a cycle or as one dip),
/// the retry rule and the step.
pub(crate) const FLUID: &[&str] = &[
    "model",
    "health.high",
    "health.low",
    "health.hold_high",
    "health.ramp_down",
    "health.hold_low",
    "health.ramp_up",
    "retries",
    "run.dt",
];

/// The pool's keys its joint ceiling `s·C²/P` reads.
pub(crate) const CEILING: &[&str] = &["model.executors", "model.comfortable", "model.rate"];

/// Whether `pattern` (a section or a key) covers `key`.
fn covers(pattern: &str, key: &str) -> bool {
    key == pattern || key.strip_prefix(pattern).is_some_and(|rest| rest.starts_with('.'))
}

/// The group of `e`'s reads that row `row` belongs to.
fn group<'e>(e: &'e Experiment, row: &str) -> Option<&'e Reads> {
    e.reads.iter().find(|g| g.rows.is_empty() || g.rows.iter().any(|p| row.starts_with(p)))
}

/// Whether row `row` of experiment `e` reads `key` (a dotted scenario key).
pub fn row_reads(e: &Experiment, row: &str, key: &str) -> bool {
    group(e, row).is_some_and(|g| g.keys.iter().any(|p| covers(p, key)))
}

/// Whether any row of experiment `e` reads `key`.
pub fn experiment_reads(e: &Experiment, key: &str) -> bool {
    e.reads.iter().any(|g| g.keys.iter().any(|p| covers(p, key)))
}

/// What the experiments do instead of reading `key`, where one thing explains it.
fn instead(key: &str) -> Option<&'static str> {
    let is = |p: &str| covers(p, key);
    Some(if is("traffic") {
        "each experiment sets λ itself (no spike), as the seed's setup requires"
    } else if is("health.kind") || is("health.start") || is("health.file") {
        "each experiment sets its own health schedule (the cycle, or one dip at 20 s); of [health] only the dip's shape is read"
    } else if is("health.noise") || is("health.noise_period") {
        "the experiments run without health noise"
    } else if is("run.duration") || is("run.initial_queue") || is("run.drain_level") || is("run.warmup") {
        "each experiment sets its runs' length, start, drain level and window itself"
    } else if is("run.seed") {
        "reproduce's random draws take --seed"
    } else if is("run.mode") || is("service") {
        "the experiments run the fluid model, which draws no service times"
    } else if is("gate") {
        "the experiments set the seed's gate (θ, sensitivity) themselves"
    } else if is("boundary") {
        "no experiment runs under a boundary"
    } else if is("name") || is("description") {
        "a scenario's name and description are not part of the model"
    } else {
        return None;
    })
}

/// Why the experiments do not read the dip's shape key `key`: they take the shape from a
/// cycle or a dip, and a constant or traced health has none ([`super::setup`]'s
/// `dip_shape`).
fn shape_unread(scenario: &Scenario, key: &str) -> Option<String> {
    use safegate_sim::scenario::HealthKind;
    let shape = FLUID.iter().any(|k| k.starts_with("health.") && covers(k, key));
    let kind = scenario.health.kind;
    (shape && matches!(kind, HealthKind::Constant | HealthKind::Trace)).then(|| {
        let name = if kind == HealthKind::Constant { "constant" } else { "trace" };
        format!(
            "the experiments take the dip's shape from health.kind = \"cycle\" or \"dip\"; this one's is \"{name}\""
        )
    })
}

/// An experiment or a row a run selected: the experiment whole (`row: None`) or one of its
/// rows.
#[derive(Debug, Clone, Copy)]
struct Target<'a> {
    experiment: &'static Experiment,
    row: Option<&'a str>,
}

impl Target<'_> {
    fn reads(&self, key: &str) -> bool {
        match self.row {
            None => experiment_reads(self.experiment, key),
            Some(r) => row_reads(self.experiment, r, key),
        }
    }

    fn name(&self) -> String {
        self.row.map_or_else(|| self.experiment.id.to_string(), str::to_string)
    }

    /// What it reads, in words (`model.*, run.dt`), or "no scenario key".
    fn reads_text(&self) -> String {
        let mut keys: Vec<&str> = Vec::new();
        let groups: Vec<&Reads> = match self.row {
            None => self.experiment.reads.iter().collect(),
            Some(r) => group(self.experiment, r).into_iter().collect(),
        };
        for g in groups {
            for k in g.keys {
                if !keys.contains(k) {
                    keys.push(k);
                }
            }
        }
        keys_text(&keys)
    }
}

#[cfg(test)]
#[test]
fn keys_are_told_in_few_words() {
    assert_eq!(keys_text(&[]), "no scenario key");
    assert_eq!(
        keys_text(FLUID),
        "model.*, health.{high, low, hold_high, ramp_down, hold_low, ramp_up}, retries.*, run.dt"
    );
    assert_eq!(keys_text(&["model.executors", "model", "run.dt"]), "model.*, run.dt");
    assert_eq!(keys_text(CEILING), "model.{executors, comfortable, rate}");
}

/// Keys in words: a section as `model.*`, a key a section covers left out, keys of one
/// table together (`health.{high, low}`); "no scenario key" for none.
fn keys_text(keys: &[&str]) -> String {
    if keys.is_empty() {
        return "no scenario key".into();
    }
    let sections = ["model", "retries"];
    let kept: Vec<&str> =
        keys.iter().copied().filter(|k| !sections.iter().any(|s| s != k && keys.contains(s) && covers(s, k))).collect();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < kept.len() {
        let k = kept[i];
        if sections.contains(&k) {
            parts.push(format!("{k}.*"));
            i += 1;
            continue;
        }
        let parent = k.rsplit_once('.').map(|(p, _)| p);
        let mut j = i + 1;
        while j < kept.len() && parent.is_some() && kept[j].rsplit_once('.').map(|(p, _)| p) == parent {
            j += 1;
        }
        match parent {
            Some(p) if j - i > 1 => {
                let leaves: Vec<&str> = kept[i..j].iter().map(|k| &k[p.len() + 1..]).collect();
                parts.push(format!("{p}.{{{}}}", leaves.join(", ")));
            }
            _ => parts.push(k.to_string()),
        }
        i = j;
    }
    parts.join(", ")
}

fn targets(selection: &Selection) -> Vec<Target<'_>> {
    let mut out = Vec::new();
    for &e in &selection.experiments {
        if selection.is_whole(e.id) {
            out.push(Target { experiment: e, row: None });
        } else {
            for r in selection.rows.iter().filter(|r| super::row_belongs(r, e.id)) {
                out.push(Target { experiment: e, row: Some(r) });
            }
        }
    }
    out
}

/// An override's key no selected experiment or row reads, and why, when one thing
/// explains it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadKey {
    /// The key (a value inside a table override: its full path).
    pub key: String,
    /// Why: what the experiments do instead, or what the scenario's own kinds leave unread
    /// (`health.low` with a constant health).
    pub why: Option<String>,
}

/// Why overrides were refused.
#[derive(Debug)]
pub enum OverrideError {
    /// The overrides do not make a scenario (an unknown key, a wrong type).
    Scenario(ScenarioError),
    /// Keys nothing selected reads.
    Unread {
        /// Each key, with why.
        keys: Vec<UnreadKey>,
        /// The experiments or rows selected, none of which reads them.
        selected: Vec<String>,
        /// What the selected experiments or rows read: names with the same reads, and
        /// the keys.
        reads: Vec<(Vec<String>, String)>,
    },
}

impl fmt::Display for OverrideError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OverrideError::Scenario(e) => e.fmt(f),
            OverrideError::Unread { keys, selected, reads } => {
                let names: Vec<&str> = keys.iter().map(|k| k.key.as_str()).collect();
                write!(
                    f,
                    "--set {}: not read by any selected experiment or row ({}), so {} would change nothing",
                    names.join(", "),
                    selected.join(", "),
                    if keys.len() == 1 { "it" } else { "they" }
                )?;
                for k in keys {
                    if let Some(why) = &k.why {
                        if keys.len() == 1 {
                            write!(f, ": {why}")?;
                        } else {
                            write!(f, "; {}: {why}", k.key)?;
                        }
                    }
                }
                let reads: Vec<String> =
                    reads.iter().map(|(names, keys)| format!("{}: {keys}", names.join(", "))).collect();
                write!(f, "; what they read: {}", reads.join("; "))
            }
        }
    }
}

impl std::error::Error for OverrideError {}

/// The keys `overrides` set, each read by at least one selected experiment or row; else
/// [`OverrideError::Unread`] with every key none reads (a key the scenario's own kinds
/// leave unread, as `retries.probability` with retries off, included). A table's override
/// is each value inside it. What rows a key does not reach is [`row_reads`]'s to say.
///
/// ```
/// use safegate_studies::experiments::{check_overrides, select};
///
/// let all = select(&[]).unwrap();
/// let set = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
/// assert_eq!(check_overrides(&set("model.rate", "36"), &all).unwrap(), ["model.rate"]);
/// let e = check_overrides(&set("traffic.rate", "5"), &all).unwrap_err().to_string();
/// assert!(e.starts_with("--set traffic.rate: not read by any selected experiment"), "{e}");
/// let only = select(&["severity".into()]).unwrap();
/// assert!(check_overrides(&set("model.rate", "36"), &only).is_err());
/// ```
pub fn check_overrides(overrides: &[(String, String)], selection: &Selection) -> Result<Vec<String>, OverrideError> {
    let origin = "<reproduce>";
    let scenario = Scenario::from_toml_with("", origin, overrides).map_err(OverrideError::Scenario)?;
    let targets = targets(selection);
    let mut keys: Vec<String> = Vec::new();
    let mut unread: Vec<UnreadKey> = Vec::new();
    for (key, raw) in overrides {
        for leaf in safegate_core::config_file::override_leaves(key, raw) {
            if keys.contains(&leaf) || unread.iter().any(|u| u.key == leaf) {
                continue;
            }
            let by_kind =
                scenario.unread_in(&leaf, safegate_sim::Mode::Fluid).or_else(|| shape_unread(&scenario, &leaf));
            let reached = targets.iter().any(|t| t.reads(&leaf));
            if reached && by_kind.is_none() {
                keys.push(leaf);
            } else {
                // Why: what the experiments do instead, when none reads it; else what the
                // scenario's own kinds leave unread.
                let why = if reached { by_kind } else { instead(&leaf).map(str::to_string) };
                unread.push(UnreadKey { key: leaf, why });
            }
        }
    }
    if unread.is_empty() {
        return Ok(keys);
    }
    let mut reads: Vec<(Vec<String>, String)> = Vec::new();
    for t in &targets {
        let text = t.reads_text();
        match reads.iter_mut().find(|(_, k)| *k == text) {
            Some((names, _)) => names.push(t.name()),
            None => reads.push((vec![t.name()], text)),
        }
    }
    Err(OverrideError::Unread { keys: unread, selected: targets.iter().map(Target::name).collect(), reads })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::select;

    fn set(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// Issue "an override that nothing reads is accepted in silence": refused, naming the
    /// key, the experiments or rows selected and what they read.
    #[test]
    fn an_override_nothing_selected_reads_is_refused_naming_what_is_read() {
        let all = select(&[]).unwrap();
        for key in ["traffic.rate", "gate.threshold", "run.duration", "run.seed", "run.mode", "health.kind"] {
            let value = match key {
                "run.mode" => "stochastic",
                "health.kind" => "dip",
                "run.seed" => "3",
                _ => "0.5",
            };
            let e = check_overrides(&set(&[(key, value)]), &all).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("--set {key}: not read by any selected experiment or row (ceiling, ")),
                "{e}"
            );
            assert!(e.contains("what they read: ceiling: model.*"), "{e}");
            assert!(e.contains("severity, imm, frontier, probebw, game: no scenario key"), "{e}");
        }
        // Every key nothing reads at once, each with why.
        let e =
            check_overrides(&set(&[("model.rate", "36"), ("traffic.rate", "5"), ("run.seed", "3")]), &all).unwrap_err();
        match &e {
            OverrideError::Unread { keys, .. } => {
                let names: Vec<&str> = keys.iter().map(|k| k.key.as_str()).collect();
                assert_eq!(names, ["traffic.rate", "run.seed"]);
                assert!(keys[1].why.as_deref().unwrap().contains("--seed"));
            }
            other => panic!("{other}"),
        }
        // Rows chosen alone are judged as rows: the analytic floor reads only the pool.
        let floor = select(&ids(&["band-80-floor-analytic"])).unwrap();
        let e = check_overrides(&set(&[("run.dt", "0.02")]), &floor).unwrap_err().to_string();
        assert!(
            e.contains("(band-80-floor-analytic)") && e.contains("model.{executors, comfortable, rate, capacity}"),
            "{e}"
        );
        assert!(check_overrides(&set(&[("model.rate", "36")]), &floor).is_ok());
        // The experiments take no scenario key: any override is refused.
        let game = select(&ids(&["game"])).unwrap();
        assert!(check_overrides(&set(&[("model.rate", "36")]), &game).is_err());
    }

    #[test]
    fn keys_the_overrides_own_kinds_leave_unread_are_refused() {
        let band = select(&ids(&["band"])).unwrap();
        let e = check_overrides(&set(&[("retries.probability", "0.2")]), &band).unwrap_err().to_string();
        assert!(e.contains("retries are \"off\""), "{e}");
        let both = set(&[("retries.kind", "constant"), ("retries.probability", "0.2")]);
        assert_eq!(check_overrides(&both, &band).unwrap(), ["retries.kind", "retries.probability"]);
        let e = check_overrides(&set(&[("health.kind", "constant"), ("health.low", "0.2")]), &band).unwrap_err();
        assert!(e.to_string().contains("health.low: the dip's shape, read only with health.kind = \"cycle\""), "{e}");
        // The level of a constant health is read by a run of it, not by the experiments.
        let e = check_overrides(&set(&[("health.kind", "constant"), ("health.high", "0.9")]), &band).unwrap_err();
        assert!(e.to_string().contains("health.high: the experiments take the dip's shape"), "{e}");
        // A table's values, each.
        let e = check_overrides(&set(&[("model", "{ rate = 36 }"), ("traffic", "{ rate = 5 }")]), &band).unwrap_err();
        assert!(e.to_string().starts_with("--set traffic.rate: "), "{e}");
        assert_eq!(check_overrides(&set(&[("model", "{ rate = 36, capacity = 150 }")]), &band).unwrap().len(), 2);
    }
}
