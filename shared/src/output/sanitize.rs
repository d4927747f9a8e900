//! Text from the cluster, a forge or a registry is shown, never obeyed: a condition message or a
//! pull request title could otherwise carry escape sequences that retitle the terminal (OSC),
//! clear it or move the cursor (CSI), or a `\r` that overwrites what was printed before it.
//!
//! [`for_terminal`] removes every escape sequence (CSI, OSC, DCS and the other strings, the
//! two-byte ones) and every C0 and C1 control character but newline and tab. On a decorated
//! stream it keeps the colour sequences our own [`Style`] writes, and only those: bold, dim, red,
//! green, yellow and their resets, which cannot hide or move text. JSON and YAML do not come
//! through here: serde writes control characters there as escapes, exactly.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::LazyLock;

use super::style::Style;
use crate::cli::ColorChoice;

const ESC: char = '\u{1b}';
const BEL: char = '\u{7}';
/// The 8-bit String Terminator.
const ST: char = '\u{9c}';

/// `text` fit for a terminal: escape sequences and control characters removed (newline and tab
/// kept), and, when `keep_styles`, the colour sequences [`Style`] writes kept.
pub fn for_terminal(text: &str, keep_styles: bool) -> Cow<'_, str> {
    if !text.chars().any(is_control) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if !is_control(c) {
            shown.push(c);
            continue;
        }
        match escape_kind(c, chars.peek().copied()) {
            Sequence::Csi(prefix) => {
                let sequence = read_csi(prefix, &mut chars);
                if keep_styles && OWN_STYLES.contains(&sequence) {
                    shown.push_str(&sequence);
                }
            }
            Sequence::String { after_esc } => {
                if after_esc {
                    chars.next();
                }
                skip_string(&mut chars);
            }
            Sequence::Short => skip_short(&mut chars),
            Sequence::None => {}
        }
    }
    Cow::Owned(shown)
}

/// A control character: C0 but newline and tab, DEL, C1.
fn is_control(c: char) -> bool {
    c != '\n' && c != '\t' && (c.is_ascii_control() || ('\u{80}'..='\u{9f}').contains(&c))
}

/// What a control character starts.
enum Sequence {
    /// A control sequence; the text read so far (`ESC [` or the 8-bit CSI).
    Csi(&'static str),
    /// OSC, DCS, SOS, PM or APC: a string up to its terminator; `after_esc` when the
    /// introducer is still to be consumed.
    String { after_esc: bool },
    /// `ESC` and what follows it up to a final byte.
    Short,
    /// The control character alone.
    None,
}

fn escape_kind(c: char, next: Option<char>) -> Sequence {
    match (c, next) {
        (ESC, Some('[')) => Sequence::Csi("\u{1b}["),
        (ESC, Some(']' | 'P' | 'X' | '^' | '_')) => Sequence::String { after_esc: true },
        (ESC, Some(' '..='~')) => Sequence::Short,
        ('\u{9b}', _) => Sequence::Csi("\u{9b}"),
        ('\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}', _) => Sequence::String { after_esc: false },
        _ => Sequence::None,
    }
}

/// Reads a control sequence after its introducer: parameter bytes, intermediate bytes, then one
/// final byte (ECMA-48). A sequence cut short ends where the unexpected character is (which is
/// left to be read as text or as a control of its own).
fn read_csi(prefix: &str, chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    let mut sequence = String::from(prefix);
    if prefix.starts_with(ESC) {
        chars.next();
    }
    while let Some(&c) = chars.peek() {
        match c {
            '\u{30}'..='\u{3f}' | '\u{20}'..='\u{2f}' => sequence.push(c),
            '\u{40}'..='\u{7e}' => {
                sequence.push(c);
                chars.next();
                break;
            }
            _ => break,
        }
        chars.next();
    }
    sequence
}

/// Skips a string (OSC, DCS…) up to BEL or ST (`ESC \` or the 8-bit one), or to the end of the
/// text when it has none.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            BEL | ST => return,
            ESC if chars.peek() == Some(&'\\') => {
                chars.next();
                return;
            }
            _ => {}
        }
    }
}

/// Skips what follows a lone `ESC`: intermediate bytes, then the final byte.
fn skip_short(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while chars.next_if(|c| ('\u{20}'..='\u{2f}').contains(c)).is_some() {}
    chars.next_if(|c| ('\u{30}'..='\u{7e}').contains(c));
}

/// Every control sequence [`Style`] writes, read from what it writes.
static OWN_STYLES: LazyLock<BTreeSet<String>> = LazyLock::new(|| {
    let style = Style::decide(ColorChoice::Always, true, None, None);
    let samples = [style.good("x"), style.bad("x"), style.warn("x"), style.dim("x"), style.bold("x")];
    let mut found = BTreeSet::new();
    for sample in samples {
        let mut chars = sample.chars().peekable();
        while let Some(c) = chars.next() {
            if let Sequence::Csi(prefix) = escape_kind(c, chars.peek().copied()) {
                found.insert(read_csi(prefix, &mut chars));
            }
        }
    }
    found
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_left_alone_and_borrowed() {
        let text = "Applied revision: main@sha1:1234567\n\tünïcode ✔\n";
        assert!(matches!(for_terminal(text, false), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn escape_sequences_and_controls_are_removed() {
        let hostile = "a\u{1b}]0;pwned\u{7}b\u{1b}[2Jc\rd\u{1b}]8;;http://evil\u{1b}\\e\u{8}f\u{0}g\u{7f}h";
        assert_eq!(for_terminal(hostile, false), "abcdefgh");
        // The 8-bit forms, two-byte escapes, a cursor move, and sequences cut short.
        assert_eq!(for_terminal("1\u{9b}31m2\u{9d}title\u{9c}3\u{1b}c4\u{1b}(B5\u{1b}[10;20H6", false), "123456");
        assert_eq!(for_terminal("x\u{1b}", false), "x");
        assert_eq!(for_terminal("x\u{1b}\ny", false), "x\ny", "a lone ESC takes no newline with it");
        assert_eq!(for_terminal("x\u{1b}[12", false), "x");
        assert_eq!(for_terminal("x\u{1b}[1\u{e9}", false), "x\u{e9}", "a sequence cut short by text");
        assert_eq!(for_terminal("x\u{1b}]0;never ends", false), "x");
        assert_eq!(for_terminal("x\u{1b}P1;2|data\u{1b}\\y", false), "xy");
    }

    #[test]
    fn our_own_colours_survive_on_a_decorated_stream_only() {
        let style = Style::decide(ColorChoice::Always, true, None, None);
        for ours in [style.good("ok"), style.bad("error:"), style.warn("w"), style.dim("d"), style.bold("b")] {
            assert!(ours.contains(ESC), "{ours:?}");
            assert_eq!(for_terminal(&ours, true), ours);
            assert!(!for_terminal(&ours, false).contains(ESC));
        }
        // Other SGR sequences (conceal, reverse, a 256-colour background) are not ours.
        for theirs in ["\u{1b}[8m", "\u{1b}[7m", "\u{1b}[48;5;16m", "\u{1b}[2J"] {
            assert_eq!(for_terminal(&format!("a{theirs}b"), true), "ab", "{theirs:?}");
        }
    }
}
