//! The command face of `kubectl gitops app status NAME`: its flags, and the run that picks a
//! look (app_reads.rs, tree.rs), `--watch` or `--wait` (watch.rs). Kept apart so that the model,
//! reads and renderer and the watch engine (watch.rs) do not import each other.

use kube::Api;
use kube::api::DynamicObject;

use super::app_reads::{Viewer, served_apis};
use super::app_report::AppReport;
use super::app_report::{AppRef, exit_code};
use super::collect::resource;
use super::in_contexts::one_context_at_a_time;
use super::tree::{print, render};
use super::watch::{WaitArgs, WaitRequest};
use crate::cli::{GlobalArgs, OutputFormat};
use crate::cluster::{Cluster, Connection};
use crate::contexts::Answer;
use crate::error::{ExitCode, Result};
use crate::flux::api as flux_api;
use crate::output::Printer;

/// `kubectl gitops app status NAME`: one app, how it is deployed, and why it is or is not ready.
#[derive(Debug, Clone, clap::Args)]
pub struct AppStatusArgs {
    /// The app: a Kustomization or HelmRelease of this name in the Flux namespace (-n, default flux-system).
    pub name: String,

    /// Don't read the app's git source for commit authors, times and subjects.
    ///
    /// Don't fetch the applied commit from git to show its author, time and subject.
    #[arg(long)]
    pub no_git: bool,

    #[command(flatten)]
    pub wait: WaitArgs,

    /// Keep showing it, driven by watches.
    ///
    /// Keep showing the app: redrawn in place on a terminal, printed again on each change otherwise.
    #[arg(short = 'w', long)]
    pub watch: bool,
}

impl AppStatusArgs {
    /// The request these flags and the shared ones make; an `-o` it cannot print is refused here.
    pub fn request(&self, global: &GlobalArgs) -> Result<AppStatusRequest> {
        let format = global.output_format();
        crate::output::ensure_supported(format, crate::cli::STRUCTURED)?;
        let contexts = crate::contexts::several(global)?;
        if contexts.is_some() {
            one_context_at_a_time(self.watch, self.wait.request().is_some())?;
        }
        let follow = match (self.watch, self.wait.request()) {
            (true, _) => Follow::Watch,
            (false, Some(wait)) => Follow::Wait(wait),
            (false, None) => Follow::Once,
        };
        Ok(AppStatusRequest { app: AppRef::of(&self.name, global)?, git: !self.no_git, format, follow, contexts })
    }
}

/// `app status NAME`, resolved from its flags.
#[derive(Debug, Clone)]
pub struct AppStatusRequest {
    app: AppRef,
    /// Fetch the applied commit from git.
    git: bool,
    format: OutputFormat,
    follow: Follow,
    /// `--context dev,uat`: the app in each of these contexts.
    contexts: Option<Vec<String>>,
}

/// Whether `app status` looks once, keeps showing the app, or waits for it.
#[derive(Debug, Clone)]
enum Follow {
    Once,
    Watch,
    Wait(WaitRequest),
}

/// Runs `kubectl gitops app status NAME`: prints the tree (or JSON/YAML) on stdout and returns
/// 0 when the app is ready (or suspended, as `status` counts it), 1 otherwise. `--wait` and
/// `--watch` are handled here too.
pub async fn run_app_status(
    request: &AppStatusRequest,
    connection: &Connection,
    printer: &Printer,
) -> Result<ExitCode> {
    if let Some(contexts) = &request.contexts {
        return crate::contexts::in_each(contexts, connection, request.format, printer, |connection, format| {
            answer(connection, request, format, printer)
        })
        .await;
    }
    let cluster = Cluster::connect(connection, printer).await?;
    let served = served_apis(&cluster).await?;
    let mut viewer = Viewer::new(cluster, served, request.app.clone(), request.git, *printer);
    match &request.follow {
        Follow::Watch => super::watch::watch(&mut viewer, request.format).await,
        Follow::Wait(wait) => super::watch::wait(&mut viewer, wait, request.format).await,
        Follow::Once => {
            let Some((_, report)) = viewer.look(true).await? else { return Err(viewer.app.not_found()) };
            print(&report, request.format, printer)?;
            Ok(exit_code(&report))
        }
    }
}

/// The app in one context of several (`--context dev,uat`), in `format`.
async fn answer(
    connection: Connection,
    request: &AppStatusRequest,
    format: OutputFormat,
    printer: &Printer,
) -> Result<Answer> {
    let cluster = Cluster::connect(&connection, printer).await?;
    let served = served_apis(&cluster).await?;
    let mut viewer = Viewer::new(cluster, served, request.app.clone(), request.git, *printer);
    let Some((_, report)) = viewer.look(true).await? else { return Err(viewer.app.not_found()) };
    Ok(Answer { text: render(&report, format, printer.stdout_style())?, code: exit_code(&report) })
}

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
