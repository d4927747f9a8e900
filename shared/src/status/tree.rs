//! `kubectl gitops app status NAME`: one app as a tree (source → Kustomization or HelmRelease →
//! HelmChart → what it applied), when it last deployed, its last error, what it waits on, and
//! the commit behind the applied revision. `--wait` and `--watch` are in watch.rs.
//!
//! Unlike the `status` listing, this reads one app with a handful of GETs (the app, its source
//! and chart, its dependencies, its workloads), at the versions discovery says are served.

use std::time::Duration;

use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;
use serde::Serialize;

use super::collect::{
    Index, Key, chart_key, helm_release_row, key, kustomization_row, object_status, reference, require_flux, resource,
    text,
};
use super::{AppState, AppStatus, ObjectStatus, shorten_revision};
use crate::cli::OutputFormat;
use crate::cluster::{Cluster, is_forbidden};
use crate::duration;
use crate::error::{Error, ExitCode, Result};
use crate::flux::api::{self as flux_api, FluxKind, HELM_RELEASE, KUSTOMIZATION, ServedApis};
use crate::flux::status::FluxObject;
use crate::git::Remote;
use crate::git::log::{CommitInfo, show_commit};
use crate::output::Printer;
use crate::output::style::Style;

/// Ready=False reasons that mean "waiting for something else", not a failure of the app itself.
/// (kustomize-controller's `ArtifactFailed` is not one: it also means "path not found"; a source
/// without an artifact shows as the source's own failure, earlier in the chain.)
pub(crate) const WAITING_REASONS: [&str; 2] = ["DependencyNotReady", "Progressing"];
/// The kinds whose replicas the tree shows.
pub(super) const WORKLOAD_KINDS: [&str; 3] = ["Deployment", "StatefulSet", "DaemonSet"];

/// One object the app applied, from its inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InventoryItem {
    /// e.g. `ConfigMap`.
    pub kind: String,
    /// API group, empty for the core group.
    pub group: String,
    /// Namespace, `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

/// A Deployment, StatefulSet or DaemonSet the app runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Workload {
    /// `Deployment`, `StatefulSet` or `DaemonSet`.
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Desired replicas (a DaemonSet's desired pods).
    pub replicas: i64,
    /// Ready replicas.
    pub ready_replicas: i64,
    /// All desired replicas are ready.
    pub ready: bool,
    /// Why it could not be read (not found, forbidden).
    pub message: Option<String>,
}

/// The last successful deployment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastDeployed {
    /// When, RFC 3339; `None` while the app is not Ready (a Kustomization records no time then).
    pub time: Option<String>,
    /// What: a Kustomization's applied revision, a HelmRelease's chart version.
    pub revision: String,
    /// The chart's appVersion, for a HelmRelease.
    pub app_version: Option<String>,
}

/// Everything `app status` prints; `-o json|yaml` prints exactly this (docs/output.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppReport {
    /// The app as the `status` listing shows it; `objects` is its chain of Flux objects, source first.
    pub app: AppStatus,
    /// The objects named by `spec.dependsOn`.
    pub dependencies: Vec<ObjectStatus>,
    /// What the app applied.
    pub inventory: Vec<InventoryItem>,
    /// The Deployments, StatefulSets and DaemonSets among them.
    pub workloads: Vec<Workload>,
    /// The last successful deployment.
    pub last_deployed: Option<LastDeployed>,
    /// The first object of the chain that failed (Ready=False for a reason other than waiting).
    pub last_error: Option<ObjectStatus>,
    /// What the app waits for: dependencies not ready, sources without an artifact, missing objects.
    pub waiting_on: Vec<ObjectStatus>,
    /// The commit behind the applied revision, when the source is a git repository.
    pub commit: Option<CommitInfo>,
}

/// The app named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AppRef {
    pub(super) namespace: String,
    pub(super) name: String,
}

