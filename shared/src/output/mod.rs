//! Everything that reaches the terminal: data on stdout, progress and errors on stderr.
//!
//! - [`style`] decides colour and glyphs (TTY, `--color`, `NO_COLOR`).
//! - [`table`] renders kubectl-like tables; [`print_structured`] renders json/yaml.
//! - [`report`] prints `error: …` / `hint: …` and warnings.
//!
//! Nothing in the workspace uses `println!`: a closed pipe (`| head`) must end the process
//! quietly with exit 0, which needs the write errors that [`write_stdout`] returns.

pub mod progress;
pub mod report;
pub mod style;
pub mod table;

use std::io::Write;

use serde::Serialize;

use crate::cli::OutputFormat;
use crate::error::{Error, Result};

/// Writes text to stdout as is, returning the I/O error (for example a closed pipe) instead of panicking.
pub fn write_stdout(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|error| Error::io("writing to stdout", error))
}

/// Serialises data as pretty JSON (with a final newline) or YAML.
pub fn render_structured<T: Serialize>(value: &T, format: OutputFormat) -> Result<String> {
    match format {
        OutputFormat::Yaml => crate::yaml::to_string(value),
        _ => {
            let mut text = serde_json::to_string_pretty(value).map_err(|error| Error::Render(error.to_string()))?;
            text.push('\n');
            Ok(text)
        }
    }
}

/// Prints data as JSON or YAML on stdout.
///
/// JSON is streamed rather than built as one string first: `status -A` on thousands of apps
/// would otherwise hold its output twice.
pub fn print_structured<T: Serialize>(value: &T, format: OutputFormat) -> Result<()> {
    if format == OutputFormat::Yaml {
        return write_stdout(&render_structured(value, format)?);
    }
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut stdout, value).map_err(|error| match error.io_error_kind() {
        Some(kind) => Error::io("writing to stdout", std::io::Error::from(kind)),
        None => Error::Render(error.to_string()),
    })?;
    stdout.write_all(b"\n").and_then(|()| stdout.flush()).map_err(|error| Error::io("writing to stdout", error))
}

/// Rejects an `-o` value a command does not support, naming the ones it does.
pub fn ensure_supported(format: OutputFormat, supported: &[OutputFormat]) -> Result<()> {
    if supported.contains(&format) {
        return Ok(());
    }
    let names: Vec<String> = supported.iter().map(|f| format_name(*f).to_string()).collect();
    Err(Error::usage(
        format!("this command does not support -o {}", format_name(format)),
        format!("use one of: {}", names.join(", ")),
    ))
}

fn format_name(format: OutputFormat) -> &'static str {
    match format {
        OutputFormat::Table => "table",
        OutputFormat::Wide => "wide",
        OutputFormat::Json => "json",
        OutputFormat::Yaml => "yaml",
        OutputFormat::Name => "name",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_formats_name_the_supported_ones() {
        let error = ensure_supported(OutputFormat::Wide, &[OutputFormat::Table, OutputFormat::Json]).unwrap_err();
        assert_eq!(error.to_string(), "this command does not support -o wide");
        assert_eq!(error.hint().as_deref(), Some("use one of: table, json"));
    }

    #[test]
    fn json_ends_with_a_newline() {
        let text = render_structured(&serde_json::json!({"a": 1}), OutputFormat::Json).unwrap();
        assert_eq!(text, "{\n  \"a\": 1\n}\n");
    }
}
