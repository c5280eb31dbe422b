//! The seed's five-step checklist on telemetry, and the failure modes users of today's
//! limiters report (docs/boundary-check.md §What the check does).

use safegate_core::boundary::{Boundary, MagnitudeSection};
use safegate_core::estimators::tail::{classify, TailClass, TailReport};
use safegate_core::filter::{Constraint, ConstraintKind, Filter, FilterState};
use safegate_core::stats::{empirical_cvar, trials_to_show, Frequency, Verdict};
use serde::Serialize;

use super::{Signal, Telemetry, TelemetryError};

/// What the check is asked.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// θ, the occupancy the signal must stay at or below (0.7).
    pub threshold: f64,
    /// Q, the signal's capacity; `None`: the telemetry's `capacity`, else an error.
    pub capacity: Option<f64>,
    /// The proposed ε (0.01).
    pub epsilon: f64,
    /// The horizon T \[s\] ε is over (600).
    pub horizon: f64,
    /// CVaR tail fraction η (0.05).
    pub eta: f64,
    /// The retry budget, as a share of offered load (0.1); flagged above twice it.
    pub retry_budget: f64,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self { threshold: 0.7, capacity: None, epsilon: 0.01, horizon: 600.0, eta: 0.05, retry_budget: 0.1 }
    }
}

impl CheckOptions {
    /// Every flag against the range the boundary file it drafts accepts (the checks
    /// `safegate verify --boundary` applies), so no flag makes a draft verify refuses.
    fn validate(&self) -> Result<(), String> {
        use safegate_core::boundary::MIN_EPSILON;
        use safegate_core::error::check;
        let flag = |name: &str, r: Result<f64, safegate_core::error::RangeError>| {
            r.map(|_| ()).map_err(|e| {
                format!("--{name} {}: must be in {} (the range a boundary file accepts)", e.value, e.allowed)
            })
        };
        flag("threshold", check::threshold("threshold", self.threshold))?;
        if let Some(c) = self.capacity {
            flag("capacity", check::capacity("capacity", c))?;
        }
        flag("epsilon", check::within("epsilon", self.epsilon, MIN_EPSILON, 1.0 - f64::EPSILON, "[1e-12, 1)"))?;
        // The draft boundary carries the horizon: it must be one a boundary file accepts,
        // from one decision period to MAX_STEPS of them.
        let period = Boundary::default().decision.period;
        let longest = period * safegate_sim::limits::MAX_STEPS;
        if !(self.horizon >= period && self.horizon <= longest) {
            return Err(format!(
                "--horizon {}: must be between one decision period ({period} s) and {longest:.0} s, the horizons a boundary file accepts",
                self.horizon
            ));
        }
        flag("eta", check::within("eta", self.eta, 1e-9, 1.0 - f64::EPSILON, "[1e-9, 1)"))?;
        if !(self.retry_budget > 0.0 && self.retry_budget < 1.0) {
            return Err(format!("--retry-budget {}: must be in (0, 1)", self.retry_budget));
        }
        Ok(())
    }
}

/// Step 1: the barrier signal and its margin.
#[derive(Debug, Clone, Serialize)]
pub struct Margin {
    /// `queue` or `in_flight`.
    pub signal: &'static str,
    /// Q.
    pub capacity: f64,
    /// θ.
    pub threshold: f64,
    /// The line θ·Q.
    pub line: f64,
    /// `h = θ·Q − x` at the last sample, in requests.
    pub current: f64,
    /// The smallest `h` seen.
    pub min: f64,
    /// The mean `h`.
    pub mean: f64,
    /// Share of time outside the safe set (`h < 0`).
    pub share_outside: f64,
    /// Samples, and the time they cover \[s\].
    pub samples: usize,
    /// Seconds of data.
    pub duration: f64,
}

/// Step 2: how often the data left the safe set within a horizon.
#[derive(Debug, Clone, Serialize)]
pub struct ExitCheck {
    /// The proposed ε.
    pub epsilon: f64,
    /// The horizon \[s\].
    pub horizon: f64,
    /// Windows of one horizon the data hold, and those with an exit, with the 99 %
    /// Clopper–Pearson interval.
    pub frequency: Frequency,
    /// What the windows show about ε.
    pub verdict: Verdict,
    /// Exit-free windows it would take to show ε.
    pub windows_needed: u64,
    /// Excursions (entries into `h < 0`) per hour of data.
    pub excursions_per_hour: f64,
    /// In words.
    pub reason: String,
}

/// Step 3: the excursions and their tail.
#[derive(Debug, Clone, Serialize)]
pub struct Excursions {
    /// Excursions (maximal stretches with `h < 0`).
    pub count: usize,
    /// Mean and longest duration \[s\].
    pub mean_duration: f64,
    /// Longest duration \[s\].
    pub max_duration: f64,
    /// Peak overshoot of each excursion, as a share of Q (the severities).
    #[serde(skip)]
    pub peaks: Vec<f64>,
    /// Largest peak overshoot, as a share of Q.
    pub worst: f64,
    /// The tail of the peaks.
    pub tail: TailReport,
}

/// Step 4: η and ρ.
#[derive(Debug, Clone, Serialize)]
pub struct Severity {
    /// η.
    pub eta: f64,
    /// Empirical CVaR at η of the per-sample overshoot `max(0, −h)/Q`.
    pub cvar_samples: f64,
    /// Empirical CVaR at η of the excursion peaks (share of Q), if any.
    pub cvar_peaks: Option<f64>,
    /// The suggested ρ.
    pub rho: f64,
    /// Why, and the caveats.
    pub reason: String,
}

/// Step 5, one cell of the envelope.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Traffic range [req/s].
    pub traffic: [f64; 2],
    /// Health range (`None` when there is no health column).
    pub health: Option<[f64; 2]>,
    /// Samples in the cell inside the safe set.
    pub samples: usize,
    /// Share of them with no admitted rate satisfying ε alone.
    pub infeasible_probability: f64,
    /// Share with no admitted rate satisfying ε and ρ together.
    pub infeasible_joint: f64,
}

