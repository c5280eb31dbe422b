//! A whole `bench overload`: one [`Overload`] per (knee, base time) pair of a sweep, the
//! lot run once per round, round after round; and what they give, as one JSON document and
//! the text that closes the command's output.
//!
//! Every bench is built (and so checked) before the first one runs: a bad input is refused
//! before minutes of load, not after. Round `r` (from 0) seeds its arrivals with the spec's
//! seed plus `r`, so round 1 is the seed asked for.

use std::error::Error as StdError;
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::runtime::Runtime;

use super::load::Progress;
use super::report::Document;
use super::rounds::{self, ScenarioRounds, MAX_ROUNDS};
use super::run::{Event, Overload};
use super::settings::OverloadSpec;
use super::text;
use crate::error::{Error, Result};
use safegate_core::RangeError;

/// What [`Plan::run`] reports as it goes.
#[derive(Debug)]
pub enum PlanEvent<'a> {
    /// Round `round` (from 1) of `rounds` starts; only told when there are several rounds.
    RoundStarted {
        /// The round starting, from 1.
        round: u32,
        /// Rounds in all.
        rounds: u32,
    },
    /// An event of the bench running; a [`Event::RunDone`]'s position counts the planned
    /// load of the whole plan so far (out of [`Plan::progress_total`]), not of that bench.
    Bench(Event<'a>),
}

/// One bench of a plan: the pair it is for (an index into the plan's pairs), its round
/// (from 0), and the checked bench.
#[derive(Debug, Clone)]
struct Bench {
    pair: usize,
    round: u32,
    overload: Overload,
}

/// Every bench of a sweep over every round, checked, in the order they run.
#[derive(Debug, Clone)]
pub struct Plan {
    pairs: Vec<(usize, f64)>,
    rounds: u32,
    benches: Vec<Bench>,
}

impl Plan {
    /// The benches of `base` at every (knee, base time) pair of `pairs` (the spec's own
    /// `knee` and `base_ms` are replaced), each `rounds` times, round `r` (from 0) seeded
    /// `base.seed + r`. Errors name the field: `rounds` outside `[1, MAX_ROUNDS]`, `knee`
    /// for an empty list of pairs, and whatever [`Overload::new`] refuses in any bench.
    pub fn new(base: &OverloadSpec, pairs: &[(usize, f64)], rounds: u32) -> Result<Plan> {
        if !(1..=MAX_ROUNDS).contains(&rounds) {
            return Err(RangeError::new("rounds", rounds, format!("[1, {MAX_ROUNDS}]")).into());
        }
        if pairs.is_empty() {
            return Err(Error::input("knee", "no (knee, base time) pair to run"));
        }
        let mut benches = Vec::with_capacity(pairs.len() * rounds as usize);
        for round in 0..rounds {
            for (pair, &(knee, base_ms)) in pairs.iter().enumerate() {
                let spec =
                    OverloadSpec { knee, base_ms, seed: base.seed.wrapping_add(u64::from(round)), ..base.clone() };
                benches.push(Bench { pair, round, overload: Overload::new(&spec)? });
            }
        }
        Ok(Plan { pairs: pairs.to_vec(), rounds, benches })
    }

    /// Tenths of a second of planned load over every run of every bench (as
    /// [`Overload::progress_total`], summed).
    pub fn progress_total(&self) -> u64 {
        self.benches.iter().map(|b| b.overload.progress_total()).sum()
    }

    /// Run every bench in turn, as [`Overload::run`] runs one: `new_runtime` builds each
    /// run's runtime, `progress` gets the planned load done over the whole plan, `on` hears
    /// of each round starting (with several) and of every bench's events.
    pub fn run<E>(
        &self,
        mut new_runtime: impl FnMut() -> std::result::Result<Runtime, E>,
        progress: Progress,
        mut on: impl FnMut(PlanEvent<'_>),
    ) -> Result<Outcome>
    where
        E: Into<Box<dyn StdError + Send + Sync>>,
    {
        let mut documents: Vec<(usize, f64, Vec<Document>)> =
            self.pairs.iter().map(|&(k, b)| (k, b, Vec::new())).collect();
        let mut base = 0u64;
        for bench in &self.benches {
            if self.rounds > 1 && bench.pair == 0 {
                on(PlanEvent::RoundStarted { round: bench.round + 1, rounds: self.rounds });
            }
            let tick: Progress = {
                let progress = progress.clone();
                let offset = base;
                Arc::new(move |position| progress(offset + position))
            };
            let document = bench.overload.run(&mut new_runtime, tick, |event| match event {
                Event::RunDone { position } => on(PlanEvent::Bench(Event::RunDone { position: base + position })),
                other => on(PlanEvent::Bench(other)),
            })?;
            base += bench.overload.progress_total();
            documents[bench.pair].2.push(document);
        }
        let summary = (self.rounds > 1).then(|| rounds::summarize(&documents));
        Ok(Outcome { documents, summary })
    }
}

/// What a [`Plan`] gave.
#[derive(Debug)]
pub struct Outcome {
    /// Each (knee, base time) pair of the plan, in its order, with its documents, one per
    /// round.
    pub documents: Vec<(usize, f64, Vec<Document>)>,
    /// With more than one round, each scenario summed up over the rounds.
    pub summary: Option<Vec<ScenarioRounds>>,
}

impl Outcome {
    /// The one JSON document of the plan: a single bench's own document; for a sweep of
    /// one round `{"sweep": [{knee, base_ms, round, document}, …]}`; with several rounds
    /// `{"rounds": [the same, every round], "summary": [each scenario over the rounds]}`.
    pub fn to_json(&self) -> serde_json::Result<Value> {
        let runs: Vec<Value> = self
            .documents
            .iter()
            .flat_map(|(k, b, ds)| {
                ds.iter().enumerate().map(move |(r, d)| json!({"knee": k, "base_ms": b, "round": r + 1, "document": d}))
            })
            .collect();
        match (&self.documents[..], &self.summary) {
            ([(_, _, one)], None) if one.len() == 1 => serde_json::to_value(&one[0]),
            (_, None) => Ok(json!({ "sweep": runs })),
            (_, Some(s)) => Ok(json!({ "rounds": runs, "summary": s })),
        }
    }

