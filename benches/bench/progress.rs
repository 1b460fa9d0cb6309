//! A progress bar for long runs, drawn only when stdout is a terminal so that piped or
//! captured output holds the report alone.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// One bar reused by the phases of a run (loading, then measuring), and the detail lines of
/// `--verbose`.
pub struct Progress {
    bar: ProgressBar,
    verbose: bool,
}

impl Progress {
    /// A visible bar on a terminal, a hidden one otherwise; `verbose` prints detail lines.
    pub fn new(verbose: bool) -> Self {
        if !std::io::stdout().is_terminal() {
            return Progress { bar: ProgressBar::hidden(), verbose };
        }
        let style = ProgressStyle::with_template("{prefix:>9} [{bar:30}] {pos}/{len} {elapsed:>4} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        Progress { bar: ProgressBar::new(0).with_style(style), verbose }
    }

    /// Starts a phase of `steps` steps.
    pub fn start(&self, phase: &'static str, steps: u64) {
        self.bar.set_prefix(phase);
        self.bar.set_length(steps);
        self.bar.set_position(0);
    }

    /// Counts the step now starting and names it.
    pub fn step(&self, what: &str) {
        self.bar.set_message(what.to_string());
        self.bar.inc(1);
    }

    /// Prints a line to stderr without tearing the bar.
    pub fn note(&self, line: &str) {
        self.bar.suspend(|| eprintln!("{line}"));
    }

    /// Prints the line `line()` builds, with `--verbose` only.
    pub fn detail(&self, line: impl FnOnce() -> String) {
        if self.verbose {
            self.note(&line());
        }
    }

    /// Removes the bar before the report is printed.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