/// Step 5: is the joint feasible set ever empty, across the envelope seen.
#[derive(Debug, Clone, Serialize)]
pub struct Feasibility {
    /// Whether it could be checked (it needs a throughput column and the queue signal).
    pub checked: bool,
    /// Why not, or what it found.
    pub reason: String,
    /// The envelope seen: traffic [req/s].
    pub traffic: [f64; 2],
    /// The envelope seen: health (`None` without a health column).
    pub health: Option<[f64; 2]>,
    /// Share of the samples inside the safe set where ε alone is infeasible.
    pub infeasible_probability: f64,
    /// Share of them where ε and ρ together are infeasible.
    pub infeasible_joint: f64,
    /// By cell.
    pub cells: Vec<Cell>,
}

/// A failure mode the check looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// The latency baseline drifts (Envoy #11579, Netflix concurrency-limits #165).
    BaselineDrift,
    /// A published limit stuck at its minimum or maximum (Netflix concurrency-limits #137).
    StuckLimit,
    /// Retries beyond the budget.
    RetryStorm,
    /// The control loop oscillates.
    Oscillation,
    /// Excursions with a heavy tail.
    HeavyTail,
}

impl FindingKind {
    /// Every kind.
    pub const ALL: [FindingKind; 5] = [
        FindingKind::BaselineDrift,
        FindingKind::StuckLimit,
        FindingKind::RetryStorm,
        FindingKind::Oscillation,
        FindingKind::HeavyTail,
    ];

    /// Kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::BaselineDrift => "baseline-drift",
            FindingKind::StuckLimit => "stuck-limit",
            FindingKind::RetryStorm => "retry-storm",
            FindingKind::Oscillation => "oscillation",
            FindingKind::HeavyTail => "heavy-tail",
        }
    }
}

/// One failure mode, checked or not, flagged or not.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Which.
    pub kind: FindingKind,
    /// Whether the data had what it takes to check it.
    pub checked: bool,
    /// Whether it was found.
    pub flagged: bool,
    /// The evidence, or what is missing.
    pub evidence: String,
}

/// Everything the check found, and the draft boundary.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// Rows read.
    pub rows: usize,
    /// Columns present.
    pub columns: Vec<&'static str>,
    /// Step 1.
    pub margin: Margin,
    /// Step 2.
    pub exits: ExitCheck,
    /// Step 3.
    pub excursions: Excursions,
    /// Step 4.
    pub severity: Severity,
    /// Step 5.
    pub feasibility: Feasibility,
    /// Beyond the seed: the failure modes users report.
    pub findings: Vec<Finding>,
    /// A boundary file to edit, then `safegate verify`.
    pub draft: String,
    /// Why the draft would not pass `safegate verify --boundary` (read back through the same
    /// parse and range checks), when it would not: such a draft is not written.
    pub draft_error: Option<String>,
}

impl CheckReport {
    /// The kinds flagged.
    pub fn flagged(&self) -> Vec<FindingKind> {
        self.findings.iter().filter(|f| f.flagged).map(|f| f.kind).collect()
    }
}

/// Run the checklist. Errors name the input (`source`) when the data cannot answer at all
/// (no capacity to measure a margin against).
pub fn check(tel: &Telemetry, opts: &CheckOptions, source: &str) -> Result<CheckReport, TelemetryError> {
    let err = |what: String| TelemetryError { source: source.to_string(), line: None, what };
    opts.validate().map_err(err)?;
    if tel.len() < 2 {
        return Err(err("fewer than two rows".into()));
    }
    // Requests in flight are bounded by the published limit: its largest value is their
    // capacity when nothing else says.
    let in_flight_cap = match (tel.signal, &tel.limit) {
        (Some(Signal::InFlight), Some(l)) => Some(l.iter().copied().fold(0.0, f64::max)).filter(|c| *c > 0.0),
        _ => None,
    };
    let capacity = opts.capacity.or(tel.capacity).or(in_flight_cap).ok_or_else(|| {
        err(format!(
            "the {}'s capacity is unknown: pass --capacity Q (or add a `capacity` column / the safegate_backlog_bound metric{})",
            tel.signal.unwrap_or(Signal::Queue).name(),
            if tel.signal == Some(Signal::InFlight) { ", or a `limit` column" } else { "" }
        ))
    })?;
    // A window shorter than the data's sampling interval holds no sample: counting it as
    // exit-free would be evidence the data do not hold.
    let interval = median_interval(tel);
    if opts.horizon < interval {
        return Err(err(format!(
            "--horizon {}: shorter than the data's median sampling interval of {interval} s, so a window would hold no sample",
            opts.horizon
        )));
    }
    let line = opts.threshold * capacity;
    let margin = margin(tel, opts, capacity, line);
    let runs = excursion_runs(tel, line);
    let exits = exit_check(tel, opts, line, runs.len());
    let excursions = excursion_stats(tel, &runs, capacity, line);
    let severity = severity(tel, opts, capacity, line, &excursions);
    let seen = Seen::of(tel);
    let draft = draft(tel, opts, capacity, &severity, &seen);
    let feasibility = feasibility(tel, &draft, &seen);
    let draft_text = draft_text(&draft, &excursions, &exits, &feasibility);
    let draft_error = verify_draft(&draft_text, capacity).err();
    let offered = seen.offered.as_deref();
    let findings = vec![
        baseline_drift(tel),
        stuck_limit(tel, offered),
        retry_storm(tel, opts, offered),
        oscillation(tel),
        heavy_tail(&excursions),
    ];
    Ok(CheckReport {
        rows: tel.len(),
        columns: tel.columns(),
        margin,
        exits,
        excursions,
        severity,
        feasibility,
        findings,
        draft: draft_text,
        draft_error,
    })
}

