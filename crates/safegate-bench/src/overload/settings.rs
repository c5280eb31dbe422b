//! The inputs of the overload bench, checked: the scenarios, the settings every run
//! shares, each scenario's backend and schedule, and the request budget of a run.

use std::time::Duration;

use safegate_core::RangeError;

use super::backend::{Backend, Collapse, Fast, Health, Queueing};
use super::load::{Arrivals, Client, Plan, Rate, Segment};
use super::report::Shape;
use super::stacks::LOOSE_LIMIT;
use crate::error::{Error, Result};
use safegate_live::pg::{redacted, PgSpec};

/// Most requests one run may offer (`rate × seconds`, or `fast_cap`).
pub const MAX_REQUESTS: f64 = 1e7;
/// Longest load of one run \[s\].
pub const MAX_SECS: f64 = 600.0;
/// The overload factor of the scenarios that are not named for theirs.
const OVERLOAD: f64 = 1.5;

/// What to run: every field is checked by [`super::Overload::new`], and an error names
/// the field.
#[derive(Debug, Clone)]
pub struct OverloadSpec {
    /// Scenario names (empty: all): collapse-1.5x, collapse-3x, queueing-1.5x, fast-max,
    /// bursts, health-step.
    pub scenarios: Vec<String>,
    /// Stack names (empty: all): none, tower-limit-oracle, tower-limit-loose, the peers,
    /// safegate, safegate-NAME for every controller NAME.
    pub stacks: Vec<String>,
    /// Seconds of load per run (health-step: the step is at half).
    pub secs: f64,
    /// Seconds of each of the three bursts.
    pub burst_secs: f64,
    /// Seconds of no load between bursts.
    pub burst_gap: f64,
    /// Client timeout \[ms\] after a request's scheduled arrival.
    pub timeout_ms: f64,
    /// A success counts toward goodput when answered within this long of its arrival \[ms\].
    pub slo_ms: f64,
    /// Collapse backend: the knee C.
    pub knee: usize,
    /// Collapse and queueing backends: base service time at full health \[ms\].
    pub base_ms: f64,
    /// Queueing backend: workers W.
    pub workers: usize,
    /// Every backend's starting health.
    pub health: f64,
    /// Arrival spacing of the fixed-rate scenarios.
    pub arrivals: Arrivals,
    /// Seed of the Poisson arrivals.
    pub seed: u64,
    /// fast-max: most requests offered in a run.
    pub fast_cap: u64,
    /// fast-max: most requests outstanding.
    pub fast_outstanding: u64,
    /// Pause between runs \[ms\].
    pub pause_ms: u64,
    /// The PostgreSQL backend of the `pg-*` scenarios (`None`: those scenarios are not run
    /// by default, and naming one is an error naming `pg_url`).
    pub postgres: Option<PgSpec>,
    /// `pg-*`: seconds of each point of the measured service curve X(n).
    pub pg_curve_secs: f64,
}

/// The scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scenario {
    Collapse15,
    Collapse3,
    Queueing15,
    FastMax,
    Bursts,
    HealthStep,
    Pg15,
    Pg3,
}

/// Which backend a scenario drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BackendKind {
    Collapse,
    Queueing,
    Fast,
    Postgres,
}

impl Scenario {
    const ALL: [Scenario; 8] = [
        Scenario::Collapse15,
        Scenario::Collapse3,
        Scenario::Queueing15,
        Scenario::FastMax,
        Scenario::Bursts,
        Scenario::HealthStep,
        Scenario::Pg15,
        Scenario::Pg3,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Scenario::Collapse15 => "collapse-1.5x",
            Scenario::Collapse3 => "collapse-3x",
            Scenario::Queueing15 => "queueing-1.5x",
            Scenario::FastMax => "fast-max",
            Scenario::Bursts => "bursts",
            Scenario::HealthStep => "health-step",
            Scenario::Pg15 => "pg-1.5x",
            Scenario::Pg3 => "pg-3x",
        }
    }

    pub(crate) fn backend(self) -> BackendKind {
        match self {
            Scenario::Queueing15 => BackendKind::Queueing,
            Scenario::FastMax => BackendKind::Fast,
            Scenario::Pg15 | Scenario::Pg3 => BackendKind::Postgres,
            _ => BackendKind::Collapse,
        }
    }

    /// The scenarios `names` lists (all of them when empty: the `pg-*` ones only with a
    /// database, `pg`); an unknown name is an error naming the field `scenarios`, a `pg-*`
    /// one without a database an error naming `pg_url`.
    pub(crate) fn chosen(names: &[String], pg: bool) -> Result<Vec<Scenario>> {
        if names.is_empty() {
            return Ok(Scenario::ALL.into_iter().filter(|s| pg || s.backend() != BackendKind::Postgres).collect());
        }
        let mut out = Vec::new();
        for name in names {
            let Some(s) = Scenario::ALL.into_iter().find(|s| s.name() == name.trim()) else {
                let known: Vec<&str> = Scenario::ALL.iter().map(|s| s.name()).collect();
                return Err(Error::input(
                    "scenarios",
                    format!("unknown scenario {name:?}; known are {}", known.join(", ")),
                ));
            };
            if s.backend() == BackendKind::Postgres && !pg {
                return Err(Error::input(
                    "pg_url",
                    format!("scenario {} needs a PostgreSQL database: give its URL (postgres://…)", s.name()),
                ));
            }
            if !out.contains(&s) {
                out.push(s);
            }
        }
        Ok(out)
    }
}

