//! `error: …` / `hint: …` and `warning: …` lines on stderr.

use std::io::Write;
use std::sync::atomic::{AtomicI8, Ordering};

use super::style::{Stream, Style};

/// `-v` count minus `-q` count, set once after parsing.
static VERBOSITY: AtomicI8 = AtomicI8::new(0);

/// Records `-v`/`-q` for the rest of the process.
pub fn set_verbosity(verbose: u8, quiet: u8) {
    let level = i16::from(verbose) - i16::from(quiet);
    VERBOSITY.store(level.clamp(-8, 8) as i8, Ordering::Relaxed);
}

/// Prints a detail line on stderr, only with `-v`.
pub fn detail(message: &str) {
    if VERBOSITY.load(Ordering::Relaxed) > 0 {
        let style = Style::for_stream(Stream::Stderr);
        write_stderr(&format!("{}\n", style.dim(message)));
    }
}

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

/// Prints a warning on stderr, unless `-q` was given.
pub fn warning(message: &str) {
    if VERBOSITY.load(Ordering::Relaxed) < 0 {
        return;
    }
    let style = Style::for_stream(Stream::Stderr);
    write_stderr(&format!("{} {message}\n", style.warn("warning:")));
}

/// Writes to stderr, ignoring failures: there is nowhere left to report them.
pub fn write_stderr(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}
