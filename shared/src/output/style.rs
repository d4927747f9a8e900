//! Colour and glyph decisions: only on a terminal, never with `NO_COLOR`, `--color` wins.

use owo_colors::OwoColorize;

use crate::cli::ColorChoice;

/// Whether to decorate text for one stream; the printer (printer.rs) decides it per stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    decorate: bool,
}

impl Style {
    /// The decision itself, separated from the environment so it can be tested.
    /// Precedence: `--color` > `NO_COLOR` > `FORCE_COLOR` > terminal detection.
    pub fn decide(
        choice: ColorChoice,
        is_terminal: bool,
        no_color: Option<std::ffi::OsString>,
        force_color: Option<std::ffi::OsString>,
    ) -> Style {
        let set = |value: Option<std::ffi::OsString>| value.is_some_and(|v| !v.is_empty());
        let decorate = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto if set(no_color) => false,
            ColorChoice::Auto if set(force_color) => true,
            ColorChoice::Auto => is_terminal,
        };
        Style { decorate }
    }

    /// Plain style: no colour, no glyphs.
    pub fn plain() -> Style {
        Style { decorate: false }
    }

    /// Whether colour and glyphs are on.
    pub fn decorates(self) -> bool {
        self.decorate
    }

    /// Text for something healthy.
    pub fn good(self, text: &str) -> String {
        if self.decorate { text.green().to_string() } else { text.to_string() }
    }

    /// Text for something failing.
    pub fn bad(self, text: &str) -> String {
        if self.decorate { text.red().bold().to_string() } else { text.to_string() }
    }

    /// Text for a warning.
    pub fn warn(self, text: &str) -> String {
        if self.decorate { text.yellow().bold().to_string() } else { text.to_string() }
    }

    /// Text that matters less.
    pub fn dim(self, text: &str) -> String {
        if self.decorate { text.dimmed().to_string() } else { text.to_string() }
    }

    /// Text to stand out.
    pub fn bold(self, text: &str) -> String {
        if self.decorate { text.bold().to_string() } else { text.to_string() }
    }

    /// A glyph followed by a space on a decorated stream, nothing otherwise.
    pub fn glyph(self, glyph: &str) -> String {
        if self.decorate { format!("{glyph} ") } else { String::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(choice: ColorChoice, tty: bool, no_color: Option<&str>, force: Option<&str>) -> bool {
        Style::decide(choice, tty, no_color.map(Into::into), force.map(Into::into)).decorates()
    }

    #[test]
    fn precedence_is_flag_then_no_color_then_force_then_tty() {
        assert!(decide(ColorChoice::Auto, true, None, None));
        assert!(!decide(ColorChoice::Auto, false, None, None));
        assert!(!decide(ColorChoice::Auto, true, Some("1"), None));
        assert!(decide(ColorChoice::Auto, true, Some(""), None), "an empty NO_COLOR does not count");
        assert!(decide(ColorChoice::Auto, false, None, Some("1")));
        assert!(!decide(ColorChoice::Auto, false, Some("1"), Some("1")));
        assert!(decide(ColorChoice::Always, false, Some("1"), None));
        assert!(!decide(ColorChoice::Never, true, None, Some("1")));
    }

    #[test]
    fn plain_style_adds_nothing() {
        let style = Style::plain();
        assert_eq!(style.bad("x"), "x");
        assert_eq!(style.glyph("✔"), "");
    }
}
