//! The config repo's layout that every change shares (docs/layout.md): the clusters' directories,
//! found through the install record in each, and their lists (`<cluster>/apps`, `<cluster>/platform`,
//! `<cluster>/tenants`), each a kustomization with one directory per entry.

use std::path::Path;

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::git::Checkout;
use crate::plan::FileChange;
use crate::record::{self, InstallRecord};
use crate::yaml;

/// The file name of a kustomize configuration.
pub const KUSTOMIZATION_FILE: &str = "kustomization.yaml";
/// The root directory of shared app definitions, and of each cluster's app list.
pub const APPS_DIR: &str = "apps";

/// A cluster's directory in the repo, found through the install record in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterDir {
    /// The cluster's name.
    pub name: String,
    /// Its directory, e.g. `clusters/dev`.
    pub path: String,
}

impl ClusterDir {
    /// `<cluster>/apps/<app>`.
    pub fn app_dir(&self, app: &str) -> String {
        self.entry_dir(APPS_DIR, app)
    }

    /// `<cluster>/<root>/<name>`: the overlay of one entry of a list (`apps`, `tenants`).
    pub fn entry_dir(&self, root: &str, name: &str) -> String {
        format!("{}/{root}/{name}", self.path)
    }

    /// `<cluster>/<root>/kustomization.yaml`: the cluster's list of apps (`apps`) or tenants.
    pub fn list_file(&self, root: &str) -> String {
        format!("{}/{root}/{KUSTOMIZATION_FILE}", self.path)
    }
}

/// The clusters' directories in words: `clusters/dev, clusters/uat`.
pub fn paths(clusters: &[ClusterDir]) -> String {
    clusters.iter().map(|cluster| cluster.path.as_str()).collect::<Vec<_>>().join(", ")
}

/// The clusters installed into the repo: every `gitops.yaml` install record, by cluster name.
pub fn clusters_in(checkout: &Checkout) -> Result<Vec<ClusterDir>> {
    let mut found = Vec::new();
    collect_records(checkout.root(), &mut found)?;
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

fn collect_records(dir: &Path, found: &mut Vec<ClusterDir>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|error| Error::io(format!("listing {}", dir.display()), error))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == ".git" || entry.file_type().is_ok_and(|kind| kind.is_symlink()) {
            continue;
        }
        if path.is_dir() {
            collect_records(&path, found)?;
        } else if name == record::FILE_NAME
            && let Some(record) = std::fs::read_to_string(&path).ok().as_deref().and_then(parse_record)
        {
            found.push(ClusterDir { name: record.cluster_name, path: record.path });
        }
    }
    Ok(())
}

/// Reads an install record file (`<cluster>/gitops.yaml`); `None` when it is not one.
pub fn parse_record(text: &str) -> Option<InstallRecord> {
    let document = yaml::documents_from_str(text).ok()?.into_iter().next()?;
    let configmap: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(document).ok()?;
    InstallRecord::from_configmap(&configmap)
}

/// The cluster's app list (`<cluster>/apps/kustomization.yaml`) with `app` listed or not.
/// Other content of an existing file is kept; entries stay sorted.
pub fn app_list(existing: Option<&str>, app: &str, listed: bool) -> Result<String> {
    let mut config = match existing {
        Some(text) => yaml::from_str::<Value>(text).map_err(|error| {
            Error::usage(format!("the cluster's app list is not valid YAML: {error}"), "fix the file in the repo")
        })?,
        None => kustomize_config(Vec::new()),
    };
    let mut resources: Vec<String> = config
        .get("resources")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).map(String::from).collect())
        .unwrap_or_default();
    resources.retain(|entry| entry.trim_end_matches('/').trim_start_matches("./") != app);
    if listed {
        resources.push(app.to_string());
    }
    resources.sort();
    config["resources"] = json!(resources);
    yaml::to_string(&config)
}

