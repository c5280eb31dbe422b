//! Every link in the project's Markdown resolves, and nothing points outside the repository.
//!
//! Checked files: `README.md`, `BENCHMARKS.md` and every `.md` under `docs/`. For each
//! relative link `[text](path)`, `[text](path#anchor)`, `[text](#anchor)` or reference
//! definition `[id]: path`, the path must name a file or directory inside the repository, and
//! an anchor must be the slug of a heading of the target Markdown file, by GitHub's rule
//! (lowercase; spaces become `-`; punctuation other than `-` and `_` is dropped; a repeated
//! heading gets `-1`, `-2`, …). External `http(s)` and `mailto` links are not fetched. Fenced
//! code blocks and inline code spans are skipped.
//!
//! A second check covers the plain-text references in code comments that rustdoc cannot
//! link: every `docs/NAME.md` named in a comment of a `.rs` or `.toml` file must exist, and a
//! `docs/NAME.md §Section` reference must start with the text of one of that file's headings.
//!
//! The parser is small and hand-written (no dependencies); `the_checker_reports_*` tests hold
//! it to failing on a broken link, a missing anchor and a path out of the repository.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

/// The engineers' shared workspace next to the repository (spelled in pieces so that a search
/// of the repository for the path finds only real references).
const SHARED: &str = concat!("..", "/", "shared");

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root exists")
}

/// The Markdown files whose links are checked, relative to `root`.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md"), root.join("BENCHMARKS.md")];
    walk(&root.join("docs"), &mut |p| {
        if p.extension().is_some_and(|e| e == "md") {
            files.push(p.to_path_buf());
        }
    });
    files.retain(|p| p.is_file());
    files.sort();
    files
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if p.is_dir() {
            walk(&p, f);
        } else {
            f(&p);
        }
    }
}

/// A fence opener or closer: up to three spaces, then at least three backticks or tildes.
fn fence(line: &str) -> Option<(char, usize)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let c = rest.chars().next()?;
    if c != '`' && c != '~' {
        return None;
    }
    let n = rest.chars().take_while(|&x| x == c).count();
    (n >= 3).then_some((c, n))
}

/// The lines of `text` outside fenced code blocks, with their 1-based numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        match (open, fence(line)) {
            (None, Some(f)) => open = Some(f),
            (Some((c, n)), Some((c2, n2))) if c == c2 && n2 >= n && line.trim()[n2..].trim().is_empty() => open = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// Byte ranges of the inline code spans of one line (a run of backticks up to the next run
/// of the same length).
fn code_spans(line: &str) -> Vec<(usize, usize)> {
    let b = line.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i] == b'`' {
            i += 1;
        }
        let run = i - start;
        // Find the closing run of exactly the same length.
        let mut j = i;
        let mut close = None;
        while j < b.len() {
            if b[j] == b'`' {
                let s = j;
                while j < b.len() && b[j] == b'`' {
                    j += 1;
                }
                if j - s == run {
                    close = Some(j);
                    break;
                }
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                spans.push((start, end));
                i = end;
            }
            None => break, // an unmatched run is literal text
        }
    }
    spans
}

/// A link destination found in Markdown.
#[derive(Debug, Clone, PartialEq)]
struct Link {
    line: usize,
    dest: String,
}

/// Every inline link or image destination and reference definition in `text`.
fn links(text: &str) -> Vec<Link> {
    let mut out = Vec::new();
    for (n, line) in prose_lines(text) {
        // Reference definition: up to three spaces, `[label]:`, the destination.
        let t = line.trim_start_matches(' ');
        if line.len() - t.len() <= 3 && t.starts_with('[') && !t.starts_with("[^") {
            if let Some(close) = t.find(']').filter(|&c| t[c + 1..].starts_with(':')) {
                let dest = t[close + 2..].split_whitespace().next().unwrap_or("");
                let dest = dest.trim_start_matches('<').trim_end_matches('>');
                if !dest.is_empty() {
                    out.push(Link { line: n, dest: dest.to_string() });
                }
                continue;
            }
        }
        let spans = code_spans(line);
        let in_code = |i: usize| spans.iter().any(|&(s, e)| i >= s && i < e);
        let b = line.as_bytes();
        let mut from = 0;
        while let Some(k) = line[from..].find("](") {
            let at = from + k;
            from = at + 2;
            if in_code(at) {
                continue;
            }
            // The destination: `<…>`, or up to whitespace or the `)` that balances the `(`.
            let start = at + 2;
            let dest = if b.get(start) == Some(&b'<') {
                match line[start + 1..].find('>') {
                    Some(e) => &line[start + 1..start + 1 + e],
                    None => continue,
                }
            } else {
                let mut depth = 0usize;
                let mut end = None;
                for (off, c) in line[start..].char_indices() {
                    match c {
                        '(' => depth += 1,
                        ')' if depth == 0 => {
                            end = Some(start + off);
                            break;
                        }
                        ')' => depth -= 1,
                        c if c.is_whitespace() => {
                            end = Some(start + off);
                            break;
                        }
                        _ => {}
                    }
                }
                match end {
                    Some(e) => &line[start..e],
                    None => continue,
                }
            };
            out.push(Link { line: n, dest: dest.to_string() });
        }
    }
    out
}