impl AppRef {
    /// The error for an app that does not exist.
    pub(super) fn not_found(&self) -> Error {
        Error::Usage {
            message: format!(
                "app {:?} not found: no Kustomization or HelmRelease {:?} in namespace {}",
                self.name, self.name, self.namespace
            ),
            hint: Some(format!(
                "`kubectl gitops status -n {}` lists the apps there; -n picks another namespace",
                self.namespace
            )),
        }
    }
}

/// The objects one look at the app read.
#[derive(Debug, Clone)]
pub(super) struct Gathered {
    /// The Kustomization or HelmRelease.
    pub(super) app: DynamicObject,
    /// Its source and chart, keyed as the listing keys them.
    pub(super) sources: Index,
    /// Referenced objects that do not exist (source, chart, dependencies).
    pub(super) missing: Vec<ObjectStatus>,
    /// The objects of `spec.dependsOn` that exist.
    pub(super) dependencies: Vec<DynamicObject>,
    /// The inventory.
    pub(super) inventory: Vec<InventoryItem>,
    /// The workloads, read.
    pub(super) workloads: Vec<Workload>,
}

impl Gathered {
    /// Whether the app is a HelmRelease.
    pub(super) fn is_helm(&self) -> bool {
        key(&self.app).0 == HELM_RELEASE.kind
    }
}

/// 0 when the app is ready or suspended, 1 otherwise.
pub fn exit_code(report: &AppReport) -> ExitCode {
    match report.app.state {
        AppState::Ready | AppState::Suspended => ExitCode::Ok,
        AppState::Failing | AppState::Progressing => ExitCode::No,
    }
}

/// Prints the report on stdout in the chosen format.
pub(super) fn print(report: &AppReport, format: OutputFormat, printer: &Printer) -> Result<()> {
    printer.data(&render(report, format, printer.stdout_style())?)
}

/// The report as text in the chosen format (the tree for `table`).
pub(super) fn render(report: &AppReport, format: OutputFormat, style: Style) -> Result<String> {
    match format {
        OutputFormat::Json | OutputFormat::Yaml => crate::output::render_structured(report, format),
        _ => Ok(render_tree(report, style, duration::now())),
    }
}

/// Reads the app again and again (`--wait`, `--watch`), fetching each applied commit from git once.
pub(super) struct Viewer {
    pub(super) cluster: Cluster,
    pub(super) served: ServedApis,
    pub(super) app: AppRef,
    git: bool,
    pub(super) printer: Printer,
    /// The last commit looked up, by hash; `None` inside when the lookup failed (warned once).
    commit: Option<(String, Option<CommitInfo>)>,
}

impl Viewer {
    pub(super) fn new(cluster: Cluster, served: ServedApis, app: AppRef, git: bool, printer: Printer) -> Viewer {
        Viewer { cluster, served, app, git, printer, commit: None }
    }

    /// Reads the app and builds its report; `None` when it does not exist. `whole` reads its
    /// workloads and the commit too; a wait judges without them and reads them at the end.
    pub(super) async fn look(&mut self, whole: bool) -> Result<Option<(Gathered, AppReport)>> {
        let Some(gathered) = gather(&self.cluster, &self.served, &self.app, whole).await? else { return Ok(None) };
        let mut report = build_report(&gathered);
        if whole && self.git {
            report.commit = self.commit(&gathered).await;
        }
        Ok(Some((gathered, report)))
    }

    async fn commit(&mut self, gathered: &Gathered) -> Option<CommitInfo> {
        let (source, reference, sha) = applied_commit(gathered)?;
        if let Some((seen, info)) = &self.commit
            && *seen == sha
        {
            return info.clone();
        }
        let info = match lookup_commit(&self.cluster, source, reference.as_deref(), &sha).await {
            Ok(info) => Some(info),
            Err(why) => {
                self.printer.warning(&format!("cannot show commit {}: {why}", &sha[..sha.len().min(12)]));
                None
            }
        };
        self.commit = Some((sha, info.clone()));
        info
    }
}

