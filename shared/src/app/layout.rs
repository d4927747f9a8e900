//! Where apps live in the config repo (docs/layout.md):
//!
//! ```text
//! apps/<app>/kustomization.yaml            source.yaml + release.yaml (+ shared values)
//! apps/<app>/source.yaml                   GitRepository | HelmRepository | OCIRepository
//! apps/<app>/release.yaml                  Kustomization | HelmRelease
//! apps/<app>/values/<file>                 --values without --cluster: every cluster gets them
//! <cluster>/apps/kustomization.yaml        the cluster's app list: one directory per app
//! <cluster>/apps/<app>/kustomization.yaml  the shared definition, plus this cluster's values
//! <cluster>/apps/<app>/values/<file>       --values with --cluster
//! ```
//!
//! The definition is written once and shared, so two clusters never hold two objects of the
//! same id; per-cluster values are ConfigMaps appended to the HelmRelease's `valuesFrom` by
//! the cluster's overlay.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use super::spec::{APPS_DIR, AppKind, AppSpec, ValuesFile, Versions};
use crate::error::{Error, Result};
use crate::flux::objects::ValuesReference;
use crate::git::Checkout;
use crate::record::{self, InstallRecord, MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::yaml;

/// The file name of a kustomize configuration.
pub const KUSTOMIZATION_FILE: &str = "kustomization.yaml";
/// helm-controller reconciles a release when a ConfigMap with this label changes.
const WATCH_LABEL: (&str, &str) = ("reconcile.fluxcd.io/watch", "Enabled");

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

/// The files of the shared definition `apps/<app>/`, path → contents.
pub fn app_files(spec: &AppSpec, namespace: &str, versions: &Versions) -> Result<BTreeMap<String, String>> {
    let dir = spec.definition_dir();
    let shared_values = generated_values(&format!("{}-values", spec.name), &spec.values);
    let source = spec.source_object(namespace, versions)?;
    let mut release =
        spec.release_object(namespace, versions, shared_values.as_ref().map(|v| v.1.clone()).unwrap_or_default())?;
    // A HelmRelease in the repo always carries the list, maybe empty, so that every cluster
    // overlay can append its values to it (a JSON patch cannot append to a missing list).
    if spec.kind() == AppKind::Helm && release["spec"].get("valuesFrom").is_none() {
        release["spec"]["valuesFrom"] = json!([]);
    }
    let mut files = BTreeMap::new();
    let mut resources = vec!["source.yaml".to_string(), "release.yaml".to_string()];
    files.insert(format!("{dir}/source.yaml"), yaml::to_documents(&[source])?);
    files.insert(format!("{dir}/release.yaml"), yaml::to_documents(&[release])?);
    if spec.create_namespace && spec.kind() != AppKind::Helm {
        // A Kustomization's targetNamespace must exist; a HelmRelease creates its own.
        let namespace_object = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"labels": spec.labels(), "name": spec.target_namespace},
        });
        files.insert(format!("{dir}/namespace.yaml"), yaml::to_documents(&[namespace_object])?);
        resources.insert(0, "namespace.yaml".to_string());
    }
    let mut kustomization = kustomize_config(resources);
    if let Some((generator, _)) = shared_values {
        add_generator(&mut kustomization, generator, namespace, &spec.name);
        for file in &spec.values {
            files.insert(format!("{dir}/values/{}", file.name), file.contents.clone());
        }
    }
    files.insert(format!("{dir}/{KUSTOMIZATION_FILE}"), yaml::to_string(&kustomization)?);
    Ok(files)
}

/// The files of a cluster's overlay `<cluster>/apps/<app>/`: the shared definition, and the
/// cluster's own values appended to the release's `valuesFrom`.
pub fn cluster_files(
    spec: &AppSpec,
    cluster: &ClusterDir,
    namespace: &str,
    values: &[ValuesFile],
) -> Result<BTreeMap<String, String>> {
    let dir = cluster.entry_dir(spec.tier.root(), &spec.name);
    let mut kustomization = overlay_config(&dir, &spec.definition_dir());
    let mut files = BTreeMap::new();
    if let Some((generator, references)) = generated_values(&format!("{}-{}-values", spec.name, cluster.name), values) {
        add_generator(&mut kustomization, generator, namespace, &spec.name);
        let operations: Vec<Value> = references
            .iter()
            .map(|reference| {
                json!({"op": "add", "path": "/spec/valuesFrom/-", "value": {
                    "kind": "ConfigMap", "name": reference.config_map, "valuesKey": reference.key}})
            })
            .collect();
        let release_kind = spec.release_kind();
        kustomization["patches"] = json!([{
            "patch": yaml::to_string(&operations)?,
            "target": {"group": release_kind.group, "kind": release_kind.kind, "name": spec.name},
        }]);
        for file in values {
            files.insert(format!("{dir}/values/{}", file.name), file.contents.clone());
        }
    }
    files.insert(format!("{dir}/{KUSTOMIZATION_FILE}"), yaml::to_string(&kustomization)?);
    Ok(files)
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

/// A ConfigMap generator over values files and the `valuesFrom` entries that read them.
fn generated_values(name: &str, values: &[ValuesFile]) -> Option<(Value, Vec<ValuesReference>)> {
    if values.is_empty() {
        return None;
    }
    let files: Vec<String> = values.iter().map(|file| format!("values/{}", file.name)).collect();
    let references =
        values.iter().map(|file| ValuesReference { config_map: name.to_string(), key: file.name.clone() }).collect();
    Some((json!({"files": files, "name": name}), references))
}

fn add_generator(kustomization: &mut Value, mut generator: Value, namespace: &str, app: &str) {
    generator["namespace"] = json!(namespace);
    kustomization["configMapGenerator"] = json!([generator]);
    // A stable name, so that the release can name it; the watch label makes helm-controller
    // upgrade the release when the values change.
    kustomization["generatorOptions"] = json!({
        "disableNameSuffixHash": true,
        "labels": {
            MANAGED_BY_LABEL: MANAGED_BY_VALUE,
            super::spec::APP_LABEL: app,
            WATCH_LABEL.0: WATCH_LABEL.1,
        },
    });
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