/// The sample interval of row `i` (the first row takes the second's).
fn dt_at(t: &[f64], i: usize) -> f64 {
    if i == 0 {
        t[1] - t[0]
    } else {
        t[i] - t[i - 1]
    }
}

fn margin(tel: &Telemetry, opts: &CheckOptions, capacity: f64, line: f64) -> Margin {
    let n = tel.len();
    let (mut min, mut sum_w, mut w, mut outside) = (f64::INFINITY, 0.0, 0.0, 0.0);
    for i in 0..n {
        let h = line - tel.x[i];
        let d = dt_at(&tel.t, i);
        min = min.min(h);
        sum_w += h * d;
        w += d;
        if h < 0.0 {
            outside += d;
        }
    }
    Margin {
        signal: tel.signal.unwrap_or(Signal::Queue).name(),
        capacity,
        threshold: opts.threshold,
        line,
        current: line - tel.x[n - 1],
        min,
        mean: sum_w / w,
        share_outside: outside / w,
        samples: n,
        duration: tel.t[n - 1] - tel.t[0],
    }
}

/// Maximal runs of rows with `x > line`: (first row, last row).
fn excursion_runs(tel: &Telemetry, line: f64) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut start = None;
    for (i, &x) in tel.x.iter().enumerate() {
        match (x > line, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                runs.push((s, i - 1));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push((s, tel.len() - 1));
    }
    runs
}

/// The median gap between consecutive rows \[s\] (at least two rows).
fn median_interval(tel: &Telemetry) -> f64 {
    let mut gaps: Vec<f64> = tel.t.windows(2).map(|w| w[1] - w[0]).collect();
    let mid = gaps.len() / 2;
    *gaps.select_nth_unstable_by(mid, f64::total_cmp).1
}

/// Whole horizons from the first row that hold at least one row, and those in which the
/// signal was above `line` at some row or entered it above (the row before was above).
/// Windows a gap in the data leaves empty count as neither: they are not evidence.
fn window_counts(tel: &Telemetry, horizon: f64, line: f64) -> (u64, u64) {
    let t0 = tel.t[0];
    let whole = ((tel.t[tel.len() - 1] - t0) / horizon).floor() as u64;
    let (mut windows, mut exits) = (0u64, 0u64);
    let mut current: Option<(u64, bool)> = None;
    let mut above_before = false;
    for (&t, &x) in tel.t.iter().zip(&tel.x) {
        let w = ((t - t0) / horizon) as u64;
        if w >= whole {
            break;
        }
        match current {
            Some((cw, hit)) if cw == w => current = Some((w, hit || x > line)),
            _ => {
                if let Some((_, hit)) = current {
                    windows += 1;
                    exits += u64::from(hit);
                }
                current = Some((w, above_before || x > line));
            }
        }
        above_before = x > line;
    }
    if let Some((_, hit)) = current {
        windows += 1;
        exits += u64::from(hit);
    }
    (windows, exits)
}

fn exit_check(tel: &Telemetry, opts: &CheckOptions, line: f64, excursions: usize) -> ExitCheck {
    let span = tel.t[tel.len() - 1] - tel.t[0];
    let (windows, exits) = window_counts(tel, opts.horizon, line);
    let frequency = Frequency::from_counts(exits, windows);
    let verdict = frequency.verdict(opts.epsilon);
    let needed = trials_to_show(opts.epsilon);
    let hours = span / 3600.0;
    let reason = if windows == 0 {
        format!(
            "the data cover {span:.0} s, less than one horizon of {:.0} s: no window to count exits in (a shorter --horizon, or more data)",
            opts.horizon
        )
    } else {
        match verdict {
            Verdict::Holds => format!(
                "{exits} of {windows} windows of {:.0} s left the safe set; the 99 % upper limit {:.4} is within ε = {}",
                opts.horizon, frequency.ci_high, opts.epsilon
            ),
            Verdict::Violates => format!(
                "{exits} of {windows} windows of {:.0} s left the safe set; even the 99 % lower limit {:.4} exceeds ε = {}",
                opts.horizon, frequency.ci_low, opts.epsilon
            ),
            Verdict::NotEstablished => format!(
                "{exits} of {windows} windows of {:.0} s left the safe set; the 99 % interval [{:.4}, {:.4}] straddles ε = {} ({needed} exit-free windows would show it)",
                opts.horizon, frequency.ci_low, frequency.ci_high, opts.epsilon
            ),
        }
    };
    ExitCheck {
        epsilon: opts.epsilon,
        horizon: opts.horizon,
        frequency,
        verdict,
        windows_needed: needed,
        excursions_per_hour: if hours > 0.0 { excursions as f64 / hours } else { 0.0 },
        reason,
    }
}

fn excursion_stats(tel: &Telemetry, runs: &[(usize, usize)], capacity: f64, line: f64) -> Excursions {
    let mut peaks = Vec::with_capacity(runs.len());
    let (mut total, mut longest) = (0.0, 0.0f64);
    for &(s, e) in runs {
        // An excursion lasts until the first sample back inside (or the data's end).
        let end = if e + 1 < tel.len() { tel.t[e + 1] } else { tel.t[e] };
        let d = end - tel.t[s];
        total += d;
        longest = longest.max(d);
        let peak = tel.x[s..=e].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        peaks.push((peak - line) / capacity);
    }
    let count = runs.len();
    Excursions {
        count,
        mean_duration: if count > 0 { total / count as f64 } else { 0.0 },
        max_duration: longest,
        worst: peaks.iter().copied().fold(0.0, f64::max),
        tail: classify(&peaks),
        peaks,
    }
}

/// Round up to two significant digits.
fn round_up_2(x: f64) -> f64 {
    if !(x > 0.0 && x.is_finite()) {
        return x;
    }
    let mag = 10f64.powf(x.log10().floor() - 1.0);
    (x / mag).ceil() * mag
}

