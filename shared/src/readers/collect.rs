//! Reading the Flux objects: one paginated LIST per kind, concurrently, then joining rows.

use std::collections::HashMap;
use std::ops::Deref;

use kube::Resource;
use kube::api::{DynamicObject, ListParams};
use kube::discovery::ApiResource;

use super::{AppKind, AppState, AppStatus, ObjectStatus, Report, Runtime, Summary, summarize};
use crate::cluster::{Cluster, is_forbidden};
use crate::detect;
use crate::error::{Error, Result};
use crate::flux::api::{
    FluxKind, GIT_REPOSITORY, HELM_CHART, HELM_RELEASE, HELM_REPOSITORY, KUSTOMIZATION, OCI_REPOSITORY, ServedApis,
};
use crate::flux::bootstrap;
pub(super) use crate::flux::status::Key;
use crate::flux::status::{FluxObject, Listed, Page, Reference};

/// Page size of each LIST.
const PAGE: u32 = 500;

/// Which namespaces to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// One namespace.
    Namespace(String),
    /// Every namespace (`-A`).
    All,
}

/// Objects by (kind, namespace, name).
pub(super) type Index = HashMap<Key, DynamicObject>;

/// Reads the runtime and every Kustomization and HelmRelease in scope with their sources.
pub async fn collect(cluster: &Cluster, scope: &Scope) -> Result<Report> {
    collect_labelled(cluster, scope, None).await
}

/// [`collect`], of the Kustomizations and HelmReleases whose labels match `labels` (`-l`).
pub async fn collect_labelled(cluster: &Cluster, scope: &Scope, labels: Option<&str>) -> Result<Report> {
    collect_detected(cluster, scope, labels, detect_flux(cluster).await?).await
}

/// [`collect_labelled`] for a caller that has detected the cluster already (detection is five
/// requests).
pub async fn collect_detected(
    cluster: &Cluster,
    scope: &Scope,
    labels: Option<&str>,
    detection: detect::Detection,
) -> Result<Report> {
    require_flux(&detection.api_versions)?;
    let listed = list_all(cluster, &detection.api_versions, scope, labels).await;
    join(cluster, runtime(detection), listed)
}

/// What one LIST gave: the objects, `None` when the kind is not served, or the error and the
/// kind's plural.
type ListOutcome = Result<Option<Vec<Listed>>, (String, kube::Error)>;

/// The LISTs of the six kinds, concurrently: sources (git, OCI, Helm repositories, charts), then
/// apps (Kustomizations, HelmReleases), these of them only whose labels match `labels`.
async fn list_all(cluster: &Cluster, served: &ServedApis, scope: &Scope, labels: Option<&str>) -> [ListOutcome; 6] {
    let (git, oci, helm_repositories, charts, kustomizations, releases) = tokio::join!(
        list(cluster, served, &GIT_REPOSITORY, scope, None),
        list(cluster, served, &OCI_REPOSITORY, scope, None),
        list(cluster, served, &HELM_REPOSITORY, scope, None),
        list(cluster, served, &HELM_CHART, scope, None),
        list(cluster, served, &KUSTOMIZATION, scope, labels),
        list(cluster, served, &HELM_RELEASE, scope, labels),
    );
    [git, oci, helm_repositories, charts, kustomizations, releases]
}

/// The report of what the LISTs gave: apps joined with their sources.
fn join(cluster: &Cluster, runtime: Runtime, listed: [ListOutcome; 6]) -> Result<Report> {
    let [git, oci, helm_repositories, charts, kustomizations, releases] = listed;
    let mut forbidden = Vec::new();
    let mut sources = Listing::new();
    for listed in [git, oci, helm_repositories, charts] {
        for object in keep(&cluster.server, listed, &mut forbidden)? {
            sources.insert(object.key(), object);
        }
    }
    let mut apps = keep(&cluster.server, kustomizations, &mut forbidden)?;
    apps.extend(keep(&cluster.server, releases, &mut forbidden)?);
    Ok(assemble(runtime, apps.iter(), &sources, forbidden))
}

/// Where objects are found by (kind, namespace, name): a [`Listing`], an [`Index`], or what
/// watches delivered.
pub(super) trait Lookup {
    /// What it holds.
    type Object: FluxObject;

    /// The object with this key, when there is one: a reference, or a shared pointer into a
    /// watch's store.
    fn find<'a>(&'a self, key: &Key) -> Option<impl Deref<Target = Self::Object> + use<'a, Self>>;
}