/// The Flux kinds this cluster serves, from one discovery request.
pub(super) async fn served_apis(cluster: &Cluster) -> Result<ServedApis> {
    let discovery = cluster.client.list_api_groups_aggregated().await.map_err(|error| cluster.error(error))?;
    let served = ServedApis::from_discovery(&discovery);
    require_flux(&served)?;
    Ok(served)
}

/// The Flux kind of a `kind:` field (`GitRepository`, …), when it is one we know.
pub(super) fn flux_kind(kind: &str) -> Option<&'static FluxKind> {
    flux_api::ALL.iter().find(|known| known.kind == kind)
}

/// GET one object; `Ok(None)` when it or its kind does not exist.
async fn get(
    cluster: &Cluster,
    resource: Option<ApiResource>,
    namespace: &str,
    name: &str,
) -> Result<Option<DynamicObject>> {
    let Some(resource) = resource else { return Ok(None) };
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), namespace, &resource);
    api.get_opt(name).await.map_err(|error| cluster.error(error))
}

/// GET a Flux object by kind name.
async fn get_flux(
    cluster: &Cluster,
    served: &ServedApis,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Result<Option<DynamicObject>> {
    get(cluster, flux_kind(kind).and_then(|kind| resource(served, kind)), namespace, name).await
}

/// A placeholder for a referenced object that does not exist.
fn missing((kind, namespace, name): Key) -> ObjectStatus {
    ObjectStatus {
        kind,
        namespace,
        name,
        ready: "Unknown".into(),
        reason: Some("NotFound".into()),
        message: Some("not found".into()),
        revision: None,
        suspended: false,
    }
}

/// The references an app makes to Flux objects: its source, its HelmChart (a HelmRelease with
/// `spec.chart`), and its dependencies.
pub(super) fn references(app: &DynamicObject) -> (Vec<Key>, Vec<Key>) {
    let (kind, namespace, _) = key(app);
    let mut sources = Vec::new();
    if let Some(source) = app.source_ref().and_then(|reference| reference.key("", &namespace)) {
        sources.push(source);
    }
    if let Some(chart) = app.chart_ref().and_then(|reference| reference.key("", &namespace)) {
        sources.push(chart);
    }
    if let Some(source) = app.chart_source_ref().and_then(|reference| reference.key("", &namespace)) {
        sources.push(chart_key(app, &source.1));
        sources.push(source);
    }
    let dependencies = app
        .data
        .pointer("/spec/dependsOn")
        .and_then(|list| list.as_array())
        .map(|list| list.iter().filter_map(|entry| reference(Some(entry), &kind, &namespace)).collect())
        .unwrap_or_default();
    (sources, dependencies)
}

/// Reads the app and what it refers to (`with_workloads`: its workloads too); `None` when no
/// Kustomization or HelmRelease has its name.
pub(super) async fn gather(
    cluster: &Cluster,
    served: &ServedApis,
    app: &AppRef,
    with_workloads: bool,
) -> Result<Option<Gathered>> {
    let (kustomization, release) = tokio::join!(
        get(cluster, resource(served, &KUSTOMIZATION), &app.namespace, &app.name),
        get(cluster, resource(served, &HELM_RELEASE), &app.namespace, &app.name),
    );
    // A Kustomization wins over a HelmRelease of the same name: it is what `app add` creates
    // for manifests, and the HelmRelease usually sits inside it.
    let Some(object) = kustomization?.or(release?) else { return Ok(None) };
    let (source_refs, dependency_refs) = references(&object);
    let lookups = source_refs
        .iter()
        .chain(&dependency_refs)
        .map(|(kind, namespace, name)| get_flux(cluster, served, kind, namespace, name));
    let found = futures::future::try_join_all(lookups).await?;
    let (found_sources, found_dependencies) = found.split_at(source_refs.len());
    let mut sources = Index::new();
    let mut missing_objects = Vec::new();
    for (wanted, found) in source_refs.iter().zip(found_sources) {
        match found {
            Some(object) => {
                sources.insert(key(object), object.clone());
            }
            None => missing_objects.push(missing(wanted.clone())),
        }
    }
    let mut dependencies = Vec::new();
    for (wanted, found) in dependency_refs.iter().zip(found_dependencies) {
        match found {
            Some(object) => dependencies.push(object.clone()),
            None => missing_objects.push(missing(wanted.clone())),
        }
    }
    let mut inventory = inventory(&object);
    let mut workloads = Vec::new();
    if with_workloads {
        if inventory.is_empty() && key(&object).0 == HELM_RELEASE.kind {
            inventory = labelled_workloads(cluster, &object).await?;
        }
        workloads = read_workloads(cluster, &inventory).await?;
    }
    Ok(Some(Gathered { app: object, sources, missing: missing_objects, dependencies, inventory, workloads }))
}

/// `status.inventory.entries[].id`, `<namespace>_<name>_<group>_<Kind>` (a Kustomization's, and a
/// HelmRelease's since Flux v2.9).
fn inventory(app: &DynamicObject) -> Vec<InventoryItem> {
    let entries = app.data.pointer("/status/inventory/entries").and_then(|e| e.as_array());
    entries.into_iter().flatten().filter_map(|entry| entry.get("id")?.as_str()).filter_map(parse_inventory_id).collect()
}

/// Splits an inventory id. Namespaces, groups and kinds hold no `_`; names may (RBAC names
/// encode `:` as `__`), so the name is what lies between the first and the last two.
pub(super) fn parse_inventory_id(id: &str) -> Option<InventoryItem> {
    let (namespace, rest) = id.split_once('_')?;
    let (rest, kind) = rest.rsplit_once('_')?;
    let (name, group) = rest.rsplit_once('_')?;
    Some(InventoryItem {
        kind: kind.to_string(),
        group: group.to_string(),
        namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
        name: name.replace("__", ":"),
    })
}

/// A HelmRelease without an inventory (helm-controller before Flux v2.9): its workloads are found
/// by the labels helm-controller puts on every object it releases, or else by Helm's instance label.
async fn labelled_workloads(cluster: &Cluster, release: &DynamicObject) -> Result<Vec<InventoryItem>> {
    let (_, namespace, name) = key(release);
    let target = text(release, "/spec/targetNamespace").unwrap_or_else(|| namespace.clone());
    let release_name = text(release, "/status/history/0/name").unwrap_or_else(|| name.clone());
    let selectors = [
        format!("helm.toolkit.fluxcd.io/name={name},helm.toolkit.fluxcd.io/namespace={namespace}"),
        format!("app.kubernetes.io/instance={release_name}"),
    ];
    for selector in selectors {
        let mut found = Vec::new();
        for kind in WORKLOAD_KINDS {
            let api: Api<DynamicObject> =
                Api::namespaced_with(cluster.client.clone(), &target, &workload_resource(kind));
            match api.list(&ListParams::default().labels(&selector)).await {
                Ok(list) => found.extend(list.items.iter().map(|object| InventoryItem {
                    kind: kind.to_string(),
                    group: "apps".to_string(),
                    namespace: Some(target.clone()),
                    name: object.metadata.name.clone().unwrap_or_default(),
                })),
                Err(error) if is_forbidden(&error) => {}
                Err(error) => return Err(cluster.error(error)),
            }
        }
        if !found.is_empty() {
            return Ok(found);
        }
    }
    Ok(Vec::new())
}

/// `apps/v1` Deployment, StatefulSet or DaemonSet.
pub(super) fn workload_resource(kind: &str) -> ApiResource {
    let plural = format!("{}s", kind.to_lowercase());
    ApiResource::from_gvk_with_plural(&kube::core::GroupVersionKind::gvk("apps", "v1", kind), &plural)
}

/// Reads every workload of the inventory, concurrently.
async fn read_workloads(cluster: &Cluster, inventory: &[InventoryItem]) -> Result<Vec<Workload>> {
    let wanted = inventory.iter().filter(|item| item.group == "apps" && WORKLOAD_KINDS.contains(&item.kind.as_str()));
    let reads = wanted.map(|item| async move {
        let namespace = item.namespace.clone().unwrap_or_default();
        let api: Api<DynamicObject> =
            Api::namespaced_with(cluster.client.clone(), &namespace, &workload_resource(&item.kind));
        let read = api.get_opt(&item.name).await;
        let unread = |message: &str| Workload {
            kind: item.kind.clone(),
            namespace: namespace.clone(),
            name: item.name.clone(),
            replicas: 0,
            ready_replicas: 0,
            ready: false,
            message: Some(message.to_string()),
        };
        match read {
            Ok(Some(object)) => Ok(workload(&item.kind, &object)),
            Ok(None) => Ok(unread("not found")),
            Err(error) if is_forbidden(&error) => Ok(unread("forbidden")),
            Err(error) => Err(cluster.error(error)),
        }
    });
    futures::future::try_join_all(reads).await
}

fn workload(kind: &str, object: &DynamicObject) -> Workload {
    let number = |pointer: &str| object.data.pointer(pointer).and_then(|v| v.as_i64());
    let (replicas, ready_replicas) = if kind == "DaemonSet" {
        (number("/status/desiredNumberScheduled").unwrap_or(0), number("/status/numberReady").unwrap_or(0))
    } else {
        // spec.replicas defaults to 1 when left out.
        (number("/spec/replicas").unwrap_or(1), number("/status/readyReplicas").unwrap_or(0))
    };
    let (_, namespace, name) = key(object);
    Workload {
        kind: kind.to_string(),
        namespace,
        name,
        replicas,
        ready_replicas,
        ready: ready_replicas >= replicas,
        message: None,
    }
}

/// The report of what was read (everything but the commit).
pub(super) fn build_report(gathered: &Gathered) -> AppReport {
    let app = if gathered.is_helm() {
        helm_release_row(&gathered.app, &gathered.sources)
    } else {
        kustomization_row(&gathered.app, &gathered.sources)
    };
    // A missing object of the app's own kind is a dependency; any other, a source or chart.
    let (missing_dependencies, missing_sources): (Vec<&ObjectStatus>, Vec<&ObjectStatus>) =
        gathered.missing.iter().partition(|m| m.kind == key(&gathered.app).0);
    let dependencies: Vec<ObjectStatus> = gathered
        .dependencies
        .iter()
        .map(|dependency| object_status(dependency, text(dependency, "/status/lastAppliedRevision")))
        .chain(missing_dependencies.into_iter().cloned())
        .collect();
    let chain_before_app = &app.objects[..app.objects.len().saturating_sub(1)];
    let mut waiting_on: Vec<ObjectStatus> = dependencies.iter().filter(|d| d.ready != "True").cloned().collect();
    waiting_on.extend(missing_sources.into_iter().cloned());
    waiting_on.extend(chain_before_app.iter().filter(|source| source.revision.is_none()).map(|source| ObjectStatus {
        message: Some(format!("no artifact yet: {}", source.message.as_deref().unwrap_or("not fetched"))),
        ..source.clone()
    }));
    let last_error = app
        .objects
        .iter()
        .find(|object| object.ready == "False" && !WAITING_REASONS.contains(&object.reason.as_deref().unwrap_or("")))
        .cloned();
    let app_version = gathered.app.deployed().and_then(|deployed| deployed.app_version).map(String::from);
    let last_deployed = app.applied_revision.clone().map(|revision| LastDeployed {
        time: app.last_deployed.clone(),
        revision,
        app_version,
    });
    AppReport {
        app,
        dependencies,
        inventory: gathered.inventory.clone(),
        workloads: gathered.workloads.clone(),
        last_deployed,
        last_error,
        waiting_on,
        commit: None,
    }
}

/// The git source, the ref and the commit behind what the app applied: a Kustomization's
/// applied revision of a GitRepository (`main@sha1:<sha>`), or a HelmRelease's chart built
/// from a GitRepository (the HelmChart's `observedSourceArtifactRevision`).
pub(super) fn applied_commit(gathered: &Gathered) -> Option<(&DynamicObject, Option<String>, String)> {
    let source = gathered.sources.values().find(|object| key(object).0 == "GitRepository")?;
    let revision = if gathered.is_helm() {
        let chart = gathered.sources.values().find(|object| key(object).0 == "HelmChart")?;
        text(chart, "/status/observedSourceArtifactRevision")?
    } else {
        gathered.app.last_applied_revision()?.to_string()
    };
    let (name, sha) = match revision.split_once("@sha1:") {
        Some((name, sha)) => (Some(name), sha),
        None => (None, revision.strip_prefix("sha1:")?),
    };
    let is_tag = source.data.pointer("/spec/ref/tag").is_some() || source.data.pointer("/spec/ref/semver").is_some();
    let reference = name.map(|name| match name {
        full if full.starts_with("refs/") => full.to_string(),
        tag if is_tag => format!("refs/tags/{tag}"),
        branch => format!("refs/heads/{branch}"),
    });
    Some((source, reference, sha.to_string()))
}

/// Fetches one commit with the credentials of the GitRepository's Secret.
async fn lookup_commit(
    cluster: &Cluster,
    source: &DynamicObject,
    reference: Option<&str>,
    sha: &str,
) -> std::result::Result<CommitInfo, String> {
    let remote = git_remote(cluster, source).await?;
    let (reference, sha) = (reference.map(String::from), sha.to_string());
    run_git(move || show_commit(&remote, reference.as_deref(), &sha)).await
}

/// The URL of a GitRepository and the credentials of its Secret, as Flux reaches it.
pub(super) async fn git_remote(cluster: &Cluster, source: &DynamicObject) -> std::result::Result<Remote, String> {
    let url = source.url().ok_or("the GitRepository has no URL")?;
    let secret = text(source, "/spec/secretRef/name");
    crate::repo_access::flux_remote(cluster, source.namespace(), url, secret.as_deref()).await
}

/// Runs a libgit2 call off the async threads, giving up after [`crate::timeouts::GIT_READ`].
pub(super) async fn run_git<T: Send + 'static>(
    call: impl FnOnce() -> std::result::Result<T, crate::git::GitError> + Send + 'static,
) -> std::result::Result<T, String> {
    crate::git::off_runtime(crate::timeouts::GIT_READ, call).await.map_err(|error| error.to_string())
}

