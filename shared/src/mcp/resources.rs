//! The resources an assistant can read: the docs that say how the config repo is laid out, what
//! the exit codes mean, what `-o json` prints and how this server works, compiled in (the same
//! text as docs/), and the JSON Schema of every `-o json` document, generated from the types that
//! print them ([`crate::schemas`]).

use rmcp::model::{Resource, ResourceContents};

/// The docs served, by name: their text is the repository's docs/ at build time.
const DOCS: [(&str, &str, &str); 4] = [
    (
        "layout",
        "The config repo's layout: what install and app add write where",
        include_str!("../../../docs/layout.md"),
    ),
    ("exit-codes", "What each exit code of every command means", include_str!("../../../docs/exit-codes.md")),
    (
        "output",
        "The output contracts: -o json|yaml documents, stdout and stderr",
        include_str!("../../../docs/output.md"),
    ),
    ("mcp", "This server: its tools, resources and how writes go through git", include_str!("../../../docs/mcp.md")),
];

/// The address of doc `name`.
fn doc_uri(name: &str) -> String {
    format!("gitops://docs/{name}")
}

/// The address of schema file `file` (`<Kind>.json`).
fn schema_uri(file: &str) -> String {
    format!("gitops://schemas/{file}")
}

/// Every resource: the docs, then the schemas.
pub(super) fn listed() -> Vec<Resource> {
    let docs = DOCS.iter().map(|(name, description, text)| {
        Resource::new(doc_uri(name), format!("{name}.md"))
            .with_description(*description)
            .with_mime_type("text/markdown")
            .with_size(text.len() as u64)
    });
    let schemas = crate::schemas::all().into_iter().map(|published| {
        Resource::new(schema_uri(&published.file), published.file.clone())
            .with_description(format!("The JSON Schema of what `{}` prints with -o json", published.printed_by))
            .with_mime_type("application/schema+json")
    });
    docs.chain(schemas).collect()
}

/// The resource at `uri`, when there is one.
pub(super) fn read(uri: &str) -> Option<ResourceContents> {
    if let Some((_, _, text)) = DOCS.iter().find(|(name, _, _)| doc_uri(name) == uri) {
        return Some(ResourceContents::text(*text, uri).with_mime_type("text/markdown"));
    }
    let published = crate::schemas::all().into_iter().find(|published| schema_uri(&published.file) == uri)?;
    let text = serde_json::to_string_pretty(&published.schema).ok()?;
    Some(ResourceContents::text(text, uri).with_mime_type("application/schema+json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_resource_reads_and_nothing_else_does() {
        let listed = listed();
        assert!(listed.len() > DOCS.len(), "the docs and the schemas");
        for resource in &listed {
            assert!(read(&resource.uri).is_some(), "{}", resource.uri);
        }
        let exit_codes = read("gitops://docs/exit-codes").unwrap();
        let ResourceContents::TextResourceContents { text, .. } = exit_codes else { panic!("text") };
        assert!(text.starts_with("# Exit codes"), "{text}");
        let status = read("gitops://schemas/Status.json").unwrap();
        let ResourceContents::TextResourceContents { text, .. } = status else { panic!("text") };
        assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok());
        for unknown in ["gitops://docs/../../etc/passwd", "file:///etc/passwd", "gitops://schemas/None.json", ""] {
            assert!(read(unknown).is_none(), "{unknown}");
        }
    }
}
