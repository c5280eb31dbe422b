//! The failure modes users of today's limiters report, beyond the seed's checklist: a
//! drifting latency baseline, a stuck limit, a retry storm, an oscillating loop, heavy-tailed
//! excursions.

use safegate_core::estimators::tail::TailClass;
use safegate_core::stats::{median, quantile};

use super::signal::{acf_peak, blocks, coarsen, detrend, dt_at, longest_run_at, spread, step_fits_better, trend};
use super::{CheckOptions, Excursions, Finding, FindingKind, Signal, Telemetry};

/// Windows the drift check splits the data into.
const DRIFT_WINDOWS: usize = 20;

/// The latency baseline (each window's 5th percentile) trending: Spearman's ρ of the
/// baselines against time ≥ 0.8 in size and the last fifth's median baseline 1.3× the
/// first fifth's (or below 1/1.3).
pub(super) fn baseline_drift(tel: &Telemetry) -> Finding {
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
        .map(|r| quantile(&lat[r], 0.05).unwrap_or(f64::NAN))
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
    let first = median(&base[..fifth]).unwrap_or(f64::NAN);
    let last = median(&base[base.len() - fifth..]).unwrap_or(f64::NAN);
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

/// A limit held at its smallest or largest value for ≥ 20 % of the data (and ≥ 100
/// samples) while the
/// conditions it should respond to change (health spread ≥ 0.3, latency or offered load
/// p90/p10 ≥ 2), or for ≥ 50 % of the data when there is nothing to compare with. A
/// limit that never moves is reported, not flagged: it may be a static limit.
pub(super) fn stuck_limit(tel: &Telemetry, offered: Option<&[f64]>) -> Finding {
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
        if stuck && worst.as_ref().is_none_or(|w| share > w.0) {
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
pub(super) fn retry_storm(tel: &Telemetry, opts: &CheckOptions, offered: Option<&[f64]>) -> Finding {
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

/// The limit (or the signal, without one) oscillating. At each of four scales `w` (16 to
/// 1,024 points; the series averaged down to at most 100,000 points first), the series minus
/// its moving average over `w` is searched for an autocorrelation peak ≥ 0.3 after the
/// first zero crossing, at a lag below `w/2`; flagged when the residual's amplitude (std) is
/// ≥ 5 % of the mean, the data hold ten periods, and neither health nor offered load has
/// the same period (then the loop follows its input).
pub(super) fn oscillation(tel: &Telemetry) -> Finding {
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
        if best.is_none_or(|b| a > b.0) {
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
pub(super) fn heavy_tail(ex: &Excursions) -> Finding {
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
