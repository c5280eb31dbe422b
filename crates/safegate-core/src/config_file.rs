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
    T::deserialize(toml::Value::Table(root)).map_err(|e| one_line(&e))
}