fn severity(tel: &Telemetry, opts: &CheckOptions, capacity: f64, line: f64, ex: &Excursions) -> Severity {
    let mut over: Vec<f64> = tel.x.iter().map(|x| ((x - line) / capacity).max(0.0)).collect();
    let cvar_samples = empirical_cvar(&mut over, opts.eta);
    let cvar_peaks = (!ex.peaks.is_empty()).then(|| empirical_cvar(&mut ex.peaks.clone(), opts.eta));
    let share_outside = over.iter().filter(|v| **v > 0.0).count() as f64 / over.len() as f64;
    let mut notes = Vec::new();
    // ρ: what the data did, rounded up, and at least 1 % of Q (a bound of 0 would make the
    // magnitude constraint demand the barrier itself).
    let mut rho = round_up_2(cvar_samples).max(0.01);
    if ex.tail.class == TailClass::Heavy {
        if let Some(h) = ex.tail.hill {
            if h.alpha <= 1.0 {
                notes.push(format!(
                    "the excursion peaks' tail index α̂ = {:.2} ≤ 1: their mean, hence any CVaR, is infinite; the empirical CVaR understates what a longer record will show",
                    h.alpha
                ));
            } else if h.alpha <= 2.0 {
                notes.push(format!(
                    "the peaks' tail index α̂ = {:.2} ≤ 2: infinite variance, so the empirical CVaR converges slowly; ρ is set from the fitted tail, CVaR = VaR·α/(α − 1)",
                    h.alpha
                ));
                // The Pareto tail's CVaR over the peaks' η-quantile (Pareto: CVaR = VaR·α/(α−1)).
                let mut p = ex.peaks.clone();
                p.sort_unstable_by(|a, b| b.total_cmp(a));
                let k = ((opts.eta * p.len() as f64).ceil() as usize).clamp(1, p.len()) - 1;
                let tail_cvar = p[k] * h.alpha / (h.alpha - 1.0) * share_outside.min(1.0);
                rho = rho.max(round_up_2(tail_cvar));
            }
        }
    }
    if share_outside < opts.eta {
        notes.push(format!(
            "only {:.2} % of samples are outside the safe set, fewer than η = {}: the CVaR averages mostly in-bound samples",
            100.0 * share_outside,
            opts.eta
        ));
    }
    let reason = format!(
        "empirical CVaR at η = {} of the overshoot: {:.4} of Q per sample{}; suggested ρ = {rho}{}",
        opts.eta,
        cvar_samples,
        cvar_peaks.map_or(String::new(), |c| format!(", {c:.4} of Q over the excursion peaks")),
        if notes.is_empty() { String::new() } else { format!(" ({})", notes.join("; ")) }
    );
    Severity { eta: opts.eta, cvar_samples, cvar_peaks, rho, reason }
}

/// The draft boundary: the options, the capacity, ρ, and the envelope the data cover.
fn draft(tel: &Telemetry, opts: &CheckOptions, capacity: f64, sev: &Severity, seen: &Seen) -> Boundary {
    let mut b = Boundary {
        name: Some("draft".into()),
        description: Some("drafted by safegate boundary check; edit, then safegate verify --boundary".into()),
        ..Boundary::default()
    };
    b.barrier.threshold = opts.threshold;
    b.barrier.capacity = Some(capacity);
    b.probability.epsilon = opts.epsilon;
    b.probability.horizon = opts.horizon;
    b.magnitude = Some(MagnitudeSection {
        eta: opts.eta,
        rho: sev.rho.min(safegate_core::filter::constraint::MAX_RHO),
        ..Default::default()
    });
    let traffic = seen.traffic();
    b.envelope.traffic = [traffic[0].floor(), traffic[1].ceil().max(traffic[0].floor() + 1.0)];
    if let (true, Some(health)) = (tel.health.is_some(), seen.health) {
        b.envelope.health = [(health[0] * 100.0).floor() / 100.0, (health[1] * 100.0).ceil() / 100.0];
    }
    b
}

/// Offered traffic per row: the `offered` column, else completions plus rejections.
fn traffic(tel: &Telemetry) -> Option<Vec<f64>> {
    if let Some(o) = &tel.offered {
        return Some(o.clone());
    }
    let thr = tel.throughput.as_ref()?;
    Some(match &tel.rejections {
        Some(r) => thr.iter().zip(r).map(|(a, b)| a + b).collect(),
        None => thr.clone(),
    })
}

fn quantile(v: &[f64], p: f64) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    let i = ((p * (s.len() - 1) as f64).round() as usize).min(s.len() - 1);
    let (_, x, _) = s.select_nth_unstable_by(i, |a, b| a.total_cmp(b));
    *x
}

/// What several steps read of the data, derived once: the offered traffic per row, its
/// percentiles (1st, 25th, 50th, 75th, 99th: the envelope's edges and the feasibility
/// bins), and health's range.
struct Seen {
    offered: Option<Vec<f64>>,
    traffic_q: [f64; 5],
    health: Option<[f64; 2]>,
}

impl Seen {
    fn of(tel: &Telemetry) -> Self {
        let offered = traffic(tel);
        let traffic_q = offered.as_ref().map_or([0.0; 5], |v| {
            let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
            s.sort_unstable_by(f64::total_cmp);
            [0.01f64, 0.25, 0.5, 0.75, 0.99]
                .map(|p| s.get(((p * s.len().saturating_sub(1) as f64).round()) as usize).copied().unwrap_or(f64::NAN))
        });
        let health = tel.health.as_ref().map(|h| {
            [h.iter().copied().fold(f64::INFINITY, f64::min), h.iter().copied().fold(f64::NEG_INFINITY, f64::max)]
        });
        Seen { offered, traffic_q, health }
    }

