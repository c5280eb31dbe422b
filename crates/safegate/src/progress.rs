//! A progress bar on stderr for long work; silent when stderr is not a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar counting `total` units, or a hidden one when `show` is false.
pub(crate) fn bar(total: u64, what: &str, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:40}] {percent:>3}% {elapsed_precise} (eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}

/// A run's status line on stderr: rewritten in place on a terminal; elsewhere (a log, a
/// pipe) written as a line of its own once per tenth of the run, so a log gets eleven
/// lines rather than one ever-growing one.
pub(crate) struct StatusLine {
    tty: bool,
    last_decile: i64,
}

impl StatusLine {
    pub(crate) fn new() -> Self {
        use std::io::IsTerminal as _;
        Self { tty: std::io::stderr().is_terminal(), last_decile: -1 }
    }

    /// Shows `line`, `done` of the way through the run (0 to 1).
    pub(crate) fn show(&mut self, line: &str, done: f64) {
        if self.tty {
            eprint!("\r{line}\x1b[K");
        } else {
            let decile = (10.0 * done).floor() as i64;
            if decile > self.last_decile {
                self.last_decile = decile;
                eprintln!("{line}");
            }
        }
    }

    /// A line of its own above the status line (on a terminal the status line is redrawn
    /// by the next [`StatusLine::show`]).
    pub(crate) fn note(&self, line: &str) {
        if self.tty {
            eprintln!("\r{line}\x1b[K");
        } else {
            eprintln!("{line}");
        }
    }

    /// Ends the line on a terminal, before the report.
    pub(crate) fn finish(&self) {
        if self.tty {
            eprintln!();
        }
    }
}
