//! The printer: the one way a command shows anything. `runtime::main` makes it from `--color`,
//! `-v`/`-q`, `NO_COLOR` and the terminals, and passes it down; nothing else decides styles or
//! verbosity, and nothing writes to the terminal without one.
//!
//! Text goes through [`for_terminal`] on its way out, so a message from the cluster or a forge
//! cannot drive the terminal; JSON and YAML ([`Printer::structured`]) are written exactly.

use std::io::{IsTerminal, Write};

use super::progress::{Spinner, write_stderr};
use super::sanitize::for_terminal;
use super::style::Style;
use crate::cli::{ColorChoice, GlobalArgs, OutputFormat};
use crate::env;
use crate::error::{Error, Result};

/// Where data (stdout) and progress, warnings and errors (stderr) go, and how they look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Printer {
    stdout: Style,
    stderr: Style,
    /// `-v` count minus `-q` count: above 0 details show, below 0 progress and warnings don't.
    verbosity: i8,
    /// Whether stdout is a terminal, where `--watch` redraws the screen in place.
    stdout_is_terminal: bool,
    /// Whether stderr is a terminal, where a spinner can redraw its line.
    stderr_is_terminal: bool,
    /// `-o`: how a command's result is printed (a changing command's line of text, or its
    /// `Change` document).
    output: OutputFormat,
}

impl Printer {
    /// The printer for this process's terminals, under `--color`, `-v` and `-q`.
    pub fn new(color: ColorChoice, verbose: u8, quiet: u8) -> Printer {
        let decide = |is_terminal: bool| {
            Style::decide(color, is_terminal, std::env::var_os(env::NO_COLOR), std::env::var_os(env::FORCE_COLOR))
        };
        let stdout_is_terminal = std::io::stdout().is_terminal();
        let stderr_is_terminal = std::io::stderr().is_terminal();
        Printer {
            stdout: decide(stdout_is_terminal),
            stderr: decide(stderr_is_terminal),
            verbosity: (i16::from(verbose) - i16::from(quiet)).clamp(-8, 8) as i8,
            stdout_is_terminal,
            stderr_is_terminal,
            output: OutputFormat::Table,
        }
    }

    /// The printer the shared options ask for.
    pub fn from_args(global: &GlobalArgs) -> Printer {
        Printer { output: global.output_format(), ..Printer::new(global.color, global.verbose, global.quiet) }
    }

    /// `-o`, `table` when not given.
    pub fn output(&self) -> OutputFormat {
        self.output
    }

    /// How data on stdout is decorated (tables, trees).
    pub fn stdout_style(&self) -> Style {
        self.stdout
    }

    /// Whether stdout is a terminal: `--watch` redraws the screen there, and appends elsewhere.
    pub fn redraws(&self) -> bool {
        self.stdout_is_terminal
    }

    /// Writes data to stdout, without escape sequences or control characters but our own
    /// colours, returning the I/O error (for example a closed pipe) instead of panicking.
    pub fn data(&self, text: &str) -> Result<()> {
        write_stdout(&for_terminal(text, self.stdout.decorates()))
    }

    /// Clears the terminal and shows `text` from its top (`--watch` on a terminal).
    pub fn redraw(&self, text: &str) -> Result<()> {
        write_stdout(&format!("{CLEAR_SCREEN}{}", for_terminal(text, self.stdout.decorates())))
    }

    /// Prints data as JSON or YAML on stdout.
    ///
    /// JSON is streamed rather than built as one string first: `status -A` on thousands of apps
    /// would otherwise hold its output twice. In 64 KiB writes: 8 KiB ones were a thousand
    /// system calls at 1,000 apps.
    pub fn structured<T: super::Versioned>(&self, value: &T, format: OutputFormat) -> Result<()> {
        if format == OutputFormat::Yaml {
            return write_stdout(&super::render_structured(value, format)?);
        }
        let mut stdout = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        serde_json::to_writer_pretty(&mut stdout, value).map_err(|error| match error.io_error_kind() {
            Some(kind) => Error::io("writing to stdout", std::io::Error::from(kind)),
            None => Error::Render(error.to_string()),
        })?;
        stdout.write_all(b"\n").and_then(|()| stdout.flush()).map_err(|error| Error::io("writing to stdout", error))
    }

    /// A step starting: `► text` (the glyph only on a decorated terminal). Not with `-q`.
    pub fn step(&self, text: &str) {
        self.progress(&format!("{}{text}", self.stderr.glyph("►")));
    }

    /// A step done: `✔ text`. Not with `-q`.
    pub fn done(&self, text: &str) {
        self.progress(&format!("{}{text}", self.stderr.glyph("✔")));
    }

    /// A line of progress without a glyph. Not with `-q`.
    pub fn progress(&self, text: &str) {
        if self.verbosity >= 0 {
            self.stderr_line(text);
        }
    }

    /// A detail line, only with `-v`.
    pub fn detail(&self, text: &str) {
        if self.verbosity > 0 {
            self.stderr_line(&self.stderr.dim(text));
        }
    }

    /// `warning: text`, unless `-q` was given.
    pub fn warning(&self, text: &str) {
        if self.verbosity >= 0 {
            self.stderr_line(&format!("{} {text}", self.stderr.warn("warning:")));
        }
    }

    /// An error and its hint, in the form the user guide promises: `error: <what>` then
    /// `hint: <what to do>`. Always shown.
    pub fn error(&self, message: &str, hint: Option<&str>) {
        let mut text = format!("{} {message}", self.stderr.bad("error:"));
        if let Some(hint) = hint {
            text.push_str(&format!("\n{} {hint}", self.stderr.bold("hint:")));
        }
        self.stderr_line(&text);
    }

    /// Asks a yes/no question on the terminal (always shown); `yes` (`--yes`) answers yes, and
    /// without a terminal on stdin it is an error naming `--yes`.
    pub fn confirm(&self, question: &str, yes: bool) -> Result<bool> {
        self.stderr_line(question);
        if yes {
            return Ok(true);
        }
        if !std::io::stdin().is_terminal() {
            return Err(Error::usage(
                "this needs your confirmation and stdin is not a terminal",
                "re-run with --yes to accept",
            ));
        }
        write_stderr("[y/N] ");
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer).map_err(|error| Error::io("reading the answer", error))?;
        Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
    }

    /// A spinner for a long wait: it draws only on a decorated terminal, and not with `-q`.
    pub fn spinner(&self, message: impl Into<String>) -> Spinner {
        Spinner::new(message, self.stderr_is_terminal && self.stderr.decorates() && self.verbosity >= 0)
    }

    /// `text` and a newline on stderr, fit for the terminal.
    fn stderr_line(&self, text: &str) {
        write_stderr(&format!("{}\n", for_terminal(text, self.stderr.decorates())));
    }
}

/// Home, then clear the screen: what [`Printer::redraw`] writes first.
const CLEAR_SCREEN: &str = "\x1b[H\x1b[2J";

/// Writes to stdout as is; the I/O error (a closed pipe) is returned.
fn write_stdout(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|error| Error::io("writing to stdout", error))
}
