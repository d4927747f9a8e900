//! `kubectl gitops drift`: what differs in the cluster right now from what Flux last applied,
//! field by field, with the field manager that changed it (docs/drift.md).
//!
//! For each Kustomization, the desired state is its source at `status.lastAppliedRevision`: the
//! GitRepository cloned at that commit (pinned by its full hash, from the URL the cluster pulls
//! it from, with the config repo's credentials only on the config repo's server), built by the
//! pinned flux CLI as the controller builds it ([`crate::preview`]'s build). Every object built is
//! applied as a server-side dry run under kustomize-controller's field manager: the fields that
//! would change are the ones Flux would put back, which leaves out what the API server defaults
//! and what other managers add beside Flux's fields. An object of the build that is gone from the
//! cluster is drift too. Objects Flux is told to leave alone (`kustomize.toolkit.fluxcd.io/ssa:
//! Ignore`, or `IfNotPresent` while the object exists) are skipped, as the controller skips them.

mod desired;
mod exporter;
mod fields;
mod helm;
mod ignore;
mod objects;
mod render;
mod source;
mod watch;

pub use self::render::preview_text as render_preview;

use futures::StreamExt;
use kube::api::{Api, DynamicObject, ListParams};
use serde::Serialize;
use serde_json::Value;

use crate::apply::Applier;
use crate::change::{self, RepoSettings, Target};
use crate::cli::{GlobalArgs, OutputFormat, RepoArgs};
use crate::cluster::{Cluster, list_pages};
use crate::error::{Error, ExitCode, Result};
use crate::flux::api::{GIT_REPOSITORY, KUSTOMIZATION, OCI_REPOSITORY};
use crate::flux_cli::{FluxCli, Locator, Tag};
use crate::output::Printer;
use crate::preview::SourceRef;
use crate::preview::sources::Credentials;
use crate::secret_value::SecretValues;

/// How many Kustomizations are built and compared at once.
const PARALLEL: usize = 4;

/// What `drift -o` prints: a table, a document, or the Prometheus series (`metrics drift`).
pub const FORMATS: &[OutputFormat] =
    &[OutputFormat::Table, OutputFormat::Json, OutputFormat::Yaml, OutputFormat::Prometheus];

/// What `drift` and `metrics drift` look at.
#[derive(Debug, Clone, clap::Args)]
pub struct DriftArgs {
    /// One Kustomization by name (default: every one in the namespace).
    #[arg(value_name = "NAME")]
    pub name: Option<String>,

    /// Every namespace, instead of -n's.
    ///
    /// The Kustomizations of every namespace.
    #[arg(short = 'A', long, conflicts_with = "name")]
    pub all_namespaces: bool,

    #[command(flatten)]
    pub repo: RepoArgs,
}

/// `kubectl gitops drift`.
#[derive(Debug, Clone, clap::Args)]
pub struct DriftCommandArgs {
    #[command(flatten)]
    pub scope: DriftArgs,

    /// Keep showing it, driven by watches.
    ///
    /// After the report, follow every object Flux applied (watches, one per kind and namespace)
    /// and print each change of what differs as it happens; redrawn in place on a terminal. Ends
    /// with Ctrl-C.
    #[arg(short = 'w', long)]
    pub watch: bool,
}

/// `kubectl gitops metrics drift`.
#[derive(Debug, Clone, clap::Args)]
pub struct MetricsDriftArgs {
    #[command(flatten)]
    pub scope: DriftArgs,

    /// Serve the series at http://ADDRESS:PORT/metrics, kept current by watches, for Prometheus.
    ///
    /// Serve the series at http://ADDRESS:PORT/metrics for Prometheus to scrape, kept current as
    /// `drift --watch` keeps its report; until Ctrl-C. What it serves is counts per Kustomization,
    /// no credentials: any address may be given (127.0.0.1 keeps it on this machine).
    #[arg(long, value_name = "ADDRESS:PORT")]
    pub listen: Option<std::net::SocketAddr>,
}

/// How long `drift` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Follow {
    /// One report.
    Once,
    /// `--watch`: the report, then its changes.
    Watch,
    /// `metrics drift --listen`: the series served, kept current.
    Listen(std::net::SocketAddr),
}

