//! The typed view of a Flux object's references and status (conditions, generations, revisions,
//! artifact, history), whatever holds it: a [`Listed`] object, parsed straight from a LIST page with
//! every other field skipped, from a LIST page (`status`) or a watch event (`--wait`, `--watch`,
//! the UI), or a `DynamicObject` that a GET delivered (`app status`, install). Nothing
//! else reads Flux status by JSON pointer.
//!
//! `status -A` on thousands of apps keeps every source and app in memory until the rows are joined,
//! so what it keeps per object matters: a `DynamicObject`, even pruned, is a tree of
//! `serde_json::Value` maps of some hundred bytes each, and parsing a page into one first would hold
//! every inventory entry and history snapshot of 500 objects at once.

use std::collections::HashMap;

use kube::api::DynamicObject;
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};

use crate::flux::TENANT_LABEL;
use crate::record;

/// Ready=False reasons that mean "waiting for something else", not a failure of the app itself.
/// (kustomize-controller's `ArtifactFailed` is not one: it also means "path not found"; a source
/// without an artifact shows as the source's own failure, earlier in the chain.)
pub(crate) const WAITING_REASONS: [&str; 2] = ["DependencyNotReady", "Progressing"];

/// An object's (kind, namespace, name).
pub type Key = (String, String, String);

/// A `{kind, name, namespace}` reference (`sourceRef`, `chartRef`, `dependsOn` entries).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Reference<'a> {
    pub(crate) kind: Option<&'a str>,
    pub(crate) name: Option<&'a str>,
    pub(crate) namespace: Option<&'a str>,
}

impl<'a> Reference<'a> {
    pub(crate) fn of_value(value: &'a serde_json::Value) -> Reference<'a> {
        let field = |name: &str| value.get(name).and_then(|v| v.as_str());
        Reference { kind: field("kind"), name: field("name"), namespace: field("namespace") }
    }

    /// The key of what it names; the kind defaults to `default_kind`, the namespace to the
    /// referrer's. `None` without a name.
    pub(crate) fn key(&self, default_kind: &str, namespace: &str) -> Option<Key> {
        Some((
            self.kind.unwrap_or(default_kind).to_string(),
            self.namespace.unwrap_or(namespace).to_string(),
            self.name?.to_string(),
        ))
    }
}

/// The Ready condition's fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Ready<'a> {
    pub(crate) status: Option<&'a str>,
    pub(crate) reason: Option<&'a str>,
    pub(crate) message: Option<&'a str>,
    pub(crate) last_transition_time: Option<&'a str>,
}

impl Ready<'_> {
    /// `status: "True"`.
    pub(crate) fn is_true(&self) -> bool {
        self.status == Some("True")
    }

    /// `status: "False"`.
    pub(crate) fn is_false(&self) -> bool {
        self.status == Some("False")
    }

    /// The reason, empty when there is none.
    pub(crate) fn reason(&self) -> &str {
        self.reason.unwrap_or_default()
    }

    /// The message, empty when there is none.
    pub(crate) fn message(&self) -> &str {
        self.message.unwrap_or_default()
    }
}

/// The HelmRelease snapshot that runs now (see [`deployed_snapshot`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Deployed<'a> {
    pub(crate) chart_version: Option<&'a str>,
    pub(crate) app_version: Option<&'a str>,
    pub(crate) last_deployed: Option<&'a str>,
}

