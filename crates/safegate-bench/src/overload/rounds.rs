//! Repeated rounds of a bench, summed up per scenario: each stack's goodput over the
//! oracle's in every round, and the median of those ratios.
//!
//! One run of an adaptive stack in front of a noisy backend (PostgreSQL's deadlocks and
//! serialization failures) can land ±25 % from the next; a single ratio cannot resolve a
//! 10 % difference there. Rounds run every stack once each, round after round, so slow
//! drift in the machine or the database touches every stack alike; the summary compares
//! stacks round by round (each round's ratio is to that round's oracle) and takes medians.

use serde::Serialize;

use super::report::Document;
use super::stacks::StackKind;

/// Most rounds one bench runs.
pub const MAX_ROUNDS: u32 = 50;

/// One scenario (of one knee and base time) over every round.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioRounds {
    /// The collapse backend's knee of this bench.
    pub knee: usize,
    /// The base service time of this bench \[ms\].
    pub base_ms: f64,
    /// The scenario's name.
    pub scenario: String,
    /// Rounds run.
    pub rounds_run: usize,
    /// The rounds (numbered from 1) whose oracle delivered something: the only ones with
    /// ratios, and the ones every list below is aligned with.
    pub counted_rounds: Vec<usize>,
    /// The oracle's goodput in each counted round \[req/s\] (on PostgreSQL, the best fixed
    /// limit of that round).
    pub oracle_rps: Vec<f64>,
    /// The oracle's limit in each counted round.
    pub oracle_limits: Vec<usize>,
    /// Every stack but the oracle (and, on PostgreSQL, the fixed limits of its sweep), in
    /// the order run.
    pub stacks: Vec<StackRounds>,
}

/// One stack's ratios over the rounds of a scenario.
#[derive(Debug, Clone, Serialize)]
pub struct StackRounds {
    /// The stack's name.
    pub stack: String,
    /// Goodput over the same round's oracle's, per counted round (`None`: no figures in
    /// that round).
    pub vs_oracle: Vec<Option<f64>>,
    /// The median of the ratios there are.
    pub median: f64,
    /// The least of them.
    pub least: f64,
    /// Rounds in which this stack's ratio is above every peer's (acc-*, resilience-*) of
    /// the same round, among those in which a peer had figures; `None` for a peer itself,
    /// or when no peer had figures in any round.
    pub ahead_of_peers: Option<usize>,
    /// Rounds in which both this stack and a peer had figures.
    pub peer_rounds: usize,
}

/// The rounds of every (knee, base time) pair, summed up per scenario: `docs` holds each
/// pair's documents, one per round, in the order run.
pub fn summarize(docs: &[(usize, f64, Vec<Document>)]) -> Vec<ScenarioRounds> {
    let mut out = Vec::new();
    for (knee, base_ms, rounds) in docs {
        let Some(first) = rounds.first() else { continue };
        for (i, sc) in first.scenarios.iter().enumerate() {
            let mut s = ScenarioRounds {
                knee: *knee,
                base_ms: *base_ms,
                scenario: sc.name.clone(),
                rounds_run: rounds.len(),
                counted_rounds: Vec::new(),
                oracle_rps: Vec::new(),
                oracle_limits: Vec::new(),
                stacks: Vec::new(),
            };
            // The stacks of the first round that are not the oracle's (a stack missing from
            // a later round gets `None` there).
            let names: Vec<&str> = sc
                .runs
                .iter()
                .filter(|r| r.figures.is_some() && !is_oracle_of(sc, &r.stack))
                .map(|r| r.stack.as_str())
                .collect();
            let mut ratios: Vec<Vec<Option<f64>>> = vec![Vec::new(); names.len()];
            let mut beaten = vec![0usize; names.len()];
            let mut against = vec![0usize; names.len()];
            for (r, d) in rounds.iter().enumerate() {
                let Some(sc) = d.scenarios.get(i) else { continue };
                let Some(oracle) = sc
                    .oracle
                    .as_ref()
                    .and_then(|o| sc.runs.iter().find(|r| &r.stack == o))
                    .and_then(|r| r.figures.as_ref())
                    .filter(|f| f.goodput_rps > 0.0)
                else {
                    continue;
                };
                s.counted_rounds.push(r + 1);
                s.oracle_rps.push(oracle.goodput_rps);
                s.oracle_limits.push(sc.oracle_limit);
                let ratio = |name: &str| {
                    sc.runs
                        .iter()
                        .find(|r| r.stack == name)
                        .and_then(|r| r.figures.as_ref())
                        .and_then(|f| f.goodput_vs_oracle)
                };
                let best_peer = names.iter().filter(|n| is_peer(n)).filter_map(|n| ratio(n)).max_by(f64::total_cmp);
                for (k, name) in names.iter().enumerate() {
                    let v = ratio(name);
                    ratios[k].push(v);
                    if let (Some(v), Some(p)) = (v, best_peer) {
                        against[k] += 1;
                        beaten[k] += usize::from(v > p);
                    }
                }
            }
            for (k, name) in names.iter().enumerate() {
                let v = std::mem::take(&mut ratios[k]);
                let have: Vec<f64> = v.iter().flatten().copied().collect();
                if have.is_empty() {
                    continue;
                }
                s.stacks.push(StackRounds {
                    stack: name.to_string(),
                    median: median(&have),
                    least: have.iter().copied().fold(f64::INFINITY, f64::min),
                    ahead_of_peers: (against[k] > 0 && !is_peer(name)).then_some(beaten[k]),
                    peer_rounds: against[k],
                    vs_oracle: v,
                });
            }
            out.push(s);
        }
    }
    out
}

