//! The fleet's claims measured in the model (`safegate fleet --sim`, docs/fleet.md):
//! starvation against the price, the price's delay threshold, the failure detectors'
//! trade-off, the exit frequency on the seed's health cycle, and the Stag Hunt's payoffs
//! and tipping share with verdicts on F13–F15; and a fleet file run uncoordinated and
//! priced.

use std::path::Path;

use safegate_core::boundary::Boundary;
use safegate_core::RangeError;
use safegate_sim::heartbeat::{sweep, HeartbeatProcess, Pauses, Sweep, TradeoffRow};
use safegate_sim::{DipShape, HealthSchedule, HealthTrack, ScenarioError};

use super::price::{equilibrium, euler_threshold, hayes_threshold, EulerThreshold};
use super::stag::{self, Payoffs, StagConfig, Tipping, Verdict};
use super::sweep::{threshold, with_delay, OscillationTest};
use super::{run_fleet, FleetConfig, FleetOutcome, FleetRecord, FleetScenario, GatePolicy, PriceConfig};

/// Why the suite or a fleet file could not run; each names its input.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The tipping-share fleet's size is out of range.
    #[error("fleet_size {0}: expected 2 to 64")]
    FleetSize(usize),
    /// The fallback is not a registry policy.
    #[error("fallback {0:?}: not a registry policy")]
    Fallback(String),
    /// The policy without the price is not a registry policy.
    #[error("local {local}: {error}")]
    Local {
        /// The policy asked for.
        local: String,
        /// Why it cannot be built.
        error: String,
    },
    /// The priced gates' boundary does not fit the fleet.
    #[error("boundary: {0}")]
    Boundary(String),
    /// A gate's policy could not be built.
    #[error("{0}")]
    Policy(String),
    /// An embedded boundary did not parse.
    #[error("{name}: {message}")]
    Embedded {
        /// The fleet it was for.
        name: &'static str,
        /// The parser's message.
        message: String,
    },
    /// A value out of range.
    #[error(transparent)]
    Range(#[from] RangeError),
    /// The fleet file could not be loaded.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A run that was to record a series recorded none.
    #[error("the recorded series")]
    NoSeries,
}

/// The price's delay threshold: measured, and Hayes's and the Euler step's predictions.
#[derive(Debug, Clone)]
pub struct DelayThreshold {
    /// The two-gate fleet the threshold is measured on (equal delays).
    pub fleet: FleetConfig,
    /// The price's gain γ.
    pub gain: f64,
    /// The loop gain `a` at the equilibrium \[1/s\].
    pub loop_gain: f64,
    /// The measured threshold \[s\]; `None` when there is none below 2 s.
    pub measured: Option<f64>,
    /// Hayes's `π/(2a)` \[s\].
    pub hayes: f64,
    /// With the Euler step.
    pub euler: Option<EulerThreshold>,
}

