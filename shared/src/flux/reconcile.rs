//! Asking Flux to reconcile an object now instead of at its next interval, the way
//! `flux reconcile` asks: a new value of the annotation the controllers watch; and suspending
//! and resuming an object, as `flux suspend|resume` do.

use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};

use crate::cluster::FIELD_MANAGER;

/// The annotation; any new value triggers a reconcile, and the controller copies it to
/// `status.lastHandledReconcileAt` once handled.
pub const REQUESTED_AT: &str = "reconcile.fluxcd.io/requestedAt";

/// Sets [`REQUESTED_AT`] on `name` to the current time (seconds since the epoch, as a string) and
/// returns the value, so a caller can wait for `status.lastHandledReconcileAt` to show it.
pub async fn request(api: &Api<DynamicObject>, name: &str) -> kube::Result<String> {
    let requested = crate::duration::now().to_string();
    let body = serde_json::json!({"metadata": requested_at(&requested)});
    api.patch(name, &PatchParams::apply(FIELD_MANAGER), &Patch::Merge(&body)).await?;
    Ok(requested)
}

/// Asks a source to fetch and the object that applies it to reconcile, now instead of at their
/// next interval (a GitRepository's is a minute), as `flux reconcile --with-source` does: after a
/// push, so that a wait for the commit takes seconds. A failure is a warning: the interval still
/// comes.
pub async fn request_with_source(
    source: (&Api<DynamicObject>, &str),
    applier: (&Api<DynamicObject>, &str),
    printer: &crate::output::Printer,
) {
    for (api, name) in [source, applier] {
        if let Err(error) = request(api, name).await {
            printer.warning(&format!("could not ask Flux to reconcile now: {}", crate::diagnostic::describe(&error)));
        }
    }
}

/// Asks every layer that depends on `layer` (Kustomizations in `api`'s namespace) to reconcile
/// now, once `layer` applied a commit: Flux would retry a layer held back by its dependency only
/// after its `--requeue-dependency` (30 s). Returns the layers that could not be asked, and why.
pub async fn request_dependents(api: &Api<DynamicObject>, layer: &str) -> Vec<(&'static str, kube::Error)> {
    let mut refused = Vec::new();
    for dependent in super::bootstrap::LAYERS.iter().filter(|dependent| dependent.depends_on == Some(layer)) {
        if let Err(error) = request(api, dependent.name).await {
            refused.push((dependent.name, error));
        }
    }
    refused
}

/// Sets `spec.suspend` of `name`, as `flux suspend|resume` do: resuming also asks for a
/// reconcile, in the same patch, so that the app catches up at once rather than at its next
/// interval. The one suspend and resume of the suite: `app suspend|resume` and the UI's buttons.
pub async fn set_suspended(api: &Api<DynamicObject>, name: &str, suspend: bool) -> kube::Result<()> {
    let mut body = serde_json::json!({"spec": {"suspend": suspend}});
    if !suspend {
        body["metadata"] = requested_at(&crate::duration::now().to_string());
    }
    api.patch(name, &PatchParams::apply(FIELD_MANAGER), &Patch::Merge(&body)).await.map(drop)
}

/// The `metadata` of a merge patch that asks for a reconcile (with `value`, say the current
/// time).
fn requested_at(value: &str) -> serde_json::Value {
    serde_json::json!({"annotations": {REQUESTED_AT: value}})
}
