//! A series of values read from text: one value per line, or a CSV with a header line and a
//! column chosen by name (the input of `safegate detect`).
//!
//! Pure functions on `&str`: the caller reads the file. Blank lines and lines starting with
//! `#` are skipped; `NaN` is a value (a missing one). Whether the text has a header is
//! decided by its first content line: a header when any cell of it is not a number. Every
//! error names the line it is about, and quotes the text only as a bounded excerpt (a cell,
//! a column's name, at most [`LISTED_COLUMNS`] of the header's names): a line may be as long
//! as the file.
//!
//! ```
//! use safegate_sim::series_text::parse_series;
//!
//! let s = parse_series("t,latency\n0,1.5\n1,NaN\n", Some("latency")).unwrap();
//! assert_eq!(s.values[0], 1.5);
//! assert!(s.values[1].is_nan());
//! assert_eq!(s.lines, [2, 3]);
//! let e = parse_series("t,latency\n0,x\n", Some("latency")).unwrap_err();
//! assert_eq!(e.to_string(), "line 2: \"x\" is not a number (column \"latency\")");
//! ```

use safegate_core::config_file::excerpt;

/// Most values a series may hold (each costs about 40 bytes in `safegate detect`).
pub const MAX_VALUES: usize = 5_000_000;

/// Most of a header's names an error lists.
pub const LISTED_COLUMNS: usize = 12;

/// `s` as an error quotes it: an [`excerpt`], in double quotes.
fn quoted(s: &str) -> String {
    format!("{:?}", excerpt(s))
}

/// The header's `names` as an error lists them: each an [`excerpt`], the first
/// [`LISTED_COLUMNS`] of them and how many more.
fn listed(names: &[String]) -> String {
    let shown: Vec<String> = names.iter().take(LISTED_COLUMNS).map(|n| excerpt(n)).collect();
    match names.len().checked_sub(LISTED_COLUMNS).filter(|&more| more > 0) {
        Some(more) => format!("{}, … {more} more", shown.join(", ")),
        None => shown.join(", "),
    }
}

/// ` (column "NAME")`, or nothing without a header.
fn in_column(column: &Option<String>) -> String {
    column.as_deref().map(|c| format!(" (column {})", quoted(c))).unwrap_or_default()
}

/// The values read, with the line each came from.
#[derive(Debug, Clone, PartialEq)]
pub struct TextSeries {
    /// The values, in order (`NaN` where the text says so).
    pub values: Vec<f64>,
    /// The 1-based line number of each value.
    pub lines: Vec<usize>,
    /// The column read, when the text has a header line.
    pub column: Option<String>,
}

/// Why a text is not a series. The input's text it holds (a cell, a name) is an
/// [`excerpt`] of it, so that a caller's own message quoting it is bounded too.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeriesTextError {
    /// Nothing but blank and comment lines.
    #[error("no values")]
    Empty,
    /// A header line and nothing after it.
    #[error("no values after the header")]
    NoValuesAfterHeader,
    /// The column asked for is not in the header.
    #[error("unknown column {} (columns: {})", quoted(want), listed(columns))]
    UnknownColumn {
        /// The name asked for (an excerpt).
        want: String,
        /// The header's names (each an excerpt).
        columns: Vec<String>,
    },
    /// A header with several columns and no column chosen.
    #[error("{} columns ({}): choose one", columns.len(), listed(columns))]
    ColumnNeeded {
        /// The header's names (each an excerpt).
        columns: Vec<String>,
    },
    /// A column asked for, but the first content line is numeric (no header).
    #[error("column {} asked for, but there is no header line (line {line} is numeric)", quoted(want))]
    NoHeader {
        /// The name asked for (an excerpt).
        want: String,
        /// The first content line.
        line: usize,
    },
    /// No header, and a line with several values.
    #[error("line {line} has {count} values; give one value per line, or a header line and a column")]
    SeveralValues {
        /// The line.
        line: usize,
        /// Its number of cells.
        count: usize,
    },
    /// A row whose number of cells differs from the header's.
    #[error("line {line} has {got} cells, expected {expected}")]
    Width {
        /// The line.
        line: usize,
        /// Its number of cells.
        got: usize,
        /// The header's.
        expected: usize,
    },
    /// An infinite value (`inf`, `-inf`, or a number that overflows): not an observation,
    /// and not a missing one either.
    #[error("line {line}: {} is infinite{}; write NaN for a missing value", quoted(cell), in_column(column))]
    Infinite {
        /// The line.
        line: usize,
        /// The cell's text (an excerpt).
        cell: String,
        /// The column it is in, when the text has a header.
        column: Option<String>,
    },
    /// More values than [`MAX_VALUES`].
    #[error("more than {limit} values (line {line} is one too many); split the series")]
    TooMany {
        /// The line of the first value beyond the cap.
        line: usize,
        /// The cap.
        limit: usize,
    },
    /// A cell that is not a number.
    #[error(
        "line {line}: {} is not a number{}{}",
        quoted(cell),
        in_column(column),
        if cell.is_empty() { "; write NaN for a missing value" } else { "" }
    )]
    NotANumber {
        /// The line.
        line: usize,
        /// The cell's text (an excerpt).
        cell: String,
        /// The column it is in, when the text has a header.
        column: Option<String>,
    },
}