/// The apps a cluster's app list names.
pub fn listed_apps(app_list: &str) -> Vec<String> {
    yaml::from_str::<Value>(app_list)
        .ok()
        .and_then(|config| config.get("resources").and_then(Value::as_array).cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(Value::as_str)
        .map(|entry| entry.trim_end_matches('/').trim_start_matches("./").to_string())
        .collect()
}

/// A cluster overlay with `spec.suspend: true` patched into the app's objects (`suspend`), or
/// with those patches gone. Other patches of the overlay are kept.
pub fn with_suspend_patches(overlay: &str, objects: &[SuspendPatch], suspend: bool) -> Result<String> {
    let mut config: Value = yaml::from_str(overlay).map_err(|error| {
        Error::usage(format!("the app's cluster kustomization is not valid YAML: {error}"), "fix the file in the repo")
    })?;
    let is_suspend_patch =
        |entry: &Value| entry.get("patch").and_then(Value::as_str).is_some_and(|patch| patch.contains(SUSPEND_PATH));
    let mut patches: Vec<Value> = config
        .get("patches")
        .and_then(Value::as_array)
        .map(|entries| entries.iter().filter(|entry| !is_suspend_patch(entry)).cloned().collect())
        .unwrap_or_default();
    if suspend {
        for object in objects {
            let operations = json!([{"op": "add", "path": SUSPEND_PATH, "value": true}]);
            patches.push(json!({
                "patch": yaml::to_string(&operations)?,
                "target": {"group": object.kind.group, "kind": object.kind.kind, "name": object.name},
            }));
        }
    }
    match config.as_object_mut() {
        Some(map) if patches.is_empty() => {
            map.remove("patches");
        }
        Some(map) => {
            map.insert("patches".into(), Value::Array(patches));
        }
        None => {
            return Err(Error::usage("the app's cluster kustomization is not a mapping", "fix the file in the repo"));
        }
    }
    yaml::to_string(&config)
}

/// The JSON pointer a suspend patch writes.
const SUSPEND_PATH: &str = "/spec/suspend";

/// A kustomize configuration listing `resources`.
pub fn kustomize_config(resources: Vec<String>) -> Value {
    json!({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": resources})
}

/// The kustomize configuration of a cluster overlay in `dir`: the shared definition in
/// `definition_dir`, named relative to `dir`.
pub fn overlay_config(dir: &str, definition_dir: &str) -> Value {
    let up = "../".repeat(dir.split('/').count());
    kustomize_config(vec![format!("{up}{definition_dir}")])
}

/// A merge patch of `spec.suspend` on one object in the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuspendPatch {
    /// The Flux kind.
    pub kind: &'static crate::flux::api::FluxKind,
    /// The API version the cluster serves.
    pub version: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The value written.
    pub suspend: bool,
}

/// The file changes that take `name` off the clusters' lists under `root` (`apps`, `tenants`):
/// each cluster's overlay and list entry, and the shared definition `<root>/<name>` once no
/// cluster in the repo lists it.
pub(crate) fn remove_listed(
    root: &str,
    name: &str,
    clusters: &[ClusterDir],
    checkout: &Checkout,
) -> Result<Vec<FileChange>> {
    let mut wanted = std::collections::BTreeMap::new();
    let mut dirs = Vec::new();
    for cluster in clusters {
        let list_path = cluster.list_file(root);
        if let Some(list) = crate::plan::read(checkout, &list_path)? {
            wanted.insert(list_path, app_list(Some(&list), name, false)?);
        }
        dirs.push(cluster.entry_dir(root, name));
    }
    let still_listed = clusters_in(checkout)?.iter().filter(|cluster| !clusters.contains(cluster)).any(|cluster| {
        crate::plan::read(checkout, &cluster.list_file(root))
            .ok()
            .flatten()
            .is_some_and(|list| listed_apps(&list).iter().any(|listed| listed == name))
    });
    if !still_listed {
        dirs.push(format!("{root}/{name}"));
    }
    crate::plan::diff(checkout, &wanted, &dirs)
}