/// What `drift` is asked, checked.
#[derive(Debug, Clone)]
pub struct DriftRequest {
    name: Option<String>,
    /// `-n`, else the Flux namespace; `None` with `-A`.
    namespace: Option<Option<String>>,
    repo: RepoSettings,
    format: OutputFormat,
    headers: bool,
    follow: Follow,
}

impl DriftArgs {
    /// The request these flags make, for one report.
    pub fn request(&self, global: &GlobalArgs) -> Result<DriftRequest> {
        let format = global.output_format();
        crate::output::ensure_supported(format, FORMATS)?;
        let name =
            self.name.as_deref().map(|name| crate::names::validate_name(name, "the Kustomization")).transpose()?;
        Ok(DriftRequest {
            name,
            namespace: (!self.all_namespaces).then(|| global.namespace.clone()),
            repo: self.repo.settings()?,
            format,
            headers: !global.no_headers,
            follow: Follow::Once,
        })
    }
}

impl DriftCommandArgs {
    /// The request these flags make.
    pub fn request(&self, global: &GlobalArgs) -> Result<DriftRequest> {
        let follow = if self.watch { Follow::Watch } else { Follow::Once };
        Ok(DriftRequest { follow, ..self.scope.request(global)? })
    }
}

impl MetricsDriftArgs {
    /// The request these flags make: `--listen` serves the series, whatever `-o` says.
    pub fn request(&self, global: &GlobalArgs) -> Result<DriftRequest> {
        let request = self.scope.request(global)?;
        Ok(match self.listen {
            Some(address) => {
                DriftRequest { follow: Follow::Listen(address), format: OutputFormat::Prometheus, ..request }
            }
            None => request,
        })
    }
}

/// What differs from the applied revisions: `-o json|yaml` prints this (docs/output.md).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    /// Every Kustomization looked at, by namespace and name.
    pub kustomizations: Vec<KustomizationDrift>,
    /// The counts.
    pub summary: DriftSummary,
}

impl crate::output::Kind for Drift {
    const KIND: &'static str = "Drift";
}

/// One Kustomization: its applied revision and the objects that differ from it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KustomizationDrift {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its source, as KIND/NAMESPACE/NAME.
    pub source: String,
    /// The revision Flux last applied (`main@sha1:…`), compared with; empty if it never applied.
    pub revision: String,
    /// The objects that differ, in the order of the build.
    pub objects: Vec<DriftedObject>,
    /// How many objects of the build were looked at (drifted or not; not those skipped).
    pub checked: usize,
    /// Why it could not be checked (its source not fetched, its build failing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An object that differs from the applied revision.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftedObject {
    /// Its apiVersion.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its namespace (none for a cluster-scoped object).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// `changed`: fields differ; `missing`: deleted from the cluster; `unchecked`: the API server
    /// refused the dry run, or a HelmRelease's release could not be read (`message` says why).
    pub state: DriftState,
    /// The fields that differ, with who owns each now.
    pub fields: Vec<DriftedField>,
    /// Every field manager that changed a field here (not Flux's).
    pub managers: Vec<String>,
    /// When the first of `managers` last wrote the object (RFC 3339), as managedFields says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Why it was not checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The HelmRelease (`NAMESPACE/NAME`) whose Helm release made it; absent for what the
    /// Kustomization applies itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub helm_release: Option<String>,
    /// Compared on this machine, not by a dry run (no `patch` right on it): what the API server
    /// would default is not filled in, so a field may show that a dry run would not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub compared_here: bool,
}

/// One change of what `drift --watch` reports: `-o json|yaml` prints one per change after the
/// first report (docs/output.md).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftChange {
    /// When it was seen (RFC 3339).
    pub time: String,
    /// The Kustomization, as NAMESPACE/NAME.
    pub kustomization: String,
    /// The object, as KIND/NAMESPACE/NAME (KIND/NAME when it has no namespace).
    pub object: String,
    /// How it differs now; absent when it is as Flux applied it again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftedObject>,
}

impl crate::output::Kind for DriftChange {
    const KIND: &'static str = "DriftChange";
}