/// The fields of a Flux object that a row reads.
pub(crate) trait FluxObject {
    /// e.g. `GitRepository`.
    fn kind(&self) -> &str;
    fn namespace(&self) -> &str;
    fn name(&self) -> &str;
    /// Labelled `app.kubernetes.io/managed-by=kubectl-gitops`.
    fn is_ours(&self) -> bool;
    /// The team of a tenant's object: its `toolkit.fluxcd.io/tenant` label.
    fn tenant(&self) -> Option<&str>;
    /// A platform app's object: labelled `kubectl-gitops.io/tier=platform`.
    fn is_platform(&self) -> bool;
    /// `spec.suspend`.
    fn suspended(&self) -> bool;
    /// `spec.url` of a source.
    fn url(&self) -> Option<&str>;
    /// `spec.ref` of a source as a row shows it, `branch main`: the first of its fields set.
    fn source_ref_text(&self) -> Option<String>;
    /// `spec.ref.branch` of a source.
    fn branch(&self) -> Option<&str>;
    /// `spec.secretRef.name` of a source: its credentials.
    fn secret_name(&self) -> Option<&str>;
    /// `spec.sourceRef`.
    fn source_ref(&self) -> Option<Reference<'_>>;
    /// `spec.chartRef` of a HelmRelease.
    fn chart_ref(&self) -> Option<Reference<'_>>;
    /// `spec.chart.spec.sourceRef` of a HelmRelease.
    fn chart_source_ref(&self) -> Option<Reference<'_>>;
    /// `spec.chart.spec.version` of a HelmRelease.
    fn chart_version(&self) -> Option<&str>;
    /// `status.artifact.revision` of a source.
    fn artifact_revision(&self) -> Option<&str>;
    /// `status.lastAppliedRevision`.
    fn last_applied_revision(&self) -> Option<&str>;
    /// `status.lastAttemptedRevision`.
    fn last_attempted_revision(&self) -> Option<&str>;
    /// `metadata.generation`.
    fn generation(&self) -> Option<i64>;
    /// `status.observedGeneration`.
    fn observed_generation(&self) -> Option<i64>;
    /// `status.helmChart` of a HelmRelease, `<namespace>/<name>`.
    fn helm_chart(&self) -> Option<&str>;
    /// The first condition of type Ready.
    fn ready_condition(&self) -> Option<Ready<'_>>;
    /// The newest `deployed` snapshot of a HelmRelease's `status.history`.
    fn deployed(&self) -> Option<Deployed<'_>>;
    /// The fingerprint of `status.history` (`deployments::history_fingerprint`): what a ledger
    /// compares to know whether Flux deployed something it has not kept yet.
    fn history_fingerprint(&self) -> Option<String>;
    /// `spec.dependsOn` of a Kustomization or HelmRelease: what it waits for, as
    /// `namespace/name` (the namespace defaults to its own).
    fn depends_on(&self) -> Vec<String>;

    /// The controller has seen the current spec: `status.observedGeneration` is the generation.
    fn is_current(&self) -> bool {
        self.observed_generation().is_some() && self.observed_generation() == self.generation()
    }

    /// (kind, namespace, name).
    fn key(&self) -> Key {
        (self.kind().to_string(), self.namespace().to_string(), self.name().to_string())
    }
}

/// The newest entry of a HelmRelease's `status.history` whose status is `deployed`: the release
/// that runs now (Flux keeps the newest first; a failed upgrade's snapshot is above it).
pub(crate) fn deployed_snapshot(history: &serde_json::Value) -> Option<&serde_json::Value> {
    history.as_array()?.iter().find(|entry| entry.get("status").and_then(|s| s.as_str()) == Some("deployed"))
}

/// The fields of `spec.ref` a row shows, in the order it looks for one.
const REF_FIELDS: [&str; 6] = ["commit", "tag", "semver", "name", "branch", "digest"];

fn str_at<'a>(object: &'a DynamicObject, pointer: &str) -> Option<&'a str> {
    object.data.pointer(pointer).and_then(|value| value.as_str())
}

impl FluxObject for DynamicObject {
    fn kind(&self) -> &str {
        self.types.as_ref().map_or("", |types| types.kind.as_str())
    }

    fn namespace(&self) -> &str {
        self.metadata.namespace.as_deref().unwrap_or_default()
    }

    fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    fn is_ours(&self) -> bool {
        self.metadata.labels.as_ref().and_then(|labels| labels.get(record::MANAGED_BY_LABEL)).map(String::as_str)
            == Some(record::MANAGED_BY_VALUE)
    }

    fn tenant(&self) -> Option<&str> {
        self.metadata.labels.as_ref().and_then(|labels| labels.get(TENANT_LABEL)).map(String::as_str)
    }

    fn is_platform(&self) -> bool {
        self.metadata.labels.as_ref().and_then(|labels| labels.get(record::TIER_LABEL)).map(String::as_str)
            == Some(record::PLATFORM_TIER)
    }

    fn suspended(&self) -> bool {
        self.data.pointer("/spec/suspend").and_then(|v| v.as_bool()).unwrap_or(false)
    }

