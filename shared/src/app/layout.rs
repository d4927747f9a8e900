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

use serde_json::json;

use super::spec::{AppKind, AppSpec, ValuesFile};
use crate::change::layout::{ClusterDir, KUSTOMIZATION_FILE, kustomize_config, overlay_config};
use crate::change::values_overlay::{add_generator, generated_values, set_cluster_values};
use crate::error::Result;
use crate::flux::api::Versions;
use crate::yaml;

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