/// How an object differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DriftState {
    /// Fields differ from what Flux applied.
    Changed,
    /// Flux applied it and it is gone.
    Missing,
    /// Not checked: the API server refused the dry run, or a release could not be read.
    Unchecked,
}

/// One field that differs.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftedField {
    /// Its path: `spec.replicas`, `spec.template.spec.containers[name=web].image`.
    pub path: String,
    /// The field managers that own it now (empty when nobody does: it was removed).
    pub managers: Vec<String>,
}

/// The counts of a drift report.
#[derive(Debug, Clone, Copy, Default, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftSummary {
    /// Kustomizations looked at.
    pub kustomizations: usize,
    /// Objects that differ (changed or missing).
    pub drifted: usize,
    /// Of those, objects that are gone.
    pub missing: usize,
    /// Objects looked at.
    pub checked: usize,
    /// Kustomizations or objects that could not be checked.
    pub failed: usize,
}

impl Drift {
    /// 0: no drift; 1: drift; 2: something could not be checked.
    pub fn exit_code(&self) -> ExitCode {
        if self.summary.failed > 0 {
            ExitCode::Usage
        } else if self.summary.drifted > 0 {
            ExitCode::No
        } else {
            ExitCode::Ok
        }
    }
}

/// The drift of every Kustomization as `drift -A --watch` keeps it (for the UI): none before the
/// first report, else the report or why there is none.
pub type LiveDrift = Option<std::sync::Arc<std::result::Result<Drift, String>>>;

impl DriftRequest {
    /// One report as a face asks for it (plain data, no flags to parse): of the Kustomization
    /// `name` or every one, in `namespace` (`None`: every namespace; `Some(None)`: Flux's).
    pub fn report(name: Option<&str>, namespace: Option<Option<String>>, repo: RepoSettings) -> Result<DriftRequest> {
        let name = name.map(|name| crate::names::validate_name(name, "the Kustomization")).transpose()?;
        if let Some(Some(namespace)) = &namespace {
            crate::names::validate_name(namespace, "namespace")?;
        }
        Ok(DriftRequest { name, namespace, repo, format: OutputFormat::Json, headers: true, follow: Follow::Once })
    }

    /// Every Kustomization of every namespace, followed (the UI's drift).
    pub fn everywhere(repo: RepoSettings) -> DriftRequest {
        DriftRequest {
            name: None,
            namespace: None,
            repo,
            format: OutputFormat::Table,
            headers: true,
            follow: Follow::Watch,
        }
    }
}

/// Keeps `published` current with the drift `request` asks for (followed), until Ctrl-C; what
/// stops it is published as the reason there is none.
pub async fn publish(
    request: &DriftRequest,
    target: &Target,
    published: tokio::sync::watch::Sender<LiveDrift>,
    printer: &Printer,
) {
    let sink = watch::Sink::Publish(published.clone());
    if let Err(error) = run_into(request, target, Some(sink), printer).await {
        drop(published.send(Some(std::sync::Arc::new(Err(error.to_string())))));
    }
}

/// `kubectl gitops drift`: prints the drift and exits as [`Drift::exit_code`] says.
pub async fn run(request: &DriftRequest, target: &Target, printer: &Printer) -> Result<ExitCode> {
    run_into(request, target, None, printer).await
}

/// What a drift run works on, resolved before any Kustomization is built: the context (the
/// config repo's credentials come from it), the namespace asked, the Kustomizations listed, and
/// the API versions of their kinds and sources.
struct Prepared {
    context: change::Context,
    cluster: Cluster,
    namespace: Option<String>,
    kustomizations_resource: kube::discovery::ApiResource,
    listed: Vec<Value>,
    source_kinds: source::SourceKinds,
}

