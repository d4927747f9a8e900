//! Reading the Flux objects: one paginated LIST per kind, concurrently, then joining rows.

use std::collections::HashMap;

use kube::api::{Api, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;

use super::{AppKind, AppState, AppStatus, ObjectStatus, Report, Runtime, summarize};
use crate::cluster::{Cluster, is_forbidden};
use crate::detect::{self, ClusterState};
use crate::error::{Error, Result};
use crate::flux::api::{
    FluxKind, GIT_REPOSITORY, HELM_CHART, HELM_RELEASE, HELM_REPOSITORY, KUSTOMIZATION, OCI_REPOSITORY, ServedApis,
};
use crate::record;

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

/// (kind, namespace, name) of an object.
pub(super) type Key = (String, String, String);

/// Objects by (kind, namespace, name).
pub(super) type Index = HashMap<Key, DynamicObject>;

/// Reads the runtime and every Kustomization and HelmRelease in scope with their sources.
pub async fn collect(cluster: &Cluster, scope: &Scope) -> Result<Report> {
    collect_detected(cluster, scope, detect_flux(cluster).await?).await
}

/// [`collect`] for a caller that has detected the cluster already (detection is five requests).
pub async fn collect_detected(cluster: &Cluster, scope: &Scope, detection: detect::Detection) -> Result<Report> {
    require_flux(&detection.api_versions)?;
    let served = &detection.api_versions;
    let (git, oci, helm_repositories, charts, kustomizations, releases) = tokio::join!(
        list(cluster, served, &GIT_REPOSITORY, scope),
        list(cluster, served, &OCI_REPOSITORY, scope),
        list(cluster, served, &HELM_REPOSITORY, scope),
        list(cluster, served, &HELM_CHART, scope),
        list(cluster, served, &KUSTOMIZATION, scope),
        list(cluster, served, &HELM_RELEASE, scope),
    );
    let mut forbidden = Vec::new();
    let mut sources = Index::new();
    for listed in [git, oci, helm_repositories, charts] {
        for object in keep(&cluster.server, listed, &mut forbidden)? {
            sources.insert(key(&object), object);
        }
    }
    let mut apps = keep(&cluster.server, kustomizations, &mut forbidden)?;
    apps.extend(keep(&cluster.server, releases, &mut forbidden)?);
    Ok(assemble(runtime(detection), apps.iter(), &sources, forbidden))
}

/// Where objects are found by (kind, namespace, name): an [`Index`], or what watches delivered.
pub(super) trait Lookup {
    /// The object with this key, when there is one.
    fn find(&self, key: &Key) -> Option<&DynamicObject>;
}

impl Lookup for Index {
    fn find(&self, key: &Key) -> Option<&DynamicObject> {
        self.get(key)
    }
}

/// Detects the cluster; an error when it is unreachable or serves no Flux API status reads.
pub(super) async fn detect_flux(cluster: &Cluster) -> Result<detect::Detection> {
    let detection = detect::detect(cluster).await?;
    if detection.state == ClusterState::Unreachable {
        return Err(Error::Unreachable {
            server: cluster.server.clone(),
            reason: detection.error.clone().unwrap_or_default(),
        });
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
pub(super) fn assemble<'a>(
    flux: Runtime,
    apps: impl Iterator<Item = &'a DynamicObject>,
    sources: &impl Lookup,
    forbidden: Vec<String>,
) -> Report {
    let mut rows: Vec<(bool, AppStatus)> = apps
        .map(|object| {
            let row = if key(object).0 == HELM_RELEASE.kind {
                helm_release_row(object, sources)
            } else {
                kustomization_row(object, sources)
            };
            (is_ours(object), row)
        })
        .collect();
    rows.sort_by(|(_, a), (_, b)| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let (ours, others): (Vec<_>, Vec<_>) = rows.into_iter().partition(|(ours, _)| *ours);
    let apps: Vec<AppStatus> = ours.into_iter().map(|(_, row)| row).collect();
    let other_flux_objects: Vec<AppStatus> = others.into_iter().map(|(_, row)| row).collect();
    let summary = summarize(apps.iter().chain(&other_flux_objects));
    Report { flux, apps, other_flux_objects, forbidden, summary }
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
async fn list(
    cluster: &Cluster,
    served: &ServedApis,
    kind: &FluxKind,
    scope: &Scope,
) -> Result<Option<Vec<DynamicObject>>, (String, kube::Error)> {
    let Some(resource) = resource(served, kind) else { return Ok(None) };
    let api: Api<DynamicObject> = match scope {
        Scope::All => Api::all_with(cluster.client.clone(), &resource),
        Scope::Namespace(namespace) => Api::namespaced_with(cluster.client.clone(), namespace, &resource),
    };
    let mut items = Vec::new();
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = api.list(&params).await.map_err(|error| (kind.plural.to_string(), error))?;
        items.extend(page.items.into_iter().map(|object| typed_and_pruned(object, &resource.api_version, kind)));
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    Ok(Some(items))
}

/// The API resource of a Flux kind at the version the cluster serves (older Flux releases serve
/// older versions: source v1beta2, helm v2beta1); `None` when the kind is not served.
pub(super) fn resource(served: &ServedApis, kind: &FluxKind) -> Option<ApiResource> {
    let version = served.version_for(kind)?;
    Some(ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(kind.group, version, kind.kind), kind.plural))
}

/// A listed (or watched) object with its kind set, which list items leave out and the index keys
/// on, and [`prune`]d.
pub(super) fn typed_and_pruned(mut object: DynamicObject, api_version: &str, kind: &FluxKind) -> DynamicObject {
    object.types = Some(kube::core::TypeMeta { api_version: api_version.to_string(), kind: kind.kind.to_string() });
    prune(object)
}

/// Keeps only the fields a row (and a wait's judgement of it) reads, page by page, so that memory
/// stays small with thousands of objects (managed fields, annotations and most of spec and status
/// are dropped).
fn prune(mut object: DynamicObject) -> DynamicObject {
    let ours = is_ours(&object);
    object.metadata = kube::core::ObjectMeta {
        name: object.metadata.name.take(),
        namespace: object.metadata.namespace.take(),
        labels: ours.then(|| [(record::MANAGED_BY_LABEL.to_string(), record::MANAGED_BY_VALUE.to_string())].into()),
        generation: object.metadata.generation,
        ..Default::default()
    };
    let field = |pointer: &str| object.data.pointer(pointer).cloned();
    let mut spec = serde_json::Map::new();
    for name in ["sourceRef", "chartRef", "suspend", "url", "ref", "secretRef"] {
        if let Some(value) = field(&format!("/spec/{name}")) {
            spec.insert(name.to_string(), value);
        }
    }
    if let Some(chart) = field("/spec/chart/spec") {
        let chart_spec = serde_json::json!({"sourceRef": chart.get("sourceRef"), "version": chart.get("version")});
        spec.insert("chart".to_string(), serde_json::json!({"spec": chart_spec}));
    }
    let mut status = serde_json::Map::new();
    if let Some(revision) = field("/status/artifact/revision") {
        status.insert("artifact".to_string(), serde_json::json!({"revision": revision}));
    }
    for name in ["lastAppliedRevision", "lastAttemptedRevision", "observedGeneration"] {
        if let Some(value) = field(&format!("/status/{name}")) {
            status.insert(name.to_string(), value);
        }
    }
    if let Some(deployed) = object.data.pointer("/status/history").and_then(deployed_snapshot) {
        status.insert("history".to_string(), serde_json::Value::Array(vec![deployed.clone()]));
    }
    if let Some(chart) = field("/status/helmChart") {
        status.insert("helmChart".to_string(), chart);
    }
    let conditions = object.data.pointer("/status/conditions").and_then(|c| c.as_array());
    if let Some(ready) =
        conditions.and_then(|c| c.iter().find(|c| c.get("type").and_then(|t| t.as_str()) == Some("Ready")))
    {
        status.insert("conditions".to_string(), serde_json::Value::Array(vec![ready.clone()]));
    }
    object.data = serde_json::json!({"spec": spec, "status": status});
    object
}

/// The objects of one LIST; a forbidden LIST is noted and skipped, other errors fail.
fn keep(
    server: &str,
    listed: Result<Option<Vec<DynamicObject>>, (String, kube::Error)>,
    forbidden: &mut Vec<String>,
) -> Result<Vec<DynamicObject>> {
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
    let kind = object.types.as_ref().map(|t| t.kind.clone()).unwrap_or_default();
    (kind, object.metadata.namespace.clone().unwrap_or_default(), object.metadata.name.clone().unwrap_or_default())
}

pub(super) fn is_ours(object: &DynamicObject) -> bool {
    object.metadata.labels.as_ref().and_then(|labels| labels.get(record::MANAGED_BY_LABEL)).map(String::as_str)
        == Some(record::MANAGED_BY_VALUE)
}

pub(super) fn text(object: &DynamicObject, pointer: &str) -> Option<String> {
    object.data.pointer(pointer).and_then(|value| value.as_str()).map(String::from)
}

/// The Ready condition: (status, reason, message, lastTransitionTime); `Unknown` when absent.
pub(super) fn ready(object: &DynamicObject) -> (String, Option<String>, Option<String>, Option<String>) {
    let conditions = object.data.pointer("/status/conditions").and_then(|c| c.as_array());
    let found =
        conditions.and_then(|list| list.iter().find(|c| c.get("type").and_then(|t| t.as_str()) == Some("Ready")));
    let field = |name: &str| found.and_then(|c| c.get(name)).and_then(|v| v.as_str()).map(String::from);
    match found {
        Some(_) => (
            field("status").unwrap_or_else(|| "Unknown".into()),
            field("reason"),
            field("message"),
            field("lastTransitionTime"),
        ),
        None => ("Unknown".into(), None, Some("waiting to be reconciled".into()), None),
    }
}

pub(super) fn object_status(object: &DynamicObject, revision: Option<String>) -> ObjectStatus {
    let (kind, namespace, name) = key(object);
    let (ready, reason, message, _) = ready(object);
    let suspended = object.data.pointer("/spec/suspend").and_then(|v| v.as_bool()).unwrap_or(false);
    ObjectStatus { kind, namespace, name, ready, reason, message, revision, suspended }
}

fn source_ref_text(source: &DynamicObject) -> Option<String> {
    let reference = source.data.pointer("/spec/ref")?.as_object()?;
    ["commit", "tag", "semver", "name", "branch", "digest"]
        .iter()
        .find_map(|field| reference.get(*field).and_then(|v| v.as_str()).map(|value| format!("{field} {value}")))
}

/// A `{kind, name, namespace}` reference, the namespace defaulting to the referrer's.
pub(super) fn reference(value: Option<&serde_json::Value>, default_kind: &str, namespace: &str) -> Option<Key> {
    let value = value?;
    let field = |name: &str| value.get(name).and_then(|v| v.as_str()).map(String::from);
    Some((
        field("kind").unwrap_or_else(|| default_kind.to_string()),
        field("namespace").unwrap_or_else(|| namespace.to_string()),
        field("name")?,
    ))
}

/// A source named by `sourceRef`/`chartRef` (`namespace` defaults to the referrer's).
fn referenced<'a>(
    sources: &'a impl Lookup,
    value: Option<&serde_json::Value>,
    namespace: &str,
) -> Option<&'a DynamicObject> {
    sources.find(&reference(value, "", namespace)?)
}

/// A source or chart as a link of the chain, with the revision of its artifact.
fn artifact_status(source: &DynamicObject) -> ObjectStatus {
    object_status(source, text(source, "/status/artifact/revision"))
}

pub(super) fn kustomization_row(object: &DynamicObject, sources: &impl Lookup) -> AppStatus {
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let source = referenced(sources, object.data.pointer("/spec/sourceRef"), &namespace);
    let oci = object.data.pointer("/spec/sourceRef/kind").and_then(|k| k.as_str()) == Some("OCIRepository");
    let applied = text(object, "/status/lastAppliedRevision");
    let (status, _, _, since) = ready(object);
    let mut chain: Vec<ObjectStatus> = source.into_iter().map(artifact_status).collect();
    chain.push(object_status(object, applied.clone()));
    row(
        object,
        if oci { AppKind::Oci } else { AppKind::Kustomize },
        source,
        applied,
        (status == "True").then_some(since).flatten(),
        chain,
    )
}

pub(super) fn helm_release_row(object: &DynamicObject, sources: &impl Lookup) -> AppStatus {
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let mut chain = Vec::new();
    let source = match object.data.pointer("/spec/chartRef") {
        Some(chart_ref) => {
            let source = referenced(sources, Some(chart_ref), &namespace);
            chain.extend(source.map(artifact_status));
            source
        }
        None => {
            let source_ref = object.data.pointer("/spec/chart/spec/sourceRef");
            let source = referenced(sources, source_ref, &namespace);
            let source_namespace =
                source_ref.and_then(|r| r.get("namespace")).and_then(|n| n.as_str()).unwrap_or(&namespace).to_string();
            chain.extend(source.map(artifact_status));
            chain.extend(sources.find(&chart_key(object, &source_namespace)).map(artifact_status));
            source
        }
    };
    let deployed = object.data.pointer("/status/history").and_then(deployed_snapshot);
    // helm v2beta1 (before Flux v2.2's history) records the chart version as lastAppliedRevision.
    let applied = deployed
        .and_then(|entry| entry.get("chartVersion"))
        .and_then(|v| v.as_str())
        .map(String::from)
        .or_else(|| text(object, "/status/lastAppliedRevision"));
    let last_deployed = deployed.and_then(|entry| entry.get("lastDeployed")).and_then(|v| v.as_str()).map(String::from);
    chain.push(object_status(object, applied.clone()));
    row(object, AppKind::Helm, source, applied, last_deployed, chain)
}

/// The HelmChart of a HelmRelease's `spec.chart`: what `status.helmChart` names, else the name
/// helm-controller gives it, `<namespace>-<name>` in the chart source's namespace.
pub(super) fn chart_key(release: &DynamicObject, source_namespace: &str) -> Key {
    let (namespace, name) = match text(release, "/status/helmChart").as_deref().and_then(|c| c.split_once('/')) {
        Some((namespace, name)) => (namespace.to_string(), name.to_string()),
        None => {
            let (_, release_namespace, release_name) = key(release);
            (source_namespace.to_string(), format!("{release_namespace}-{release_name}"))
        }
    };
    ("HelmChart".to_string(), namespace, name)
}

/// The release running now: the newest snapshot in `status.history` that is `deployed` (after a
/// failed upgrade the newest one is `failed` and the previous release still runs).
pub(super) fn deployed_snapshot(history: &serde_json::Value) -> Option<&serde_json::Value> {
    history.as_array()?.iter().find(|entry| entry.get("status").and_then(|s| s.as_str()) == Some("deployed"))
}

fn row(
    object: &DynamicObject,
    kind: AppKind,
    source: Option<&DynamicObject>,
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
        namespace: object.metadata.namespace.clone().unwrap_or_default(),
        name: object.metadata.name.clone().unwrap_or_default(),
        kind,
        state,
        source_url: source.and_then(|s| text(s, "/spec/url")),
        source_ref: source.and_then(source_ref_text).or_else(|| text(object, "/spec/chart/spec/version")),
        source_revision: source.and_then(|s| text(s, "/status/artifact/revision")),
        applied_revision,
        last_deployed,
        message,
        objects,
    }
}