    /// The envelope's traffic: between the 1st and 99th percentiles.
    fn traffic(&self) -> [f64; 2] {
        [self.traffic_q[0], self.traffic_q[4]]
    }
}

/// Read the draft back as `safegate verify --boundary` does: the TOML parse, then every
/// range check and the filter's construction.
fn verify_draft(text: &str, capacity: f64) -> Result<(), String> {
    let b = Boundary::from_toml(text, &[]).map_err(|e| e.0)?;
    b.safety_config(capacity).map(|_| ()).map_err(|e| e.to_string())
}

fn draft_text(b: &Boundary, ex: &Excursions, exits: &ExitCheck, feas: &Feasibility) -> String {
    let mut o = String::new();
    o.push_str("# Drafted by `safegate boundary check` from telemetry. Edit what a reviewer would\n");
    o.push_str("# sign (ε, ρ, the envelope), then check it against the model: `safegate verify --boundary FILE`.\n");
    o.push_str(&format!("# Exits: {}\n", exits.reason));
    o.push_str(&format!("# Excursion peaks: {} ({})\n", ex.tail.class.name(), ex.tail.reason));
    o.push_str(&format!("# Feasibility: {}\n", feas.reason));
    match toml::to_string(b) {
        Ok(t) => o.push_str(&t),
        Err(e) => o.push_str(&format!("# the draft could not be written: {e}\n")),
    }
    o
}

fn feasibility(tel: &Telemetry, b: &Boundary, seen: &Seen) -> Feasibility {
    let health_env = seen.health.unwrap_or([1.0, 1.0]);
    let mut out = Feasibility {
        checked: false,
        reason: String::new(),
        traffic: seen.traffic(),
        health: seen.health,
        infeasible_probability: 0.0,
        infeasible_joint: 0.0,
        cells: Vec::new(),
    };
    if tel.signal != Some(Signal::Queue) {
        out.reason = "not checked: the filter's constraints are on a queue; the signal is requests in flight".into();
        return out;
    }
    let (Some(thr), Some(offered)) = (&tel.throughput, seen.offered.as_deref()) else {
        out.reason = "not checked: needs a throughput column (the service rate the filter predicts with)".into();
        return out;
    };
    // The filter the draft builds, with and without its CVaR constraint (the backup set is
    // left out: the question is whether ε and ρ alone leave an action).
    let built = b.safety_config(b.barrier.capacity.unwrap_or(1.0)).ok().and_then(|cfg| {
        let keep = |c: &&Constraint| c.kind() != ConstraintKind::BackupSet;
        let joint: Vec<Constraint> = cfg.constraints.iter().filter(keep).copied().collect();
        let prob: Vec<Constraint> = joint.iter().copied().filter(|c| c.kind() != ConstraintKind::Cvar).collect();
        Some((Filter::new(cfg.barrier, &joint).ok()?, Filter::new(cfg.barrier, &prob).ok()?))
    });
    let Some((joint, prob)) = built else {
        out.reason = "not checked: the draft boundary does not build a filter".into();
        return out;
    };
    let dt = b.decision.period;
    // Bins: traffic quartiles × health thirds of the range seen.
    // (The outer edges are the 1st and 99th percentiles; rows beyond them count in the end
    // bins.)
    let tq = seen.traffic_q;
    let hb = [
        health_env[0],
        health_env[0] + (health_env[1] - health_env[0]) / 3.0,
        health_env[0] + 2.0 * (health_env[1] - health_env[0]) / 3.0,
        health_env[1],
    ];
    let mut counts = vec![[0usize; 3]; 12];
    let retries = tel.retries.as_ref();
    let n = tel.len();
    let line = b.barrier.threshold * b.barrier.capacity.unwrap_or(1.0);
    let mut outside = 0usize;
    for i in 0..n {
        // The filter acts inside the safe set; a state already outside is the backup's.
        if tel.x[i] > line {
            outside += 1;
            continue;
        }
        let service = thr[i].max(0.0);
        let retry = retries.map_or(0.0, |r| r[i]);
        let arrivals = offered[i].max(0.0);
        let x = FilterState {
            queue: tel.x[i],
            dt,
            drift: retry - service,
            sigma: ((arrivals + service) * dt).sqrt(),
            var0: (service + retry) * dt,
            prev_admit: 0.0,
            prev_drift: retry - service,
        };
        let p_bad = prob.upper(&x).0 < 0.0;
        let j_bad = joint.upper(&x).0 < 0.0;
        let ti = tq[1..4].iter().filter(|q| offered[i] > **q).count();
        let hi = match &tel.health {
            Some(h) => hb[1..3].iter().filter(|q| h[i] > **q).count(),
            None => 0,
        };
        let c = &mut counts[ti * 3 + hi];
        c[0] += 1;
        c[1] += p_bad as usize;
        c[2] += j_bad as usize;
    }
    let total: [usize; 3] = counts.iter().fold([0; 3], |a, c| [a[0] + c[0], a[1] + c[1], a[2] + c[2]]);
    for ti in 0..4 {
        for hi in 0..3 {
            let c = counts[ti * 3 + hi];
            if c[0] == 0 {
                continue;
            }
            let health = tel.health.is_some().then(|| [hb[hi], hb[hi + 1]]);
            out.cells.push(Cell {
                traffic: [tq[ti], tq[ti + 1]],
                health,
                samples: c[0],
                infeasible_probability: c[1] as f64 / c[0] as f64,
                infeasible_joint: c[2] as f64 / c[0] as f64,
            });
        }
    }
    out.checked = true;
    out.infeasible_probability = total[1] as f64 / total[0].max(1) as f64;
    out.infeasible_joint = total[2] as f64 / total[0].max(1) as f64;
    let also = if outside > 0 {
        format!("; {outside} samples already outside the safe set are the backup's")
    } else {
        String::new()
    };
    out.reason = if total[0] == 0 {
        out.checked = false;
        format!("not checked: no sample inside the safe set{also}")
    } else if total[2] == 0 {
        format!("ε and ρ together leave a feasible admitted rate at every one of the {} states seen inside the safe set{also}", total[0])
    } else {
        format!(
            "no admitted rate satisfies ε and ρ together in {:.2} % of the {} states seen inside the safe set ({:.2} % for ε alone): the backup policy must cover them{also}",
            100.0 * out.infeasible_joint,
            total[0],
            100.0 * out.infeasible_probability
        )
    };
    out
}

