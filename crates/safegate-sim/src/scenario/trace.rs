//! Health traces: `t,health` CSV files a scenario's `[health]` section can name.

use std::path::Path;

use super::ScenarioError;

/// Read a `t,health` CSV (an optional header line; `#` comments and blank lines skipped).
pub fn load_trace(path: &Path) -> Result<Vec<(f64, f64)>, ScenarioError> {
    let text = crate::input::read_text(path, crate::input::MAX_TRACE_BYTES)
        .map_err(|source| ScenarioError::Io { path: path.to_path_buf(), source })?;
    let err = |line: usize, message: String| ScenarioError::Trace { path: path.to_path_buf(), line, message };
    let mut points: Vec<(f64, f64)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut cols = line.split(',').map(str::trim);
        let (a, b) = (cols.next().unwrap_or(""), cols.next().unwrap_or(""));
        let (t, h) = match (a.parse::<f64>(), b.parse::<f64>()) {
            (Ok(t), Ok(h)) => (t, h),
            _ if points.is_empty() && i == 0 => continue, // header
            _ => return Err(err(i + 1, format!("expected `t,health` numbers, got {line:?}"))),
        };
        if !(t.is_finite() && (0.0..=crate::health::MAX_HEALTH).contains(&h)) {
            return Err(err(i + 1, format!("t must be finite and health in [0, 100], got {t}, {h}")));
        }
        if let Some(&(prev, _)) = points.last() {
            if t <= prev {
                return Err(err(i + 1, format!("times must increase: {t} after {prev}")));
            }
        }
        points.push((t, h));
    }
    if points.is_empty() {
        return Err(err(0, "no data rows".to_string()));
    }
    Ok(points)
}
