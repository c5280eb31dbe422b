//! Configuration files as TOML: one parser for boundaries, scenarios and every later file,
//! with command-line overrides that go through the same checks as the file.

use serde::de::DeserializeOwned;

use crate::error::ParseError;

/// Parse `text` as TOML into `T`, after applying `key.path = value` overrides (values in
/// TOML syntax; a bare word is taken as a string). Overrides go through the same
/// deserializer as the file, so an unknown key or a wrong type fails the same way; the
/// error names the key. Range checks are `T`'s own (`validate`, `config`).
///
/// ```
/// use safegate_core::boundary::Boundary;
///
/// let over = [("probability.epsilon".to_string(), "0.05".to_string())];
/// let b: Boundary = safegate_core::config_file::parse("[barrier]\nthreshold = 0.6", &over).unwrap();
/// assert_eq!((b.barrier.threshold, b.probability.epsilon), (0.6, 0.05));
/// let e = safegate_core::config_file::parse::<Boundary>("[barrier]\ntreshold = 0.6", &[]).unwrap_err();
/// assert!(e.to_string().contains("treshold"));
/// ```
pub fn parse<T: DeserializeOwned>(text: &str, overrides: &[(String, String)]) -> Result<T, ParseError> {
    let one_line = |e: &dyn std::fmt::Display| ParseError(e.to_string().trim().replace('\n', " "));
    let mut root: toml::Table = toml::from_str(text).map_err(|e| one_line(&e))?;
    for (path, raw) in overrides {
        let value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
            Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(raw.clone())),
            Err(_) => toml::Value::String(raw.clone()),
        };
        let mut keys: Vec<&str> = path.split('.').collect();
        let last =
            keys.pop().filter(|k| !k.is_empty()).ok_or_else(|| ParseError(format!("override `{path}`: empty key")))?;
        let mut table = &mut root;
        for k in keys {
            let entry = table.entry(k.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
            table =
                entry.as_table_mut().ok_or_else(|| ParseError(format!("override `{path}`: `{k}` is not a table")))?;
        }
        table.insert(last.to_string(), value);
    }
    match T::deserialize(toml::Value::Table(root.clone())) {
        Ok(t) => Ok(t),
        Err(e) => {
            // The TOML value deserializer answers a number or boolean where a name (an enum)
            // belongs with "invalid type: unit variant, expected string only", which lists no
            // names. Deserializing once more with that value as a string gets serde's own
            // "unknown variant `3`, expected one of `fluid`, …" for the same key.
            let message = one_line(&e).0;
            if message.contains("expected string only") {
                if let Some(retry) = quoted_at_error_key(&mut root, &message) {
                    if let Err(e2) = T::deserialize(toml::Value::Table(retry)) {
                        return Err(one_line(&e2));
                    }
                }
            }
            Err(one_line(&e))
        }
    }
}

/// `root` with the scalar at the key named by a TOML value error ("… in `run.mode`") turned
/// into its text as a string, or `None` when the message names no key or no scalar is there.
fn quoted_at_error_key(root: &mut toml::Table, message: &str) -> Option<toml::Table> {
    let path = message.trim_end().strip_suffix('`')?.rsplit_once(" in `")?.1;
    let mut table = &mut *root;
    let mut keys: Vec<&str> = path.split('.').collect();
    let last = keys.pop()?;
    for k in keys {
        table = table.get_mut(k)?.as_table_mut()?;
    }
    let slot = table.get_mut(last)?;
    let text = match slot {
        toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_) | toml::Value::Datetime(_) => {
            slot.to_string()
        }
        _ => return None,
    };
    *slot = toml::Value::String(text);
    Some(root.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Kind {
        Fluid,
        Stochastic,
        Stepped,
    }

    #[derive(Debug, serde::Deserialize)]
    struct Run {
        #[allow(dead_code)]
        mode: Kind,
    }

    #[derive(Debug, serde::Deserialize)]
    struct File {
        #[allow(dead_code)]
        run: Run,
    }

    #[test]
    fn a_number_where_a_name_belongs_lists_the_names() {
        for (text, over) in [("[run]\nmode = 3", vec![]), ("[run]\nmode = \"fluid\"", vec![("run.mode", "true")])] {
            let over: Vec<(String, String)> = over.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            let e = parse::<File>(text, &over).unwrap_err().0;
            assert!(e.contains("`fluid`, `stochastic`") && e.contains("run.mode"), "{e}");
            assert!(!e.contains("string only"), "{e}");
        }
        // A table where a name belongs keeps the deserializer's own message.
        let e = parse::<File>("[run.mode]\nx = 1", &[]).unwrap_err().0;
        assert!(e.contains("run.mode"), "{e}");
    }
}
