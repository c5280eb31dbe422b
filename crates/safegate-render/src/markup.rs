//! Text made safe inside HTML and SVG.

/// `s` with `&`, `<`, `>` and `"` escaped: safe in element text and in double-quoted
/// attribute values (the only quoting this crate writes), in HTML and SVG alike.
///
/// ```
/// assert_eq!(safegate_render::escape(r#"a<b & "c">"#), "a&lt;b &amp; &quot;c&quot;&gt;");
/// ```
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}
