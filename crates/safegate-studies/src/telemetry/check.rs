//! The seed's checklist, steps 1 to 4 ("Compute Your Own Boundary, a Checklist";
//! docs/boundary-check.md §What the check does): the barrier's margin, the exit frequency
//! against ε, the excursions and their tail, η and ρ. [`check`] runs them, then step 5
//! ([`feasibility`](super::feasibility)), the failure-mode detectors
//! ([`findings`](super::findings)) and the draft ([`draft`](super::draft)).

use safegate_core::error::number;
use safegate_core::estimators::tail::{classify, TailClass};
use safegate_core::stats::{empirical_cvar, trials_to_show, Frequency, Verdict};

use super::draft::{draft, draft_text, verify_draft};
use super::envelope::Seen;
use super::feasibility::feasibility;
use super::findings::{baseline_drift, heavy_tail, oscillation, retry_storm, stuck_limit};
use super::signal::{dt_at, median_interval};
use super::{
    CheckError, CheckOptions, CheckReport, Excursions, ExitCheck, Margin, Severity, Signal, Telemetry, TelemetryError,
};

/// What [`ExitCheck::reason`] advises when the data hold no whole horizon. A caller that
/// sets the horizon by another name (a flag) may name it so in its place.
pub const NO_WINDOW_ADVICE: &str = "(a shorter horizon, or more data)";

/// Relative difference between a horizon and the data's sampling interval that is the
/// timestamps' rounding, not a shorter window.
const INTERVAL_ROUNDING: f64 = 1e-9;

/// A measured number as a message shows it: six significant digits, in [`number`]'s
/// bounded width (`0.1`, not the `0.10000000000000142` of timestamps' rounding; `1e300`,
/// not 301 digits).
fn short(v: f64) -> String {
    if v.is_finite() {
        number(format!("{v:.5e}").parse().unwrap_or(v))
    } else {
        number(v)
    }
}

/// `v` with `decimals` decimals (`{:.4}`), or [`number`]'s exponent form where that would
/// run long (`{:.4}` of `1e300` is 305 characters) or show a value that is not 0 as 0.
fn fixed(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    let zero = s.trim_start_matches('-').trim_start_matches(['0', '.']).is_empty();
    if !v.is_finite() || v.abs() >= 1e15 || (zero && v != 0.0) {
        number(v)
    } else if zero {
        s.trim_start_matches('-').to_string()
    } else {
        s
    }
}

