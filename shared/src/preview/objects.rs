//! Built or rendered objects compared with the cluster one by one, and an inventory's objects
//! that are no longer made, listed as pruned.

use std::collections::BTreeSet;

use serde_json::Value;

use super::compare;
use super::{Action, ImageChange, ObjectDiff};
use crate::apply::{Applier, DryRun};
use crate::error::Result;

/// What comparing a set of documents with the cluster found.
#[derive(Debug, Default)]
pub(super) struct Compared {
    /// The objects that differ or are refused.
    pub objects: Vec<ObjectDiff>,
    /// Objects that would not change.
    pub unchanged: usize,
    /// Objects compared on this machine, for lack of the `patch` right.
    pub compared_here: usize,
    /// The inventory key of every document compared.
    pub kept: BTreeSet<String>,
}

/// Each document applied as a server-side dry run under the field manager `manager` (the
/// controller that will apply it) and compared with its live object.
pub(super) async fn compare(applier: &mut Applier<'_>, documents: &[Value], manager: &str) -> Result<Compared> {
    let mut result = Compared::default();
    let mut namespaces = NamespacesSeen::default();
    for document in documents {
        let object = crate::apply::object_ref(document);
        let api_version = document["apiVersion"].as_str().unwrap_or_default().to_string();
        result.kept.insert(inventory_key(&api_version, &object.kind, object.namespace.as_deref(), &object.name));
        let label = match &object.namespace {
            Some(namespace) => format!("{}/{namespace}/{}", object.kind, object.name),
            None => format!("{}/{}", object.kind, object.name),
        };
        let mut differs = ObjectDiff {
            api_version,
            kind: object.kind.clone(),
            namespace: object.namespace.clone(),
            name: object.name.clone(),
            action: Action::Changed,
            diff: None,
            images: Vec::new(),
            message: None,
            compared_here: false,
        };
        // What the change must apply first (a namespace, a CRD, maybe in a Kustomization this one
        // depends on) is not there to dry-run against: the object is new, worked out here.
        let not_yet = not_there_yet(applier, &mut namespaces, document, &object).await?;
        let dry_run = match not_yet {
            Some(why) => {
                differs.message = Some(why);
                DryRun::NotAllowed { live: None }
            }
            None => applier.dry_run(document, manager).await?,
        };
        let (live, applied) = match dry_run {
            DryRun::Refused { message, .. } => {
                result.objects.push(ObjectDiff { action: Action::Refused, message: Some(message), ..differs });
                continue;
            }
            DryRun::Applied { live, applied } => (live, applied),
            DryRun::NotAllowed { live } => {
                differs.compared_here = true;
                result.compared_here += 1;
                let applied = compare::applied_here(live.as_ref(), document);
                (live, applied)
            }
        };
        let mut before = live.as_ref().map(compare::normalized);
        let mut after = compare::normalized(&applied);
        if before.as_ref() == Some(&after) {
            result.unchanged += 1;
            continue;
        }
        differs.images = image_changes(before.as_ref(), Some(&after));
        compare::hide_secret_values(before.as_mut(), Some(&mut after));
        let before_text = before.as_ref().map(crate::yaml::to_string).transpose()?.unwrap_or_default();
        differs.diff = Some(compare::unified(&label, &before_text, &crate::yaml::to_string(&after)?));
        differs.action = if live.is_some() { Action::Changed } else { Action::Added };
        result.objects.push(differs);
    }
    Ok(result)
}

/// Namespaces looked up, and whether each exists.
type NamespacesSeen = std::collections::HashMap<String, bool>;

/// Why `document` cannot be dry-run yet: its kind is not served (its CRD comes with the change)
/// or its namespace does not exist (the change adds it); `None` when it can be.
async fn not_there_yet(
    applier: &mut Applier<'_>,
    namespaces: &mut NamespacesSeen,
    document: &Value,
    object: &crate::apply::ObjectRef,
) -> Result<Option<String>> {
    if !applier.serves(document).await? {
        let api_version = document["apiVersion"].as_str().unwrap_or_default();
        return Ok(Some(format!(
            "not dry-run: the cluster does not serve {api_version} {} yet (its CRD must be applied first)",
            object.kind
        )));
    }
    let Some(namespace) = &object.namespace else { return Ok(None) };
    if !namespaces.contains_key(namespace) {
        let api: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(applier.cluster().client.clone());
        let found = api.get_opt(namespace).await.map_err(|error| applier.cluster().error(error))?;
        namespaces.insert(namespace.clone(), found.is_some());
    }
    Ok((namespaces.get(namespace) == Some(&false))
        .then(|| format!("not dry-run: its namespace {namespace} does not exist yet (it must be applied first)")))
}

