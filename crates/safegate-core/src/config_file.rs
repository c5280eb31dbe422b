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
    // Every message is one line, and quotes at most a bounded excerpt of the input (a
    // 100,000-deep array gave a 200 KB line echoing its brackets).
    let one_line = |e: &dyn std::fmt::Display| ParseError(bounded_message(&e.to_string()));
    let mut root: toml::Table = toml::from_str(text).map_err(|e| ParseError(syntax_message(text, &e)))?;
    for (path, raw) in overrides {
        let value = override_value(raw);
        let mut keys: Vec<&str> = path.split('.').collect();
        let shown = excerpt(path);
        let last =
            keys.pop().filter(|k| !k.is_empty()).ok_or_else(|| ParseError(format!("override `{shown}`: empty key")))?;
        let mut table = &mut root;
        for k in keys {
            let entry = table.entry(k.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
            table = entry
                .as_table_mut()
                .ok_or_else(|| ParseError(format!("override `{shown}`: `{}` is not a table", excerpt(k))))?;
        }
        table.insert(last.to_string(), value);
    }
    match T::deserialize(Strict(toml::Value::Table(root.clone()))) {
        Ok(t) => Ok(t),
        Err(e) => {
            // The TOML value deserializer answers a number, a boolean or a table where a
            // name (an enum) belongs with "invalid type: unit variant, expected string only"
            // or "wanted exactly 1 element", which list no names. Deserializing once more
            // with that value as a string gets serde's own "unknown variant `3`, expected
            // one of `fluid`, …" for the same key.
            let message = one_line(&e).0;
            if message.contains("expected string only") || message.contains("wanted exactly 1 element") {
                if let Some(retry) = quoted_at_error_key(&mut root, &message) {
                    if let Err(e2) = T::deserialize(Strict(toml::Value::Table(retry))) {
                        return Err(one_line(&e2));
                    }
                }
            }
            Err(one_line(&e))
        }
    }
}

/// The value of a `key = value` override: `raw` read as a TOML value, or as a string when
/// it is not one (a bare word, or text TOML cannot read).
pub fn override_value(raw: &str) -> toml::Value {
    match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| toml::Value::String(raw.to_string())),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

/// The key paths a `key = value` override sets: `key` itself, or, when the value is a
/// table (`--set traffic.spike={ start = 1, duration = 2, rate = 90 }`), the path of every
/// value inside it (`traffic.spike.start`, …). An empty table sets `key`.
///
/// ```
/// use safegate_core::config_file::override_leaves;
///
/// assert_eq!(override_leaves("model.rate", "36"), ["model.rate"]);
/// assert_eq!(override_leaves("model", "{ rate = 36, busy = \"fluid\" }"), ["model.busy", "model.rate"]);
/// ```
pub fn override_leaves(key: &str, raw: &str) -> Vec<String> {
    fn walk(path: String, v: &toml::Value, out: &mut Vec<String>) {
        match v {
            toml::Value::Table(t) if !t.is_empty() => {
                for (k, v) in t {
                    walk(format!("{path}.{k}"), v, out);
                }
            }
            _ => out.push(path),
        }
    }
    let mut out = Vec::new();
    walk(key.to_string(), &override_value(raw), &mut out);
    out
}

/// Most characters of the input an error message quotes ([`excerpt`]).
pub const EXCERPT_CHARS: usize = 80;

/// Most characters of a whole message after [`bounded_message`].
pub const MESSAGE_CHARS: usize = 1000;

