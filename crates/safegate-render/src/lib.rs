//! Renderings of safegate's studies: the text a command prints, the SVG charts it writes
//! and the HTML report, one renderer per table. The CLI, `safegate report` and the web
//! page call the same functions, so a table reads the same wherever it is shown.
//!
//! | module | renders |
//! |---|---|
//! | [`boundary`] | the boundary checklist's text and figures |
//! | [`chart`] | dependency-free SVG line charts: stacked panels on one time axis |
//! | [`markup`] | text escaped for HTML and SVG |
//! | [`numbers`] | numbers in a bounded width, and shares (`n/a` with no denominator) |
//! | [`pg`] | `safegate pg`'s curve table and chart, and its arms table |
//! | [`reproduce`] | the table of reproduced results; an experiment's figure |
//! | [`compare`] | the compare table and its figures (queue traces, goodput vs load) |
//! | [`verify`] | the text of a verify report |
//! | [`detect`] | `safegate detect`'s verdict, text report and JSON document |
//! | [`fleet`] | the fleet model suite's text, JSON and figures (the price around its delay threshold, the tipping curves) |
//! | [`fleet_run`] | the report of a run of `safegate fleet`'s gate processes |
//! | [`falsify`] | the falsification criteria, and how their numbers read |
//! | [`report`] | the self-contained HTML page of `safegate report` |
//! | [`run`] | the table of `safegate run`'s runs side by side, its chart and verdicts |
//! | [`report_data`] | what that page shows: each section's results and the samples taken |
//!
//! ```
//! use safegate_render::chart::{render, Line, Panel};
//!
//! let line = Line { name: "q".into(), color: "#000", x: vec![0.0, 1.0], y: vec![0.0, 2.0], dashed: false };
//! let panel = Panel { label: "queue".into(), y_min: 0.0, y_max: 2.0, lines: vec![line], rules: vec![] };
//! let svg = render("a title", "a subtitle", "t [s]", 0.0, 1.0, &[panel]);
//! assert!(svg.starts_with("<svg"));
//! ```

pub mod boundary;
pub mod chart;
pub mod compare;
pub mod detect;
pub mod falsify;
pub mod fleet;
pub mod fleet_run;
pub mod gate;
pub mod markup;
pub mod numbers;
pub mod pg;
pub mod report;
pub mod report_data;
pub mod reproduce;
pub mod run;
pub mod verify;

pub use markup::escape;