/// `<namespace>_<name>_<group>_<Kind>`, as a Kustomization's `status.inventory` names an object.
pub(super) fn inventory_key(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> String {
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    format!("{}_{name}_{group}_{kind}", namespace.unwrap_or_default())
}

/// The objects of an inventory (a Kustomization's or a HelmRelease's `status.inventory`) that the
/// new build or rendering no longer makes (`kept` holds those it makes), each with its live
/// content as the diff's removed side; those whose `keep` annotation has its value stay.
pub(super) async fn pruned(
    applier: &mut Applier<'_>,
    inventory: &Value,
    kept: &BTreeSet<String>,
    keep: (&str, &str),
) -> Result<Vec<ObjectDiff>> {
    let mut gone = Vec::new();
    for entry in inventory["entries"].as_array().into_iter().flatten() {
        let id = entry["id"].as_str().unwrap_or_default();
        if kept.contains(id) {
            continue;
        }
        let mut parts = id.splitn(4, '_');
        let (Some(namespace), Some(name), Some(group), Some(kind)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let version = entry["v"].as_str().unwrap_or("v1");
        let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
        let namespace = (!namespace.is_empty()).then(|| namespace.to_string());
        let label = match &namespace {
            Some(namespace) => format!("{kind}/{namespace}/{name}"),
            None => format!("{kind}/{name}"),
        };
        let reference = serde_json::json!({
            "apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": &namespace},
        });
        let Some(live) = applier.get(&reference).await? else { continue };
        // Flux (and Helm) leave what carries this annotation in place.
        if live["metadata"]["annotations"][keep.0] == keep.1 {
            continue;
        }
        let mut live = Some(compare::normalized(&live));
        let images = image_changes(live.as_ref(), None);
        compare::hide_secret_values(live.as_mut(), None);
        let before = live.as_ref().map(crate::yaml::to_string).transpose()?.unwrap_or_default();
        gone.push(ObjectDiff {
            api_version,
            kind: kind.to_string(),
            namespace,
            name: name.to_string(),
            action: Action::Pruned,
            diff: Some(compare::unified(&label, &before, "")),
            images,
            message: None,
            compared_here: false,
        });
    }
    Ok(gone)
}

/// The images `after` runs that `before` does not (`to`), and those it stops running (`from`).
pub(super) fn image_changes(before: Option<&Value>, after: Option<&Value>) -> Vec<ImageChange> {
    let old: Vec<String> = before.map(compare::images).unwrap_or_default();
    let new: Vec<String> = after.map(compare::images).unwrap_or_default();
    let stopped = old.iter().filter(|image| !new.contains(image));
    let started = new.iter().filter(|image| !old.contains(image));
    let mut changes: Vec<ImageChange> =
        stopped.map(|image| ImageChange { from: Some(image.clone()), to: None }).collect();
    changes.extend(started.map(|image| ImageChange { from: None, to: Some(image.clone()) }));
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inventory_keys_are_flux_s() {
        assert_eq!(inventory_key("apps/v1", "Deployment", Some("default"), "web"), "default_web_apps_Deployment");
        assert_eq!(inventory_key("v1", "Namespace", None, "team"), "_team__Namespace");
    }

    #[test]
    fn images_started_and_stopped() {
        let before = serde_json::json!({"spec": {"template": {"spec": {"containers": [{"image": "web:1.0"}, {"image": "side:1"}]}}}});
        let after = serde_json::json!({"spec": {"template": {"spec": {"containers": [{"image": "web:1.1"}, {"image": "side:1"}]}}}});
        assert_eq!(
            image_changes(Some(&before), Some(&after)),
            [
                ImageChange { from: Some("web:1.0".into()), to: None },
                ImageChange { from: None, to: Some("web:1.1".into()) }
            ]
        );
        assert_eq!(image_changes(Some(&before), Some(&before)), []);
    }
}