fn cells(line: &str) -> Vec<&str> {
    line.split(',').map(|c| c.trim().trim_matches('"')).collect()
}

/// Parse one value per line, or a CSV with a header line whose `column` is read (needed
/// when it has several columns; a `column` without a header is an error). An infinite
/// value is an error naming its line; at most [`MAX_VALUES`] values are read.
pub fn parse_series(text: &str, column: Option<&str>) -> Result<TextSeries, SeriesTextError> {
    let mut content = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .peekable();
    let Some(&(first_no, first)) = content.peek() else {
        return Err(SeriesTextError::Empty);
    };
    let head = cells(first);
    let has_header = head.iter().any(|c| c.parse::<f64>().is_err());
    let names = || head.iter().map(|c| excerpt(c)).collect::<Vec<_>>();
    let (idx, width, name) = if has_header {
        content.next();
        let idx = match column {
            Some(want) => head
                .iter()
                .position(|c| *c == want)
                .ok_or_else(|| SeriesTextError::UnknownColumn { want: excerpt(want), columns: names() })?,
            None if head.len() == 1 => 0,
            None => return Err(SeriesTextError::ColumnNeeded { columns: names() }),
        };
        (idx, head.len(), Some(head[idx].to_string()))
    } else {
        if let Some(want) = column {
            return Err(SeriesTextError::NoHeader { want: excerpt(want), line: first_no });
        }
        if head.len() > 1 {
            return Err(SeriesTextError::SeveralValues { line: first_no, count: head.len() });
        }
        (0, 1, None)
    };
    let mut series = TextSeries { values: Vec::new(), lines: Vec::new(), column: name };
    for (no, line) in content {
        let row = cells(line);
        if row.len() != width {
            return Err(SeriesTextError::Width { line: no, got: row.len(), expected: width });
        }
        let cell = row[idx];
        let value: f64 = cell.parse().map_err(|_| SeriesTextError::NotANumber {
            line: no,
            cell: excerpt(cell),
            column: series.column.as_deref().map(excerpt),
        })?;
        if value.is_infinite() {
            return Err(SeriesTextError::Infinite {
                line: no,
                cell: excerpt(cell),
                column: series.column.as_deref().map(excerpt),
            });
        }
        if series.values.len() >= MAX_VALUES {
            return Err(SeriesTextError::TooMany { line: no, limit: MAX_VALUES });
        }
        series.values.push(value);
        series.lines.push(no);
    }
    if series.values.is_empty() {
        return Err(SeriesTextError::NoValuesAfterHeader);
    }
    Ok(series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_per_line_and_comments() {
        let s = parse_series("# latency\n1\n\n2.5\n-3e-1\nNaN\n", None).unwrap();
        assert_eq!(s.values[..3], [1.0, 2.5, -0.3]);
        assert!(s.values[3].is_nan() && s.values.len() == 4);
        assert_eq!(s.lines, [2, 4, 5, 6]);
        assert_eq!(s.column, None);
        // Indented lines, CRLF endings and quoted cells.
        let s = parse_series("  \"1\"\r\n\t2\r\n", None).unwrap();
        assert_eq!((s.values, s.lines), (vec![1.0, 2.0], vec![1, 2]));
    }

    #[test]
    fn header_and_column_choice() {
        let text = "t,\"queue\",latency\n0,1,2\n1,3,4\n";
        let s = parse_series(text, Some("latency")).unwrap();
        assert_eq!((s.values, s.lines, s.column.as_deref()), (vec![2.0, 4.0], vec![2, 3], Some("latency")));
        assert_eq!(parse_series(text, Some("queue")).unwrap().values, [1.0, 3.0]);
        let columns: Vec<String> = ["t", "queue", "latency"].map(String::from).to_vec();
        let e = parse_series(text, None).unwrap_err();
        assert_eq!(e, SeriesTextError::ColumnNeeded { columns: columns.clone() });
        assert_eq!(e.to_string(), "3 columns (t, queue, latency): choose one");
        let e = parse_series(text, Some("lat")).unwrap_err();
        assert_eq!(e, SeriesTextError::UnknownColumn { want: "lat".into(), columns });
        assert_eq!(e.to_string(), "unknown column \"lat\" (columns: t, queue, latency)");
        // One column needs no choice; its name is the header's.
        let s = parse_series("value\n1\n2\n", None).unwrap();
        assert_eq!((s.values, s.column.as_deref()), (vec![1.0, 2.0], Some("value")));
    }

    #[test]
    fn bad_values_name_their_line() {
        let e = parse_series("v\n1\n2\nabc\n", None).unwrap_err();
        assert_eq!(e, SeriesTextError::NotANumber { line: 4, cell: "abc".into(), column: Some("v".into()) });
        assert_eq!(e.to_string(), "line 4: \"abc\" is not a number (column \"v\")");
        let e = parse_series("1\n# c\nx\n", None).unwrap_err();
        assert_eq!(e.to_string(), "line 3: \"x\" is not a number");
        let e = parse_series("a,b\n1,2\n3\n", Some("b")).unwrap_err();
        assert_eq!(e, SeriesTextError::Width { line: 3, got: 1, expected: 2 });
        assert_eq!(e.to_string(), "line 3 has 1 cells, expected 2");
        let e = parse_series("a,b\n1,\n", Some("b")).unwrap_err();
        assert!(e.to_string().ends_with("is not a number (column \"b\"); write NaN for a missing value"), "{e}");
        let e = parse_series("\n1,2\n", None).unwrap_err();
        assert_eq!(e, SeriesTextError::SeveralValues { line: 2, count: 2 });
        let e = parse_series("# x\n1\n", Some("x")).unwrap_err();
        assert_eq!(e, SeriesTextError::NoHeader { want: "x".into(), line: 2 });
        assert_eq!(parse_series("\n# nothing\n", None), Err(SeriesTextError::Empty));
        assert_eq!(parse_series("", None), Err(SeriesTextError::Empty));
        assert_eq!(parse_series("only_a_header\n", None), Err(SeriesTextError::NoValuesAfterHeader));
    }

    #[test]
    fn infinities_are_refused_with_their_line() {
        for cell in ["inf", "-inf", "+Infinity", "1e999"] {
            let e = parse_series(&format!("1\nNaN\n{cell}\n"), None).unwrap_err();
            assert_eq!(e, SeriesTextError::Infinite { line: 3, cell: cell.into(), column: None });
            assert!(e.to_string().starts_with(&format!("line 3: {cell:?} is infinite")), "{e}");
        }
        let e = parse_series("t,v\n0,1\n1,-inf\n", Some("v")).unwrap_err();
        assert_eq!(e.to_string(), "line 3: \"-inf\" is infinite (column \"v\"); write NaN for a missing value");
        // An infinite value in a column not read is not looked at.
        assert_eq!(parse_series("t,v\ninf,1\n", Some("v")).unwrap().values, [1.0]);
    }

    /// A 100,000-character cell, column name or header is quoted as an excerpt: the
    /// message stays under 1,000 characters and still names the line and column.
    #[test]
    fn errors_quote_long_text_as_an_excerpt() {
        let long = "x".repeat(100_000);
        let wide: Vec<String> = (0..50_000).map(|i| format!("c{i}")).collect();
        let wide = wide.join(",");
        for (text, column, said) in [
            (format!("v\n1\n{long}\n"), None, "line 3: \"xxx"),
            (format!("{long}\n1\nabc\n"), None, "line 3: \"abc\" is not a number (column \"xxx"),
            (format!("v\n1e999{long}\n"), None, "line 2: \"1e999"),
            ("v,w\n1,2\n".to_string(), Some(long.as_str()), "unknown column \"xxx"),
            ("1\n".to_string(), Some(long.as_str()), "column \"xxx"),
            (format!("{long},{long}\n1,2\n"), None, "2 columns (xxx"),
            (format!("{wide}\n"), None, "50000 columns (c0, c1,"),
            (format!("{wide}\n"), Some("v"), "unknown column \"v\" (columns: c0, c1,"),
        ] {
            let e = parse_series(&text, column).unwrap_err().to_string();
            assert!(e.chars().count() < 1000 && e.starts_with(said), "{said}: {e}");
            assert!(!e.contains(&long[..1000]), "{said}: {e}");
        }
        let e = parse_series(&format!("{wide}\n"), None).unwrap_err().to_string();
        assert!(e.ends_with(&format!("c11, … {} more): choose one", 50_000 - LISTED_COLUMNS)), "{e}");
    }

    #[test]
    fn the_number_of_values_is_capped() {
        let text = "0\n".repeat(MAX_VALUES + 1);
        let e = parse_series(&text, None).unwrap_err();
        assert_eq!(e, SeriesTextError::TooMany { line: MAX_VALUES + 1, limit: MAX_VALUES });
        assert_eq!(parse_series(&text[2..], None).unwrap().values.len(), MAX_VALUES);
    }
}