async fn prepare(request: &DriftRequest, target: &Target, printer: &Printer) -> Result<Prepared> {
    // `-n` names the Kustomizations' namespace here, not only Flux's.
    let flux_target = Target { connection: target.connection.clone(), namespace: None };
    let context = change::context(&flux_target, &request.repo, false, printer).await?;
    let namespace = request.namespace.clone().map(|asked| asked.unwrap_or_else(|| context.namespace.clone()));
    let cluster = context.cluster()?.clone();
    let Some(version) = context.versions.lookup(&KUSTOMIZATION).map(String::from) else {
        return Err(Error::Negative {
            message: "Flux is not installed: this cluster serves no Kustomization API".into(),
            hint: Some("install it with `kubectl gitops install`".into()),
        });
    };
    let kustomizations_resource = KUSTOMIZATION.at(&version);
    let listed =
        kustomizations(&cluster, &kustomizations_resource, namespace.as_deref(), request.name.as_deref()).await?;
    let version = context.versions.lookup(&GIT_REPOSITORY).unwrap_or(GIT_REPOSITORY.version).to_string();
    let oci_version = context.versions.lookup(&OCI_REPOSITORY).map(String::from);
    let source_kinds = source::SourceKinds {
        git: GIT_REPOSITORY.at(&version),
        oci: oci_version.map(|version| OCI_REPOSITORY.at(&version)),
    };
    Ok(Prepared { context, cluster, namespace, kustomizations_resource, listed, source_kinds })
}

/// The drift `request` asks for, once, as `drift -o json` prints it (the MCP tool `drift`).
pub async fn report(request: &DriftRequest, target: &Target, printer: &Printer) -> Result<Drift> {
    let Prepared { mut context, cluster, listed, source_kinds, .. } = prepare(request, target, printer).await?;
    let credentials = crate::change::preview_at::credentials_later(&mut context, &request.repo);
    Ok(compute(&cluster, &source_kinds, listed, credentials, (false, printer)).await?.0)
}

/// [`run`], with what follows the drift sent to `sink` (default: as the request says).
async fn run_into(
    request: &DriftRequest,
    target: &Target,
    sink: Option<watch::Sink>,
    printer: &Printer,
) -> Result<ExitCode> {
    let Prepared { mut context, cluster, namespace, kustomizations_resource, listed, source_kinds } =
        prepare(request, target, printer).await?;
    // Serving binds first: a port in use is said before the work.
    let sink = match (sink, request.follow) {
        (Some(sink), _) => sink,
        (None, Follow::Listen(address)) => watch::Sink::Serve(exporter::serve(address, printer).await?),
        (None, _) => watch::Sink::Print { format: request.format, headers: request.headers },
    };
    let keep = request.follow != Follow::Once;
    let credentials = crate::change::preview_at::credentials_later(&mut context, &request.repo);
    let (drift, kept) = compute(&cluster, &source_kinds, listed, credentials, (keep, printer)).await?;
    if keep {
        let scope = watch::Scope {
            namespace,
            name: request.name.clone(),
            kustomizations: kustomizations_resource,
            source_kinds,
            repo: &request.repo,
            sink,
        };
        return watch::follow(&cluster, &mut context, &scope, (drift, kept), printer).await;
    }
    match request.format {
        OutputFormat::Json | OutputFormat::Yaml => {
            printer.structured(&crate::output::document(&drift), request.format)?
        }
        // A scrape wants the series whether or not there is drift.
        OutputFormat::Prometheus => {
            printer.data(&render::prometheus(&drift))?;
            return Ok(ExitCode::Ok);
        }
        _ => printer.data(&render::text(&drift, request.headers, printer.stdout_style()))?,
    }
    Ok(drift.exit_code())
}

/// What applying `kustomization` from `root`, a checkout of its source at another commit, would
/// change in the cluster: the objects of that build compared as drift compares them (`app
/// rollback --dry-run`'s preview). What the build no longer makes is not listed.
pub async fn preview(
    cluster: &Cluster,
    kustomization: &Value,
    root: &std::path::Path,
    printer: &Printer,
) -> Result<Drift> {
    let flux_cli = Locator::new(None).locate(&Tag::pinned(), printer).await?;
    let mut result = KustomizationDrift {
        namespace: text(kustomization, "/metadata/namespace"),
        name: text(kustomization, "/metadata/name"),
        source: SourceRef::applied_by(kustomization).to_string(),
        revision: String::new(),
        objects: Vec::new(),
        checked: 0,
        error: None,
    };
    match check(Applier::new(cluster), &flux_cli, kustomization, root).await? {
        Ok(tracked) => (result.objects, result.checked) = reported(&tracked),
        Err(why) => result.error = Some(why),
    }
    let kustomizations = vec![result];
    let summary = summarize(&kustomizations);
    Ok(Drift { kustomizations, summary })
}