/// Combining marks GitHub keeps in a slug (Rust's `is_alphanumeric` does not count them).
fn combining(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

/// The visible text of a heading: inline links and images reduced to their text.
fn heading_text(raw: &str) -> String {
    let mut s = raw.to_string();
    while let Some(k) = s.find("](") {
        let Some(open) = s[..k].rfind('[') else { break };
        let Some(close) = s[k + 2..].find(')') else { break };
        let text = s[open + 1..k].to_string();
        let bang = open > 0 && s.as_bytes()[open - 1] == b'!';
        let from = if bang { open - 1 } else { open };
        s.replace_range(from..k + 2 + close + 1, &text);
    }
    s
}

/// GitHub's anchor for a heading: lowercase, spaces to `-`, other punctuation dropped.
fn slug(heading: &str) -> String {
    heading_text(heading.trim())
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() || combining(c) => Some(c),
            _ => None,
        })
        .collect()
}

/// The headings of a Markdown text (ATX `#` headings and setext underlines), in order.
fn headings(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut prev: Option<&str> = None;
    for (_, line) in prose_lines(text) {
        let t = line.trim_start_matches(' ');
        let indent = line.len() - t.len();
        let hashes = t.chars().take_while(|&c| c == '#').count();
        if indent <= 3 && (1..=6).contains(&hashes) && (t.len() == hashes || t[hashes..].starts_with([' ', '\t'])) {
            // Drop a closing sequence of `#`s.
            let body = t[hashes..].trim();
            let body = match body.trim_end_matches('#') {
                b if b.len() < body.len() && (b.is_empty() || b.ends_with([' ', '\t'])) => b.trim_end(),
                _ => body,
            };
            out.push(body.to_string());
            prev = None;
            continue;
        }
        let underline = !t.is_empty()
            && indent <= 3
            && (t.trim_end().chars().all(|c| c == '=') || t.trim_end().chars().all(|c| c == '-'));
        if underline {
            if let Some(p) = prev {
                out.push(p.trim().to_string());
                prev = None;
                continue;
            }
        }
        let plain =
            !t.trim().is_empty() && !t.starts_with(['|', '-', '*', '+', '>']) && !t.starts_with(char::is_numeric);
        prev = if plain { Some(line) } else { None };
    }
    out
}

/// The anchors of a Markdown text, with GitHub's `-1`, `-2` suffixes for repeated headings.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = HashSet::new();
    for h in headings(text) {
        let s = slug(&h);
        let n = seen.entry(s.clone()).or_insert(0);
        out.insert(if *n == 0 { s.clone() } else { format!("{s}-{n}") });
        *n += 1;
    }
    out
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `base.join(rel)` with `.` and `..` resolved lexically (the target may not exist).
fn normalise(base: &Path, rel: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for c in base.join(rel).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Every broken link of the Markdown `file` under `root`, as `path:line: message`.
fn check_markdown(root: &Path, file: &Path, cache: &mut HashMap<PathBuf, HashSet<String>>) -> Vec<String> {
    let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let shown = file.strip_prefix(root).unwrap_or(file).display().to_string();
    let mut errors = Vec::new();
    for Link { line, dest } in links(&text) {
        let at = format!("{shown}:{line}: ({dest})");
        if dest.contains(SHARED) {
            errors.push(format!("{at}: points to the shared workspace, not part of the repository"));
            continue;
        }
        let lower = dest.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:") {
            continue; // external: not fetched
        }
        if lower.contains("://") {
            errors.push(format!("{at}: unsupported link scheme"));
            continue;
        }
        let (path_part, anchor) = match dest.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (dest.as_str(), None),
        };
        let path_part = percent_decode(path_part);
        let target = if path_part.is_empty() {
            file.to_path_buf()
        } else if let Some(abs) = path_part.strip_prefix('/') {
            normalise(root, abs)
        } else {
            normalise(file.parent().expect("a file has a directory"), &path_part)
        };
        if !target.starts_with(root) {
            errors.push(format!("{at}: points outside the repository"));
            continue;
        }
        if !target.exists() {
            errors.push(format!("{at}: no such file or directory"));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        let anchor = percent_decode(anchor).to_lowercase();
        if target.is_dir() || !matches!(target.extension(), Some(e) if e == "md") {
            errors.push(format!("{at}: an anchor on a target that is not a Markdown file"));
            continue;
        }
        let known =
            cache.entry(target.clone()).or_insert_with(|| anchors(&fs::read_to_string(&target).unwrap_or_default()));
        if !known.contains(&anchor) {
            let mut near: Vec<&String> = known.iter().collect();
            near.sort();
            errors.push(format!("{at}: no heading with anchor #{anchor} (anchors: {near:?})"));
        }
    }
    errors
}