/// Spearman's rank correlation of `v` with its index.
fn trend(v: &[f64]) -> f64 {
    let n = v.len();
    if n < 3 {
        return 0.0;
    }
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|a, b| v[*a].total_cmp(&v[*b]));
    let mut rank = vec![0.0; n];
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        for &r in &idx[i..=j] {
            rank[r] = (i + j) as f64 / 2.0;
        }
        i = j + 1;
    }
    let mean = (n - 1) as f64 / 2.0;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (k, r) in rank.iter().enumerate() {
        let (dx, dy) = (k as f64 - mean, r - mean);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx > 0.0 && syy > 0.0 {
        sxy / (sxx * syy).sqrt()
    } else {
        0.0
    }
}

/// Split rows into `parts` contiguous blocks of equal time span: the row ranges.
fn blocks(t: &[f64], parts: usize) -> Vec<std::ops::Range<usize>> {
    let (t0, t1) = (t[0], t[t.len() - 1]);
    let span = (t1 - t0) / parts as f64;
    let mut out = Vec::with_capacity(parts);
    let mut start = 0;
    for p in 1..=parts {
        let edge = t0 + span * p as f64;
        let mut end = start;
        while end < t.len() && (t[end] < edge || p == parts) {
            end += 1;
        }
        out.push(start..end);
        start = end;
    }
    out
}

/// Windows the drift check splits the data into.
const DRIFT_WINDOWS: usize = 20;

/// The latency baseline (each window's 5th percentile) trending: Spearman's ρ of the
/// baselines against time ≥ 0.8 in size and the last fifth's median baseline 1.3× the
/// first fifth's (or below 1/1.3).
fn baseline_drift(tel: &Telemetry) -> Finding {
    let kind = FindingKind::BaselineDrift;
    let Some(lat) = &tel.latency else {
        return Finding { kind, checked: false, flagged: false, evidence: "not checked: no latency column".into() };
    };
    if tel.len() < 10 * DRIFT_WINDOWS {
        return Finding {
            kind,
            checked: false,
            flagged: false,
            evidence: format!("not checked: {} rows; {} are needed", tel.len(), 10 * DRIFT_WINDOWS),
        };
    }
    let base: Vec<f64> = blocks(&tel.t, DRIFT_WINDOWS)
        .into_iter()
        .filter(|r| r.len() >= 5)
        .map(|r| quantile(&lat[r], 0.05))
        .filter(|b| b.is_finite())
        .collect();
    if base.len() < 5 {
        return Finding {
            kind,
            checked: false,
            flagged: false,
            evidence: "not checked: too few windows with data".into(),
        };
    }
    let rho = trend(&base);
    let fifth = (base.len() / 5).max(1);
    let first = quantile(&base[..fifth], 0.5);
    let last = quantile(&base[base.len() - fifth..], 0.5);
    let ratio = if first > 0.0 { last / first } else { f64::INFINITY };
    // A drift is gradual: a straight line fits the baselines better than one step between
    // two levels (a level shift — a deploy, a stuck limit — is reported, not flagged).
    let step = step_fits_better(&base);
    let flagged = rho.abs() >= 0.8 && (ratio >= 1.3 || ratio <= 1.0 / 1.3) && !step;
    let evidence = format!(
        "the latency baseline (5th percentile per window) moved from {first:.4} s to {last:.4} s ({ratio:.2}×), rank correlation with time {rho:.2}{}",
        if step && rho.abs() >= 0.8 {
            "; one step between two levels fits it better than a line: a level shift, not a drift"
        } else if flagged {
            ": a limiter that learns its baseline RTT from these samples drifts with it (Envoy #11579, Netflix concurrency-limits #165)"
        } else {
            ""
        }
    );
    Finding { kind, checked: true, flagged, evidence }
}

/// Whether two constant levels with one step between them fit `v` with less than half the
/// squared error of a least-squares line through it.
fn step_fits_better(v: &[f64]) -> bool {
    let n = v.len();
    if n < 4 {
        return false;
    }
    let nf = n as f64;
    let (mx, my) = ((nf - 1.0) / 2.0, v.iter().sum::<f64>() / nf);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in v.iter().enumerate() {
        sxy += (i as f64 - mx) * (y - my);
        sxx += (i as f64 - mx) * (i as f64 - mx);
    }
    let slope = sxy / sxx;
    let ss_line: f64 = v.iter().enumerate().map(|(i, y)| (y - my - slope * (i as f64 - mx)).powi(2)).sum();
    let ss = |s: &[f64]| {
        let m = s.iter().sum::<f64>() / s.len() as f64;
        s.iter().map(|y| (y - m) * (y - m)).sum::<f64>()
    };
    let ss_step = (1..n).map(|j| ss(&v[..j]) + ss(&v[j..])).fold(f64::INFINITY, f64::min);
    ss_step < 0.5 * ss_line
}

/// The longest run of rows at `value`, as (start, end) rows.
fn longest_run_at(v: &[f64], value: f64) -> Option<(usize, usize)> {
    let tol = 1e-9 * value.abs().max(1.0);
    let (mut best, mut start) = (None::<(usize, usize)>, None);
    for i in 0..=v.len() {
        let at = i < v.len() && (v[i] - value).abs() <= tol;
        match (at, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                if best.map_or(true, |(a, b)| i - 1 - s > b - a) {
                    best = Some((s, i - 1));
                }
                start = None;
            }
            _ => {}
        }
    }
    best
}