/// The checked settings.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) secs: f64,
    pub(crate) burst_secs: f64,
    pub(crate) burst_gap: f64,
    pub(crate) client: Client,
    pub(crate) knee: usize,
    pub(crate) base: Duration,
    pub(crate) workers: usize,
    pub(crate) health: f64,
    pub(crate) fast_cap: u64,
    pub(crate) fast_outstanding: u64,
    pub(crate) pause: Duration,
    pub(crate) pg: Option<PgSpec>,
    pub(crate) pg_curve: Duration,
    /// The `pg-*` scenarios' peak and best limit, once measured (`run.rs`).
    pub(crate) pg_measured: Option<(f64, usize)>,
}

/// The PostgreSQL spec, range-checked by the scenario table's rules (one set of ranges for
/// `bench overload`'s flags and `safegate live`'s `[postgres]`), its error naming the
/// field (`pg_rows`).
fn check_pg(p: &PgSpec) -> Result<PgSpec> {
    if p.url.trim().is_empty() {
        return Err(Error::input("pg_url", "is empty: give a postgres://… URL"));
    }
    let section = safegate_sim::scenario::PostgresSection {
        url: None,
        rows: p.rows,
        hold_ms: p.hold_ms,
        isolation: p.isolation,
        pool: u32::try_from(p.pool).unwrap_or(u32::MAX),
        retries: p.retries,
    };
    section.check().map_err(|mut e| {
        e.field = format!("pg_{}", e.field);
        e
    })?;
    Ok(p.clone())
}

/// `Err` naming `field` unless `v` is in `(0, max]` (NaN is not).
fn positive(field: &str, v: f64, max: f64) -> Result<f64> {
    if v > 0.0 && v <= max {
        Ok(v)
    } else {
        Err(RangeError::new(field, safegate_core::error::number(v), format!("(0, {max}]")).into())
    }
}

fn count(field: &str, v: usize, max: usize) -> Result<usize> {
    if (1..=max).contains(&v) {
        Ok(v)
    } else {
        Err(RangeError::new(field, v, format!("[1, {max}]")).into())
    }
}

impl Settings {
    pub(crate) fn new(a: &OverloadSpec) -> Result<Settings> {
        let timeout_ms = positive("timeout_ms", a.timeout_ms, 60_000.0)?;
        let slo_ms = positive("slo_ms", a.slo_ms, timeout_ms).map_err(|e| match e {
            Error::Range(mut r) => {
                r.allowed =
                    format!("{} (the SLO is at most the client timeout: a later answer is never seen)", r.allowed);
                Error::Range(r)
            }
            other => other,
        })?;
        let fast_cap = a.fast_cap;
        if !(1..=MAX_REQUESTS as u64).contains(&fast_cap) {
            return Err(RangeError::new("fast_cap", fast_cap, format!("[1, {MAX_REQUESTS:e}]")).into());
        }
        if a.pause_ms > 60_000 {
            return Err(RangeError::new("pause_ms", a.pause_ms, "[0, 60000]").into());
        }
        let base_ms = positive("base_ms", a.base_ms, 10_000.0)?;
        Ok(Settings {
            secs: positive("secs", a.secs, MAX_SECS)?,
            burst_secs: positive("burst_secs", a.burst_secs, MAX_SECS)?,
            burst_gap: positive("burst_gap", a.burst_gap, MAX_SECS)?,
            client: Client {
                timeout: Duration::from_secs_f64(timeout_ms / 1e3),
                slo: Duration::from_secs_f64(slo_ms / 1e3),
                arrivals: a.arrivals,
                seed: a.seed,
            },
            knee: count("knee", a.knee, 100_000)?,
            base: Duration::from_secs_f64(base_ms / 1e3),
            workers: count("workers", a.workers, 100_000)?,
            health: positive("health", a.health, 100.0)?,
            fast_cap,
            fast_outstanding: count("fast_outstanding", a.fast_outstanding.try_into().unwrap_or(usize::MAX), 1_000_000)?
                as u64,
            pause: Duration::from_millis(a.pause_ms),
            pg: a.postgres.as_ref().map(check_pg).transpose()?,
            pg_curve: Duration::from_secs_f64(positive("pg_curve_secs", a.pg_curve_secs, 60.0)?),
            pg_measured: None,
        })
    }