    fn url(&self) -> Option<&str> {
        str_at(self, "/spec/url")
    }

    fn source_ref_text(&self) -> Option<String> {
        let reference = self.data.pointer("/spec/ref")?.as_object()?;
        REF_FIELDS
            .iter()
            .find_map(|field| reference.get(*field).and_then(|v| v.as_str()).map(|value| format!("{field} {value}")))
    }

    fn branch(&self) -> Option<&str> {
        str_at(self, "/spec/ref/branch")
    }

    fn secret_name(&self) -> Option<&str> {
        str_at(self, "/spec/secretRef/name")
    }

    fn source_ref(&self) -> Option<Reference<'_>> {
        self.data.pointer("/spec/sourceRef").map(Reference::of_value)
    }

    fn chart_ref(&self) -> Option<Reference<'_>> {
        self.data.pointer("/spec/chartRef").map(Reference::of_value)
    }

    fn chart_source_ref(&self) -> Option<Reference<'_>> {
        self.data.pointer("/spec/chart/spec/sourceRef").map(Reference::of_value)
    }

    fn chart_version(&self) -> Option<&str> {
        str_at(self, "/spec/chart/spec/version")
    }

    fn artifact_revision(&self) -> Option<&str> {
        str_at(self, "/status/artifact/revision")
    }

    fn last_applied_revision(&self) -> Option<&str> {
        str_at(self, "/status/lastAppliedRevision")
    }

    fn last_attempted_revision(&self) -> Option<&str> {
        str_at(self, "/status/lastAttemptedRevision")
    }

    fn generation(&self) -> Option<i64> {
        self.metadata.generation
    }

    fn observed_generation(&self) -> Option<i64> {
        self.data.pointer("/status/observedGeneration").and_then(|value| value.as_i64())
    }

    fn helm_chart(&self) -> Option<&str> {
        str_at(self, "/status/helmChart")
    }

    fn ready_condition(&self) -> Option<Ready<'_>> {
        let conditions = self.data.pointer("/status/conditions")?.as_array()?;
        let ready = conditions.iter().find(|c| c.get("type").and_then(|t| t.as_str()) == Some("Ready"))?;
        let field = |name: &str| ready.get(name).and_then(|v| v.as_str());
        Some(Ready {
            status: field("status"),
            reason: field("reason"),
            message: field("message"),
            last_transition_time: field("lastTransitionTime"),
        })
    }

    fn deployed(&self) -> Option<Deployed<'_>> {
        let snapshot = self.data.pointer("/status/history").and_then(deployed_snapshot)?;
        let field = |name: &str| snapshot.get(name).and_then(|v| v.as_str());
        Some(Deployed {
            chart_version: field("chartVersion"),
            app_version: field("appVersion"),
            last_deployed: field("lastDeployed"),
        })
    }

    fn history_fingerprint(&self) -> Option<String> {
        self.data.pointer("/status/history").and_then(crate::deployments::history_fingerprint)
    }

    fn depends_on(&self) -> Vec<String> {
        let list = self.data.pointer("/spec/dependsOn").and_then(|list| list.as_array());
        dependencies(self.namespace(), list.into_iter().flatten().map(Reference::of_value))
    }
}

/// `dependsOn` entries as `namespace/name`; one without a name is left out.
fn dependencies<'a>(namespace: &str, references: impl Iterator<Item = Reference<'a>>) -> Vec<String> {
    references
        .filter_map(|reference| Some(format!("{}/{}", reference.namespace.unwrap_or(namespace), reference.name?)))
        .collect()
}

/// A Flux object as a LIST page delivers it, reduced while parsing to what a row reads.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct Listed {
    /// List items carry no kind: the LIST's kind is set after parsing.
    #[serde(skip)]
    kind: &'static str,
    #[serde(default)]
    metadata: Meta,
    #[serde(default)]
    spec: Spec,
    #[serde(default)]
    status: Status,
}

impl Listed {
    /// Sets the kind of the LIST it came from.
    pub(crate) fn of_kind(mut self, kind: &'static str) -> Listed {
        self.kind = kind;
        self
    }