/// Whether `name` is the scenario's reference rather than a stack of its own: the oracle
/// (`tower-limit-oracle`, or the fixed limit that won), or on PostgreSQL (a scenario with a
/// measured curve) any fixed limit of the oracle's sweep, whose limits differ round to round.
fn is_oracle_of(sc: &super::report::ScenarioReport, name: &str) -> bool {
    sc.oracle.as_deref() == Some(name)
        || match StackKind::parse(name) {
            Some(StackKind::TowerOracle) => true,
            Some(StackKind::TowerFixed(_)) => sc.curve.is_some(),
            _ => false,
        }
}

fn is_peer(name: &str) -> bool {
    StackKind::parse(name).is_some_and(StackKind::is_peer)
}

/// The median of a non-empty list (the mean of the middle two when even).
pub(crate) fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::{Figures, RunReport, ScenarioReport};
    use super::*;

    fn run(stack: &str, good: f64, oracle: f64) -> RunReport {
        RunReport {
            stack: stack.into(),
            built: true,
            note: None,
            figures: Some(Figures {
                offered_rps: 1000.0,
                goodput_rps: good,
                goodput_vs_oracle: Some(good / oracle),
                shed_share: 0.0,
                sent: 0,
                ok: 0,
                good: 0,
                rejected: 0,
                shed_reasons: Default::default(),
                timeouts: 0,
                failed: 0,
                p50_ms: None,
                p99_ms: None,
                settle_s: None,
                bursts: None,
                step: None,
                goodput_timeline: Vec::new(),
                limit_timeline: None,
            }),
        }
    }

    /// A PostgreSQL-like round: two fixed limits (the better is the oracle), safegate and
    /// one peer.
    fn round(fixed: [f64; 2], safegate: f64, peer: f64) -> Document {
        let oracle = fixed[0].max(fixed[1]);
        let best = if fixed[0] >= fixed[1] { "tower-limit-3" } else { "tower-limit-6" };
        Document {
            settings: serde_json::Value::Null,
            scenarios: vec![ScenarioReport {
                name: "pg-3x".into(),
                backend: String::new(),
                peak_rps: None,
                oracle_limit: if fixed[0] >= fixed[1] { 3 } else { 6 },
                load: String::new(),
                oracle: Some(best.into()),
                best_anchor: None,
                curve: Some(Vec::new()),
                runs: vec![
                    run("tower-limit-3", fixed[0], oracle),
                    run("tower-limit-6", fixed[1], oracle),
                    run("safegate", safegate, oracle),
                    run("acc-vegas", peer, oracle),
                ],
            }],
        }
    }

    #[test]
    fn rounds_compare_each_stack_with_its_own_rounds_oracle_and_take_medians() {
        let docs = vec![(
            32,
            10.0,
            vec![
                round([500.0, 400.0], 450.0, 500.0),
                round([300.0, 600.0], 570.0, 300.0),
                round([500.0, 500.0], 475.0, 400.0),
            ],
        )];
        let s = summarize(&docs);
        assert_eq!(s.len(), 1);
        let s = &s[0];
        assert_eq!(s.counted_rounds, vec![1, 2, 3]);
        assert_eq!(s.oracle_limits, vec![3, 6, 3]);
        // The fixed limits are the oracle's, not stacks of their own.
        let names: Vec<&str> = s.stacks.iter().map(|r| r.stack.as_str()).collect();
        assert_eq!(names, vec!["safegate", "acc-vegas"]);
        let sg = &s.stacks[0];
        assert_eq!(sg.vs_oracle, vec![Some(0.9), Some(0.95), Some(0.95)]);
        assert_eq!(sg.median, 0.95);
        assert_eq!(sg.least, 0.9);
        // Behind the peer in round one (0.9 < 1.0), ahead in the other two.
        assert_eq!(sg.ahead_of_peers, Some(2));
        assert_eq!(sg.peer_rounds, 3);
        assert_eq!(s.stacks[1].ahead_of_peers, None);
        assert_eq!(s.stacks[1].median, 0.8);
    }

    #[test]
    fn rounds_without_an_oracle_say_so_instead_of_an_empty_table() {
        let mut d = round([500.0, 400.0], 450.0, 500.0);
        d.scenarios[0].oracle = None;
        let s = summarize(&[(32, 10.0, vec![d])]);
        assert!(s[0].counted_rounds.is_empty());
        assert!(s[0].stacks.is_empty());
        let text = super::super::text::rounds(&s);
        assert!(text.contains("no oracle with goodput"), "{text}");
    }

    /// A round whose oracle delivered nothing has no ratios: it is left out, and the rounds
    /// after it keep their numbers and their own oracle. A fixed limit asked for on an
    /// in-process backend (no curve) is a stack of its own.
    #[test]
    fn an_empty_oracle_round_is_left_out_and_the_others_stay_aligned() {
        let mut docs = vec![round([0.0, 0.0], 450.0, 500.0), round([300.0, 600.0], 570.0, 300.0)];
        for r in &mut docs[0].scenarios[0].runs {
            if let Some(f) = r.figures.as_mut() {
                f.goodput_vs_oracle = None;
            }
        }
        for d in &mut docs {
            d.scenarios[0].curve = None;
        }
        let s = &summarize(&[(32, 10.0, docs)])[0];
        assert_eq!(s.counted_rounds, vec![2]);
        assert_eq!(s.oracle_rps, vec![600.0]);
        let names: Vec<&str> = s.stacks.iter().map(|r| r.stack.as_str()).collect();
        assert_eq!(names, vec!["tower-limit-6", "safegate", "acc-vegas"]);
        assert_eq!(s.stacks[1].vs_oracle, vec![Some(0.95)]);
        let text = super::super::text::rounds(std::slice::from_ref(s));
        assert!(text.contains("over 1 round (of those run: 2)"), "{text}");
    }

    #[test]
    fn a_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
    }
}
