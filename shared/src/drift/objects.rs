//! One object compared with the cluster: a server-side dry run of what Flux applied, under the
//! field manager that applies it, and the fields that differ with who changed them.

use serde_json::Value;

use super::desired::Desired;
use super::{DriftState, DriftedField, DriftedObject, fields, ignore, text};
use crate::apply::{Applier, DryRun};
use crate::error::Result;
use crate::preview::compare;

/// The annotation (or label) that tells kustomize-controller how to apply an object.
const SSA: &str = "kustomize.toolkit.fluxcd.io/ssa";

/// What comparing one object found.
pub(super) enum Outcome {
    /// Flux is told to leave it alone: not looked at.
    Skipped,
    /// As Flux applied it.
    Clean,
    /// It differs, is gone, or could not be checked.
    Drifted(Box<DriftedObject>),
}

/// What one comparison found, and the [`fingerprint`] of the live object it compared with
/// (none when it was not read or is gone).
pub(super) async fn compare(applier: &mut Applier<'_>, desired: &Desired) -> Result<(Outcome, Option<u64>)> {
    let mut seen = None;
    let outcome = compare_with_live(applier, desired, &mut seen).await?;
    Ok((outcome, seen))
}

/// The fingerprint of a live object's content: what the API server keeps for itself (status,
/// managed fields, versions) left out, so that a status update does not count as a change.
pub(super) fn fingerprint(live: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut normalized = compare::normalized(live);
    // A listed object comes without them, a watched or read one with them.
    if let Some(map) = normalized.as_object_mut() {
        map.remove("apiVersion");
        map.remove("kind");
    }
    let mut hasher = std::hash::DefaultHasher::new();
    normalized.to_string().hash(&mut hasher);
    hasher.finish()
}

/// An object as Flux applied it ([`Desired`]) compared with its live object by a dry run under
/// its field manager, leaving out the fields Flux is told not to correct (the whole object for
/// an empty pointer); `seen` gets the live object's fingerprint.
async fn compare_with_live(applier: &mut Applier<'_>, desired: &Desired, seen: &mut Option<u64>) -> Result<Outcome> {
    let (document, manager, ignored) = (&desired.document, desired.manager, &desired.ignored);
    let helm_release = desired.helm_release.as_deref();
    if let Some(why) = &desired.unreadable {
        return Ok(Outcome::Drifted(Box::new(unchecked(document, why.clone()))));
    }
    let excluded = |object: &Value| match helm_release {
        Some(_) => ignore::helm_excluded(object),
        None => ssa_mode(object) == Some("ignore"),
    };
    if excluded(document) || ignored.iter().any(String::is_empty) {
        return Ok(Outcome::Skipped);
    }
    let mut found =
        DriftedObject { helm_release: helm_release.map(String::from), ..unchecked(document, String::new()) };
    found.state = DriftState::Changed;
    found.message = None;
    let (live, applied) = match applier.dry_run(document, manager).await {
        Ok(DryRun::Applied { live, applied }) => (live, applied),
        Ok(DryRun::NotAllowed { live }) => {
            found.compared_here = true;
            let applied = compare::applied_here(live.as_ref(), document);
            (live, applied)
        }
        Ok(DryRun::Refused { message, .. }) => {
            let refused = DriftedObject { state: DriftState::Unchecked, message: Some(message), ..found };
            return Ok(Outcome::Drifted(Box::new(refused)));
        }
        // The namespace it lives in is gone too.
        Err(_) if applier.get(document).await.ok().flatten().is_none() => (None, Value::Null),
        Err(error) => return Err(error),
    };
    let Some(live) = live else {
        return Ok(Outcome::Drifted(Box::new(DriftedObject { state: DriftState::Missing, ..found })));
    };
    *seen = Some(fingerprint(&live));
    let if_not_present = helm_release.is_none()
        && (ssa_mode(&live) == Some("ifnotpresent") || ssa_mode(document) == Some("ifnotpresent"));
    if excluded(&live) || if_not_present {
        return Ok(Outcome::Skipped);
    }
    let managed = &live["metadata"]["managedFields"];
    let (mut live_fields, mut applied_fields) = (compare::normalized(&live), compare::normalized(&applied));
    for pointer in ignored {
        ignore::remove(&mut live_fields, pointer);
        ignore::remove(&mut applied_fields, pointer);
    }
    let changed = fields::changed(&live_fields, &applied_fields, managed, manager);
    if changed.is_empty() {
        return Ok(Outcome::Clean);
    }
    for field in &changed {
        for owner in &field.managers {
            if !found.managers.contains(owner) {
                found.managers.push(owner.clone());
            }
        }
    }
    found.since = found.managers.first().and_then(|owner| fields::written_at(managed, owner));
    found.fields =
        changed.into_iter().map(|field| DriftedField { path: field.path, managers: field.managers }).collect();
    Ok(Outcome::Drifted(Box::new(found)))
}

/// `document` as an object that could not be checked, and why.
pub(super) fn unchecked(document: &Value, why: String) -> DriftedObject {
    let object = crate::apply::object_ref(document);
    DriftedObject {
        api_version: text(document, "/apiVersion"),
        kind: object.kind,
        namespace: object.namespace,
        name: object.name,
        state: DriftState::Unchecked,
        fields: Vec::new(),
        managers: Vec::new(),
        since: None,
        message: Some(why),
        helm_release: None,
        compared_here: false,
    }
}

/// How kustomize-controller is told to apply an object (`ignore`, `ifnotpresent`, `merge`),
/// from its annotation or label, in lower case.
fn ssa_mode(object: &Value) -> Option<&'static str> {
    let metadata = &object["metadata"];
    let value = metadata["annotations"][SSA].as_str().or_else(|| metadata["labels"][SSA].as_str())?;
    match value.to_ascii_lowercase().as_str() {
        "ignore" => Some("ignore"),
        "ifnotpresent" => Some("ifnotpresent"),
        "merge" => Some("merge"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ssa_annotation_or_label_is_read_as_the_controller_reads_it() {
        let annotated = serde_json::json!({"metadata": {"annotations": {SSA: "Ignore"}}});
        let labelled = serde_json::json!({"metadata": {"labels": {SSA: "IfNotPresent"}}});
        assert_eq!(ssa_mode(&annotated), Some("ignore"));
        assert_eq!(ssa_mode(&labelled), Some("ifnotpresent"));
        assert_eq!(ssa_mode(&serde_json::json!({"metadata": {}})), None);
    }
}
