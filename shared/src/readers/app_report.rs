//! The model of `kubectl gitops app status NAME`: what one look at an app read ([`Gathered`]),
//! and the report built from it ([`AppReport`]): the chain of Flux objects, the inventory and
//! workloads, the last deployment, the last error and what the app waits on. Pure: the reads are
//! in app_reads.rs, the tree in tree.rs.

use kube::api::DynamicObject;
use serde::Serialize;

use super::collect::{Index, Key, chart_key, helm_release_row, key, kustomization_row, object_status, reference, text};
use super::{AppState, AppStatus, ObjectStatus};
use crate::error::{Error, ExitCode};
use crate::flux::api::HELM_RELEASE;
use crate::flux::status::{FluxObject, WAITING_REASONS};
use crate::git::log::CommitInfo;

/// One object the app applied, from its inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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
    /// Its pods (those its selector matches), with why each one that is not ready is not.
    pub pods: Vec<PodState>,
}

/// A pod of a workload, and why it is not ready when it is not: what `kubectl describe` makes you
/// dig for (ImagePullBackOff, CrashLoopBackOff, Unschedulable, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodState {
    /// Name.
    pub name: String,
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    pub phase: String,
    /// The Ready condition is True.
    pub ready: bool,
    /// Container restarts, summed.
    pub restarts: i64,
    /// Why it is not ready: a waiting or terminated container's reason, else the scheduler's or
    /// the Ready condition's.
    pub reason: Option<String>,
    /// The message that goes with the reason.
    pub message: Option<String>,
}

/// How a pod stands, from its status alone (read untyped, see `core_v1` in app_reads.rs: the
/// typed `Pod`'s deserializer, the whole PodSpec, weighs over 100 KB).
pub(super) fn pod_state(pod: &DynamicObject) -> PodState {
    let status = pod.data.get("status");
    let field = |value: &serde_json::Value, name: &str| value.get(name).and_then(|v| v.as_str()).map(String::from);
    let list = |name: &str| status.and_then(|status| status.get(name)).and_then(|v| v.as_array()).cloned();
    let conditions = list("conditions").unwrap_or_default();
    let condition =
        |kind: &str| conditions.iter().find(|condition| condition.get("type").and_then(|t| t.as_str()) == Some(kind));
    let is =
        |condition: &serde_json::Value, value: &str| condition.get("status").and_then(|s| s.as_str()) == Some(value);
    let ready = condition("Ready").is_some_and(|ready| is(ready, "True"));
    let containers: Vec<serde_json::Value> = list("initContainerStatuses")
        .unwrap_or_default()
        .into_iter()
        .chain(list("containerStatuses").unwrap_or_default())
        .collect();
    let restarts = containers.iter().filter_map(|container| container.get("restartCount")?.as_i64()).sum();
    let from_container = containers
        .iter()
        .filter(|container| container.get("ready").and_then(|r| r.as_bool()) != Some(true))
        .find_map(|container| {
            let state = container.get("state")?;
            let stuck = state.get("waiting").or_else(|| state.get("terminated"))?;
            field(stuck, "reason").map(|reason| (reason, field(stuck, "message")))
        });
    let unscheduled = condition("PodScheduled").filter(|scheduled| is(scheduled, "False")).map(|scheduled| {
        (field(scheduled, "reason").unwrap_or_else(|| "Unschedulable".into()), field(scheduled, "message"))
    });
    let not_ready = condition("Ready")
        .filter(|ready| !is(ready, "True"))
        .and_then(|condition| field(condition, "reason").map(|reason| (reason, field(condition, "message"))));
    let (reason, message) = if ready {
        (None, None)
    } else {
        match from_container.or(unscheduled).or(not_ready) {
            Some((reason, message)) => (Some(reason), message),
            None => (None, None),
        }
    };
    PodState {
        name: pod.metadata.name.clone().unwrap_or_default(),
        phase: status.and_then(|status| field(status, "phase")).unwrap_or_else(|| "Unknown".into()),
        ready,
        restarts,
        reason,
        message,
    }
}

/// The last successful deployment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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
    /// Flux's record of what it deployed (`status.history`), newest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<HistoryEntry>,
    /// The app's recent Kubernetes events, newest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<AppEvent>,
}

impl crate::output::Kind for AppReport {
    const KIND: &'static str = "AppReport";
}

