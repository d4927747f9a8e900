//! Every published schema (docs/schemas/) is the one a real command's output is checked against
//! somewhere in these tests, through `gitops_e2e::schema`; and every changing subcommand offers
//! `-o json` (its `Change` document).

use std::collections::BTreeSet;
use std::path::Path;

/// The kinds the end-to-end tests check (`schema::document("Kind", …)` or
/// `schema::validate("Kind", …)`), read from their sources, those of the areas split into
/// directories (`app/`, `gitea/`, …) too.
fn checked_kinds() -> BTreeSet<String> {
    let mut pending = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it")];
    let mut kinds = BTreeSet::new();
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("tests/it is readable") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if path.extension().is_none_or(|extension| extension != "rs") || path.ends_with("schemas.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a test source");
            for call in ["schema::document(\"", "schema::validate(\""] {
                for (at, _) in text.match_indices(call) {
                    let rest = &text[at + call.len()..];
                    kinds.insert(rest[..rest.find('"').expect("a closing quote")].to_string());
                }
            }
        }
    }
    kinds
}

#[test]
fn every_published_schema_is_checked_against_a_real_command() {
    let published: BTreeSet<String> = std::fs::read_dir(gitops_e2e::schema::schemas_dir())
        .unwrap()
        .filter_map(|entry| entry.unwrap().file_name().to_string_lossy().strip_suffix(".json").map(String::from))
        .collect();
    assert!(published.len() >= 19, "docs/schemas/ holds {published:?}");
    let checked = checked_kinds();
    let unchecked: Vec<&String> = published.difference(&checked).collect();
    assert!(unchecked.is_empty(), "no end-to-end test checks a command's output against {unchecked:?}");
    let unknown: Vec<&String> = checked.difference(&published).collect();
    assert!(unknown.is_empty(), "tests check kinds with no schema: {unknown:?}");
}