    /// The settings as the JSON document shows them.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "secs": self.secs,
            "burst_secs": self.burst_secs,
            "burst_gap_secs": self.burst_gap,
            "timeout_ms": self.client.timeout.as_secs_f64() * 1e3,
            "slo_ms": self.client.slo.as_secs_f64() * 1e3,
            "arrivals": self.client.arrivals,
            "seed": self.client.seed,
            "knee": self.knee,
            "base_ms": self.base.as_secs_f64() * 1e3,
            "workers": self.workers,
            "health": self.health,
            "fast_cap": self.fast_cap,
            "fast_outstanding": self.fast_outstanding,
            "max_concurrency": LOOSE_LIMIT,
            "peers_built": cfg!(feature = "peers"),
            "postgres": self.pg.as_ref().map(|p| serde_json::json!({
                "url": redacted(&p.url), "spec": p, "curve_secs": self.pg_curve.as_secs_f64(),
            })),
        })
    }

    /// Peak throughput of the collapse or queueing backend at the starting health.
    pub(crate) fn peak(&self, b: BackendKind) -> Option<f64> {
        let per = self.health / self.base.as_secs_f64();
        match b {
            BackendKind::Collapse => Some(self.knee as f64 * per),
            BackendKind::Queueing => Some(self.workers as f64 * per),
            BackendKind::Fast => None,
            BackendKind::Postgres => self.pg_measured.map(|m| m.0),
        }
    }

    /// The backend's best fixed concurrency limit (256 for the fast one; PostgreSQL's: the
    /// top of its measured curve, 1 before it is measured).
    pub(crate) fn oracle_limit(&self, b: BackendKind) -> usize {
        match b {
            BackendKind::Collapse => self.knee,
            BackendKind::Queueing => self.workers,
            BackendKind::Fast => LOOSE_LIMIT,
            BackendKind::Postgres => self.pg_measured.map_or(1, |m| m.1),
        }
    }

    pub(crate) fn backend(&self, b: BackendKind) -> (Backend, Health) {
        let h = Health::new(self.health);
        let backend = match b {
            BackendKind::Collapse => Backend::Collapse(Collapse::new(self.knee, self.base, h.clone())),
            BackendKind::Queueing => Backend::Queueing(Queueing::new(self.workers, self.base, h.clone())),
            BackendKind::Fast | BackendKind::Postgres => Backend::Fast(Fast),
        };
        (backend, h)
    }

    pub(crate) fn describe_backend(&self, b: BackendKind) -> String {
        let ms = self.base.as_secs_f64() * 1e3;
        let h = self.health;
        match b {
            BackendKind::Collapse => format!(
                "collapse backend (C = {}, base {ms} ms, health {h}: peak {:.0} req/s)",
                self.knee,
                self.peak(b).unwrap_or(0.0)
            ),
            BackendKind::Queueing => format!(
                "queueing backend (W = {}, base {ms} ms, health {h}: peak {:.0} req/s)",
                self.workers,
                self.peak(b).unwrap_or(0.0)
            ),
            BackendKind::Fast => "fast backend (answers after one yield)".into(),
            BackendKind::Postgres => match &self.pg {
                Some(p) => format!(
                    "PostgreSQL at {} ({} isolation, two of {} hot rows, {} ms held between them, pool {}, {} retries){}",
                    redacted(&p.url),
                    p.isolation.name(),
                    p.rows,
                    p.hold_ms,
                    p.pool,
                    p.retries,
                    match self.pg_measured {
                        Some((peak, n)) => format!(": peak {peak:.0} txn/s at {n} clients, measured"),
                        None => String::new(),
                    }
                ),
                None => "PostgreSQL (no database given)".into(),
            },
        }
    }

    /// The scenario's schedule, what its figures look like, and its load in words.
    pub(crate) fn plan(&self, s: Scenario) -> (Plan, Shape, String) {
        let peak = self.peak(s.backend()).unwrap_or(0.0);
        let one =
            |rate: Rate| Plan { segments: vec![Segment { start: 0.0, end: self.secs, rate }], health_steps: vec![] };
        match s {
            Scenario::Collapse15 | Scenario::Queueing15 => (
                one(Rate::PerSec(OVERLOAD * peak)),
                Shape::Plain,
                format!("open loop at 1.5× peak ({:.0} req/s) for {} s", OVERLOAD * peak, self.secs),
            ),
            Scenario::Pg15 => (
                one(Rate::PerSec(OVERLOAD * peak)),
                Shape::Plain,
                format!("open loop at 1.5× the measured peak ({:.0} txn/s) for {} s", OVERLOAD * peak, self.secs),
            ),
            Scenario::Pg3 => (
                one(Rate::PerSec(3.0 * peak)),
                Shape::Plain,
                format!("open loop at 3× the measured peak ({:.0} txn/s) for {} s", 3.0 * peak, self.secs),
            ),
            Scenario::Collapse3 => (
                one(Rate::PerSec(3.0 * peak)),
                Shape::Plain,
                format!("open loop at 3× peak ({:.0} req/s) for {} s", 3.0 * peak, self.secs),
            ),
            Scenario::FastMax => (
                one(Rate::Max { cap: self.fast_cap, outstanding: self.fast_outstanding }),
                Shape::Plain,
                format!(
                    "as fast as the generator can for {} s (at most {} requests, {} outstanding)",
                    self.secs, self.fast_cap, self.fast_outstanding
                ),
            ),
            Scenario::Bursts => {
                let period = self.burst_secs + self.burst_gap;
                let segments = (0..3)
                    .map(|k| {
                        let start = k as f64 * period;
                        Segment { start, end: start + self.burst_secs, rate: Rate::PerSec(OVERLOAD * peak) }
                    })
                    .collect();
                (
                    Plan { segments, health_steps: vec![] },
                    Shape::Bursts,
                    format!(
                        "3 bursts of {} s at 1.5× peak ({:.0} req/s), {} s apart, through one stack instance",
                        self.burst_secs,
                        OVERLOAD * peak,
                        self.burst_gap
                    ),
                )
            }
            Scenario::HealthStep => {
                let at = self.secs / 2.0;
                let rate = Rate::PerSec(OVERLOAD * peak);
                let segments = vec![Segment { start: 0.0, end: at, rate }, Segment { start: at, end: self.secs, rate }];
                (
                    Plan { segments, health_steps: vec![(at, self.health * 0.5)] },
                    Shape::Step { at },
                    format!(
                        "open loop at 1.5× peak ({:.0} req/s) for {} s; health {} → {} at {at} s",
                        OVERLOAD * peak,
                        self.secs,
                        self.health,
                        self.health * 0.5
                    ),
                )
            }
        }
    }

    /// Refuse a scenario whose run would offer more than [`MAX_REQUESTS`] (a `pg-*` one
    /// only once its peak is measured).
    pub(crate) fn check_budget(&self, s: Scenario) -> Result<()> {
        if s.backend() == BackendKind::Postgres && self.pg_measured.is_none() {
            return Ok(());
        }
        let (plan, _, _) = self.plan(s);
        let requests: f64 = plan
            .segments
            .iter()
            .map(|g| match g.rate {
                Rate::PerSec(r) => r * (g.end - g.start),
                Rate::Max { cap, .. } => cap as f64,
            })
            .sum();
        let (field, value) = if s == Scenario::Bursts { ("burst_secs", self.burst_secs) } else { ("secs", self.secs) };
        safegate_core::limits::budget(
            field,
            value,
            requests,
            MAX_REQUESTS,
            &format!("requests offered by one {} run (rate × seconds)", s.name()),
        )?;
        Ok(())
    }
}
