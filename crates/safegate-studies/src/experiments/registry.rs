//! Every experiment ([`ALL`]), by id, and what one produces ([`Report`]).

use serde::Serialize;

use super::reach::{CEILING, FLUID};
use super::{band, ceiling, frontier, game, imm, pinned, poa, probebw, recovery, severity};
use super::{Figure, Reads, Row, Setup};

/// What one experiment produced.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The experiment's id.
    pub experiment: &'static str,
    /// Its checked claims.
    pub rows: Vec<Row>,
    /// Its figures.
    pub figures: Vec<Figure>,
}

/// An experiment: an id, what it measures, and the function that runs it.
#[derive(Debug, Clone, Copy)]
pub struct Experiment {
    /// Stable id (`recovery`).
    pub id: &'static str,
    /// One line on what it measures and where in the seed.
    pub title: &'static str,
    /// Run it.
    pub run: fn(&Setup) -> Report,
    /// How its rows' ids begin (rows are named after their subject: `recovery-74.5`,
    /// `band-80-floor`, `critical-slowing`); see [`row_belongs`](super::row_belongs).
    pub row_prefixes: &'static [&'static str],
    /// The scenario keys its rows read from the [`Setup`], by groups of rows (the first
    /// group whose prefixes match a row is the row's); none: it reads no scenario key.
    pub reads: &'static [Reads],
}

/// Reads of every row: `keys`.
const fn all(keys: &'static [&'static str]) -> Reads {
    Reads { rows: &[], keys }
}

/// Reads of the rows whose ids begin with one of `rows`: `keys`.
const fn rows(rows: &'static [&'static str], keys: &'static [&'static str]) -> Reads {
    Reads { rows, keys }
}

/// Every experiment, in the order the seed makes its claims.
pub const ALL: &[Experiment] = &[
    Experiment {
        id: "ceiling",
        title: "joint ceiling s·C²/P, USL at n = 8, no drain at any health",
        run: ceiling::run,
        row_prefixes: &["ceiling", "usl", "no-drain"],
        reads: &[
            rows(&["usl"], CEILING),
            // One fluid step from a full queue at H = 1, dt = 1 s.
            rows(&["ceiling"], &["model", "retries"]),
            // 400 s at constant health levels.
            all(&["model", "retries", "run.dt"]),
        ],
    },
    Experiment {
        id: "recovery",
        title: "recovery delay after one dip, and its divergence as λ → 75",
        run: recovery::run,
        row_prefixes: &["recovery", "critical"],
        reads: &[all(FLUID)],
    },
    Experiment {
        id: "pinned",
        title: "λ ≥ 75 pins the queue at its cap",
        run: pinned::run,
        row_prefixes: &["pinned"],
        reads: &[all(FLUID)],
    },
    Experiment {
        id: "poa",
        title: "price of anarchy of the ungated pool",
        run: poa::run,
        row_prefixes: &["poa"],
        reads: &[all(FLUID)],
    },
    Experiment {
        id: "band",
        title: "the gate's oscillation band at λ = 80",
        run: band::run,
        row_prefixes: &["band"],
        reads: &[
            rows(
                &["band-80-floor-analytic"],
                &["model.executors", "model.comfortable", "model.rate", "model.capacity"],
            ),
            all(FLUID),
        ],
    },
    Experiment {
        id: "severity",
        title: "probability is not magnitude: Pareto severities at equal ε",
        run: severity::run,
        row_prefixes: &["severity"],
        // The seed's own model of it, its trials and --seed: no scenario key.
        reads: &[],
    },
    Experiment {
        id: "imm",
        title: "IMM false alarms under heavy-tailed noise",
        run: imm::run,
        row_prefixes: &["imm"],
        // The seed's own model of it, its trials and --seed: no scenario key.
        reads: &[],
    },
    Experiment {
        id: "frontier",
        title: "achievable region of ε against the severity bound",
        run: frontier::run,
        row_prefixes: &["frontier"],
        // The seed's own model of it, its trials and --seed: no scenario key.
        reads: &[],
    },
    Experiment {
        id: "probebw",
        title: "ProbeBW drain failure and the backlog scar",
        run: probebw::run,
        row_prefixes: &["probebw"],
        // The seed's own model of it, its trials and --seed: no scenario key.
        reads: &[],
    },
    Experiment {
        id: "game",
        title: "freeze/fallback Stag Hunt and the fleet tipping point",
        run: game::run,
        row_prefixes: &["stag", "fleet", "starvation"],
        // The seed's own model of it, its trials and --seed: no scenario key.
        reads: &[],
    },
];

/// Run one experiment by id.
pub fn find(id: &str) -> Option<&'static Experiment> {
    ALL.iter().find(|e| e.id == id)
}
