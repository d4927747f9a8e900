//! YAML in and out, the way kubectl and `flux … --export` read and write it.
//!
//! Output goes through `serde_json::Value` first, so map keys come out sorted (as Go's
//! `sigs.k8s.io/yaml` sorts them), and list items are not indented under their key.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

fn options() -> serde_saphyr::SerializerOptions {
    serde_saphyr::ser_options! {
        indent_step: 2,
        compact_list_indent: true,
        prefer_block_scalars: true,
        // Go's YAML never folds a long line; only multi-line strings become `|` blocks.
        folded_wrap_chars: usize::MAX,
    }
}

/// One YAML document (no leading `---`), keys sorted.
pub fn to_string<T: Serialize>(value: &T) -> Result<String> {
    let tree = serde_json::to_value(value).map_err(|error| Error::Render(error.to_string()))?;
    serde_saphyr::to_string_with_options(&tree, options()).map_err(|error| Error::Render(error.to_string()))
}

/// Documents each preceded by a `---` line, as `flux … --export` prints them.
pub fn to_documents<T: Serialize>(values: &[T]) -> Result<String> {
    let mut text = String::new();
    for value in values {
        text.push_str("---\n");
        text.push_str(&to_string(value)?);
    }
    Ok(text)
}

/// Parses one YAML document into a typed value; errors name the line.
pub fn from_str<T: DeserializeOwned>(text: &str) -> std::result::Result<T, String> {
    serde_saphyr::from_str(text).map_err(|error| error.to_string())
}

/// Parses a multi-document YAML stream, skipping empty documents.
pub fn documents_from_str(text: &str) -> std::result::Result<Vec<serde_json::Value>, String> {
    let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple(text).map_err(|error| error.to_string())?;
    Ok(documents.into_iter().filter(|document| !document.is_null()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_and_lists_are_not_indented() {
        let object = json!({"spec": {"interval": "1m0s", "ref": {"branch": "main"}}, "metadata": {"name": "x"},
                            "kind": "GitRepository", "apiVersion": "v1", "items": ["a", "b"]});
        insta::assert_snapshot!(to_documents(&[object]).unwrap(), @r"
        ---
        apiVersion: v1
        items:
        - a
        - b
        kind: GitRepository
        metadata:
          name: x
        spec:
          interval: 1m0s
          ref:
            branch: main
        ");
    }

    #[test]
    fn long_lines_stay_on_one_line_and_multi_line_strings_are_literal_blocks() {
        let long = "x,".repeat(80);
        let text = to_string(&json!({"long": long, "multi": "a\nb\n"})).unwrap();
        assert_eq!(text, format!("long: {long}\nmulti: |\n  a\n  b\n"));
    }

    #[test]
    fn yaml_1_1_booleans_stay_strings() {
        let text = to_string(&json!({"value": "on"})).unwrap();
        assert_eq!(text.trim(), r#"value: "on""#);
    }

    #[test]
    fn multi_document_streams_parse() {
        let documents = documents_from_str("---\na: 1\n---\n---\nb: 2\n").unwrap();
        assert_eq!(documents, vec![json!({"a": 1}), json!({"b": 2})]);
    }
}
