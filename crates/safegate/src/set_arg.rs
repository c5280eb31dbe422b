//! `--set KEY=VALUE`: any scenario key, as `run` and `live` take it.

use anyhow::{Context, Result};

/// `--set KEY=VALUE` flags as `(key, value)` overrides, spaces around each trimmed.
pub(crate) fn parse_sets(sets: &[String]) -> Result<Vec<(String, String)>> {
    sets.iter()
        .map(|kv| {
            let (k, v) = kv.split_once('=').with_context(|| {
                let shown = safegate_core::config_file::excerpt(kv);
                format!("--set {shown:?}: expected KEY=VALUE, e.g. health.low=0.2")
            })?;
            Ok((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}
