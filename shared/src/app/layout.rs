//! An app's files in the config repo (docs/layout.md):
//!
//! ```text
//! apps/<app>/kustomization.yaml            source.yaml + release.yaml (+ shared values)
//! apps/<app>/source.yaml                   GitRepository | HelmRepository | OCIRepository
//! apps/<app>/release.yaml                  Kustomization | HelmRelease
//! apps/<app>/values/<file>                 --values without --cluster-name: every cluster gets them
//! <cluster>/apps/kustomization.yaml        the cluster's app list: one directory per app
//! <cluster>/apps/<app>/kustomization.yaml  the shared definition, plus this cluster's values
//! <cluster>/apps/<app>/values/<file>       --values with --cluster-name
//! ```
//!
//! The definition is written once and shared, so two clusters never hold two objects of the
//! same id; per-cluster values are ConfigMaps appended to the HelmRelease's `valuesFrom` by
//! the cluster's overlay.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::spec::{AppKind, AppSpec, ValuesFile};
use crate::change::layout::{ClusterDir, KUSTOMIZATION_FILE, kustomize_config, overlay_config};
use crate::error::Result;
use crate::flux::api::{FluxKind, Versions};
use crate::flux::objects::ValuesReference;
use crate::record::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::yaml;

/// The JSON patch path that appends to a release's `valuesFrom`.
const VALUES_FROM_APPEND: &str = "/spec/valuesFrom/-";

/// helm-controller reconciles a release when a ConfigMap with this label changes.
const WATCH_LABEL: (&str, &str) = ("reconcile.fluxcd.io/watch", "Enabled");

/// The files of the shared definition `apps/<app>/`, path → contents.
pub fn app_files(spec: &AppSpec, namespace: &str, versions: &Versions) -> Result<BTreeMap<String, String>> {
    let dir = spec.definition_dir();
    let names: Vec<String> = spec.values.iter().map(|file| file.name.clone()).collect();
    let shared_values = generated_values(&format!("{}-values", spec.name), &names);
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
    let names: Vec<String> = values.iter().map(|file| file.name.clone()).collect();
    set_cluster_values(&mut kustomization, &spec.name, &cluster.name, namespace, &names, spec.release_kind())?;
    for file in values {
        files.insert(format!("{dir}/values/{}", file.name), file.contents.clone());
    }
    files.insert(format!("{dir}/{KUSTOMIZATION_FILE}"), yaml::to_string(&kustomization)?);
    Ok(files)
}

/// Sets a cluster overlay's own values (`kustomization`, the overlay's kustomization.yaml):
/// `names`, files under its `values/`, as a ConfigMap generator and the `valuesFrom` entries
/// that read them, appended to release `app` by a patch; no names removes both. The overlay's
/// other patches (a promoted chart version) stay.
pub(crate) fn set_cluster_values(
    kustomization: &mut Value,
    app: &str,
    cluster: &str,
    namespace: &str,
    names: &[String],
    release_kind: &FluxKind,
) -> Result<()> {
    let ours = |entry: &Value| {
        entry["target"]["name"] == app && entry["patch"].as_str().is_some_and(|text| text.contains(VALUES_FROM_APPEND))
    };
    let mut patches: Vec<Value> = kustomization["patches"].as_array().cloned().unwrap_or_default();
    patches.retain(|entry| !ours(entry));
    let object =
        kustomization.as_object_mut().ok_or_else(|| crate::error::Error::Internal("an overlay is a mapping".into()))?;
    object.remove("configMapGenerator");
    object.remove("generatorOptions");
    if let Some((generator, references)) = generated_values(&format!("{app}-{cluster}-values"), names) {
        add_generator(kustomization, generator, namespace, app);
        let operations: Vec<Value> = references
            .iter()
            .map(|reference| {
                json!({"op": "add", "path": VALUES_FROM_APPEND, "value": {
                    "kind": "ConfigMap", "name": reference.config_map, "valuesKey": reference.key}})
            })
            .collect();
        patches.insert(
            0,
            json!({
                "patch": yaml::to_string(&operations)?,
                "target": {"group": release_kind.group, "kind": release_kind.kind, "name": app},
            }),
        );
    }
    match kustomization.as_object_mut() {
        Some(object) if patches.is_empty() => drop(object.remove("patches")),
        _ => kustomization["patches"] = json!(patches),
    }
    Ok(())
}

/// A ConfigMap generator over values files (their names) and the `valuesFrom` entries that read
/// them.
fn generated_values(name: &str, names: &[String]) -> Option<(Value, Vec<ValuesReference>)> {
    if names.is_empty() {
        return None;
    }
    let files: Vec<String> = names.iter().map(|file| format!("values/{file}")).collect();
    let references =
        names.iter().map(|file| ValuesReference { config_map: name.to_string(), key: file.clone() }).collect();
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