/// The Kustomizations to look at: in `namespace` (every one with `None`), or the one named.
async fn kustomizations(
    cluster: &Cluster,
    resource: &kube::discovery::ApiResource,
    namespace: Option<&str>,
    name: Option<&str>,
) -> Result<Vec<Value>> {
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(cluster.client.clone(), namespace, resource),
        None => Api::all_with(cluster.client.clone(), resource),
    };
    let mut found = Vec::new();
    let page = |params: ListParams| {
        let api = api.clone();
        async move { api.list(&params).await }
    };
    let each = |object: DynamicObject| {
        if name.is_none_or(|name| object.metadata.name.as_deref() == Some(name))
            && let Ok(object) = serde_json::to_value(object)
        {
            found.push(object);
        }
    };
    list_pages(ListParams::default().limit(500), page, each).await.map_err(|error| cluster.error(error))?;
    if let (Some(name), true) = (name, found.is_empty()) {
        return Err(Error::usage(
            format!("there is no Kustomization {name} in namespace {}", namespace.unwrap_or_default()),
            "`kubectl gitops status` lists them; name the namespace with -n",
        ));
    }
    found.sort_by_key(|object| (object["metadata"]["namespace"].to_string(), object["metadata"]["name"].to_string()));
    Ok(found)
}

/// The drift of each of `listed`: the sources fetched once per applied commit, each
/// Kustomization built and compared; with `keep`, also each Kustomization's compared objects
/// (by the index of its report), for `--watch` to follow.
async fn compute(
    cluster: &Cluster,
    source_kinds: &source::SourceKinds,
    listed: Vec<Value>,
    mut credentials: Credentials<'_>,
    (keep, printer): (bool, &Printer),
) -> Result<(Drift, Vec<Vec<Tracked>>)> {
    let flux_cli = Locator::new(None).locate(&Tag::pinned(), printer).await?;
    let applier = Applier::new(cluster);
    // Each source at each applied commit, fetched once: (source, commit) → checkout or why not.
    let mut checkouts: Vec<((SourceRef, String), std::result::Result<source::Fetched, String>)> = Vec::new();
    let mut results: Vec<KustomizationDrift> = Vec::new();
    let mut to_check: Vec<(usize, Value, std::path::PathBuf)> = Vec::new();
    for kustomization in &listed {
        let source = SourceRef::applied_by(kustomization);
        let revision = kustomization["status"]["lastAppliedRevision"].as_str().unwrap_or_default().to_string();
        let mut result = KustomizationDrift {
            namespace: text(kustomization, "/metadata/namespace"),
            name: text(kustomization, "/metadata/name"),
            source: source.to_string(),
            revision: revision.clone(),
            objects: Vec::new(),
            checked: 0,
            error: None,
        };
        let at = match source::applied_at(&source, &revision) {
            Ok(at) => at,
            Err(why) => {
                results.push(KustomizationDrift { error: Some(why), ..result });
                continue;
            }
        };
        let key = (source.clone(), at.clone());
        if !checkouts.iter().any(|(known, _)| *known == key) {
            let config = credentials.remote().await;
            printer.progress(&format!("fetching {source} at {at}, as Flux last applied it"));
            let fetched = source::fetch(cluster, source_kinds, &source, (&revision, &at), config.as_ref()).await?;
            checkouts.push((key.clone(), fetched));
        }
        match checkouts.iter().find(|(known, _)| *known == key).map(|(_, fetched)| fetched) {
            Some(Ok(fetched)) => to_check.push((results.len(), kustomization.clone(), fetched.root())),
            Some(Err(why)) => result.error = Some(why.clone()),
            None => result.error = Some(format!("{source} was not fetched")),
        }
        results.push(result);
    }
    let spinner = printer.spinner(format!("building and comparing {} Kustomizations", to_check.len()));
    let checks: Vec<_> = to_check
        .iter()
        .map(|(index, kustomization, root)| {
            let applier = applier.clone();
            let flux_cli = &flux_cli;
            async move { (*index, check(applier, flux_cli, kustomization, root).await) }
        })
        .collect();
    let checked: Vec<(usize, Result<Checked>)> = futures::stream::iter(checks).buffered(PARALLEL).collect().await;
    drop(spinner);
    let mut kept: Vec<Vec<Tracked>> = results.iter().map(|_| Vec::new()).collect();
    for (index, outcome) in checked {
        match outcome? {
            Ok(tracked) => {
                (results[index].objects, results[index].checked) = reported(&tracked);
                if keep {
                    kept[index] = tracked;
                }
            }
            Err(why) => results[index].error = Some(why),
        }
    }
    drop(checkouts);
    let summary = summarize(&results);
    Ok((Drift { kustomizations: results, summary }, kept))
}