/// The tree, then the last deployment, commit, last error and what the app waits on.
/// `now` (seconds since the epoch) makes ages testable.
pub fn render_tree(report: &AppReport, style: Style, now: u64) -> String {
    let app = &report.app;
    let state = format!("{:?}", app.state).to_lowercase();
    let state = match app.state {
        AppState::Ready => style.good(&state),
        AppState::Failing => style.bad(&state),
        AppState::Progressing | AppState::Suspended => style.warn(&state),
    };
    let kind = format!("{:?}", app.kind).to_lowercase();
    let mut text = format!("{} ({kind}): {state}\n", style.bold(&format!("App {}/{}", app.namespace, app.name)));
    // The chain is a path (source → chart → app), each object a child of the one before.
    let mut indent = String::new();
    for (index, object) in app.objects.iter().enumerate() {
        let branch = if index == 0 { "" } else { "└── " };
        text.push_str(&format!("{indent}{branch}{}\n", node(object, style)));
        if index > 0 {
            indent.push_str("    ");
        }
    }
    let children: Vec<String> = report
        .inventory
        .iter()
        .map(|item| {
            let name = match &item.namespace {
                Some(namespace) => format!("{}/{namespace}/{}", item.kind, item.name),
                None => format!("{}/{}", item.kind, item.name),
            };
            let workload = report
                .workloads
                .iter()
                .find(|w| w.kind == item.kind && Some(&w.namespace) == item.namespace.as_ref() && w.name == item.name);
            match workload {
                Some(workload) => format!("{name}  {}", replicas(workload, style)),
                None => name,
            }
        })
        .collect();
    for (index, child) in children.iter().enumerate() {
        let branch = if index + 1 == children.len() { "└── " } else { "├── " };
        text.push_str(&format!("{indent}{branch}{child}\n"));
    }
    text.push('\n');
    let none = || style.dim("none");
    let deployed = match &report.last_deployed {
        Some(deployed) => {
            let when = deployed.time.as_deref().map_or("time unknown".to_string(), |time| {
                let ago = duration::parse_timestamp(time)
                    .map(|then| {
                        format!(", {} ago", duration::format_age(Duration::from_secs(now.saturating_sub(then))))
                    })
                    .unwrap_or_default();
                format!("{time}{ago}")
            });
            let app_version = deployed.app_version.as_deref().map(|v| format!(" (app {v})")).unwrap_or_default();
            format!("{}{app_version} at {when}", shorten_revision(&deployed.revision))
        }
        None => none(),
    };
    text.push_str(&format!("Last deployed: {deployed}\n"));
    if let Some(commit) = &report.commit {
        text.push_str(&format!(
            "Commit:        {} {} ({} <{}>, {})\n",
            &commit.sha[..commit.sha.len().min(12)],
            commit.subject,
            commit.author,
            commit.email,
            commit.time
        ));
    }
    let error = match &report.last_error {
        Some(failed) => style.bad(&describe(failed)),
        None => none(),
    };
    text.push_str(&format!("Last error:    {error}\n"));
    if report.waiting_on.is_empty() {
        text.push_str(&format!("Waiting on:    {}\n", none()));
    }
    for (index, waiting) in report.waiting_on.iter().enumerate() {
        let label = if index == 0 { "Waiting on:" } else { "" };
        text.push_str(&format!("{label:<15}{}\n", describe(waiting)));
    }
    text
}