/// Run the checklist. Errors name the input (`source`), and the option at fault by its
/// field; the data cannot answer at all with fewer than two rows or no capacity to measure
/// a margin against.
pub fn check(tel: &Telemetry, opts: &CheckOptions, source: &str) -> Result<CheckReport, CheckError> {
    opts.validate(source)?;
    if tel.len() < 2 {
        return Err(CheckError::Data(TelemetryError {
            source: source.to_string(),
            line: None,
            what: "fewer than two rows".into(),
        }));
    }
    // Requests in flight are bounded by the published limit: its largest value is their
    // capacity when nothing else says.
    let in_flight_cap = match (tel.signal, &tel.limit) {
        (Some(Signal::InFlight), Some(l)) => Some(l.iter().copied().fold(0.0, f64::max)).filter(|c| *c > 0.0),
        _ => None,
    };
    let capacity = opts
        .capacity
        .or(tel.capacity)
        .or(in_flight_cap)
        .ok_or_else(|| CheckError::unknown_capacity(source, tel.signal.unwrap_or(Signal::Queue)))?;
    // A window shorter than the data's sampling interval holds no sample: counting it as
    // exit-free would be evidence the data do not hold. Timestamps' rounding is not a
    // shorter interval: rows 0.1 s apart at t ≈ 1000 s are 0.10000000000002274 s apart in
    // f64; a horizon within 1e-9 of the interval leaves at most one window in 1e9 empty.
    let interval = median_interval(tel);
    if opts.horizon < interval * (1.0 - INTERVAL_ROUNDING) {
        let given = number(opts.horizon);
        // Short, unless that would show the interval as the horizon it refuses.
        let shown = Some(short(interval)).filter(|s| *s != given).unwrap_or_else(|| number(interval));
        return Err(CheckError::Option {
            source: source.to_string(),
            field: "horizon",
            value: given,
            rule: format!(
                "shorter than the data's median sampling interval of {shown} s, so a window would hold no sample"
            ),
        });
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
            "the data cover {} s, less than one horizon of {} s: no window to count exits in {NO_WINDOW_ADVICE}",
            short(span),
            number(opts.horizon)
        )
    } else {
        match verdict {
            Verdict::Holds => format!(
                "{exits} of {windows} windows of {} s left the safe set; the 99 % upper limit {} is within ε = {}",
                number(opts.horizon),
                fixed(frequency.ci_high, 4),
                number(opts.epsilon)
            ),
            Verdict::Violates => format!(
                "{exits} of {windows} windows of {} s left the safe set; even the 99 % lower limit {} exceeds ε = {}",
                number(opts.horizon),
                fixed(frequency.ci_low, 4),
                number(opts.epsilon)
            ),
            Verdict::NotEstablished => format!(
                "{exits} of {windows} windows of {} s left the safe set; the 99 % interval [{}, {}] straddles ε = {} ({needed} exit-free windows would show it)",
                number(opts.horizon),
                fixed(frequency.ci_low, 4),
                fixed(frequency.ci_high, 4),
                number(opts.epsilon)
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
                    "the excursion peaks' tail index α̂ = {} ≤ 1: their mean, hence any CVaR, is infinite; the empirical CVaR understates what a longer record will show",
                    fixed(h.alpha, 2)
                ));
            } else if h.alpha <= 2.0 {
                notes.push(format!(
                    "the peaks' tail index α̂ = {} ≤ 2: infinite variance, so the empirical CVaR converges slowly; ρ is set from the fitted tail, CVaR = VaR·α/(α − 1)",
                    fixed(h.alpha, 2)
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
            "only {} % of samples are outside the safe set, fewer than η = {}: the CVaR averages mostly in-bound samples",
            fixed(100.0 * share_outside, 2),
            number(opts.eta)
        ));
    }
    let reason = format!(
        "empirical CVaR at η = {} of the overshoot: {} of Q per sample{}; suggested ρ = {}{}",
        number(opts.eta),
        fixed(cvar_samples, 4),
        cvar_peaks.map_or(String::new(), |c| format!(", {} of Q over the excursion peaks", fixed(c, 4))),
        short(rho),
        if notes.is_empty() { String::new() } else { format!(" ({})", notes.join("; ")) }
    );
    Severity { eta: opts.eta, cvar_samples, cvar_peaks, rho, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::parse;

    /// Rows 0.2 s apart at t ≈ 1000 s are 0.20000000000004547 s apart in f64: a horizon of
    /// 0.2 s is the sampling interval, not shorter, and a refusal shows the interval short.
    #[test]
    fn the_sampling_interval_is_shown_short_and_its_rounding_is_no_refusal() {
        let mut csv = String::from("time,queue\n");
        for i in 0..20 {
            csv += &format!("{:.1},1\n", 1000.0 + 0.2 * f64::from(i));
        }
        let (t, _) = parse("t.csv", &csv).unwrap();
        assert!(median_interval(&t) > 0.2, "{}", median_interval(&t));
        let opts = |horizon| CheckOptions { capacity: Some(10.0), horizon, ..CheckOptions::default() };
        assert!(check(&t, &opts(0.2), "t.csv").is_ok());
        let e = check(&t, &opts(0.15), "t.csv").unwrap_err().to_string();
        assert!(e.contains("horizon") && e.contains("interval of 0.2 s,"), "{e}");
        // An interval the short form would show as the horizon it refuses is shown in full.
        let mut csv = String::from("time,queue\n");
        for i in 0..20 {
            csv += &format!("{},1\n", 0.2000001 * f64::from(i));
        }
        let (t, _) = parse("t.csv", &csv).unwrap();
        let e = check(&t, &opts(0.2), "t.csv").unwrap_err().to_string();
        assert!(e.contains("horizon = 0.2:") && e.contains("interval of 0.2000001"), "{e}");
    }

    /// Every number a reason prints has a bounded width, however large the data's values.
    #[test]
    fn reasons_print_numbers_in_a_bounded_width() {
        let (t, _) = parse("t.csv", "time,queue\n0,1\n1,9\n2,1\n3,9\n").unwrap();
        let opts =
            CheckOptions { capacity: Some(10.0), horizon: 1.0, epsilon: 1e-12, eta: 1e-9, ..CheckOptions::default() };
        let r = check(&t, &opts, "t.csv").unwrap();
        for reason in [&r.exits.reason, &r.severity.reason] {
            assert!(reason.len() < 600, "{reason}");
            assert!(!reason.contains("0000000000"), "{reason}");
        }
        assert!(r.exits.reason.contains("ε = 1e-12"), "{}", r.exits.reason);
        assert!(r.severity.reason.contains("η = 1e-9"), "{}", r.severity.reason);
        assert_eq!((short(0.10000000000000142), short(0.30000000000000004)), ("0.1".into(), "0.3".into()));
        assert_eq!(
            (fixed(1e300, 4), fixed(1e-7, 4), fixed(-1e-320, 2)),
            ("1e300".into(), "1e-7".into(), "-1e-320".into())
        );
        assert_eq!(
            (fixed(0.0, 4), fixed(-0.0, 2), fixed(0.12345, 4)),
            ("0.0000".into(), "0.00".into(), "0.1235".into())
        );
    }
}
