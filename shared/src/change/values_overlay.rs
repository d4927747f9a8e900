//! An app's values files in the config repo: a ConfigMap generator over them, and in a cluster's
//! overlay the patch that appends the ConfigMap to the release's `valuesFrom` (docs/layout.md).
//! `app add --values` writes them, `promote --with-values` carries them to another cluster.

use serde_json::{Value, json};

use crate::error::Result;
use crate::flux::api::FluxKind;
use crate::flux::objects::ValuesReference;
use crate::record::{APP_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::yaml;

/// The JSON patch path that appends to a release's `valuesFrom`.
const VALUES_FROM_APPEND: &str = "/spec/valuesFrom/-";

/// helm-controller reconciles a release when a ConfigMap with this label changes.
const WATCH_LABEL: (&str, &str) = ("reconcile.fluxcd.io/watch", "Enabled");

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
pub(crate) fn generated_values(name: &str, names: &[String]) -> Option<(Value, Vec<ValuesReference>)> {
    if names.is_empty() {
        return None;
    }
    let files: Vec<String> = names.iter().map(|file| format!("values/{file}")).collect();
    let references =
        names.iter().map(|file| ValuesReference { config_map: name.to_string(), key: file.clone() }).collect();
    Some((json!({"files": files, "name": name}), references))
}

/// Puts the generator into the overlay `kustomization`, with a stable name and the labels that
/// make helm-controller upgrade the release when the values change.
pub(crate) fn add_generator(kustomization: &mut Value, mut generator: Value, namespace: &str, app: &str) {
    generator["namespace"] = json!(namespace);
    kustomization["configMapGenerator"] = json!([generator]);
    // A stable name, so that the release can name it; the watch label makes helm-controller
    // upgrade the release when the values change.
    kustomization["generatorOptions"] = json!({
        "disableNameSuffixHash": true,
        "labels": {
            MANAGED_BY_LABEL: MANAGED_BY_VALUE,
            APP_LABEL: app,
            WATCH_LABEL.0: WATCH_LABEL.1,
        },
    });
}
