//! The Kustomizations a change deletes: Flux deletes them, and with `prune: true` everything they
//! applied, listed as pruned instead of compared as built.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::{Action, KEEP_ANNOTATION, KustomizationDiff, ObjectDiff, SourceRef, objects};
use crate::apply::Applier;
use crate::error::Result;
use crate::flux::api::KUSTOMIZATION;

/// A Kustomization the change deletes (one that applies it prunes it) is not compared as built:
/// what it applied goes with it. Its entry (`results` is in the order of `ours`) lists its
/// inventory as pruned when it prunes, nothing otherwise, instead of a build of a path the change
/// may have removed.
pub(super) async fn deleted_with_their_objects(
    mut applier: Applier<'_>,
    ours: &[(Value, &SourceRef, &Path)],
    results: &mut [KustomizationDiff],
) -> Result<()> {
    let deleted = deleted_kustomizations(results);
    for (result, (kustomization, _, _)) in results.iter_mut().zip(ours) {
        if !deleted.contains(&(result.namespace.clone(), result.name.clone())) {
            continue;
        }
        result.objects = inventory_pruned(&mut applier, kustomization).await?;
        (result.deleted, result.error, result.unchanged, result.compared_here) = (true, None, 0, 0);
    }
    Ok(())
}

/// The Kustomizations the change deletes that apply another source than those compared (an app's
/// own repository): each an entry of its own, listing what Flux prunes with it.
pub(super) async fn deleted_elsewhere(
    mut applier: Applier<'_>,
    results: &[KustomizationDiff],
) -> Result<Vec<KustomizationDiff>> {
    let compared: BTreeSet<(String, String)> =
        results.iter().map(|result| (result.namespace.clone(), result.name.clone())).collect();
    let mut found = Vec::new();
    for object in results.iter().flat_map(|result| &result.objects).filter(|object| is_deleted_kustomization(object)) {
        let namespace = object.namespace.clone().unwrap_or_default();
        if compared.contains(&(namespace.clone(), object.name.clone())) {
            continue;
        }
        let reference = serde_json::json!({
            "apiVersion": object.api_version, "kind": object.kind,
            "metadata": {"name": object.name, "namespace": namespace},
        });
        let Some(kustomization) = applier.get(&reference).await? else { continue };
        let reference = &kustomization["spec"]["sourceRef"];
        let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
        let source = SourceRef {
            kind: text(&reference["kind"]),
            namespace: reference["namespace"].as_str().unwrap_or(&namespace).to_string(),
            name: text(&reference["name"]),
        };
        let objects = inventory_pruned(&mut applier, &kustomization).await?;
        found.push(KustomizationDiff { objects, deleted: true, ..KustomizationDiff::of(&kustomization, &source) });
    }
    Ok(found)
}

/// A pruned object that is a Kustomization.
fn is_deleted_kustomization(object: &ObjectDiff) -> bool {
    object.action == Action::Pruned
        && object.kind == KUSTOMIZATION.kind
        && object.api_version.starts_with(&format!("{}/", KUSTOMIZATION.group))
}

/// The Kustomizations `results` prune, by namespace and name.
fn deleted_kustomizations(results: &[KustomizationDiff]) -> BTreeSet<(String, String)> {
    results
        .iter()
        .flat_map(|result| &result.objects)
        .filter(|object| is_deleted_kustomization(object))
        .map(|object| (object.namespace.clone().unwrap_or_default(), object.name.clone()))
        .collect()
}

/// What Flux prunes when `kustomization` is deleted: its inventory when it prunes, else nothing.
async fn inventory_pruned(applier: &mut Applier<'_>, kustomization: &Value) -> Result<Vec<ObjectDiff>> {
    if !kustomization["spec"]["prune"].as_bool().unwrap_or(false) {
        return Ok(Vec::new());
    }
    objects::pruned(applier, &kustomization["status"]["inventory"], &BTreeSet::new(), KEEP_ANNOTATION).await
}
