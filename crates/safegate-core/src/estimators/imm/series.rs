//! The detector run over a whole series: the posterior at every step, the alarms and the
//! periods in alarm (what `safegate detect` reports).

use super::{ImmConfig, TwoModeImm};
use crate::error::RangeError;

/// A fresh [`TwoModeImm`] run over a series of values.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Detection {
    /// The posterior of the alternate mode after each value.
    pub posterior: Vec<f64>,
    /// Whether the filter is in alarm after each value (its run above the level is long
    /// enough).
    pub in_alarm: Vec<bool>,
    /// The 0-based steps at which an alarm run completes.
    pub alarms: Vec<usize>,
    /// Per alarm, `(first step of its run above the level, last step in alarm)`, inclusive.
    #[cfg_attr(feature = "serde", serde(rename = "alarm_periods"))]
    pub periods: Vec<(usize, usize)>,
    /// Values that are not finite (missing, `NaN`): at those steps the filter only mixed.
    pub skipped: usize,
}

impl Detection {
    /// The largest posterior and its (first) step; `(0, −∞)` for an empty series.
    pub fn peak(&self) -> (usize, f64) {
        self.posterior
            .iter()
            .copied()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |b, (i, p)| if p > b.1 { (i, p) } else { b })
    }

    /// How many steps have a posterior above `level`.
    pub fn steps_above(&self, level: f64) -> usize {
        self.posterior.iter().filter(|&&p| p > level).count()
    }
}

/// Run a fresh detector of `cfg` over `values` (a non-finite value is a missing one: the
/// filter only mixes at that step). A configuration [`ImmConfig::check`] refuses is the
/// error.
///
/// ```
/// use safegate_core::estimators::imm::{run_series, ImmConfig};
///
/// let mut values = vec![0.0; 10];
/// values.extend([3.0; 8]);
/// let d = run_series(ImmConfig::default(), &values).unwrap();
/// assert_eq!(d.alarms, [14]); // the fifth step in a row above 0.5
/// assert_eq!(d.periods, [(10, 17)]);
/// ```
pub fn run_series(cfg: ImmConfig, values: &[f64]) -> Result<Detection, RangeError> {
    let mut imm = TwoModeImm::new(cfg)?;
    let n = values.len();
    let mut d = Detection {
        posterior: Vec::with_capacity(n),
        in_alarm: Vec::with_capacity(n),
        alarms: vec![],
        periods: vec![],
        skipped: values.iter().filter(|v| !v.is_finite()).count(),
    };
    let run = cfg.alarm_run as usize;
    for (step, &y) in values.iter().enumerate() {
        d.posterior.push(imm.update(y));
        let now = imm.alarm_now();
        let before = d.in_alarm.last().copied().unwrap_or(false);
        if now && !before {
            // A fresh filter needs `run` steps above the level first: step + 1 ≥ run.
            d.alarms.push(step);
            d.periods.push((step + 1 - run, step));
        } else if now {
            if let Some(p) = d.periods.last_mut() {
                p.1 = step;
            }
        }
        d.in_alarm.push(now);
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alarms_complete_after_the_run_and_periods_span_it() {
        let mut v = vec![0.0; 10];
        v.extend([3.0; 8]);
        v.extend([0.0; 5]);
        let d = run_series(ImmConfig::default(), &v).unwrap();
        assert_eq!(d.alarms, [14]);
        // One value at 0 after the belief settled near 0.98 brings it below 0.5 (3.89 − 4.5).
        assert_eq!(d.periods, [(10, 17)]);
        assert!(d.in_alarm[14] && !d.in_alarm[13]);
        assert_eq!((d.posterior.len(), d.in_alarm.len(), d.skipped), (v.len(), v.len(), 0));
        let (step, peak) = d.peak();
        assert!((10..18).contains(&step) && peak > 0.9, "{step}: {peak}");
        assert_eq!(d.steps_above(0.5), d.posterior.iter().filter(|&&p| p > 0.5).count());
    }

    #[test]
    fn it_is_the_filter_step_by_step() {
        let cfg = ImmConfig { alarm_run: 2, ..ImmConfig::robust(3.0) };
        let v = [0.1, 4.0, f64::NAN, 3.0, 2.5, -1.0, 3.5, 3.1, 0.0];
        let d = run_series(cfg, &v).unwrap();
        let mut imm = TwoModeImm::new(cfg).unwrap();
        for (i, &y) in v.iter().enumerate() {
            assert_eq!(d.posterior[i], imm.update(y), "step {i}");
            assert_eq!(d.in_alarm[i], imm.alarm_now(), "step {i}");
        }
        assert_eq!(d.skipped, 1);
        // The robust filter stays in alarm through the −1 (one value cannot undo it).
        assert_eq!((&d.alarms[..], &d.periods[..]), (&[4][..], &[(3, 8)][..]), "{d:?}");
        // Every alarm opens a period ending at or after it, and the periods do not overlap.
        assert_eq!(d.alarms.len(), d.periods.len());
        for (w, (&a, &(start, end))) in d.alarms.iter().zip(&d.periods).enumerate() {
            assert!(start + 1 == a && a <= end && d.in_alarm[a] && !d.in_alarm[a - 1], "{w}: {a} {start} {end}");
            if let Some(&(_, prev_end)) = d.periods[..w].last() {
                assert!(prev_end < start);
            }
        }
    }

    #[test]
    fn two_alarms_give_two_periods() {
        let mut v = vec![3.0; 6];
        v.extend([-3.0; 4]);
        v.extend([3.0; 6]);
        let d = run_series(ImmConfig::default(), &v).unwrap();
        assert_eq!(d.alarms.len(), 2, "{d:?}");
        assert_eq!(d.periods[0].0, 0);
        assert!(d.periods[0].1 < d.periods[1].0);
    }

    #[test]
    fn bad_settings_and_empty_series() {
        for bad in [
            ImmConfig { sd: 0.0, ..ImmConfig::default() },
            ImmConfig { switch: 0.7, ..ImmConfig::default() },
            ImmConfig { mean1: 0.0, ..ImmConfig::default() },
            ImmConfig { alarm_level: 1.0, ..ImmConfig::default() },
            ImmConfig { alarm_run: 0, ..ImmConfig::default() },
            ImmConfig::robust(0.0),
        ] {
            let e = run_series(bad, &[1.0]).unwrap_err();
            assert_eq!(Some(e), bad.check().err());
        }
        let d = run_series(ImmConfig::default(), &[]).unwrap();
        assert!(d.posterior.is_empty() && d.alarms.is_empty());
        assert_eq!(d.peak(), (0, f64::NEG_INFINITY));
    }

    #[cfg(feature = "toml")]
    #[test]
    fn it_serialises_under_the_names_detect_prints() {
        let d = run_series(ImmConfig::default(), &[0.0, f64::NAN]).unwrap();
        let text = toml::to_string(&Wrapper { d }).unwrap();
        for key in ["posterior", "in_alarm", "alarms", "alarm_periods", "skipped = 1"] {
            assert!(text.contains(key), "{key}: {text}");
        }
    }

    #[cfg(feature = "toml")]
    #[derive(serde::Serialize)]
    struct Wrapper {
        d: Detection,
    }
}
