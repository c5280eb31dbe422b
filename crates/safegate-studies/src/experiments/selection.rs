//! Choosing experiments and rows by id (`safegate reproduce --only`).

use super::{Experiment, Report, ALL};

/// An id that is neither an experiment's nor any experiment's row's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{:?}: no such experiment or row (experiments: {})", safegate_core::config_file::excerpt(.id), .known.join(", "))]
pub struct UnknownExperiment {
    /// The id asked for (trimmed).
    pub id: String,
    /// Every experiment's id.
    pub known: Vec<&'static str>,
}

/// What a list of ids chose: the experiments to run and the rows to keep of them.
#[derive(Debug, Clone)]
pub struct Selection {
    /// The experiments to run, each once, in the order first asked for.
    pub experiments: Vec<&'static Experiment>,
    /// The row ids asked for.
    pub rows: Vec<String>,
    /// The experiments asked for by their own id (all their rows are kept).
    whole: Vec<&'static str>,
}

/// Whether row `row` belongs to the experiment with id `experiment` (its id begins with one
/// of the experiment's [`Experiment::row_prefixes`]); false for an unknown experiment.
pub fn row_belongs(row: &str, experiment: &str) -> bool {
    super::find(experiment).is_some_and(|e| e.row_prefixes.iter().any(|p| row.starts_with(p)))
}

/// The experiments and rows `ids` choose (each trimmed): an experiment's id chooses it with
/// all its rows; a row's id chooses its experiment and keeps that row (and the other rows
/// asked for). No ids: every experiment, every row.
///
/// ```
/// use safegate_studies::experiments::select;
///
/// let s = select(&["imm-false-alarm-t3".into(), "band".into()]).unwrap();
/// let ids: Vec<&str> = s.experiments.iter().map(|e| e.id).collect();
/// assert_eq!(ids, ["imm", "band"]);
/// assert_eq!(s.rows, ["imm-false-alarm-t3"]);
/// assert!(select(&["nonsense".into()]).is_err());
/// ```
pub fn select(ids: &[String]) -> Result<Selection, UnknownExperiment> {
    if ids.is_empty() {
        return Ok(Selection {
            experiments: ALL.iter().collect(),
            rows: vec![],
            whole: ALL.iter().map(|e| e.id).collect(),
        });
    }
    let mut s = Selection { experiments: Vec::new(), rows: Vec::new(), whole: Vec::new() };
    for id in ids {
        let id = id.trim();
        let (e, whole) = match super::find(id) {
            Some(e) => (e, true),
            None => match ALL.iter().find(|e| row_belongs(id, e.id)) {
                Some(e) => (e, false),
                None => {
                    return Err(UnknownExperiment { id: id.to_string(), known: ALL.iter().map(|e| e.id).collect() })
                }
            },
        };
        if !s.experiments.iter().any(|c| c.id == e.id) {
            s.experiments.push(e);
        }
        if whole {
            s.whole.push(e.id);
        } else {
            s.rows.push(id.to_string());
        }
    }
    Ok(s)
}

impl Selection {
    /// Whether experiment `id` was chosen whole (by its own id, or by no ids at all), not
    /// only through some of its rows.
    pub fn is_whole(&self, id: &str) -> bool {
        self.whole.contains(&id)
    }