    /// The object's resourceVersion, taken out (a watch needs it to resume; a row does not).
    pub(crate) fn take_resource_version(&mut self) -> Option<String> {
        Some(std::mem::take(&mut self.metadata.resource_version)).filter(|version| !version.is_empty())
    }
}

#[derive(Debug, Default, Clone, Deserialize)]
struct Meta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    generation: Option<i64>,
    #[serde(default, deserialize_with = "labels_read")]
    labels: Labels,
    #[serde(default, rename = "resourceVersion")]
    resource_version: String,
}

/// What a row reads of an object's labels (the rest is not kept).
#[derive(Debug, Default, Clone)]
struct Labels {
    /// `app.kubernetes.io/managed-by=kubectl-gitops`.
    ours: bool,
    /// `toolkit.fluxcd.io/tenant`.
    tenant: Option<String>,
    /// `kubectl-gitops.io/tier=platform`.
    platform: bool,
}

fn labels_read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Labels, D::Error> {
    let mut labels: HashMap<String, String> = Option::deserialize(deserializer)?.unwrap_or_default();
    Ok(Labels {
        ours: labels.get(record::MANAGED_BY_LABEL).map(String::as_str) == Some(record::MANAGED_BY_VALUE),
        platform: labels.get(record::TIER_LABEL).map(String::as_str) == Some(record::PLATFORM_TIER),
        tenant: labels.remove(TENANT_LABEL),
    })
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    suspend: Option<bool>,
    url: Option<String>,
    #[serde(rename = "ref")]
    source_ref_fields: Option<SourceRefFields>,
    source_ref: Option<OwnedReference>,
    secret_ref: Option<SecretRef>,
    // The HelmRelease fields are boxed: most objects listed are sources and Kustomizations.
    chart_ref: Option<Box<OwnedReference>>,
    #[serde(default, deserialize_with = "chart_template")]
    chart: Option<Box<ChartTemplate>>,
    #[serde(default)]
    depends_on: Vec<OwnedReference>,
}

/// A HelmRelease's `spec.chart`, its chart template; a HelmChart's is the chart's name, not read.
fn chart_template<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Box<ChartTemplate>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Chart {
        Template(Box<ChartTemplate>),
        Name(IgnoredAny),
    }
    Ok(match Option::<Chart>::deserialize(deserializer)? {
        Some(Chart::Template(template)) => Some(template),
        Some(Chart::Name(_)) | None => None,
    })
}

/// `spec.ref` of a GitRepository or OCIRepository.
#[derive(Debug, Default, Clone, Deserialize)]
struct SourceRefFields {
    commit: Option<String>,
    tag: Option<String>,
    semver: Option<String>,
    name: Option<String>,
    branch: Option<String>,
    digest: Option<String>,
}

impl SourceRefFields {
    /// The value of one of [`REF_FIELDS`].
    fn get(&self, field: &str) -> Option<&str> {
        match field {
            "commit" => self.commit.as_deref(),
            "tag" => self.tag.as_deref(),
            "semver" => self.semver.as_deref(),
            "name" => self.name.as_deref(),
            "branch" => self.branch.as_deref(),
            "digest" => self.digest.as_deref(),
            _ => None,
        }
    }
}

/// A source's `spec.secretRef`.
#[derive(Debug, Default, Clone, Deserialize)]
struct SecretRef {
    name: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
struct OwnedReference {
    kind: Option<String>,
    name: Option<String>,
    namespace: Option<String>,
}

impl OwnedReference {
    fn borrowed(&self) -> Reference<'_> {
        Reference { kind: self.kind.as_deref(), name: self.name.as_deref(), namespace: self.namespace.as_deref() }
    }
}

