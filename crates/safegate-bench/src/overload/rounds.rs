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
    /// Rounds with an oracle (those whose ratios are below).
    pub rounds: usize,
    /// The oracle's goodput in each round \[req/s\] (on PostgreSQL, the best fixed limit
    /// of that round).
    pub oracle_rps: Vec<f64>,
    /// The oracle's limit in each round.
    pub oracle_limits: Vec<usize>,
    /// Every stack but the oracle and the fixed limits of its sweep, in the order run.
    pub stacks: Vec<StackRounds>,
}

/// One stack's ratios over the rounds of a scenario.
#[derive(Debug, Clone, Serialize)]
pub struct StackRounds {
    /// The stack's name.
    pub stack: String,
    /// Goodput over the same round's oracle's, per round.
    pub vs_oracle: Vec<f64>,
    /// The median of `vs_oracle`.
    pub median: f64,
    /// The least of `vs_oracle`.
    pub least: f64,
    /// Rounds in which this stack's ratio is above every peer's (acc-*, resilience-*) of
    /// the same round; `None` for a peer itself, or when no peer ran.
    pub ahead_of_peers: Option<usize>,
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
                rounds: 0,
                oracle_rps: Vec::new(),
                oracle_limits: Vec::new(),
                stacks: Vec::new(),
            };
            let names: Vec<&str> = sc
                .runs
                .iter()
                .filter(|r| r.figures.is_some() && !is_oracle_sweep(&r.stack))
                .map(|r| r.stack.as_str())
                .collect();
            let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
            let mut peers_beaten = vec![0usize; names.len()];
            let mut peers_seen = false;
            for d in rounds {
                let Some(sc) = d.scenarios.get(i) else { continue };
                let Some(oracle) = sc
                    .oracle
                    .as_ref()
                    .and_then(|o| sc.runs.iter().find(|r| &r.stack == o))
                    .and_then(|r| r.figures.as_ref())
                else {
                    continue;
                };
                s.rounds += 1;
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
                peers_seen |= best_peer.is_some();
                for (k, name) in names.iter().enumerate() {
                    if let Some(r) = ratio(name) {
                        ratios[k].push(r);
                        if best_peer.is_some_and(|p| r > p) {
                            peers_beaten[k] += 1;
                        }
                    }
                }
            }
            for (k, name) in names.iter().enumerate() {
                let v = std::mem::take(&mut ratios[k]);
                if v.is_empty() {
                    continue;
                }
                s.stacks.push(StackRounds {
                    stack: name.to_string(),
                    median: median(&v),
                    least: v.iter().copied().fold(f64::INFINITY, f64::min),
                    ahead_of_peers: (peers_seen && !is_peer(name)).then_some(peers_beaten[k]),
                    vs_oracle: v,
                });
            }
            out.push(s);
        }
    }
    out
}

/// A fixed limit of the PostgreSQL oracle's sweep, or the oracle itself: its row is the
/// oracle's, not a stack's.
fn is_oracle_sweep(name: &str) -> bool {
    matches!(StackKind::parse(name), Some(StackKind::TowerFixed(_) | StackKind::TowerOracle))
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
                curve: None,
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
        assert_eq!(s.rounds, 3);
        assert_eq!(s.oracle_limits, vec![3, 6, 3]);
        // The fixed limits are the oracle's, not stacks of their own.
        let names: Vec<&str> = s.stacks.iter().map(|r| r.stack.as_str()).collect();
        assert_eq!(names, vec!["safegate", "acc-vegas"]);
        let sg = &s.stacks[0];
        assert_eq!(sg.vs_oracle, vec![0.9, 0.95, 0.95]);
        assert_eq!(sg.median, 0.95);
        assert_eq!(sg.least, 0.9);
        // Behind the peer in round one (0.9 < 1.0), ahead in the other two.
        assert_eq!(sg.ahead_of_peers, Some(2));
        assert_eq!(s.stacks[1].ahead_of_peers, None);
        assert_eq!(s.stacks[1].median, 0.8);
    }

    #[test]
    fn rounds_without_an_oracle_say_so_instead_of_an_empty_table() {
        let mut d = round([500.0, 400.0], 450.0, 500.0);
        d.scenarios[0].oracle = None;
        let s = summarize(&[(32, 10.0, vec![d])]);
        assert_eq!(s[0].rounds, 0);
        assert!(s[0].stacks.is_empty());
        let text = super::super::text::rounds(&s);
        assert!(text.contains("no oracle ran"), "{text}");
    }

    #[test]
    fn a_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
    }
}