fn check_all_markdown(root: &Path) -> Vec<String> {
    let mut cache = HashMap::new();
    markdown_files(root).iter().flat_map(|f| check_markdown(root, f, &mut cache)).collect()
}

/// Text of a source file with comment markers removed and lines joined by spaces, so a
/// reference wrapped over two comment lines reads as one.
fn comment_text(text: &str) -> String {
    text.lines()
        .map(|l| {
            let t = l.trim_start();
            let t = ["//!", "///", "//", "#"].iter().find_map(|m| t.strip_prefix(m)).unwrap_or(t);
            t.trim().to_string()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn normalise_words(s: &str) -> String {
    s.replace('`', "").split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// Every broken `docs/NAME.md [§Section]` reference in the `.rs` and `.toml` files under the
/// given directories of `root`.
fn check_source_references(root: &Path, dirs: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    for d in dirs {
        walk(&root.join(d), &mut |p| {
            if p.extension().is_some_and(|e| e == "rs" || e == "toml") {
                files.push(p.to_path_buf());
            }
        });
    }
    let mut errors = Vec::new();
    let mut heads: HashMap<PathBuf, Vec<String>> = HashMap::new();
    // This file's own examples of broken references are not references.
    let this = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/doc_links.rs").canonicalize().ok();
    for f in files {
        if this.is_some() && f.canonicalize().ok() == this {
            continue;
        }
        let Ok(text) = fs::read_to_string(&f) else { continue };
        let joined = comment_text(&text);
        let shown = f.strip_prefix(root).unwrap_or(&f).display().to_string();
        let mut from = 0;
        while let Some(k) = joined[from..].find("docs/") {
            let at = from + k;
            from = at + 5;
            // Only a reference that starts a path (not `…/crate-docs/x.md`).
            if at > 0 && joined[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '/' || c == '-') {
                continue;
            }
            let rest = &joined[at + 5..];
            let name: String =
                rest.chars().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')).collect();
            let name = name.trim_end_matches('.');
            if !name.ends_with(".md") {
                continue;
            }
            let target = root.join("docs").join(name);
            if !target.is_file() {
                errors.push(format!("{shown}: docs/{name} does not exist"));
                continue;
            }
            let after = rest[name.len()..].trim_start_matches([',', ' ']);
            let Some(section) = after.strip_prefix('§') else { continue };
            let section = normalise_words(section.trim_start_matches([' ', '(']));
            let hs = heads
                .entry(target.clone())
                .or_insert_with(|| headings(&fs::read_to_string(&target).unwrap_or_default()));
            // A section is named by its heading, or by the heading's words before a
            // parenthesis (`§Health` for "Health (`[health]`)").
            let names = |h: &String| {
                let full = normalise_words(&heading_text(h));
                let short = full.split(" (").next().unwrap_or("").to_string();
                [full, short]
            };
            // … followed by the end of a word (`§Horizon bound` is not `§Horizon bounds`).
            let names_it = |n: &String| {
                !n.is_empty()
                    && section.starts_with(n.as_str())
                    && !section[n.len()..].starts_with(|c: char| c.is_alphanumeric())
            };
            if !hs.iter().any(|h| names(h).iter().any(names_it)) {
                let head: String = section.chars().take(60).collect();
                errors.push(format!("{shown}: docs/{name} §{head}…: no such section (sections: {hs:?})"));
            }
        }
    }
    errors
}

#[test]
fn every_markdown_link_resolves() {
    let root = repo_root();
    let files = markdown_files(&root);
    assert!(files.len() >= 3, "expected README.md, BENCHMARKS.md and docs/*.md, found {files:?}");
    let errors = check_all_markdown(&root);
    assert!(errors.is_empty(), "{} broken link(s):\n{}", errors.len(), errors.join("\n"));
}

#[test]
fn every_docs_reference_in_code_comments_resolves() {
    let root = repo_root();
    let errors = check_source_references(&root, &["crates", "boundaries", "scenarios"]);
    assert!(errors.is_empty(), "{} broken reference(s):\n{}", errors.len(), errors.join("\n"));
}

#[test]
fn slugs_follow_githubs_rule() {
    assert_eq!(slug("The safety filter (issue 4)"), "the-safety-filter-issue-4");
    assert_eq!(slug("How each of the seed's numbers is measured"), "how-each-of-the-seeds-numbers-is-measured");
    assert_eq!(slug("`safegate verify`"), "safegate-verify");
    assert_eq!(slug("Stochastic mode (`run.mode = \"stochastic\"`)"), "stochastic-mode-runmode--stochastic");
    assert_eq!(slug("The regime detector (IMM)"), "the-regime-detector-imm");
    assert_eq!(slug("snake_case and-dash"), "snake_case-and-dash");
    assert_eq!(slug("See [the docs](x.md)"), "see-the-docs");
    assert_eq!(slug("λ = 80, θ·Q"), "λ--80-θq");
    let a = anchors("# A\n\n## A\n\n```\n# not a heading\n```\n\nB\n---\n");
    let want: HashSet<String> = ["a", "a-1", "b"].iter().map(|s| s.to_string()).collect();
    assert_eq!(a, want);
}

#[test]
fn the_parser_finds_links_and_skips_code() {
    let text = "see [a](x.md) and ![i](img.svg \"t\") and [`c`](y.md#z)\n\
                `[not](a-link.md)` but [b](<with space.md>)\n\
                ```sh\n[in](fence.md)\n```\n\
                [ref]: refs.md\n\
                [nested (parens)](p(1).md)";
    let dests: Vec<String> = links(text).into_iter().map(|l| l.dest).collect();
    assert_eq!(dests, ["x.md", "img.svg", "y.md#z", "with space.md", "refs.md", "p(1).md"]);
}

/// A scratch repository for the negative tests, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("safegate-doc-links-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("docs")).unwrap();
        fs::create_dir_all(dir.join("crates/x/src")).unwrap();
        Scratch(dir.canonicalize().unwrap())
    }
    fn write(&self, rel: &str, text: &str) {
        fs::write(self.0.join(rel), text).unwrap();
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn the_checker_reports_broken_links() {
    let s = Scratch::new("md");
    s.write("BENCHMARKS.md", "# Benchmarks\n\n## The filter (issue 4)\n");
    s.write("docs/a.md", "# A\n\n## Chance constraints\n\nBack to [the top](#a).\n");
    s.write(
        "README.md",
        &format!(
            "# R\n\n\
             [ok](docs/a.md#chance-constraints) [ok](BENCHMARKS.md#the-filter-issue-4) [ok](#r) [ok](docs/)\n\
             [ext](https://example.com/x) \n\
             [missing file](docs/nope.md)\n\
             [missing anchor](docs/a.md#chance)\n\
             [outside](../elsewhere/x.md)\n\
             [shared]({SHARED}/seed/x.txt)\n\
             [anchor on a directory](docs/#a)\n\
             ```\n[inside a fence](gone.md)\n```\n"
        ),
    );
    let errors = check_all_markdown(&s.0);
    let shared = format!("README.md:8: ({SHARED}/seed/x.txt): points to the shared workspace");
    let want = [
        "README.md:5: (docs/nope.md): no such file",
        "README.md:6: (docs/a.md#chance): no heading",
        "README.md:7: (../elsewhere/x.md): points outside the repository",
        shared.as_str(),
        "README.md:9: (docs/#a): an anchor on a target that is not a Markdown file",
    ];
    assert_eq!(errors.len(), want.len(), "{errors:#?}");
    for (e, w) in errors.iter().zip(want) {
        assert!(e.starts_with(w), "{e:?} should start with {w:?}");
    }
}

#[test]
fn the_checker_reports_broken_comment_references() {
    let s = Scratch::new("rs");
    s.write("docs/math.md", "# Math\n\n## Union bound over the horizon\n");
    s.write(
        "crates/x/src/lib.rs",
        "//! Fine: docs/math.md §Union bound over\n//! the horizon, and docs/math.md.\n\
         /// Broken: docs/gone.md, and docs/math.md §Chance constraints.\nfn f() {}\n",
    );
    let errors = check_source_references(&s.0, &["crates"]);
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(errors[0].contains("docs/gone.md does not exist"), "{errors:#?}");
    assert!(errors[1].contains("§chance constraints"), "{errors:#?}");
}