#[derive(Debug, Default, Clone, Deserialize)]
struct ChartTemplate {
    spec: Option<ChartSpec>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChartSpec {
    source_ref: Option<OwnedReference>,
    version: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    artifact: Option<Artifact>,
    last_applied_revision: Option<String>,
    last_attempted_revision: Option<String>,
    observed_generation: Option<i64>,
    helm_chart: Option<String>,
    #[serde(default, rename = "conditions", deserialize_with = "first_ready")]
    ready: Option<Condition>,
    #[serde(default, rename = "history", deserialize_with = "read_history")]
    history: History,
}

/// What a row keeps of `status.history`: a HelmRelease's deployed snapshot, and the fingerprint.
#[derive(Debug, Default, Clone)]
struct History {
    deployed: Option<Box<Snapshot>>,
    fingerprint: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
struct Artifact {
    revision: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Condition {
    #[serde(rename = "type")]
    kind: Option<String>,
    status: Option<String>,
    reason: Option<String>,
    message: Option<String>,
    last_transition_time: Option<String>,
}

fn first_ready<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Condition>, D::Error> {
    let conditions: Option<Vec<Condition>> = Option::deserialize(deserializer)?;
    Ok(conditions.into_iter().flatten().find(|condition| condition.kind.as_deref() == Some("Ready")))
}

/// A HelmRelease `status.history` snapshot (a Kustomization's snapshots have no `status` and are
/// never the deployed one).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Snapshot {
    chart_version: Option<String>,
    app_version: Option<String>,
    last_deployed: Option<String>,
}

/// The newest snapshot that is `deployed`, as [`deployed_snapshot`] picks it, and the history's
/// fingerprint.
fn read_history<'de, D: Deserializer<'de>>(deserializer: D) -> Result<History, D::Error> {
    let Some(history) = Option::<serde_json::Value>::deserialize(deserializer)? else { return Ok(History::default()) };
    let deployed = deployed_snapshot(&history).and_then(|snapshot| Snapshot::deserialize(snapshot).ok()).map(Box::new);
    Ok(History { deployed, fingerprint: crate::deployments::history_fingerprint(&history) })
}

impl FluxObject for Listed {
    fn kind(&self) -> &str {
        self.kind
    }

    fn namespace(&self) -> &str {
        &self.metadata.namespace
    }

    fn name(&self) -> &str {
        &self.metadata.name
    }

    fn is_ours(&self) -> bool {
        self.metadata.labels.ours
    }

    fn tenant(&self) -> Option<&str> {
        self.metadata.labels.tenant.as_deref()
    }

    fn is_platform(&self) -> bool {
        self.metadata.labels.platform
    }

    fn suspended(&self) -> bool {
        self.spec.suspend.unwrap_or(false)
    }

    fn url(&self) -> Option<&str> {
        self.spec.url.as_deref()
    }

    fn source_ref_text(&self) -> Option<String> {
        let fields = self.spec.source_ref_fields.as_ref()?;
        REF_FIELDS.iter().find_map(|field| fields.get(field).map(|value| format!("{field} {value}")))
    }

    fn branch(&self) -> Option<&str> {
        self.spec.source_ref_fields.as_ref()?.branch.as_deref()
    }

    fn secret_name(&self) -> Option<&str> {
        self.spec.secret_ref.as_ref()?.name.as_deref()
    }

    fn source_ref(&self) -> Option<Reference<'_>> {
        self.spec.source_ref.as_ref().map(OwnedReference::borrowed)
    }

    fn chart_ref(&self) -> Option<Reference<'_>> {
        self.spec.chart_ref.as_deref().map(OwnedReference::borrowed)
    }

    fn chart_source_ref(&self) -> Option<Reference<'_>> {
        self.chart_spec()?.source_ref.as_ref().map(OwnedReference::borrowed)
    }

    fn chart_version(&self) -> Option<&str> {
        self.chart_spec()?.version.as_deref()
    }

    fn artifact_revision(&self) -> Option<&str> {
        self.status.artifact.as_ref()?.revision.as_deref()
    }

    fn last_applied_revision(&self) -> Option<&str> {
        self.status.last_applied_revision.as_deref()
    }

    fn last_attempted_revision(&self) -> Option<&str> {
        self.status.last_attempted_revision.as_deref()
    }

    fn generation(&self) -> Option<i64> {
        self.metadata.generation
    }

    fn observed_generation(&self) -> Option<i64> {
        self.status.observed_generation
    }

    fn helm_chart(&self) -> Option<&str> {
        self.status.helm_chart.as_deref()
    }

    fn ready_condition(&self) -> Option<Ready<'_>> {
        self.status.ready.as_ref().map(|ready| Ready {
            status: ready.status.as_deref(),
            reason: ready.reason.as_deref(),
            message: ready.message.as_deref(),
            last_transition_time: ready.last_transition_time.as_deref(),
        })
    }

    fn deployed(&self) -> Option<Deployed<'_>> {
        self.status.history.deployed.as_deref().map(|snapshot| Deployed {
            chart_version: snapshot.chart_version.as_deref(),
            app_version: snapshot.app_version.as_deref(),
            last_deployed: snapshot.last_deployed.as_deref(),
        })
    }

    fn history_fingerprint(&self) -> Option<String> {
        self.status.history.fingerprint.clone()
    }

    fn depends_on(&self) -> Vec<String> {
        dependencies(self.namespace(), self.spec.depends_on.iter().map(OwnedReference::borrowed))
    }
}

