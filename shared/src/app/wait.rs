//! `--wait` after a push: ask Flux to fetch now, then wait until the cluster's sync has applied
//! the pushed commit and the app is Ready (add) or gone (remove).

use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};

use super::Context;
use crate::apply::{FIELD_MANAGER, ready_condition};
use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::flux::api::{self, FluxKind};
use crate::flux::bootstrap::SYNC_NAME;
use crate::output::progress::Spinner;
use crate::output::report;

/// How often the objects are read again while waiting.
const POLL: Duration = Duration::from_secs(1);

fn objects(cluster: &Cluster, context: &Context, kind: &FluxKind) -> Option<Api<DynamicObject>> {
    let version = context.versions.lookup(kind)?;
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(kind.group, version, kind.kind));
    Some(Api::namespaced_with(cluster.client.clone(), &context.namespace, &resource))
}

fn text<'a>(object: &'a DynamicObject, pointer: &str) -> Option<&'a str> {
    object.data.pointer(pointer).and_then(|value| value.as_str())
}

/// Waits for the sync to apply `commit`, then for the app to be Ready (`wants_ready`) or gone.
pub async fn after_push(
    cluster: &Cluster,
    context: &Context,
    app: &str,
    commit: &str,
    timeout: Duration,
    wants_ready: bool,
) -> Result<()> {
    let started = Instant::now();
    let (Some(sources), Some(syncs)) =
        (objects(cluster, context, &api::GIT_REPOSITORY), objects(cluster, context, &api::KUSTOMIZATION))
    else {
        return Err(Error::Internal("the cluster serves no GitRepository or Kustomization".into()));
    };
    // Ask for a fetch now instead of at the next interval, the way `flux reconcile` asks.
    let requested = serde_json::json!({"metadata": {"annotations": {
        "reconcile.fluxcd.io/requestedAt": crate::duration::now().to_string()}}});
    for api in [&sources, &syncs] {
        if let Err(error) = api.patch(SYNC_NAME, &PatchParams::apply(FIELD_MANAGER), &Patch::Merge(&requested)).await {
            report::warning(&format!("could not ask Flux to reconcile now: {}", crate::diagnostic::describe(&error)));
        }
    }
    let namespace = &context.namespace;
    let mut spinner =
        Spinner::new(format!("waiting for Kustomization {namespace}/{SYNC_NAME} to apply {}", short(commit)));
    loop {
        let sync = syncs.get_opt(SYNC_NAME).await.map_err(|error| cluster.error(error))?;
        let applied = sync.as_ref().and_then(|sync| text(sync, "/status/lastAppliedRevision")).unwrap_or_default();
        if applied.ends_with(commit) {
            break;
        }
        let why = sync.as_ref().and_then(ready_condition).map(|(_, reason, message)| format!("{reason}: {message}"));
        check_timeout(started, timeout, &format!("Kustomization {namespace}/{SYNC_NAME}"), why, &mut spinner)?;
        spinner.tick(&format!("applied: {}", if applied.is_empty() { "nothing yet" } else { applied }));
        tokio::time::sleep(POLL).await;
    }
    spinner.finish();
    let releases: Vec<(&FluxKind, Api<DynamicObject>)> = [&api::KUSTOMIZATION, &api::HELM_RELEASE]
        .into_iter()
        .filter_map(|kind| objects(cluster, context, kind).map(|api| (kind, api)))
        .collect();
    let mut spinner = Spinner::new(if wants_ready {
        format!("waiting for app {app} to be Ready")
    } else {
        format!("waiting for Flux to prune app {app}")
    });
    loop {
        let mut found = None;
        for (kind, api) in &releases {
            if let Some(object) = api.get_opt(app).await.map_err(|error| cluster.error(error))? {
                found = Some((*kind, object));
            }
        }
        match (&found, wants_ready) {
            (None, false) => break,
            (Some((kind, object)), true) => {
                let ready = ready_condition(object);
                let generation_seen = object.metadata.generation
                    == object.data.pointer("/status/observedGeneration").and_then(|value| value.as_i64());
                if generation_seen && ready.as_ref().is_some_and(|(status, _, _)| status == "True") {
                    break;
                }
                let why = ready.map(|(_, reason, message)| format!("{reason}: {message}"));
                check_timeout(
                    started,
                    timeout,
                    &format!("{} {namespace}/{app}", kind.kind),
                    why.clone(),
                    &mut spinner,
                )?;
                spinner.tick(why.as_deref().unwrap_or("not reconciled yet"));
            }
            (None, true) => {
                check_timeout(started, timeout, &format!("app {app}"), Some("not created yet".into()), &mut spinner)?;
                spinner.tick("not created yet");
            }
            (Some((kind, _)), false) => {
                let what = format!("{} {namespace}/{app}", kind.kind);
                check_timeout(started, timeout, &what, Some("still there".into()), &mut spinner)?;
                spinner.tick("still there");
            }
        }
        tokio::time::sleep(POLL).await;
    }
    spinner.finish();
    Ok(())
}

fn check_timeout(
    started: Instant,
    timeout: Duration,
    object: &str,
    why: Option<String>,
    spinner: &mut Spinner,
) -> Result<()> {
    if started.elapsed() < timeout {
        return Ok(());
    }
    spinner.finish();
    Err(Error::Negative {
        message: format!(
            "{object} is not there yet after {}: {}",
            crate::duration::format(timeout),
            why.unwrap_or_else(|| "not reconciled yet".into())
        ),
        hint: Some("`kubectl gitops app status NAME` shows why; raise --timeout to wait longer".into()),
    })
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}