    /// Drop the rows of `report` that were not asked for: of an experiment chosen only
    /// through row ids, only those rows are kept.
    pub fn keep_rows(&self, report: &mut Report) {
        let by_row = self.rows.iter().any(|k| row_belongs(k, report.experiment));
        if by_row && !self.whole.contains(&report.experiment) {
            report.rows.retain(|row| self.rows.contains(&row.id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::Row;

    /// Every row id `safegate reproduce` printed when the prefixes moved here.
    const ROWS: &[&str] = &[
        "ceiling",
        "usl",
        "no-drain-any-health",
        "recovery-55",
        "recovery-74.5",
        "recovery-sweep",
        "critical-slowing",
        "pinned-75",
        "pinned-76+",
        "poa-76",
        "poa-120",
        "poa-trend",
        "band-80-floor",
        "band-80-top",
        "band-80-floor-analytic",
        "band-80-off",
        "band-80-no-drain",
        "severity-epsilon",
        "severity-mean-median-3",
        "severity-worst-1.1",
        "severity-gap",
        "imm-false-alarm-gaussian",
        "imm-heavy-tail-ratio",
        "imm-robust-false-alarm-t1.5",
        "imm-robust-delay",
        "frontier-epsilon",
        "frontier-trade",
        "probebw-drain-table",
        "probebw-scar",
        "stag-hunt-nash",
        "stag-hunt-regret",
        "fleet-threshold",
        "fleet-sweep",
        "starvation-split",
    ];

    #[test]
    fn every_row_belongs_to_exactly_one_experiment() {
        for row in ROWS {
            let owners: Vec<&str> = ALL.iter().filter(|e| row_belongs(row, e.id)).map(|e| e.id).collect();
            assert_eq!(owners.len(), 1, "{row}: {owners:?}");
        }
        assert!(row_belongs("critical-slowing", "recovery") && row_belongs("fleet-sweep", "game"));
        assert!(!row_belongs("imm-x", "band") && !row_belongs("imm-x", "no-such-experiment"));
    }

    #[test]
    fn ids_choose_experiments_and_rows() {
        let all = select(&[]).unwrap();
        assert_eq!(all.experiments.len(), ALL.len());
        assert!(all.rows.is_empty());
        // Trimmed; each experiment once, in the order asked.
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let s = select(&ids(&[" band-80-floor", "recovery ", "band-80-top", "band"])).unwrap();
        let chosen: Vec<&str> = s.experiments.iter().map(|e| e.id).collect();
        assert_eq!(chosen, ["band", "recovery"]);
        assert_eq!(s.rows, ["band-80-floor", "band-80-top"]);
    }

    #[test]
    fn an_unknown_id_lists_the_experiments() {
        let e = select(&["imm".into(), " nonsense ".into()]).unwrap_err();
        assert_eq!(e.id, "nonsense");
        assert_eq!(e.known, ALL.iter().map(|e| e.id).collect::<Vec<_>>());
        assert!(e.to_string().starts_with("\"nonsense\": no such experiment or row (experiments: ceiling, recovery,"));
        assert!(select(&["".into()]).is_err());
        // A long id is quoted as an excerpt.
        let e = select(&["x".repeat(100_000)]).unwrap_err().to_string();
        assert!(e.len() < 300 && e.contains("xxx…\": no such experiment"), "{}", &e[..200.min(e.len())]);
    }

    fn report(experiment: &'static str, rows: &[&str]) -> Report {
        Report {
            experiment,
            rows: rows.iter().map(|id| Row::new(id, "claim", "1", "1", "±0", true)).collect(),
            figures: vec![],
        }
    }

    fn kept(r: &Report) -> Vec<&str> {
        r.rows.iter().map(|r| r.id.as_str()).collect()
    }

    #[test]
    fn rows_asked_for_are_kept_and_the_others_dropped() {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let s = select(&ids(&["band-80-top", "imm"])).unwrap();
        let mut band = report("band", &["band-80-floor", "band-80-top"]);
        s.keep_rows(&mut band);
        assert_eq!(kept(&band), ["band-80-top"]);
        // An experiment asked for whole keeps every row.
        let mut imm = report("imm", &["imm-a", "imm-b"]);
        s.keep_rows(&mut imm);
        assert_eq!(kept(&imm), ["imm-a", "imm-b"]);
        // Both its id and one of its rows: whole.
        let s = select(&ids(&["band-80-top", "band"])).unwrap();
        let mut band = report("band", &["band-80-floor", "band-80-top"]);
        s.keep_rows(&mut band);
        assert_eq!(kept(&band).len(), 2);
        // No ids: nothing dropped.
        let mut band = report("band", &["band-80-floor"]);
        select(&[]).unwrap().keep_rows(&mut band);
        assert_eq!(kept(&band), ["band-80-floor"]);
    }
}
