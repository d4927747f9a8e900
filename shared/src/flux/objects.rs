//! The Flux objects `app add` writes: sources (GitRepository, HelmRepository, OCIRepository)
//! and what deploys from them (Kustomization, HelmRelease), shaped field for field the way
//! `flux create … --export` shapes them, so that the same parameters give the same YAML.
//!
//! Builders return `serde_json::Value`s; [`crate::yaml::to_documents`] prints them with sorted
//! keys. The API version of each object comes from the caller, which takes it from the
//! cluster's discovery ([`crate::flux::api::ServedApis::version_for`]) when a cluster is there,
//! so that an older Flux gets the versions it serves.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::duration;
use crate::flux::api::FluxKind;

/// Name, namespace and labels of a generated object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.labels`; omitted when empty, as flux omits them.
    pub labels: BTreeMap<String, String>,
}

/// Which commits of a git repository to follow, in `flux create source git`'s precedence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitRef {
    /// `--branch`.
    Branch(String),
    /// `--tag`.
    Tag(String),
    /// `--semver` (flux's `--tag-semver`).
    Semver(String),
    /// `--commit`, optionally on a branch.
    Commit {
        /// The commit hash.
        commit: String,
        /// The branch the commit is on, when given.
        branch: Option<String>,
    },
}

impl GitRef {
    fn to_json(&self) -> Value {
        match self {
            GitRef::Branch(branch) => json!({"branch": branch}),
            GitRef::Tag(tag) => json!({"tag": tag}),
            GitRef::Semver(range) => json!({"semver": range}),
            GitRef::Commit { commit, branch: Some(branch) } => json!({"branch": branch, "commit": commit}),
            GitRef::Commit { commit, branch: None } => json!({"commit": commit}),
        }
    }
}

/// Which artifact of an OCI repository to follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OciRef {
    /// A tag.
    Tag(String),
    /// A semver range over the tags.
    Semver(String),
    /// A digest (`sha256:…`).
    Digest(String),
}

impl OciRef {
    fn to_json(&self) -> Value {
        match self {
            OciRef::Tag(tag) => json!({"tag": tag}),
            OciRef::Semver(range) => json!({"semver": range}),
            OciRef::Digest(digest) => json!({"digest": digest}),
        }
    }
}

/// A reference to a source from a Kustomization or HelmRelease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRef {
    /// `GitRepository`, `HelmRepository`, `OCIRepository` or `HelmChart`.
    pub kind: String,
    /// The source's name (same namespace).
    pub name: String,
}

/// `flux create source git NAME --url … [--branch|--tag|--tag-semver|--commit] [--secret-ref]`.
pub fn git_repository(
    kind: &FluxKind,
    api_version: &str,
    meta: &Meta,
    url: &str,
    git_ref: &GitRef,
    interval: Duration,
    secret_ref: Option<&str>,
) -> Value {
    let mut spec = json!({"interval": duration::format(interval), "ref": git_ref.to_json(), "url": url});
    insert_secret_ref(&mut spec, secret_ref);
    object(kind, api_version, meta, spec)
}

/// `flux create source helm NAME --url … [--secret-ref]`: an `oci://` URL adds `type: oci`.
pub fn helm_repository(
    kind: &FluxKind,
    api_version: &str,
    meta: &Meta,
    url: &str,
    interval: Duration,
    secret_ref: Option<&str>,
) -> Value {
    let mut spec = json!({"interval": duration::format(interval), "url": url});
    if url.starts_with("oci://") {
        spec["type"] = json!("oci");
    }
    insert_secret_ref(&mut spec, secret_ref);
    object(kind, api_version, meta, spec)
}

/// `flux create source oci NAME --url … --tag …`: `provider: generic` is the CLI's default
/// (the goldens omit it only because their harness resets flags to zero values).
pub fn oci_repository(
    kind: &FluxKind,
    api_version: &str,
    meta: &Meta,
    url: &str,
    oci_ref: &OciRef,
    interval: Duration,
    secret_ref: Option<&str>,
) -> Value {
    let mut spec =
        json!({"interval": duration::format(interval), "provider": "generic", "ref": oci_ref.to_json(), "url": url});
    insert_secret_ref(&mut spec, secret_ref);
    object(kind, api_version, meta, spec)
}

/// What a Kustomization applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KustomizationSpec {
    /// The source.
    pub source: SourceRef,
    /// The directory in the source, starting with `./`.
    pub path: String,
    /// Delete what disappears from the source (always written, as flux writes it).
    pub prune: bool,
    /// How often it is re-applied.
    pub interval: Duration,
    /// `targetNamespace`.
    pub target_namespace: Option<String>,
    /// Kustomizations (same namespace) that must be ready first.
    pub depends_on: Vec<String>,
}

