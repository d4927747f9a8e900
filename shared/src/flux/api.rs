//! Flux kinds and the API versions a cluster serves for them, read from discovery.

use std::collections::BTreeMap;

use kube::core::discovery::v2::APIGroupDiscoveryList;
use kube::core::{ApiResource, GroupVersionKind};
use serde::Serialize;

use crate::error::{Error, Result};

/// One Flux kind we read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FluxKind {
    /// API group, e.g. `source.toolkit.fluxcd.io`.
    pub group: &'static str,
    /// Kind, e.g. `GitRepository`.
    pub kind: &'static str,
    /// Plural resource name, e.g. `gitrepositories`.
    pub plural: &'static str,
    /// The version Flux v2.9 writes.
    pub version: &'static str,
}

impl FluxKind {
    /// The kind at `version` (one the cluster serves), as kube's dynamic API addresses it.
    pub fn at(&self, version: &str) -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(self.group, version, self.kind), self.plural)
    }
}

const SOURCE: &str = "source.toolkit.fluxcd.io";
const KUSTOMIZE: &str = "kustomize.toolkit.fluxcd.io";
const HELM: &str = "helm.toolkit.fluxcd.io";
const NOTIFICATION: &str = "notification.toolkit.fluxcd.io";

/// `GitRepository` (source v1).
pub const GIT_REPOSITORY: FluxKind =
    FluxKind { group: SOURCE, kind: "GitRepository", plural: "gitrepositories", version: "v1" };
/// `HelmRepository` (source v1).
pub const HELM_REPOSITORY: FluxKind =
    FluxKind { group: SOURCE, kind: "HelmRepository", plural: "helmrepositories", version: "v1" };
/// `OCIRepository` (source v1 since Flux v2.6).
pub const OCI_REPOSITORY: FluxKind =
    FluxKind { group: SOURCE, kind: "OCIRepository", plural: "ocirepositories", version: "v1" };
/// `HelmChart` (source v1), created by helm-controller; we only read its status.
pub const HELM_CHART: FluxKind = FluxKind { group: SOURCE, kind: "HelmChart", plural: "helmcharts", version: "v1" };
/// `Bucket` (source v1).
pub const BUCKET: FluxKind = FluxKind { group: SOURCE, kind: "Bucket", plural: "buckets", version: "v1" };
/// `Kustomization` (kustomize v1).
pub const KUSTOMIZATION: FluxKind =
    FluxKind { group: KUSTOMIZE, kind: "Kustomization", plural: "kustomizations", version: "v1" };
/// `HelmRelease` (helm v2).
pub const HELM_RELEASE: FluxKind = FluxKind { group: HELM, kind: "HelmRelease", plural: "helmreleases", version: "v2" };
/// `Alert` (notification v1beta3).
pub const ALERT: FluxKind = FluxKind { group: NOTIFICATION, kind: "Alert", plural: "alerts", version: "v1beta3" };
/// `Provider` (notification v1beta3).
pub const PROVIDER: FluxKind =
    FluxKind { group: NOTIFICATION, kind: "Provider", plural: "providers", version: "v1beta3" };
/// `Receiver` (notification v1).
pub const RECEIVER: FluxKind = FluxKind { group: NOTIFICATION, kind: "Receiver", plural: "receivers", version: "v1" };

/// Every kind detect reports on.
pub const ALL: [FluxKind; 10] = [
    GIT_REPOSITORY,
    HELM_REPOSITORY,
    OCI_REPOSITORY,
    HELM_CHART,
    BUCKET,
    KUSTOMIZATION,
    HELM_RELEASE,
    ALERT,
    PROVIDER,
    RECEIVER,
];

/// Whether an API group belongs to Flux.
pub fn is_flux_group(group: &str) -> bool {
    group.ends_with(".toolkit.fluxcd.io")
}

/// The versions a cluster serves for each Flux kind, preferred version first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct ServedApis {
    by_kind: BTreeMap<String, Vec<String>>,
}

impl ServedApis {
    /// Reads the Flux kinds out of an aggregated discovery document (`GET /apis`).
    /// Groups list their versions in preference order, which is kept.
    pub fn from_discovery(discovery: &APIGroupDiscoveryList) -> ServedApis {
        let mut by_kind: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for group in &discovery.items {
            let group_name = group.metadata.as_ref().and_then(|m| m.name.as_deref()).unwrap_or_default();
            if !is_flux_group(group_name) {
                continue;
            }
            for version in &group.versions {
                let Some(version_name) = version.version.as_deref() else {
                    continue;
                };
                for resource in &version.resources {
                    let Some(kind) = resource.response_kind.as_ref().and_then(|k| k.kind.clone()) else {
                        continue;
                    };
                    by_kind.entry(kind).or_default().push(version_name.to_string());
                }
            }
        }
        ServedApis { by_kind }
    }

