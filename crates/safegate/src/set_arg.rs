//! `--set KEY=VALUE`: any scenario key, as `run` and `live` take it.

use anyhow::{Context, Result};

/// `--set KEY=VALUE` flags as `(key, value)` overrides, spaces around each trimmed.
pub(crate) fn parse_sets(sets: &[String]) -> Result<Vec<(String, String)>> {
    sets.iter()
        .map(|kv| {
            let (k, v) = kv
                .split_once('=')
                .with_context(|| format!("--set {kv:?}: expected KEY=VALUE, e.g. health.shape.low=0.2"))?;
            Ok((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}