/// `flux create kustomization NAME --source … --path … --prune …`.
pub fn kustomization(kind: &FluxKind, api_version: &str, meta: &Meta, spec: &KustomizationSpec) -> Value {
    let mut body = json!({
        "interval": duration::format(spec.interval),
        "path": spec.path,
        "prune": spec.prune,
        "sourceRef": {"kind": spec.source.kind, "name": spec.source.name},
    });
    insert_depends_on(&mut body, &spec.depends_on);
    if let Some(namespace) = &spec.target_namespace {
        body["targetNamespace"] = json!(namespace);
    }
    object(kind, api_version, meta, body)
}

/// Where a HelmRelease gets its chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chart {
    /// `spec.chart.spec`: a chart name in a HelmRepository, or a path in a GitRepository.
    Template {
        /// The chart name, or its path in a git source.
        chart: String,
        /// A version or semver range (HelmRepository only).
        version: Option<String>,
        /// The source holding it.
        source: SourceRef,
    },
    /// `spec.chartRef`: an OCIRepository (or HelmChart) holding the chart.
    Reference(SourceRef),
}

/// One entry of `spec.valuesFrom`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValuesReference {
    /// The ConfigMap's name.
    pub config_map: String,
    /// The key holding the values file.
    pub key: String,
}

/// What a HelmRelease installs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelmReleaseSpec {
    /// The chart.
    pub chart: Chart,
    /// How often it is reconciled.
    pub interval: Duration,
    /// `targetNamespace` (flux also sets `storageNamespace` to it, so `helm ls -n` finds it).
    pub target_namespace: Option<String>,
    /// `install.createNamespace`.
    pub create_namespace: bool,
    /// HelmReleases (same namespace) that must be ready first.
    pub depends_on: Vec<String>,
    /// Values files, merged in order after the chart's defaults.
    pub values_from: Vec<ValuesReference>,
    /// `spec.values`, merged over `valuesFrom` (`flux create helmrelease --values`).
    pub values: Option<Value>,
}

/// `flux create helmrelease NAME --source … --chart … | --chart-ref …`.
pub fn helm_release(kind: &FluxKind, api_version: &str, meta: &Meta, spec: &HelmReleaseSpec) -> Value {
    let mut body = json!({"interval": duration::format(spec.interval)});
    match &spec.chart {
        Chart::Template { chart, version, source } => {
            let mut template = json!({
                "chart": chart,
                "reconcileStrategy": "ChartVersion",
                "sourceRef": {"kind": source.kind, "name": source.name},
            });
            if let Some(version) = version {
                template["version"] = json!(version);
            }
            body["chart"] = json!({"spec": template});
        }
        Chart::Reference(source) => body["chartRef"] = json!({"kind": source.kind, "name": source.name}),
    }
    insert_depends_on(&mut body, &spec.depends_on);
    if let Some(namespace) = &spec.target_namespace {
        body["targetNamespace"] = json!(namespace);
        body["storageNamespace"] = json!(namespace);
    }
    if spec.create_namespace {
        body["install"] = json!({"createNamespace": true});
    }
    if !spec.values_from.is_empty() {
        let entries: Vec<Value> = spec
            .values_from
            .iter()
            .map(|values| json!({"kind": "ConfigMap", "name": values.config_map, "valuesKey": values.key}))
            .collect();
        body["valuesFrom"] = Value::Array(entries);
    }
    if let Some(values) = &spec.values {
        body["values"] = values.clone();
    }
    object(kind, api_version, meta, body)
}

fn insert_secret_ref(spec: &mut Value, secret_ref: Option<&str>) {
    if let Some(name) = secret_ref {
        spec["secretRef"] = json!({"name": name});
    }
}

fn insert_depends_on(spec: &mut Value, depends_on: &[String]) {
    if !depends_on.is_empty() {
        spec["dependsOn"] = depends_on.iter().map(|name| json!({"name": name})).collect();
    }
}

fn object(kind: &FluxKind, api_version: &str, meta: &Meta, spec: Value) -> Value {
    let mut metadata = Map::new();
    if !meta.labels.is_empty() {
        metadata.insert("labels".into(), json!(meta.labels));
    }
    metadata.insert("name".into(), json!(meta.name));
    metadata.insert("namespace".into(), json!(meta.namespace));
    json!({
        "apiVersion": format!("{}/{api_version}", kind.group),
        "kind": kind.kind,
        "metadata": metadata,
        "spec": spec,
    })
}

#[cfg(test)]
mod tests;
