//! A spinner for long waits: on a terminal one line redrawn in place; elsewhere nothing (the
//! step line printed before the wait is the plain-text progress).

use std::io::Write;
use std::time::Instant;

use super::sanitize::for_terminal;

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// A spinner line on stderr, made by [`super::printer::Printer::spinner`].
pub struct Spinner {
    message: String,
    started: Instant,
    frame: usize,
    live: bool,
}

impl Spinner {
    /// A spinner for `message`; it draws only when `live`.
    pub(super) fn new(message: impl Into<String>, live: bool) -> Spinner {
        Spinner { message: message.into(), started: Instant::now(), frame: 0, live }
    }

    /// Redraws the line with the elapsed time and what is being waited for now.
    pub fn tick(&mut self, detail: &str) {
        if !self.live {
            return;
        }
        self.frame = (self.frame + 1) % FRAMES.len();
        let elapsed = self.started.elapsed().as_secs();
        let (message, detail) = (for_terminal(&self.message, false), for_terminal(detail, false));
        write_stderr(&format!("\r\x1b[2K{} {message} ({elapsed}s) {detail}", FRAMES[self.frame]));
    }

    /// Clears the line.
    pub fn finish(&mut self) {
        if self.live {
            write_stderr("\r\x1b[2K");
        }
    }
}

/// Writes to stderr, ignoring failures: there is nowhere left to report them.
pub(super) fn write_stderr(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}
