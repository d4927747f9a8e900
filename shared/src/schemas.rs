//! The JSON Schema of every document a command prints with `-o json|yaml`, derived from the
//! types that print them ([`crate::output::document`]). docs/schemas/ holds them, one file per
//! kind; a test keeps the files equal to these, and the end-to-end tests validate the real
//! output of the commands against the files.

use serde_json::Value;

use crate::output::document::{list_schema_of, schema_of};

/// One published schema: its file under docs/schemas/, the commands that print it, the schema.
pub struct Published {
    /// `<Kind>.json`.
    pub file: String,
    /// The commands whose `-o json` is this kind.
    pub printed_by: &'static str,
    pub schema: Value,
}

fn one<T: crate::output::Kind>(printed_by: &'static str) -> Published {
    Published { file: format!("{}.json", T::KIND), printed_by, schema: schema_of::<T>() }
}

fn list<T: crate::output::Kind>(printed_by: &'static str) -> Published {
    Published { file: format!("{}List.json", T::KIND), printed_by, schema: list_schema_of::<T>() }
}

/// Every schema, in the order docs/schemas/README.md lists them.
pub fn all() -> Vec<Published> {
    vec![
        one::<crate::readers::Report>("status"),
        one::<crate::readers::AppStatus>("status --watch (one per changed row)"),
        one::<crate::readers::AppReport>("app status, status APP"),
        one::<crate::readers::AppHistory>("app history"),
        one::<crate::detect::Detection>("detect"),
        one::<crate::preview::Diff>("diff"),
        one::<crate::drift::Drift>("drift"),
        one::<crate::drift::DriftChange>("drift --watch (one per change)"),
        one::<crate::app::rollback::Rollback>("app rollback"),
        one::<crate::fleet::FleetStatus>("fleet status"),
        list::<crate::contexts::ContextAnswer>("status, app status, app list with --context a,b"),
        one::<crate::version::VersionReport>("version"),
        list::<crate::app::AppRow>("app list, platform list"),
        list::<crate::tenant::TenantRow>("tenant list"),
        list::<crate::component::ComponentRow>("component list"),
        one::<crate::monitoring::MonitoringStatus>("monitoring status"),
        list::<crate::pr::Row>("pr list"),
        one::<crate::pr::Validation>("pr show"),
        one::<crate::pr::Acted>("pr approve, pr merge"),
        one::<crate::artifact::ArtifactInfo>("artifact push"),
        list::<crate::artifact::ArtifactInfo>("artifact list"),
        list::<crate::artifact::Difference>("artifact diff"),
        one::<crate::upgrade::Check>("upgrade --check"),
        one::<crate::metrics::DoraReport>("metrics dora"),
        one::<crate::change::new_repo::Created>("repo create"),
        one::<crate::change::result::ChangeResult>(
            "install, app add|remove|suspend|resume, platform add|remove, tenant add|remove, monitoring \
             install, component upgrade, upgrade",
        ),
    ]
}

/// docs/schemas/README.md: the kinds, their files and the commands that print them.
pub fn index() -> String {
    let mut text = String::from(
        "# Schemas of `-o json|yaml`\n\n\
         Generated from the Rust types by `KUBECTL_GITOPS_UPDATE_DOCS=1 cargo test -p gitops-shared schemas`;\n\
         a test fails when a file here differs from the code. Every document carries\n\
         `apiVersion: gitops.kubectl.io/v1alpha1` and its `kind`; lists are `<Kind>List` with `items`.\n\
         The schemas are JSON Schema draft 2020-12. See docs/output.md.\n\n\
         | Schema | Printed by |\n|---|---|\n",
    );
    for published in all() {
        text.push_str(&format!("| [{0}]({0}) | {1} |\n", published.file, published.printed_by));
    }
    text
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn docs() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/schemas")
    }

    /// What docs/schemas/ must hold: each schema, and the index.
    fn expected() -> Vec<(String, String)> {
        let mut files: Vec<(String, String)> = all()
            .into_iter()
            .map(|published| {
                let mut text = serde_json::to_string_pretty(&published.schema).unwrap();
                text.push('\n');
                (published.file, text)
            })
            .collect();
        files.push(("README.md".into(), index()));
        files
    }

    #[test]
    fn docs_schemas_hold_the_schemas_of_the_code() {
        let dir = docs();
        let expected = expected();
        if std::env::var_os("KUBECTL_GITOPS_UPDATE_DOCS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            for entry in std::fs::read_dir(&dir).unwrap() {
                std::fs::remove_file(entry.unwrap().path()).unwrap();
            }
            for (file, text) in &expected {
                std::fs::write(dir.join(file), text).unwrap();
            }
        }
        let mut stale = Vec::new();
        for (file, text) in &expected {
            if std::fs::read_to_string(dir.join(file)).ok().as_deref() != Some(text.as_str()) {
                stale.push(file.clone());
            }
        }
        let mut present: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|entry| entry.unwrap().file_name().to_string_lossy().into()).collect();
        present.retain(|file| !expected.iter().any(|(name, _)| name == file));
        assert!(
            stale.is_empty() && present.is_empty(),
            "docs/schemas/ is stale ({stale:?} differ, {present:?} are no schema of the code): run \
             KUBECTL_GITOPS_UPDATE_DOCS=1 cargo test -p gitops-shared schemas"
        );
    }

    #[test]
    fn every_kind_is_published_once() {
        let mut files: Vec<String> = all().into_iter().map(|published| published.file).collect();
        let count = files.len();
        files.sort();
        files.dedup();
        assert_eq!(files.len(), count, "two schemas share a file");
    }
}