/// Every measurement of `safegate fleet --sim`.
#[derive(Debug)]
pub struct Suite {
    /// The local controller a gate falls back to.
    pub fallback: String,
    /// Gates in the tipping-share fleet.
    pub fleet_size: usize,
    /// Two greedy gates, no price.
    pub uncoordinated: FleetOutcome,
    /// The same two gates under the price.
    pub coordinated: FleetOutcome,
    /// The price's delay threshold.
    pub delay: DelayThreshold,
    /// The failure detectors' trade-off (1 s ± 0.1 s heartbeats, Pareto pauses, 50 h).
    pub detectors: Vec<TradeoffRow>,
    /// Exit frequency on the seed's health cycle, by fleet.
    pub exits: Vec<(&'static str, FleetOutcome)>,
    /// The Stag Hunt's two-player payoffs in the running case.
    pub payoffs: Payoffs,
    /// The tipping curves with `fleet_size` gates.
    pub tipping: Tipping,
    /// Verdicts on F13–F15.
    pub verdicts: Vec<Verdict>,
}

fn two(p0: u32, p1: u32) -> FleetConfig {
    FleetConfig::two_gates([p0, p1])
}

fn running_case(m: usize, fallback: &str) -> StagConfig {
    StagConfig::running_case(m, fallback, 80.0)
}

/// Runs every measurement; `fallback` is a registry spec, `fleet_size` 2 to 64.
pub fn run(fallback: &str, fleet_size: usize) -> Result<Suite, SuiteError> {
    if !(2..=64).contains(&fleet_size) {
        return Err(SuiteError::FleetSize(fleet_size));
    }
    if fallback.trim().parse::<safegate_core::controllers::PolicySpec>().is_err() {
        return Err(SuiteError::Fallback(fallback.to_string()));
    }
    // 1. Uncoordinated gates against the price.
    let cfg = two(64, 2);
    let mut greedy: Vec<GatePolicy> =
        (0..2).map(|i| GatePolicy::named("open", &cfg, i)).collect::<Result<_, _>>().map_err(SuiteError::Policy)?;
    let uncoordinated = run_fleet(&cfg, &mut greedy, FleetRecord::default())?;
    let mut pcfg = cfg.clone();
    pcfg.price = Some(PriceConfig::default());
    let mut priced: Vec<GatePolicy> = (0..2).map(|_| GatePolicy::Priced).collect();
    let coordinated = run_fleet(&pcfg, &mut priced, FleetRecord::default())?;
    // 2. The delay threshold: measured against Hayes's π/(2a) and the Euler step's.
    // Equal delays: the single-delay equation Hayes's criterion is exact for.
    let mut dcfg = FleetConfig { dt: 0.001, duration: 60.0, ..two(8, 8) };
    for g in &mut dcfg.gates {
        g.delay = 0.05;
    }
    let price = PriceConfig { capacity: Some(135.0), ..PriceConfig::default() };
    dcfg.price = Some(price);
    let eq = equilibrium(&dcfg.gates, 135.0, price.gain);
    let a = eq.loop_gain();
    let measured = threshold(&dcfg, 2.0, &OscillationTest::default())?;
    let hayes = hayes_threshold(a);
    let euler = euler_threshold(a, dcfg.dt);
    // 3. The detectors' trade-off, heavy-tailed pauses.
    let process = HeartbeatProcess {
        interval: 1.0,
        jitter_sd: 0.1,
        pauses: Pauses::Pareto { probability: 0.01, scale: 0.5, shape: 1.5 },
    };
    let detectors = sweep(&Sweep::standard(process, 50.0, 2026))?;
    // 5. Exit frequency on the seed's health cycle: uncoordinated seed gates, the bare
    // price, and the price under each gate's own filter (the shipped boundaries).
    let exits = exits()?;
    // 4. The Stag Hunt, measured.
    let payoffs = stag::two_player(&running_case(2, fallback))?;
    let tipping = stag::tipping(&running_case(fleet_size, fallback))?;
    let verdicts = stag::verdicts(&payoffs, &tipping);
    Ok(Suite {
        fallback: fallback.to_string(),
        fleet_size,
        uncoordinated,
        coordinated,
        delay: DelayThreshold { fleet: dcfg, gain: price.gain, loop_gain: a, measured, hayes, euler },
        detectors,
        exits,
        payoffs,
        tipping,
        verdicts,
    })
}

/// Two seed-sized gates on the health cycle: uncoordinated seed gates, the price alone,
/// and the price under each shipped boundary.
fn exits() -> Result<Vec<(&'static str, FleetOutcome)>, SuiteError> {
    let ccfg = FleetConfig {
        health: HealthTrack::new(HealthSchedule::Cycle(DipShape::default())),
        price: Some(PriceConfig::default()),
        ..two(8, 8)
    };
    let mut exits = Vec::new();
    let mut plain = ccfg.clone();
    plain.price = None;
    let mut p: Vec<GatePolicy> = (0..2)
        .map(|i| GatePolicy::named("seed-gate", &plain, i))
        .collect::<Result<_, _>>()
        .map_err(SuiteError::Policy)?;
    exits.push(("seed gates, no price", run_fleet(&plain, &mut p, FleetRecord::default())?));
    let mut p: Vec<GatePolicy> = (0..2).map(|_| GatePolicy::Priced).collect();
    exits.push(("price alone", run_fleet(&ccfg, &mut p, FleetRecord::default())?));
    for (name, text) in [
        ("price under seed-80", include_str!("../../../../boundaries/seed-80.toml")),
        ("price under seed-80-pool", include_str!("../../../../boundaries/seed-80-pool.toml")),
    ] {
        let b = Boundary::from_toml(text, &[]).map_err(|e| SuiteError::Embedded { name, message: e.0 })?;
        let mut p: Vec<GatePolicy> =
            (0..2).map(|i| GatePolicy::filtered(&b, &ccfg, i)).collect::<Result<_, _>>().map_err(SuiteError::Policy)?;
        exits.push((name, run_fleet(&ccfg, &mut p, FleetRecord::default())?));
    }
    Ok(exits)
}

/// The price over 10 s with the feedback delay at `factor` × the threshold.
#[derive(Debug, Clone)]
pub struct PriceRun {
    /// The delay over the threshold.
    pub factor: f64,
    /// The delay \[s\].
    pub delay: f64,
    /// Sample times \[s\].
    pub t: Vec<f64>,
    /// The price at each.
    pub price: Vec<f64>,
}

/// The price below (0.8×) and above (1.2×) the measured delay threshold `tau` of `fleet`,
/// and the equilibrium price `p*`.
pub fn price_around_threshold(fleet: &FleetConfig, tau: f64) -> Result<(Vec<PriceRun>, f64), SuiteError> {
    let mut runs = Vec::new();
    let mut p_star = 0.0;
    for factor in [0.8, 1.2] {
        let cfg = with_delay(fleet, factor * tau);
        let cfg = FleetConfig { duration: 10.0, ..cfg };
        let mut p: Vec<GatePolicy> = cfg.gates.iter().map(|_| GatePolicy::Priced).collect();
        let out = run_fleet(&cfg, &mut p, FleetRecord { every: Some(10) })?;
        p_star = out.price_equilibrium.unwrap_or(p_star);
        let series = out.series.ok_or(SuiteError::NoSeries)?;
        runs.push(PriceRun { factor, delay: factor * tau, t: series.t, price: series.price });
    }
    Ok((runs, p_star))
}

/// A fleet file's runs: uncoordinated, and priced if the file has a price.
#[derive(Debug)]
pub struct FileRuns {
    /// The file's name, else its path.
    pub title: String,
    /// The file's description.
    pub description: Option<String>,
    /// Each run's label and outcome.
    pub runs: Vec<(String, FleetOutcome)>,
}

/// The fleet of the file at `path` (which errors name) uncoordinated, each gate running
/// `local` (a registry spec), and, if it has a `[fleet.price]`, priced (under the filter of
/// the boundary file at `boundary` when given).
pub fn run_file(path: &Path, local: &str, boundary: Option<&Path>) -> Result<FileRuns, SuiteError> {
    let origin = path.display().to_string();
    let sc = FleetScenario::load(path)?;
    let cfg = sc.config(&origin)?;
    let boundary = boundary.map(safegate_sim::scenario::load_boundary).transpose()?;
    let mut runs = Vec::new();
    let mut plain = cfg.clone();
    plain.price = None;
    let mut p: Vec<GatePolicy> = (0..plain.gates.len())
        .map(|i| GatePolicy::named(local, &plain, i))
        .collect::<Result<_, _>>()
        .map_err(|error| SuiteError::Local { local: local.to_string(), error })?;
    runs.push((format!("uncoordinated ({local})"), run_fleet(&plain, &mut p, FleetRecord::default())?));
    if cfg.price.is_some() {
        let (label, mut p): (String, Vec<GatePolicy>) = match &boundary {
            Some(b) => (
                format!("price under {}", b.name.as_deref().unwrap_or("the boundary")),
                (0..cfg.gates.len())
                    .map(|i| GatePolicy::filtered(b, &cfg, i))
                    .collect::<Result<_, _>>()
                    .map_err(SuiteError::Boundary)?,
            ),
            None => ("price".to_string(), cfg.gates.iter().map(|_| GatePolicy::Priced).collect()),
        };
        runs.push((label, run_fleet(&cfg, &mut p, FleetRecord::default())?));
    }
    Ok(FileRuns { title: sc.name.clone().unwrap_or_else(|| origin.clone()), description: sc.description.clone(), runs })
}
