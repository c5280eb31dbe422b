//! Health traces: `t,health` CSV files a scenario's `[health]` section can name.

use std::path::Path;

use super::ScenarioError;

/// Read a `t,health` CSV (an optional header line; `#` comments and blank lines skipped).
pub fn load_trace(path: &Path) -> Result<Vec<(f64, f64)>, ScenarioError> {
    let err = |line: usize, message: String| ScenarioError::Trace { path: path.to_path_buf(), line, message };
    let text = crate::input::read_text(path, crate::input::MAX_TRACE_BYTES)
        .map_err(|e| err(0, format!("cannot read: {e}")))?;
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
            _ => {
                let got = safegate_core::config_file::excerpt(line);
                return Err(err(i + 1, format!("expected `t,health` numbers, got {got:?}")));
            }
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
        return Err(err(0, "no data rows (`t,health` numbers, one pair a line)".to_string()));
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_health_file_and_the_line() {
        let dir = std::env::temp_dir().join(format!("safegate-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = load_trace(&dir.join("nope.csv")).unwrap_err().to_string();
        assert!(missing.starts_with("health.file ") && missing.contains("cannot read"), "{missing}");
        let file = dir.join("t.csv");
        for (text, needle) in [
            ("t,health\n", "no data rows"),
            ("t,health\n0,1\nx,y\n", "line 3: expected `t,health`"),
            ("0,1\n0,0.5\n", "line 2: times must increase"),
            ("0,101\n", "line 1: t must be finite and health in [0, 100]"),
        ] {
            std::fs::write(&file, text).unwrap();
            let e = load_trace(&file).unwrap_err().to_string();
            assert!(e.starts_with("health.file ") && e.contains(needle), "{text:?}: {e}");
        }
        // A long line is quoted as an excerpt, not whole.
        std::fs::write(&file, format!("t,health\n0,1\n{}\n", "[".repeat(100_000))).unwrap();
        let e = load_trace(&file).unwrap_err().to_string();
        assert!(e.contains("line 3: expected `t,health`") && e.len() < 300, "{}", &e[..300.min(e.len())]);
        std::fs::write(&file, "t,health\n0,1\n10,0.2\n").unwrap();
        assert_eq!(load_trace(&file).unwrap(), vec![(0.0, 1.0), (10.0, 0.2)]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
