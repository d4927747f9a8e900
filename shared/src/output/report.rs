//! `error: …` / `hint: …` and `warning: …` lines on stderr.

use std::io::Write;

use super::style::{Stream, Style};

/// Prints an error and its hint on stderr, in the form the user guide promises:
/// `error: <what>` then `hint: <what to do>`.
pub fn error(message: &str, hint: Option<&str>) {
    let style = Style::for_stream(Stream::Stderr);
    let mut text = format!("{} {message}\n", style.bad("error:"));
    if let Some(hint) = hint {
        text.push_str(&format!("{} {hint}\n", style.bold("hint:")));
    }
    write_stderr(&text);
}

/// Prints a warning on stderr.
pub fn warning(message: &str) {
    let style = Style::for_stream(Stream::Stderr);
    write_stderr(&format!("{} {message}\n", style.warn("warning:")));
}

/// Writes to stderr, ignoring failures: there is nowhere left to report them.
pub fn write_stderr(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}
