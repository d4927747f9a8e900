//! Our install record: the ConfigMap that says "kubectl-gitops manages this cluster".
//!
//! `install` commits it as `<path>/gitops.yaml` into the config repo, so Flux itself applies
//! it and a cluster rebuilt from git (`install --from-repo`) gets it back. `detect` reports a
//! cluster as `gitops` exactly when this ConfigMap exists in the Flux namespace.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use serde::{Deserialize, Serialize};

/// Name of the record ConfigMap, in the Flux namespace.
pub const CONFIGMAP_NAME: &str = "kubectl-gitops";
/// File name of the record inside the cluster directory of the config repo.
pub const FILE_NAME: &str = "gitops.yaml";
/// The label naming the app on every object `app add` generates; `app list` selects on it.
pub const APP_LABEL: &str = "kubectl-gitops.io/app";
/// Label we put on every object we generate.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY_LABEL`].
pub const MANAGED_BY_VALUE: &str = "kubectl-gitops";
/// Label on the Flux objects of a platform app (`platform add`): [`PLATFORM_TIER`].
pub const TIER_LABEL: &str = "kubectl-gitops.io/tier";
/// Value of [`TIER_LABEL`] for platform apps.
pub const PLATFORM_TIER: &str = "platform";

/// What `install` recorded about this cluster's GitOps setup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallRecord {
    /// The config repo URL Flux pulls from.
    pub url: String,
    /// The branch Flux follows.
    pub branch: String,
    /// The cluster's directory in the repo, e.g. `clusters/dev`.
    pub path: String,
    /// The cluster's name in the repo layout.
    pub cluster_name: String,
    /// The Flux version installed.
    pub flux_version: String,
    /// The Flux controllers installed, comma separated in the ConfigMap.
    pub components: Vec<String>,
    /// `github` or `gitlab` when the repo is reached through a provider's API (for pull
    /// requests and branch protection); absent for any other git server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The provider's `owner/name` (GitLab: `group[/subgroup]/name`) of the repo.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// The host of GitHub Enterprise or self-managed GitLab, when not the public one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The separate platform repository the platform layer applies (`install --platform-repo`);
    /// absent when the platform services live in the config repo.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<PlatformRepo>,
}

/// A platform repository: the platform services of the clusters that name it, apart from their
/// config repo (docs/layout.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlatformRepo {
    /// The URL Flux pulls it from.
    pub url: String,
    /// The branch Flux follows.
    pub branch: String,
}

impl InstallRecord {
    /// The record of cluster `cluster` (in `clusters/<cluster>` of a config repo on loopback), for
    /// tests.
    #[cfg(test)]
    pub(crate) fn of_cluster(cluster: &str) -> InstallRecord {
        InstallRecord {
            url: "ssh://git@127.0.0.1/fleet.git".into(),
            branch: "main".into(),
            path: format!("clusters/{cluster}"),
            cluster_name: cluster.into(),
            flux_version: "v2.9.0".into(),
            components: Vec::new(),
            provider: None,
            repository: None,
            hostname: None,
            platform: None,
        }
    }

    /// Reads a record back from its ConfigMap; `None` when a field is missing.
    pub fn from_configmap(configmap: &ConfigMap) -> Option<InstallRecord> {
        let data = configmap.data.as_ref()?;
        let field = |key: &str| data.get(key).cloned();
        Some(InstallRecord {
            url: field("url")?,
            branch: field("branch")?,
            path: field("path")?,
            cluster_name: field("clusterName")?,
            flux_version: field("fluxVersion")?,
            components: field("components")?.split(',').map(str::trim).map(String::from).collect(),
            provider: field("provider"),
            repository: field("repository"),
            hostname: field("hostname"),
            platform: field("platformUrl")
                .zip(field("platformBranch"))
                .map(|(url, branch)| PlatformRepo { url, branch }),
        })
    }

    /// The ConfigMap data this record is stored as.
    pub fn to_data(&self) -> BTreeMap<String, String> {
        let mut data = BTreeMap::from([
            ("url".to_string(), self.url.clone()),
            ("branch".to_string(), self.branch.clone()),
            ("path".to_string(), self.path.clone()),
            ("clusterName".to_string(), self.cluster_name.clone()),
            ("fluxVersion".to_string(), self.flux_version.clone()),
            ("components".to_string(), self.components.join(",")),
        ]);
        let optional = [("provider", &self.provider), ("repository", &self.repository), ("hostname", &self.hostname)];
        for (key, value) in optional {
            if let Some(value) = value {
                data.insert(key.to_string(), value.clone());
            }
        }
        if let Some(platform) = &self.platform {
            data.insert("platformUrl".to_string(), platform.url.clone());
            data.insert("platformBranch".to_string(), platform.branch.clone());
        }
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_configmap_data() {
        let record = InstallRecord {
            url: "ssh://git@127.0.0.1:2222/srv/fleet.git".into(),
            branch: "main".into(),
            path: "clusters/dev".into(),
            cluster_name: "dev".into(),
            flux_version: "v2.9.3".into(),
            components: vec!["source-controller".into(), "kustomize-controller".into()],
            provider: Some("github".into()),
            repository: Some("acme/fleet".into()),
            hostname: None,
            platform: None,
        };
        let configmap = ConfigMap { data: Some(record.to_data()), ..Default::default() };
        assert_eq!(InstallRecord::from_configmap(&configmap), Some(record.clone()));
        let platform =
            PlatformRepo { url: "ssh://git@127.0.0.1:2222/srv/platform.git".into(), branch: "stable".into() };
        let with_platform = InstallRecord { platform: Some(platform), ..record };
        let data = with_platform.to_data();
        assert_eq!(data["platformUrl"], "ssh://git@127.0.0.1:2222/srv/platform.git");
        assert_eq!(data["platformBranch"], "stable");
        let configmap = ConfigMap { data: Some(data), ..Default::default() };
        assert_eq!(InstallRecord::from_configmap(&configmap), Some(with_platform));
        assert_eq!(InstallRecord::from_configmap(&ConfigMap::default()), None);
    }
}