/// Listed objects by (kind, namespace, name).
pub(super) type Listing = HashMap<Key, Listed>;

impl Lookup for Listing {
    type Object = Listed;

    fn find<'a>(&'a self, key: &Key) -> Option<impl Deref<Target = Listed> + use<'a>> {
        self.get(key)
    }
}

impl Lookup for Index {
    type Object = DynamicObject;

    fn find<'a>(&'a self, key: &Key) -> Option<impl Deref<Target = DynamicObject> + use<'a>> {
        self.get(key)
    }
}

/// Detects the cluster; an error when it is unreachable or serves no Flux API status reads.
pub(super) async fn detect_flux(cluster: &Cluster) -> Result<detect::Detection> {
    let detection = detect::detect(cluster).await?;
    if let Some(error) = detection.unreachable_error() {
        return Err(error);
    }
    require_flux(&detection.api_versions)?;
    Ok(detection)
}

/// The header's part of a detection.
pub(super) fn runtime(detection: detect::Detection) -> Runtime {
    Runtime {
        namespace: detection.flux.as_ref().map(|flux| flux.namespace.clone()),
        version: detection.flux.as_ref().and_then(|flux| flux.version.clone()),
        controllers: detection.controllers,
        config: detection.gitops,
    }
}

/// The report of Kustomizations and HelmReleases (`apps`, any order) joined with their sources.
pub(super) fn assemble<'a, O: FluxObject + 'a>(
    flux: Runtime,
    apps: impl Iterator<Item = &'a O>,
    sources: &impl Lookup<Object = O>,
    forbidden: Vec<String>,
) -> Report {
    let mut rows: Vec<(Section, AppStatus)> = apps
        .map(|object| {
            let row = if object.kind() == HELM_RELEASE.kind {
                helm_release_row(object, sources)
            } else {
                kustomization_row(object, sources)
            };
            (Section::of(object, &row, flux.namespace.as_deref()), row)
        })
        .collect();
    rows.sort_by(|(_, a), (_, b)| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let mut report = Report {
        flux,
        platform: Vec::new(),
        apps: Vec::new(),
        tenants: Vec::new(),
        config_repo: Vec::new(),
        other_flux_objects: Vec::new(),
        forbidden,
        summary: Summary::default(),
    };
    for (section, row) in rows {
        match section {
            Section::Platform => report.platform.push(row),
            Section::Apps => report.apps.push(row),
            Section::Tenants => report.tenants.push(row),
            Section::ConfigRepo => report.config_repo.push(row),
            Section::Other => report.other_flux_objects.push(row),
        }
    }
    report.summary = summarize(report.rows());
    report
}

/// Which of the report's sections a row belongs to.
enum Section {
    Platform,
    Apps,
    Tenants,
    ConfigRepo,
    Other,
}

impl Section {
    /// A tenant's row by its label; ours by the managed-by label, platform apps by their tier;
    /// the config repo's by name: the sync and the layers, Kustomizations of the Flux namespace
    /// (`flux_namespace`), which carry no label of ours (labelled, they would be listed as apps).
    fn of(object: &impl FluxObject, row: &AppStatus, flux_namespace: Option<&str>) -> Section {
        if row.tenant.is_some() {
            Section::Tenants
        } else if object.is_ours() {
            if row.platform { Section::Platform } else { Section::Apps }
        } else if applies_the_config_repo(object, flux_namespace) {
            Section::ConfigRepo
        } else {
            Section::Other
        }
    }
}

/// One of the Kustomizations that apply the config repo (the sync and the layers): by name, in
/// the Flux namespace (`flux_namespace`), without our label (labelled, it is an app). `status`
/// lists them apart, and `metrics dora` counts no deployment of theirs as an app's.
pub(crate) fn applies_the_config_repo(object: &impl FluxObject, flux_namespace: Option<&str>) -> bool {
    !object.is_ours()
        && object.kind() == KUSTOMIZATION.kind
        && flux_namespace == Some(object.namespace())
        && bootstrap::applies_the_config_repo(object.name())
}

/// An error for a cluster without the Flux APIs status reads (no Kustomization, no HelmRelease).
pub(super) fn require_flux(served: &ServedApis) -> Result<()> {
    if served.version_for(&KUSTOMIZATION).is_none() && served.version_for(&HELM_RELEASE).is_none() {
        return Err(Error::Negative {
            message: "Flux is not installed: this cluster serves no Kustomization or HelmRelease API".into(),
            hint: Some("install it with `kubectl gitops install`".into()),
        });
    }
    Ok(())
}

/// Every object of a kind in scope, page by page; `Ok(None)` when the kind is not served.
///
/// Each page is parsed straight into [`Listed`] objects, so inventories, histories and managed
/// fields are skipped by the parser instead of being built and dropped.
async fn list(
    cluster: &Cluster,
    served: &ServedApis,
    kind: &'static FluxKind,
    scope: &Scope,
    labels: Option<&str>,
) -> ListOutcome {
    let Some(resource) = resource(served, kind) else { return Ok(None) };
    let failed = |error| (kind.plural.to_string(), error);
    let namespace = match scope {
        Scope::All => None,
        Scope::Namespace(namespace) => Some(namespace.as_str()),
    };
    let request = kube::core::Request::new(DynamicObject::url_path(&resource, namespace));
    let mut items = Vec::new();
    let mut params = ListParams::default().limit(PAGE);
    if let Some(labels) = labels {
        params = params.labels(labels);
    }
    loop {
        let mut http = request.list(&params).map_err(|error| failed(kube::Error::BuildRequest(error)))?;
        http.extensions_mut().insert("list");
        let page: Page = cluster.client.request(http).await.map_err(failed)?;
        let next = page.next().map(str::to_string);
        items.extend(page.items.into_iter().map(|object| object.of_kind(kind.kind)));
        match next {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    Ok(Some(items))
}

/// The API resource of a Flux kind at the version the cluster serves (older Flux releases serve
/// older versions: source v1beta2, helm v2beta1); `None` when the kind is not served.
pub(crate) fn resource(served: &ServedApis, kind: &FluxKind) -> Option<ApiResource> {
    let version = served.version_for(kind)?;
    Some(kind.at(version))
}

/// The objects of one LIST; a forbidden LIST is noted and skipped, other errors fail.
fn keep(server: &str, listed: ListOutcome, forbidden: &mut Vec<String>) -> Result<Vec<Listed>> {
    match listed {
        Ok(objects) => Ok(objects.unwrap_or_default()),
        Err((plural, error)) if is_forbidden(&error) => {
            let message = match &error {
                kube::Error::Api(status) => status.message.clone(),
                other => other.to_string(),
            };
            forbidden.push(format!("{plural}: {message}"));
            Ok(Vec::new())
        }
        Err((_, error)) => Err(crate::cluster::classify(server, error)),
    }
}

pub(super) fn key(object: &DynamicObject) -> Key {
    object.key()
}

pub(super) fn text(object: &DynamicObject, pointer: &str) -> Option<String> {
    object.data.pointer(pointer).and_then(|value| value.as_str()).map(String::from)
}

/// The Ready condition: (status, reason, message, lastTransitionTime); `Unknown` when absent.
fn ready(object: &impl FluxObject) -> (String, Option<String>, Option<String>, Option<String>) {
    let owned = |field: Option<&str>| field.map(String::from);
    match object.ready_condition() {
        Some(found) => (
            found.status.unwrap_or("Unknown").to_string(),
            owned(found.reason),
            owned(found.message),
            owned(found.last_transition_time),
        ),
        None => ("Unknown".into(), None, Some("waiting to be reconciled".into()), None),
    }
}

pub(super) fn object_status(object: &impl FluxObject, revision: Option<String>) -> ObjectStatus {
    let (kind, namespace, name) = object.key();
    let (ready, reason, message, _) = ready(object);
    ObjectStatus { kind, namespace, name, ready, reason, message, revision, suspended: object.suspended() }
}

/// A `{kind, name, namespace}` reference, the namespace defaulting to the referrer's.
pub(super) fn reference(value: Option<&serde_json::Value>, default_kind: &str, namespace: &str) -> Option<Key> {
    Reference::of_value(value?).key(default_kind, namespace)
}

/// A source named by `sourceRef`/`chartRef` (`namespace` defaults to the referrer's).
fn referenced<'a, L: Lookup>(
    sources: &'a L,
    value: Option<Reference<'_>>,
    namespace: &str,
) -> Option<impl Deref<Target = L::Object> + 'a> {
    sources.find(&value?.key("", namespace)?)
}

/// A source or chart as a link of the chain, with the revision of its artifact.
fn artifact_status(source: &impl FluxObject) -> ObjectStatus {
    object_status(source, source.artifact_revision().map(String::from))
}

pub(super) fn kustomization_row<O: FluxObject>(object: &O, sources: &impl Lookup<Object = O>) -> AppStatus {
    let namespace = object.namespace();
    let source = referenced(sources, object.source_ref(), namespace);
    let oci = object.source_ref().and_then(|reference| reference.kind) == Some("OCIRepository");
    let applied = object.last_applied_revision().map(String::from);
    let (status, _, _, since) = ready(object);
    let mut chain: Vec<ObjectStatus> = source.as_deref().into_iter().map(artifact_status).collect();
    chain.push(object_status(object, applied.clone()));
    row(
        object,
        if oci { AppKind::Oci } else { AppKind::Kustomize },
        source.as_deref(),
        applied,
        (status == "True").then_some(since).flatten(),
        chain,
    )
}

pub(super) fn helm_release_row<O: FluxObject>(object: &O, sources: &impl Lookup<Object = O>) -> AppStatus {
    let namespace = object.namespace();
    let mut chain = Vec::new();
    let source = match object.chart_ref() {
        Some(chart_ref) => {
            let source = referenced(sources, Some(chart_ref), namespace);
            chain.extend(source.as_deref().map(artifact_status));
            source
        }
        None => {
            let source_ref = object.chart_source_ref();
            let source = referenced(sources, source_ref, namespace);
            let source_namespace = source_ref.and_then(|r| r.namespace).unwrap_or(namespace);
            chain.extend(source.as_deref().map(artifact_status));
            chain.extend(sources.find(&chart_key(object, source_namespace)).as_deref().map(artifact_status));
            source
        }
    };
    let deployed = object.deployed();
    // helm v2beta1 (before Flux v2.2's history) records the chart version as lastAppliedRevision.
    let applied = deployed
        .and_then(|snapshot| snapshot.chart_version)
        .or_else(|| object.last_applied_revision())
        .map(String::from);
    let last_deployed = deployed.and_then(|snapshot| snapshot.last_deployed).map(String::from);
    chain.push(object_status(object, applied.clone()));
    row(object, AppKind::Helm, source.as_deref(), applied, last_deployed, chain)
}

/// The HelmChart of a HelmRelease's `spec.chart`: what `status.helmChart` names, else the name
/// helm-controller gives it, `<namespace>-<name>` in the chart source's namespace.
pub(super) fn chart_key(release: &impl FluxObject, source_namespace: &str) -> Key {
    let (namespace, name) = match release.helm_chart().and_then(|c| c.split_once('/')) {
        Some((namespace, name)) => (namespace.to_string(), name.to_string()),
        None => (source_namespace.to_string(), format!("{}-{}", release.namespace(), release.name())),
    };
    ("HelmChart".to_string(), namespace, name)
}

fn row<O: FluxObject>(
    object: &O,
    kind: AppKind,
    source: Option<&O>,
    applied_revision: Option<String>,
    last_deployed: Option<String>,
    objects: Vec<ObjectStatus>,
) -> AppStatus {
    let last = objects.len().saturating_sub(1);
    let suspended = objects.last().is_some_and(|app| app.suspended);
    let blocking = objects.iter().position(|o| o.ready != "True");
    let state = match (suspended, blocking.map(|index| objects[index].ready.as_str())) {
        (true, _) => AppState::Suspended,
        (false, None) => AppState::Ready,
        (false, Some("False")) => AppState::Failing,
        (false, Some(_)) => AppState::Progressing,
    };
    // The first object in the chain that is not ready explains the row; a source or chart is
    // named, the app's own message is not.
    let message = match blocking {
        Some(index) if index < last => {
            let blocker = &objects[index];
            blocker.message.as_ref().map(|message| format!("{} {}: {message}", blocker.kind, blocker.name))
        }
        _ => objects.last().and_then(|app| app.message.clone()),
    };
    AppStatus {
        namespace: object.namespace().to_string(),
        name: object.name().to_string(),
        kind,
        state,
        source_url: source.and_then(FluxObject::url).map(String::from),
        source_ref: source.and_then(FluxObject::source_ref_text).or_else(|| object.chart_version().map(String::from)),
        source_revision: source.and_then(FluxObject::artifact_revision).map(String::from),
        applied_revision,
        last_deployed,
        message,
        objects,
        tenant: object.tenant().map(String::from),
        platform: object.is_platform(),
        history_fingerprint: object.history_fingerprint(),
        depends_on: object.depends_on(),
    }
}