    /// The text after every scenario's table: the sweep's table (several pairs, one round),
    /// the rounds' summary (several rounds), or nothing (one bench).
    pub fn tail_text(&self) -> String {
        let mut out = String::new();
        if self.documents.len() > 1 && self.summary.is_none() {
            let firsts: Vec<(usize, f64, &Document)> =
                self.documents.iter().filter_map(|(k, b, ds)| ds.first().map(|d| (*k, *b, d))).collect();
            out.push_str(&text::sweep(&firsts));
        }
        if let Some(s) = &self.summary {
            out.push_str(&text::rounds(s));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::load::Arrivals;
    use super::*;

    fn spec() -> OverloadSpec {
        OverloadSpec {
            scenarios: vec!["fast-max".into()],
            stacks: vec!["none".into()],
            secs: 0.2,
            burst_secs: 5.0,
            burst_gap: 5.0,
            timeout_ms: 1000.0,
            slo_ms: 100.0,
            knee: 32,
            base_ms: 10.0,
            workers: 32,
            health: 1.0,
            arrivals: Arrivals::Poisson,
            seed: 7,
            fast_cap: 10_000,
            fast_outstanding: 16,
            pause_ms: 0,
            postgres: None,
            pg_curve_secs: 1.0,
        }
    }

    fn doc(seed: u64) -> Document {
        Document { settings: json!({ "seed": seed }), scenarios: Vec::new() }
    }

    #[test]
    fn a_plan_checks_every_bench_up_front_and_names_the_field() {
        let plan = Plan::new(&spec(), &[(4, 2.0), (8, 2.0)], 3).unwrap();
        assert_eq!(plan.benches.len(), 6);
        let order: Vec<(usize, u32)> = plan.benches.iter().map(|b| (b.pair, b.round)).collect();
        assert_eq!(order, [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)], "round after round");
        assert_eq!(plan.progress_total(), 6 * plan.benches[0].overload.progress_total());
        for rounds in [0, MAX_ROUNDS + 1] {
            let e = Plan::new(&spec(), &[(4, 2.0)], rounds).unwrap_err();
            assert_eq!(e.field(), Some("rounds"), "{e}");
        }
        assert_eq!(Plan::new(&spec(), &[], 1).unwrap_err().field(), Some("knee"));
        // A bad pair is refused before anything runs, naming its field.
        let e = Plan::new(&spec(), &[(4, 2.0), (4, -1.0)], 2).unwrap_err();
        assert_eq!(e.field(), Some("base_ms"), "{e}");
    }

    #[test]
    fn rounds_are_seeded_one_apart_and_progress_counts_over_the_whole_plan() {
        let plan = Plan::new(&spec(), &[(32, 10.0)], 2).unwrap();
        let runtime = || tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
        let mut rounds = Vec::new();
        let mut positions = Vec::new();
        let out = plan
            .run(runtime, super::super::no_progress(), |e| match e {
                PlanEvent::RoundStarted { round, rounds: of } => rounds.push((round, of)),
                PlanEvent::Bench(Event::RunDone { position }) => positions.push(position),
                PlanEvent::Bench(_) => {}
            })
            .unwrap();
        assert_eq!(rounds, [(1, 2), (2, 2)]);
        assert_eq!(positions.len(), 2);
        assert_eq!(positions.last().copied(), Some(plan.progress_total()));
        assert!(positions[0] < positions[1], "{positions:?}");
        let seeds: Vec<u64> = out.documents[0].2.iter().map(|d| d.settings["seed"].as_u64().unwrap()).collect();
        assert_eq!(seeds, [7, 8]);
        assert_eq!(out.summary.as_ref().map(Vec::len), Some(1));
        let v = out.to_json().unwrap();
        assert_eq!(v["rounds"].as_array().map(Vec::len), Some(2));
        assert_eq!(v["rounds"][1]["round"], 2);
        assert!(out.tail_text().contains("no oracle"), "{}", out.tail_text());
    }

    #[test]
    fn one_bench_is_its_own_document_and_a_sweep_is_a_list_with_its_table() {
        let one = Outcome { documents: vec![(32, 10.0, vec![doc(1)])], summary: None };
        assert_eq!(one.to_json().unwrap(), json!({ "settings": { "seed": 1 }, "scenarios": [] }));
        assert_eq!(one.tail_text(), "");
        let sweep = Outcome { documents: vec![(4, 2.0, vec![doc(1)]), (8, 2.0, vec![doc(1)])], summary: None };
        let v = sweep.to_json().unwrap();
        let runs = v["sweep"].as_array().expect("a sweep");
        assert_eq!(runs.len(), 2);
        assert_eq!((runs[1]["knee"].as_u64(), runs[1]["base_ms"].as_f64()), (Some(8), Some(2.0)));
        assert_eq!(runs[1]["round"], 1);
        assert!(sweep.tail_text().starts_with("## sweep"), "{}", sweep.tail_text());
    }
}