/// Spread of a column over rows `r`: `p90/p10` (`ratio`) or `p90 − p10`.
fn spread(v: &[f64], r: std::ops::Range<usize>, ratio: bool) -> f64 {
    let (lo, hi) = (quantile(&v[r.clone()], 0.1), quantile(&v[r], 0.9));
    if !ratio {
        hi - lo
    } else if lo > 0.0 {
        hi / lo
    } else if hi > 0.0 {
        f64::INFINITY
    } else {
        1.0
    }
}

/// A limit held at its smallest or largest value for ≥ 20 % of the data (and ≥ 100
/// samples) while the
/// conditions it should respond to change (health spread ≥ 0.3, latency or offered load
/// p90/p10 ≥ 2), or for ≥ 50 % of the data when there is nothing to compare with. A
/// limit that never moves is reported, not flagged: it may be a static limit.
fn stuck_limit(tel: &Telemetry, offered: Option<&[f64]>) -> Finding {
    let kind = FindingKind::StuckLimit;
    let Some(limit) = &tel.limit else {
        return Finding { kind, checked: false, flagged: false, evidence: "not checked: no limit column".into() };
    };
    let lo = limit.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = limit.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if hi - lo <= 1e-9 * hi.abs().max(1.0) {
        return Finding {
            kind,
            checked: true,
            flagged: false,
            evidence: format!(
                "the limit is {lo} throughout: a static limit, or one stuck from the start (the data cannot tell)"
            ),
        };
    }
    let span = tel.t[tel.len() - 1] - tel.t[0];
    let mut worst: Option<(f64, &str, f64, String)> = None;
    for (value, which) in [(lo, "minimum"), (hi, "maximum")] {
        let Some((s, e)) = longest_run_at(limit, value) else { continue };
        let end = if e + 1 < tel.len() { tel.t[e + 1] } else { tel.t[e] };
        let share = (end - tel.t[s]) / span;
        let r = s..e + 1;
        let mut changed = Vec::new();
        let mut compared = false;
        if let Some(h) = &tel.health {
            compared = true;
            let sp = spread(h, r.clone(), false);
            if sp >= 0.3 {
                changed.push(format!("health moved by {sp:.2}"));
            }
        }
        if let Some(l) = &tel.latency {
            compared = true;
            let sp = spread(l, r.clone(), true);
            if sp >= 2.0 {
                changed.push(format!("latency varied {sp:.1}×"));
            }
        }
        if let Some(o) = &offered {
            compared = true;
            let sp = spread(o, r.clone(), true);
            if sp >= 2.0 {
                changed.push(format!("offered load varied {sp:.1}×"));
            }
        }
        // (At least 100 samples: a short stretch at a bound is what a limit does.)
        let stuck = e + 1 - s >= 100 && ((share >= 0.2 && !changed.is_empty()) || (!compared && share >= 0.5));
        if stuck && worst.as_ref().map_or(true, |w| share > w.0) {
            worst = Some((share, which, value, changed.join(", ")));
        }
    }
    match worst {
        Some((share, which, value, why)) => Finding {
            kind,
            checked: true,
            flagged: true,
            evidence: format!(
                "the limit sat at its {which} {value} for {:.0} % of the data{}: it stopped responding (Netflix concurrency-limits #137)",
                100.0 * share,
                if why.is_empty() { String::new() } else { format!(" while {why}") }
            ),
        },
        None => Finding {
            kind,
            checked: true,
            flagged: false,
            evidence: format!("the limit moved between {lo} and {hi} and was not held at either end while conditions changed"),
        },
    }
}

/// Retries above twice the budget in any twentieth of the data, as a share of offered load.
fn retry_storm(tel: &Telemetry, opts: &CheckOptions, offered: Option<&[f64]>) -> Finding {
    let kind = FindingKind::RetryStorm;
    let (Some(retries), Some(offered)) = (&tel.retries, offered) else {
        return Finding {
            kind,
            checked: false,
            flagged: false,
            evidence: "not checked: needs retries and offered (or throughput) columns".into(),
        };
    };
    let limit = 2.0 * opts.retry_budget;
    let (mut worst, mut worst_at) = (0.0f64, 0.0);
    let (mut total_r, mut total_o) = (0.0, 0.0);
    for r in blocks(&tel.t, 20) {
        if r.is_empty() {
            continue;
        }
        let (mut rr, mut oo) = (0.0, 0.0);
        for i in r.clone() {
            let d = dt_at(&tel.t, i);
            rr += retries[i] * d;
            oo += offered[i] * d;
        }
        total_r += rr;
        total_o += oo;
        let share = if oo > 0.0 {
            rr / oo
        } else if rr > 0.0 {
            1.0
        } else {
            0.0
        };
        if share > worst {
            worst = share;
            worst_at = tel.t[r.start];
        }
    }
    let overall = if total_o > 0.0 { total_r / total_o } else { 0.0 };
    let flagged = worst > limit;
    Finding {
        kind,
        checked: true,
        flagged,
        evidence: format!(
            "retries are {:.1} % of offered load overall and {:.1} % at worst (the twentieth from t = {worst_at:.0} s); budget {:.0} %, flagged above {:.0} %{}",
            100.0 * overall,
            100.0 * worst,
            100.0 * opts.retry_budget,
            100.0 * limit,
            if flagged { ": retries amplify the load" } else { "" }
        ),
    }
}