/// `Kind/namespace/name  Ready  revision  message` for one Flux object.
fn node(object: &ObjectStatus, style: Style) -> String {
    let ready = match object.ready.as_str() {
        "True" => style.good("Ready"),
        "False" => style.bad("Failed"),
        _ => style.warn("Unknown"),
    };
    let mut line = format!("{}/{}/{}  {ready}", object.kind, object.namespace, object.name);
    if object.suspended {
        line.push_str(&format!("  {}", style.warn("suspended")));
    }
    if let Some(revision) = &object.revision {
        line.push_str(&format!("  {}", shorten_revision(revision)));
    }
    if let Some(message) = &object.message {
        line.push_str(&format!("  {}", style.dim(&shorten_revision(message))));
    }
    line
}

fn replicas(workload: &Workload, style: Style) -> String {
    if let Some(message) = &workload.message {
        return style.warn(message);
    }
    let text = format!("{}/{} ready", workload.ready_replicas, workload.replicas);
    if workload.ready { style.good(&text) } else { style.warn(&text) }
}

/// `Kind namespace/name: reason: message`, for one-line explanations.
pub(super) fn describe(object: &ObjectStatus) -> String {
    let reason = object.reason.as_deref().map(|r| format!("{r}: ")).unwrap_or_default();
    let message = object.message.as_deref().unwrap_or("not ready");
    format!("{} {}/{}: {reason}{message}", object.kind, object.namespace, object.name)
}

#[cfg(test)]
mod tests;