    /// Builds the table from explicit pairs: an older Flux in unit tests.
    #[cfg(test)]
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> ServedApis {
        let mut by_kind: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (kind, version) in pairs {
            by_kind.entry(kind.to_string()).or_default().push(version.to_string());
        }
        ServedApis { by_kind }
    }

    /// Whether no Flux kind is served at all (no Flux CRDs).
    pub fn is_empty(&self) -> bool {
        self.by_kind.is_empty()
    }

    /// The versions served for a kind, preferred first.
    pub fn versions(&self, kind: &FluxKind) -> &[String] {
        self.by_kind.get(kind.kind).map(Vec::as_slice).unwrap_or_default()
    }

    /// The version to use for a kind: the one Flux v2.9 writes when served, else the
    /// cluster's preferred one; `None` when the kind is not served.
    pub fn version_for(&self, kind: &FluxKind) -> Option<&str> {
        let versions = self.versions(kind);
        versions.iter().find(|v| *v == kind.version).or_else(|| versions.first()).map(String::as_str)
    }
}

/// The API version to write for each Flux kind: what the cluster serves, or what Flux v2.9
/// serves when there is no cluster to ask (`--export`).
#[derive(Debug, Clone)]
pub struct Versions(Option<ServedApis>);

impl Versions {
    /// The versions Flux v2.9 serves.
    pub fn pinned() -> Versions {
        Versions(None)
    }

    /// The versions a cluster serves.
    pub fn served(served: ServedApis) -> Versions {
        Versions(Some(served))
    }

    /// The version to write for a kind; `None` when the cluster does not serve it.
    pub fn lookup(&self, kind: &FluxKind) -> Option<&str> {
        match &self.0 {
            None => Some(kind.version),
            Some(served) => served.version_for(kind),
        }
    }

    pub(crate) fn get(&self, kind: &FluxKind) -> Result<&str> {
        self.lookup(kind).ok_or_else(|| {
            Error::usage(
                format!("this cluster's Flux does not serve {} ({})", kind.kind, kind.group),
                "upgrade Flux (`kubectl gitops upgrade`), or pick a source this Flux supports",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn discovery() -> APIGroupDiscoveryList {
        serde_json::from_value(serde_json::json!({
            "kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "items": [
                {"metadata": {"name": "apps"}, "versions": [{"version": "v1", "resources": [
                    {"resource": "deployments", "responseKind": {"group": "apps", "version": "v1", "kind": "Deployment"}, "scope": "Namespaced", "verbs": ["get"]}]}]},
                {"metadata": {"name": "source.toolkit.fluxcd.io"}, "versions": [
                    {"version": "v1", "resources": [
                        {"resource": "gitrepositories", "responseKind": {"group": "source.toolkit.fluxcd.io", "version": "v1", "kind": "GitRepository"}, "scope": "Namespaced", "verbs": ["get"]}]},
                    {"version": "v1beta2", "resources": [
                        {"resource": "gitrepositories", "responseKind": {"group": "source.toolkit.fluxcd.io", "version": "v1beta2", "kind": "GitRepository"}, "scope": "Namespaced", "verbs": ["get"]},
                        {"resource": "ocirepositories", "responseKind": {"group": "source.toolkit.fluxcd.io", "version": "v1beta2", "kind": "OCIRepository"}, "scope": "Namespaced", "verbs": ["get"]}]}]}
            ]
        }))
        .unwrap()
    }

    #[test]
    fn reads_flux_kinds_in_preference_order() {
        let served = ServedApis::from_discovery(&discovery());
        assert_eq!(served.versions(&GIT_REPOSITORY), ["v1", "v1beta2"]);
        assert_eq!(served.version_for(&OCI_REPOSITORY), Some("v1beta2"), "an older Flux serves only v1beta2");
        assert_eq!(served.version_for(&HELM_RELEASE), None);
        assert!(!served.is_empty());
    }

    #[test]
    fn no_flux_groups_means_empty() {
        let served = ServedApis::from_discovery(&APIGroupDiscoveryList { metadata: None, items: vec![] });
        assert!(served.is_empty());
    }
}