/// The autocorrelation's first local maximum after its first zero crossing, over lags
/// `1..=max_lag` (at most a quarter of the length): (lag, value).
fn acf_peak(v: &[f64], max_lag: usize) -> Option<(usize, f64)> {
    let n = v.len();
    if n < 8 {
        return None;
    }
    let mean = v.iter().sum::<f64>() / n as f64;
    let d: Vec<f64> = v.iter().map(|x| x - mean).collect();
    let var: f64 = d.iter().map(|x| x * x).sum();
    if !(var > 0.0) {
        return None;
    }
    let max_lag = max_lag.min(n / 4);
    let acf = |lag: usize| d[..n - lag].iter().zip(&d[lag..]).map(|(a, b)| a * b).sum::<f64>() / var;
    let mut crossed = false;
    let mut prev = 1.0;
    for lag in 1..=max_lag {
        let a = acf(lag);
        if !crossed {
            crossed = a < 0.0;
        } else if a < prev && prev > 0.0 {
            return Some((lag - 1, prev));
        }
        prev = a;
    }
    None
}

/// Average `v` over groups of `f`.
fn coarsen(v: &[f64], f: usize) -> Vec<f64> {
    v.chunks(f).map(|c| c.iter().sum::<f64>() / c.len() as f64).collect()
}

/// `v` minus its centred moving average over `w` points (prefix sums, O(n)).
fn detrend(v: &[f64], w: usize) -> Vec<f64> {
    let n = v.len();
    let mut pre = Vec::with_capacity(n + 1);
    pre.push(0.0);
    for x in v {
        pre.push(pre[pre.len() - 1] + x);
    }
    (0..n)
        .map(|i| {
            let (a, b) = (i.saturating_sub(w / 2), (i + w / 2 + 1).min(n));
            v[i] - (pre[b] - pre[a]) / (b - a) as f64
        })
        .collect()
}

/// The limit (or the signal, without one) oscillating. At each of four scales `w` (16 to
/// 1,024 points; the series averaged down to at most 100,000 points first), the series minus
/// its moving average over `w` is searched for an autocorrelation peak ≥ 0.3 after the
/// first zero crossing, at a lag below `w/2`; flagged when the residual's amplitude (std) is
/// ≥ 5 % of the mean, the data hold ten periods, and neither health nor offered load has
/// the same period (then the loop follows its input).
fn oscillation(tel: &Telemetry) -> Finding {
    let kind = FindingKind::Oscillation;
    let (series, name) = match &tel.limit {
        Some(l) => (l, "limit"),
        None => (&tel.x, tel.signal.unwrap_or(Signal::Queue).name()),
    };
    let n = series.len();
    if n < 64 {
        return Finding {
            kind,
            checked: false,
            flagged: false,
            evidence: format!("not checked: {n} rows; 64 are needed"),
        };
    }
    let f = n.div_ceil(100_000);
    let v = if f > 1 { coarsen(series, f) } else { series.clone() };
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let dt = f as f64 * (tel.t[n - 1] - tel.t[0]) / (n - 1) as f64;
    let span = tel.t[n - 1] - tel.t[0];
    let inputs: Vec<Vec<f64>> = [&tel.health, &tel.offered]
        .into_iter()
        .flatten()
        .map(|c| if f > 1 { coarsen(c, f) } else { c.clone() })
        .collect();
    // The strongest periodic component over the scales: (acf, lag, amplitude, follows input).
    let mut best: Option<(f64, usize, f64, bool)> = None;
    for w in [16usize, 64, 256, 1024] {
        if v.len() < 4 * w {
            break;
        }
        let r = detrend(&v, w);
        let Some((lag, a)) = acf_peak(&r, w / 2) else { continue };
        if lag < 2 {
            continue;
        }
        let sd = (r.iter().map(|x| x * x).sum::<f64>() / r.len() as f64).sqrt();
        // The input has a periodic component of its own within 15 % of this period.
        let follows = inputs.iter().any(|c| {
            acf_peak(&detrend(c, w), w / 2)
                .is_some_and(|(l, a)| a >= 0.3 && (l as f64 - lag as f64).abs() <= 0.15 * lag as f64)
        });
        if best.map_or(true, |b| a > b.0) {
            best = Some((a, lag, sd, follows));
        }
    }
    let Some((a, lag, sd, follows)) = best else {
        return Finding {
            kind,
            checked: true,
            flagged: false,
            evidence: format!("the {name} shows no periodic component"),
        };
    };
    let period = lag as f64 * dt;
    let periods = span / period;
    let rel = if mean.abs() > 0.0 { sd / mean.abs() } else { 0.0 };
    let flagged = a >= 0.3 && periods >= 10.0 && rel >= 0.05 && !follows;
    let evidence = format!(
        "the {name}'s strongest periodic component: autocorrelation {a:.2} at a period of {period:.2} s ({periods:.0} periods in the data), amplitude {:.0} % of its mean{}",
        100.0 * rel,
        if a < 0.3 {
            " (below 0.3: no oscillation)"
        } else if follows {
            "; the health or offered load has the same period, so the loop follows its input"
        } else if flagged {
            ": the control loop oscillates"
        } else {
            ""
        }
    );
    Finding { kind, checked: true, flagged, evidence }
}

/// Heavy-tailed excursion peaks (step 3's verdict).
fn heavy_tail(ex: &Excursions) -> Finding {
    let kind = FindingKind::HeavyTail;
    let t = &ex.tail;
    match t.class {
        TailClass::Inconclusive => {
            Finding { kind, checked: false, flagged: false, evidence: format!("not checked: {}", t.reason) }
        }
        TailClass::Light => Finding { kind, checked: true, flagged: false, evidence: format!("light: {}", t.reason) },
        TailClass::Heavy => Finding {
            kind,
            checked: true,
            flagged: true,
            evidence: format!(
                "heavy: {}{}; ε alone does not bound how far an excursion goes (a [magnitude] section is needed)",
                t.reason,
                match (t.hill, t.alpha_interval) {
                    (Some(h), Some((lo, hi))) =>
                        format!("; Hill α̂ = {:.2} (95 %: {lo:.2}–{hi:.2}, k = {})", h.alpha, h.k),
                    _ => String::new(),
                }
            ),
        },
    }
}