impl Listed {
    fn chart_spec(&self) -> Option<&ChartSpec> {
        self.spec.chart.as_deref()?.spec.as_ref()
    }
}

/// One page of a LIST.
#[derive(Debug, Deserialize)]
pub(crate) struct Page {
    #[serde(default)]
    metadata: PageMeta,
    #[serde(default)]
    pub(crate) items: Vec<Listed>,
}

impl Page {
    /// The token of the next page; `None` on the last.
    pub(crate) fn next(&self) -> Option<&str> {
        self.metadata.next.as_deref().filter(|token| !token.is_empty())
    }
}

#[derive(Debug, Default, Deserialize)]
struct PageMeta {
    #[serde(rename = "continue")]
    next: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A HelmRelease as the API server returns it after a failed upgrade: the newest snapshot is
    /// `failed`, the deployed one below it; conditions in Flux's order.
    fn helm_release() -> serde_json::Value {
        json!({
            "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
            "metadata": {"name": "podinfo", "namespace": "apps", "generation": 3,
                         "labels": {"app.kubernetes.io/managed-by": "kubectl-gitops"},
                         "managedFields": [{"manager": "kubectl-gitops"}]},
            "spec": {"interval": "10m", "suspend": true,
                     "chart": {"spec": {"chart": "podinfo", "version": ">=6.0.0",
                                        "sourceRef": {"kind": "HelmRepository", "name": "podinfo", "namespace": "flux-system"}}}},
            "status": {
                "observedGeneration": 3, "lastAppliedRevision": "6.5.4", "lastAttemptedRevision": "6.6.0",
                "helmChart": "flux-system/apps-podinfo",
                "conditions": [
                    {"type": "Reconciling", "status": "True", "reason": "Progressing"},
                    {"type": "Ready", "status": "False", "reason": "UpgradeFailed", "message": "timed out",
                     "lastTransitionTime": "2026-12-01T10:00:00Z"}],
                "history": [
                    {"chartVersion": "6.6.0", "appVersion": "6.6.0", "status": "failed", "lastDeployed": "2026-12-01T10:00:00Z"},
                    {"chartVersion": "6.5.4", "appVersion": "6.5.4", "status": "deployed", "lastDeployed": "2026-11-30T09:00:00Z"}],
                "inventory": {"entries": [{"id": "apps_podinfo__Service", "v": "v1"}]}
            }
        })
    }

    fn git_repository() -> serde_json::Value {
        json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": "fleet", "namespace": "flux-system", "generation": 2},
            "spec": {"url": "ssh://git@example.com/fleet.git", "ref": {"branch": "main", "tag": "v1.0.0"}},
            "status": {"observedGeneration": 1,
                       "artifact": {"revision": "main@sha1:0123456789abcdef", "digest": "sha256:aa"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded", "message": "stored"}]}
        })
    }