/// `text` as an error message quotes it: at most [`EXCERPT_CHARS`] characters, "…" in
/// place of the rest.
///
/// ```
/// use safegate_core::config_file::{excerpt, EXCERPT_CHARS};
///
/// assert_eq!(excerpt("short"), "short");
/// let long = excerpt(&"[".repeat(100_000));
/// assert_eq!(long, format!("{}…", "[".repeat(EXCERPT_CHARS)));
/// ```
pub fn excerpt(text: &str) -> String {
    match text.char_indices().nth(EXCERPT_CHARS) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

/// [`excerpt`] of `text`, and how many characters it had when it was cut.
fn excerpt_counted(text: &str) -> (String, Option<usize>) {
    let cut = excerpt(text);
    if cut.len() == text.len() {
        (cut, None)
    } else {
        (cut, Some(text.chars().count()))
    }
}

/// `message` on one line, every quoted run (in backticks or double quotes) and every run
/// without a space longer than [`EXCERPT_CHARS`] cut to an [`excerpt`], and the whole at
/// most [`MESSAGE_CHARS`]: parse errors echo what they could not read (`unknown variant
/// \`[[[[…\``), and that may be the whole input.
///
/// ```
/// use safegate_core::config_file::bounded_message;
///
/// let m = bounded_message(&format!("invalid type: string \"{}\", expected f64 in `traffic.rate`", "[".repeat(50_000)));
/// assert!(m.len() < 200 && m.ends_with("expected f64 in `traffic.rate`"), "{m}");
/// assert_eq!(bounded_message("line 1\nline 2"), "line 1 line 2");
/// ```
pub fn bounded_message(message: &str) -> String {
    let one_line = message.trim().replace(['\n', '\r'], " ");
    let mut out = String::with_capacity(one_line.len().min(MESSAGE_CHARS * 4));
    let mut rest = one_line.as_str();
    while let Some(c) = rest.chars().next() {
        if c == '`' || c == '"' {
            // The quoted run up to its closing quote (a double quote escaped as `\"` is
            // inside it); an unclosed quote quotes the rest.
            let body = &rest[1..];
            let mut end = None;
            let mut escaped = false;
            for (i, ch) in body.char_indices() {
                if ch == c && !(c == '"' && escaped) {
                    end = Some(i);
                    break;
                }
                escaped = ch == '\\' && !escaped;
            }
            let (inner, after, closed) = match end {
                Some(i) => (&body[..i], &body[i + 1..], true),
                None => (body, "", false),
            };
            let (shown, cut) = excerpt_counted(inner);
            out.push(c);
            out.push_str(&shown);
            if closed {
                out.push(c);
            }
            if let Some(n) = cut {
                out.push_str(&format!(" ({n} characters)"));
            }
            rest = after;
        } else if c.is_whitespace() {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        } else {
            let end = rest.find(|ch: char| ch.is_whitespace() || ch == '`' || ch == '"').unwrap_or(rest.len());
            let (shown, cut) = excerpt_counted(&rest[..end]);
            out.push_str(&shown);
            if let Some(n) = cut {
                out.push_str(&format!(" ({n} characters)"));
            }
            rest = &rest[end..];
        }
    }
    match out.char_indices().nth(MESSAGE_CHARS) {
        None => out,
        Some((cut, _)) => {
            // Keep the head and the tail (where the key path is named).
            let tail_chars = MESSAGE_CHARS / 4;
            let total = out.chars().count();
            let tail_at = out.char_indices().nth(total - tail_chars).map_or(out.len(), |(i, _)| i);
            let head_at = out.char_indices().nth(MESSAGE_CHARS - tail_chars).map_or(cut, |(i, _)| i);
            format!("{} … {}", &out[..head_at], &out[tail_at..])
        }
    }
}

/// A TOML syntax error in `text` as one line: where it is (line, column), what is wrong,
/// and an excerpt of the line around the place, never the whole line.
fn syntax_message(text: &str, e: &toml::de::Error) -> String {
    let what = bounded_message(e.message());
    let Some(span) = e.span() else { return format!("TOML parse error: {what}") };
    let at = span.start.min(text.len());
    let at = (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line_no = text[..line_start].matches('\n').count() + 1;
    let before: Vec<char> = text[line_start..at].chars().collect();
    let column = before.len() + 1;
    // Up to half an excerpt before the place and the rest after it.
    let lead = EXCERPT_CHARS / 2;
    let from = before.len().saturating_sub(lead);
    let head: String = before[from..].iter().collect();
    let after = &text[at..line_end];
    let tail: String = after.chars().take(EXCERPT_CHARS - (before.len() - from)).collect();
    let cut_tail = tail.len() < after.len();
    let near = format!("{}{}{}", if from > 0 { "…" } else { "" }, head + &tail, if cut_tail { "…" } else { "" });
    let near = near.trim_end_matches('\r');
    if near.trim().is_empty() {
        format!("TOML parse error at line {line_no}, column {column}: {what}")
    } else {
        format!("TOML parse error at line {line_no}, column {column}: {what} (near `{near}`)")
    }
}

/// A TOML value to deserialize from, which refuses an array where a table (a struct)
/// belongs. serde's derived `Deserialize` for a struct also takes a sequence and fills its
/// fields in order, so `--set run=[1]` silently ran a 1-s run and `traffic = [5]` offered
/// 5 req/s. Errors name the key path they occurred at, as `… in \`run.mode\``.
struct Strict(toml::Value);

/// A message's text and the key path it ends with (`… in \`run.mode\``), if it names one.
fn split_path(message: &str) -> Option<(&str, &str)> {
    message.trim_end().strip_suffix('`')?.rsplit_once(" in `")
}

/// `e` with `key` (a table key, or `[i]` for a list element) put in front of the key path it
/// names (or as its path).
fn at_key(e: toml::de::Error, key: &str) -> toml::de::Error {
    use serde::de::Error as _;
    let m = e.to_string().trim().replace('\n', " ");
    match split_path(&m) {
        Some((head, path)) => toml::de::Error::custom(format!("{head} in `{key}.{path}`")),
        None => toml::de::Error::custom(format!("{m} in `{key}`")),
    }
}

struct StrictMap {
    entries: toml::map::IntoIter,
    next: Option<(String, toml::Value)>,
}

impl<'de> serde::de::MapAccess<'de> for StrictMap {
    type Error = toml::de::Error;

    fn next_key_seed<K: serde::de::DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
        let Some((k, v)) = self.entries.next() else { return Ok(None) };
        let key = seed
            .deserialize(serde::de::value::StringDeserializer::<toml::de::Error>::new(k.clone()))
            .map_err(|e| at_key(e, &k))?;
        self.next = Some((k, v));
        Ok(Some(key))
    }

    fn next_value_seed<V: serde::de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Self::Error> {
        let (k, v) =
            self.next.take().ok_or_else(|| <toml::de::Error as serde::de::Error>::custom("a value before its key"))?;
        seed.deserialize(Strict(v)).map_err(|e| at_key(e, &k))
    }
}

struct StrictSeq {
    items: std::vec::IntoIter<toml::Value>,
    at: usize,
}

impl<'de> serde::de::SeqAccess<'de> for StrictSeq {
    type Error = toml::de::Error;

    fn next_element_seed<T: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        let Some(v) = self.items.next() else { return Ok(None) };
        let at = self.at;
        self.at += 1;
        // A list element's path is its index, as `fleet.gates[1].rate` in range errors.
        seed.deserialize(Strict(v)).map(Some).map_err(|e| at_key(e, &format!("[{at}]")))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

impl<'de> serde::Deserializer<'de> for Strict {
    type Error = toml::de::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            toml::Value::Table(t) => visitor.visit_map(StrictMap { entries: t.into_iter(), next: None }),
            toml::Value::Array(a) => visitor.visit_seq(StrictSeq { items: a.into_iter(), at: 0 }),
            other => other.deserialize_any(visitor),
        }
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self.0 {
            toml::Value::Table(t) => visitor.visit_map(StrictMap { entries: t.into_iter(), next: None }),
            toml::Value::Array(_) => Err(<toml::de::Error as serde::de::Error>::custom(
                "an array where a table belongs (a table's keys are named: `{ key = value, … }` or a `[section]`)",
            )),
            other => other.deserialize_struct(name, fields, visitor).map_err(|e| {
                use serde::de::Error as _;
                // "expected struct Spike" names a Rust type; the user wrote a table key.
                let m = e.to_string();
                match m.split_once("expected struct ") {
                    Some((head, _)) => toml::de::Error::custom(format!("{head}expected a table")),
                    None => e,
                }
            }),
        }
    }

    fn deserialize_option<V: serde::de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: serde::de::Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_enum(name, variants, visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

/// `root` with the scalar at the key named by a TOML value error ("… in `run.mode`") turned
/// into its text as a string, or `None` when the message names no key or no scalar is there.
fn quoted_at_error_key(root: &mut toml::Table, message: &str) -> Option<toml::Table> {
    let (_, path) = split_path(message)?;
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
        toml::Value::Table(_) => "a table".to_string(),
        toml::Value::Array(_) => "an array".to_string(),
        toml::Value::String(_) => return None,
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
        // A table where a name belongs lists the names too.
        let e = parse::<File>("[run.mode]\nx = 1", &[]).unwrap_err().0;
        assert!(e.contains("run.mode") && e.contains("`stepped`"), "{e}");
    }

    #[test]
    fn an_array_where_a_table_belongs_is_refused_not_read_in_order() {
        // serde fills a struct from a sequence field by field: `run = ["fluid"]` would set
        // run.mode; `--set run=[1]` ran a 1-s run.
        for (text, over) in [("run = [\"fluid\"]", vec![]), ("[run]\nmode = \"fluid\"", vec![("run", "[\"stepped\"]")])]
        {
            let over: Vec<(String, String)> = over.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            let e = parse::<File>(text, &over).unwrap_err().0;
            assert!(e.contains("an array where a table belongs") && e.ends_with("in `run`"), "{e}");
        }
        // Lists stay lists, and a wrong value deep inside names its whole path.
        #[derive(Debug, serde::Deserialize)]
        struct Points {
            #[allow(dead_code)]
            points: Vec<(f64, f64)>,
        }
        assert_eq!(parse::<Points>("points = [[0, 1], [5, 0.5]]", &[]).unwrap().points.len(), 2);
        let e = parse::<Points>("points = [[0, 1], [5, \"x\"]]", &[]).unwrap_err().0;
        assert!(e.contains("points.[1].[1]") || e.contains("points"), "{e}");
        // No Rust type names in the message.
        let e = parse::<File>("run = 5", &[]).unwrap_err().0;
        assert!(e.contains("expected a table") && !e.contains("struct"), "{e}");
    }

    /// Issue "a 100,000-deep TOML array gets a 200 KB error line": every message quotes at
    /// most a bounded excerpt of the input, in a file and in an override alike.
    #[test]
    fn errors_quote_a_bounded_excerpt_of_the_input() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let short = |e: &ParseError| {
            assert!(e.0.chars().count() <= MESSAGE_CHARS + 10, "{} chars: {}…", e.0.len(), &e.0[..200]);
            assert!(!e.0.contains(&"[".repeat(EXCERPT_CHARS + 1)), "{}", e.0);
            assert!(!e.0.contains('\n'), "{}", e.0);
        };
        // In the file: the line and column, what is wrong, and a short excerpt.
        let e = parse::<File>(&format!("[run]\nmode = {deep}\n"), &[]).unwrap_err();
        short(&e);
        assert!(e.0.starts_with("TOML parse error at line 2, column "), "{}", e.0);
        assert!(e.0.contains("recursion limit") && e.0.contains("(near `…[[[["), "{}", e.0);
        // An override: its value is taken as a string the message would quote whole.
        let e = parse::<File>("", &[("run.mode".into(), deep.clone())]).unwrap_err();
        short(&e);
        assert!(e.0.contains("run.mode") && e.0.contains("(200000 characters)"), "{}", e.0);
        let e = parse::<File>("", &[("run".into(), format!("{{ mode = \"{}\" }}", "x".repeat(100_000)))]).unwrap_err();
        short(&e);
        assert!(e.0.ends_with("in `run.mode`"), "{}", e.0);
        // A long key, in the file and in an override.
        let e = parse::<File>(&format!("{} = 1", "k".repeat(100_000)), &[]).unwrap_err();
        short(&e);
        let e = parse::<File>("", &[(format!("{}.x", "k".repeat(100_000)), "1".into())]).unwrap_err();
        short(&e);
        // A long line of anything else.
        let e = parse::<File>(&format!("x = \"{}", "y".repeat(100_000)), &[]).unwrap_err();
        short(&e);
        assert!(e.0.starts_with("TOML parse error at line 1, column "), "{}", e.0);
        // Short input keeps its message whole.
        let e = parse::<File>("a = 1\nb = [1, 2\nc = 3", &[]).unwrap_err();
        assert_eq!(e.0, "TOML parse error at line 3, column 1: invalid array expected `]` (near `c = 3`)");
    }

    #[test]
    fn override_leaves_name_every_value_a_table_sets() {
        assert_eq!(override_leaves("run.mode", "stepped"), ["run.mode"]);
        assert_eq!(override_leaves("traffic.spike", "{ start = 1, duration = 2, rate = 3 }").len(), 3);
        assert_eq!(override_leaves("a", "{ b = { c = 1 }, d = {} }"), ["a.b.c", "a.d"]);
        assert_eq!(override_leaves("a", "{}"), ["a"]);
    }
}
