//! Everything that reaches the terminal: data on stdout, progress and errors on stderr.
//!
//! - [`printer::Printer`] is the one way to write: made once in `runtime::main` and passed down.
//! - [`style`] is colour and glyphs for one stream (TTY, `--color`, `NO_COLOR`).
//! - [`table`] renders kubectl-like tables; [`render_structured`] renders json/yaml.
//! - [`document`] makes every json/yaml document versioned (`apiVersion`, `kind`) and gives its
//!   JSON Schema.
//! - [`sanitize`] keeps text from the cluster or a forge from driving the terminal.
//!
//! Nothing in the workspace uses `println!`: a closed pipe (`| head`) must end the process
//! quietly with exit 0, which needs the write errors that [`printer::Printer::data`] returns.

pub mod document;
pub mod printer;
pub mod progress;
pub mod sanitize;
pub mod style;
pub mod table;

pub use self::document::{Kind, Versioned, document, list};
pub use self::printer::Printer;
use crate::cli::OutputFormat;
use crate::error::{Error, Result};

/// Serialises a document as pretty JSON (with a final newline) or YAML.
pub fn render_structured<T: Versioned>(value: &T, format: OutputFormat) -> Result<String> {
    match format {
        OutputFormat::Yaml => crate::yaml::to_string(value),
        _ => {
            let mut text = serde_json::to_string_pretty(value).map_err(|error| Error::Render(error.to_string()))?;
            text.push('\n');
            Ok(text)
        }
    }
}

/// What a list (`app list`, `tenant list`) prints: a table, its names, or the rows as data.
pub const LIST_FORMATS: [OutputFormat; 5] =
    [OutputFormat::Table, OutputFormat::Wide, OutputFormat::Json, OutputFormat::Yaml, OutputFormat::Name];

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
        OutputFormat::Prometheus => "prometheus",
    }
}

/// A label value as Prometheus's text exposition format wants it (`metrics`, `drift`'s textfile).
pub fn exposition_label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
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
    fn json_and_yaml_keep_control_characters_as_escapes() {
        let message = "a\u{1b}]0;pwned\u{7}b\u{1b}[2Jc\rd";
        let value = Message { message: message.to_string() };
        for format in [OutputFormat::Json, OutputFormat::Yaml] {
            let text = render_structured(&document(&value), format).unwrap();
            assert!(!text.contains(['\u{1b}', '\u{7}', '\r']), "{format:?} wrote a raw control character: {text:?}");
            let back: serde_json::Value = match format {
                OutputFormat::Yaml => serde_saphyr::from_str(&text).unwrap(),
                _ => serde_json::from_str(&text).unwrap(),
            };
            assert_eq!(back["message"], message, "{format:?}");
        }
    }

    #[test]
    fn json_ends_with_a_newline() {
        let text = render_structured(&list::<Message>(&[]), OutputFormat::Json).unwrap();
        assert_eq!(
            text,
            format!(
                "{{\n  \"apiVersion\": \"{}\",\n  \"kind\": \"MessageList\",\n  \"items\": []\n}}\n",
                document::API_VERSION
            )
        );
    }

    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct Message {
        message: String,
    }

    impl Kind for Message {
        const KIND: &'static str = "Message";
    }
}