    fn kustomization() -> serde_json::Value {
        json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": "web", "namespace": "apps"},
            "spec": {"sourceRef": {"kind": "OCIRepository", "name": "web"}, "path": "./"},
            "status": {}
        })
    }

    /// Everything a reader asks, as one comparable value.
    fn answers(object: &impl FluxObject) -> String {
        format!(
            "{:?}",
            (
                (object.key(), object.is_ours(), object.suspended(), object.url(), object.source_ref_text()),
                (object.source_ref(), object.chart_ref(), object.chart_source_ref(), object.chart_version()),
                object.artifact_revision(),
                object.last_applied_revision(),
                object.last_attempted_revision(),
                (object.generation(), object.observed_generation(), object.is_current()),
                object.helm_chart(),
                object.ready_condition(),
                object.deployed(),
            )
        )
    }

    fn both(value: serde_json::Value) -> (DynamicObject, Listed) {
        let kind: &'static str = match value["kind"].as_str().unwrap() {
            "HelmRelease" => "HelmRelease",
            "GitRepository" => "GitRepository",
            _ => "Kustomization",
        };
        let listed: Listed = serde_json::from_value(value.clone()).unwrap();
        (serde_json::from_value(value).unwrap(), listed.of_kind(kind))
    }

    #[test]
    fn a_listed_object_answers_as_the_whole_object_does() {
        for value in [helm_release(), git_repository(), kustomization()] {
            let (whole, listed) = both(value);
            assert_eq!(answers(&listed), answers(&whole));
        }
    }

    #[test]
    fn a_helm_release_reads_its_ready_condition_and_the_deployed_snapshot() {
        let (release, _) = both(helm_release());
        let ready = release.ready_condition().unwrap();
        assert!(ready.is_false() && !ready.is_true());
        assert_eq!((ready.reason(), ready.message()), ("UpgradeFailed", "timed out"));
        let deployed = release.deployed().unwrap();
        assert_eq!((deployed.chart_version, deployed.app_version), (Some("6.5.4"), Some("6.5.4")));
        assert_eq!(release.last_attempted_revision(), Some("6.6.0"));
        assert!(release.is_current() && release.is_ours() && release.suspended());
        assert_eq!(release.chart_source_ref().unwrap().key("", "apps").unwrap().1, "flux-system");
    }

    #[test]
    fn a_source_shows_the_first_ref_field_and_is_not_current_before_it_observes_its_generation() {
        let (repository, _) = both(git_repository());
        assert_eq!(repository.source_ref_text().as_deref(), Some("tag v1.0.0"));
        assert!(!repository.is_current());
        let (kustomization, _) = both(kustomization());
        assert_eq!(kustomization.ready_condition(), None);
        assert_eq!(
            kustomization.source_ref().unwrap().key("", "apps"),
            Some(("OCIRepository".into(), "apps".into(), "web".into()))
        );
    }

    #[test]
    fn a_list_page_parses_into_listed_objects_and_its_continue_token() {
        let page: Page = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "List",
            "metadata": {"continue": "abc", "resourceVersion": "42"},
            "items": [helm_release(), kustomization()]
        }))
        .unwrap();
        assert_eq!(page.next(), Some("abc"));
        assert_eq!(page.items.len(), 2);
        let last: Page = serde_json::from_value(json!({"metadata": {"continue": ""}, "items": []})).unwrap();
        assert_eq!(last.next(), None);
    }

    #[test]
    fn a_watched_object_reduces_to_what_a_listed_one_keeps() {
        let mut listed: Listed = serde_json::from_value(serde_json::json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": "web-3", "namespace": "ui-team", "generation": 2, "resourceVersion": "917",
                         "labels": {"app.kubernetes.io/managed-by": "kubectl-gitops"},
                         "managedFields": [{"manager": "kustomize-controller", "operation": "Update"}]},
            "spec": {"interval": "10m0s", "path": "./web-3", "prune": true, "suspend": true,
                     "sourceRef": {"kind": "GitRepository", "name": "missing-source"}},
            "status": {"observedGeneration": 1, "conditions": [
                {"type": "Ready", "status": "False", "reason": "ArtifactFailed", "message": "not found"}]}
        }))
        .unwrap();
        assert_eq!(listed.take_resource_version().as_deref(), Some("917"));
        assert_eq!(listed.take_resource_version(), None);
        let listed = listed.of_kind("Kustomization");
        assert_eq!((listed.kind(), listed.namespace(), listed.name()), ("Kustomization", "ui-team", "web-3"));
        assert!(listed.suspended());
        assert!(listed.is_ours());
        assert_eq!((listed.generation(), listed.observed_generation()), (Some(2), Some(1)));
        assert_eq!(listed.source_ref().and_then(|reference| reference.name), Some("missing-source"));
        assert_eq!(listed.ready_condition().and_then(|ready| ready.reason), Some("ArtifactFailed"));
    }
}