fn text(object: &Value, pointer: &str) -> String {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// One object as Flux applied it, what comparing it with the cluster found, and the fingerprint
/// of the live object compared with (what `--watch` follows).
struct Tracked {
    desired: desired::Desired,
    outcome: objects::Outcome,
    seen: Option<u64>,
}

/// A Kustomization's objects compared, or why its build failed.
type Checked = std::result::Result<Vec<Tracked>, String>;

/// One Kustomization built from `root` (its source at the applied commit) and each object
/// compared with the cluster. The values its build reads from Secrets are masked in what the
/// report says in words (a build's failure, an API server's refusal).
async fn check(applier: Applier<'_>, flux: &FluxCli, kustomization: &Value, root: &std::path::Path) -> Result<Checked> {
    let secrets = SecretValues::default();
    match check_reading(applier, flux, kustomization, root, &secrets).await {
        Ok(Err(why)) => Ok(Err(secrets.mask(&why))),
        Ok(Ok(mut tracked)) => {
            for tracked in &mut tracked {
                if let objects::Outcome::Drifted(object) = &mut tracked.outcome {
                    object.message = object.message.as_deref().map(|message| secrets.mask(message));
                }
            }
            Ok(Ok(tracked))
        }
        Err(error) => Err(secrets.masked_error(error)),
    }
}

/// [`check`], each Secret value read recorded in `secrets`.
async fn check_reading(
    mut applier: Applier<'_>,
    flux: &FluxCli,
    kustomization: &Value,
    root: &std::path::Path,
    secrets: &SecretValues,
) -> Result<Checked> {
    let desired = match desired::desired(&mut applier, flux, kustomization, root, secrets).await? {
        Ok(desired) => desired,
        Err(why) => return Ok(Err(why)),
    };
    let mut tracked = Vec::with_capacity(desired.len());
    for desired in desired {
        let (outcome, seen) = objects::compare(&mut applier, &desired).await?;
        tracked.push(Tracked { desired, outcome, seen });
    }
    Ok(Ok(tracked))
}

/// What a Kustomization's report says of its compared objects: the drifted ones, in the order of
/// the build, and how many were looked at.
fn reported(tracked: &[Tracked]) -> (Vec<DriftedObject>, usize) {
    let drifted = tracked
        .iter()
        .filter_map(|tracked| match &tracked.outcome {
            objects::Outcome::Drifted(object) => Some((**object).clone()),
            _ => None,
        })
        .collect();
    let checked = tracked.iter().filter(|tracked| !matches!(tracked.outcome, objects::Outcome::Skipped)).count();
    (drifted, checked)
}

fn summarize(kustomizations: &[KustomizationDrift]) -> DriftSummary {
    let mut summary = DriftSummary { kustomizations: kustomizations.len(), ..DriftSummary::default() };
    for kustomization in kustomizations {
        summary.checked += kustomization.checked;
        summary.failed += usize::from(kustomization.error.is_some());
        for object in &kustomization.objects {
            match object.state {
                DriftState::Changed => summary.drifted += 1,
                DriftState::Missing => {
                    summary.drifted += 1;
                    summary.missing += 1;
                }
                DriftState::Unchecked => summary.failed += 1,
            }
        }
    }
    summary
}
