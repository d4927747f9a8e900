//! One app looked at (what `app status NAME -o json` prints: the UI's App page, the MCP
//! server's `app_status`), waited for as `app status --wait` waits, or asked to reconcile or to
//! suspend as `flux reconcile|suspend|resume` ask.

use kube::Api;
use kube::api::DynamicObject;

use super::app_reads::{Viewer, served_apis};
use super::app_report::{AppRef, AppReport};
use super::collect::resource;
use super::watch::WaitRequest;
use crate::cli::OutputFormat;
use crate::cluster::Cluster;
use crate::error::{ExitCode, Result};
use crate::flux::api as flux_api;
use crate::output::Printer;

/// Waits as `app status NAME --wait --revision R` does (`wait` says how long and for what), and
/// prints the app as the wait ends.
pub async fn wait_for_app(
    cluster: Cluster,
    namespace: &str,
    name: &str,
    wait: &WaitRequest,
    format: OutputFormat,
    printer: &Printer,
) -> Result<ExitCode> {
    let served = served_apis(&cluster).await?;
    let app = AppRef { namespace: namespace.to_string(), name: name.to_string() };
    let mut viewer = Viewer::new(cluster, served, app, false, *printer);
    super::watch::wait(&mut viewer, wait, format).await
}

/// What `app status NAME -o json` prints, for the UI's App page; `None` when there is no such app.
pub async fn app_report(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    ledgers: super::remember::Ledgers,
    printer: &Printer,
) -> Result<Option<AppReport>> {
    let served = served_apis(cluster).await?;
    let app = AppRef { namespace: namespace.to_string(), name: name.to_string() };
    let mut viewer = Viewer::new(cluster.clone(), served, app, true, *printer);
    viewer.ledgers = ledgers;
    Ok(viewer.look(true).await?.map(|(_, report)| report))
}

/// The app object, a Kustomization or else a HelmRelease named `name`, at the version the
/// cluster serves; `None` when neither exists.
async fn app_object(cluster: &Cluster, namespace: &str, name: &str) -> Result<Option<Api<DynamicObject>>> {
    let served = served_apis(cluster).await?;
    for kind in [&flux_api::KUSTOMIZATION, &flux_api::HELM_RELEASE] {
        let Some(resource) = resource(&served, kind) else { continue };
        let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), namespace, &resource);
        if api.get_metadata_opt(name).await.map_err(|error| cluster.error(error))?.is_some() {
            return Ok(Some(api));
        }
    }
    Ok(None)
}

/// Asks Flux to reconcile the app now, as `flux reconcile` asks; returns the annotation's value,
/// or `None` when there is no such app.
pub async fn request_reconcile(cluster: &Cluster, namespace: &str, name: &str) -> Result<Option<String>> {
    let Some(api) = app_object(cluster, namespace, name).await? else { return Ok(None) };
    let requested = crate::flux::reconcile::request(&api, name).await.map_err(|error| cluster.error(error))?;
    Ok(Some(requested))
}

/// Sets the app object's `spec.suspend`, as `flux suspend|resume` do (in the cluster only, like
/// `app suspend` without `--persist`); says what it did, or `None` when there is no such app.
pub async fn set_suspended(cluster: &Cluster, namespace: &str, name: &str, suspend: bool) -> Result<Option<String>> {
    let Some(api) = app_object(cluster, namespace, name).await? else { return Ok(None) };
    crate::flux::reconcile::set_suspended(&api, name, suspend).await.map_err(|error| cluster.error(error))?;
    let done = if suspend { "suspended" } else { "resumed" };
    Ok(Some(format!("{done} {namespace}/{name} in the cluster (the config repo is unchanged)")))
}