/// One entry of Flux's `status.history`: a Kustomization's snapshot of a source revision
/// (Flux 2.7+), or a HelmRelease's Helm release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    /// A Kustomization's source revision; a HelmRelease's chart version.
    pub revision: Option<String>,
    /// First reconciled (a HelmRelease: first deployed), RFC 3339.
    pub first: Option<String>,
    /// Last reconciled (last deployed), RFC 3339.
    pub last: Option<String>,
    /// How the last reconcile ended (`ReconciliationSucceeded`, `HealthCheckFailed`, …); a
    /// Helm release's status (`deployed`, `superseded`, `failed`).
    pub status: Option<String>,
    /// How long the last reconcile took (Kustomizations).
    pub duration: Option<String>,
    /// How often this revision was reconciled (Kustomizations).
    pub reconciliations: Option<i64>,
    /// The digest of what was applied (a Helm release: of its values).
    pub digest: Option<String>,
}

/// A Kubernetes event about the app, as Flux's controllers record them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppEvent {
    /// When it last happened, RFC 3339.
    pub time: Option<String>,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub kind: String,
    pub reason: String,
    pub message: String,
    /// How often it happened.
    pub count: i64,
}

/// How many events a report keeps.
pub(super) const EVENTS_SHOWN: usize = 10;

/// The app's `status.history`, as Flux keeps it (newest first).
pub(super) fn history(app: &DynamicObject, helm: bool) -> Vec<HistoryEntry> {
    let Some(entries) = app.data.pointer("/status/history").and_then(|history| history.as_array()) else {
        return Vec::new();
    };
    let field =
        |entry: &serde_json::Value, name: &str| entry.get(name).and_then(|value| value.as_str()).map(String::from);
    entries
        .iter()
        .map(|entry| {
            if helm {
                HistoryEntry {
                    revision: field(entry, "chartVersion"),
                    first: field(entry, "firstDeployed"),
                    last: field(entry, "lastDeployed"),
                    status: field(entry, "status"),
                    duration: None,
                    reconciliations: None,
                    digest: field(entry, "configDigest"),
                }
            } else {
                HistoryEntry {
                    revision: entry.pointer("/metadata/revision").and_then(|value| value.as_str()).map(String::from),
                    first: field(entry, "firstReconciled"),
                    last: field(entry, "lastReconciled"),
                    status: field(entry, "lastReconciledStatus"),
                    duration: field(entry, "lastReconciledDuration"),
                    reconciliations: entry.get("totalReconciliations").and_then(|value| value.as_i64()),
                    digest: field(entry, "digest"),
                }
            }
        })
        .collect()
}

/// The newest [`EVENTS_SHOWN`] events, newest first.
pub(super) fn recent_events(events: Vec<DynamicObject>) -> Vec<AppEvent> {
    let mut events: Vec<AppEvent> = events
        .iter()
        .map(|event| AppEvent {
            time: text(event, "/lastTimestamp").or_else(|| text(event, "/eventTime")),
            kind: text(event, "/type").unwrap_or_else(|| "Normal".into()),
            reason: text(event, "/reason").unwrap_or_default(),
            message: text(event, "/message").unwrap_or_default(),
            count: event.data.get("count").and_then(|count| count.as_i64()).unwrap_or(1),
        })
        .collect();
    events.sort_by(|a, b| b.time.cmp(&a.time));
    events.truncate(EVENTS_SHOWN);
    events
}

/// The app named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AppRef {
    pub(crate) namespace: String,
    pub(crate) name: String,
}

impl AppRef {
    /// The error for an app that does not exist.
    /// The app NAME of `-n` (default: the Flux namespace), as `app status` and `app history` take it.
    pub(crate) fn of(name: &str, global: &crate::cli::GlobalArgs) -> crate::error::Result<AppRef> {
        let namespace = match &global.namespace {
            Some(namespace) => namespace.clone(),
            None => crate::cluster::default_flux_namespace()?,
        };
        Ok(AppRef { namespace, name: name.to_string() })
    }

    pub(crate) fn not_found(&self) -> Error {
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
pub(crate) struct Gathered {
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
    /// Its recent events, read with the workloads.
    pub(super) events: Vec<AppEvent>,
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

/// A placeholder for a referenced object that does not exist.
pub(super) fn missing((kind, namespace, name): Key) -> ObjectStatus {
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

/// `status.inventory.entries[].id`, `<namespace>_<name>_<group>_<Kind>` (a Kustomization's, and a
/// HelmRelease's since Flux v2.9).
pub(super) fn inventory(app: &DynamicObject) -> Vec<InventoryItem> {
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

pub(super) fn workload(kind: &str, object: &DynamicObject) -> Workload {
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
        pods: Vec::new(),
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
        history: history(&gathered.app, gathered.is_helm()),
        events: gathered.events.clone(),
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

/// `Kind namespace/name: reason: message`, for one-line explanations.
pub(super) fn describe(object: &ObjectStatus) -> String {
    let reason = object.reason.as_deref().map(|r| format!("{r}: ")).unwrap_or_default();
    let message = object.message.as_deref().unwrap_or("not ready");
    format!("{} {}/{}: {reason}{message}", object.kind, object.namespace, object.name)
}
