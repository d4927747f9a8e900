//! The fleet file, `fleet.yaml` at the config repo's root: the clusters a team cares about, each
//! by its name and directory in the repo, the kubeconfig context that reaches it, its environment
//! and its place in the order (dev before uat before prod). `install` adds the cluster it installs;
//! people edit the rest. It is input like any file of the repo: read, checked, never obeyed
//! beyond naming contexts of the user's own kubeconfig.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Where the fleet file lives in the config repo.
pub const FILE_NAME: &str = "fleet.yaml";
/// Its apiVersion and kind.
const API_VERSION: &str = "gitops.kubectl.io/v1alpha1";
const KIND: &str = "Fleet";

/// The fleet file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FleetFile {
    pub api_version: String,
    pub kind: String,
    /// The clusters, in their order.
    #[serde(default)]
    pub clusters: Vec<FleetEntry>,
}

/// One cluster of the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FleetEntry {
    /// Its name in the config repo (its install record's).
    pub name: String,
    /// Its directory, e.g. `clusters/dev`.
    pub path: String,
    /// The kubeconfig context that reaches it (on the machine of whoever installed it; another
    /// machine's may be named otherwise: `--context` says which).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Its environment (`dev`, `staging`, `prod`): what `promote --from/--to` names.
    pub environment: String,
    /// Its place among the clusters: lower first.
    pub order: u32,
}

impl FleetFile {
    /// Reads and checks a fleet file's text: its kind, each name and directory, no cluster twice.
    pub fn parse(text: &str) -> Result<FleetFile> {
        let invalid = |why: String| Error::Usage {
            message: format!("{FILE_NAME} in the config repo is not a fleet file: {why}"),
            hint: Some(format!("fix it in the config repo; docs/fleet.md shows its fields ({FILE_NAME})")),
        };
        let file: FleetFile = crate::yaml::from_str(text).map_err(invalid)?;
        if file.api_version != API_VERSION || file.kind != KIND {
            return Err(invalid(format!("it is a {} {}, not a {API_VERSION} {KIND}", file.api_version, file.kind)));
        }
        for (index, entry) in file.clusters.iter().enumerate() {
            crate::names::validate_name(&entry.name, "a cluster's name").map_err(|error| invalid(error.to_string()))?;
            crate::names::normalize_path(&entry.path).map_err(|error| invalid(error.to_string()))?;
            if file.clusters[..index].iter().any(|other| other.name == entry.name) {
                return Err(invalid(format!("cluster {} is listed twice", entry.name)));
            }
        }
        Ok(file)
    }

    /// The clusters in their order (then by name).
    pub fn ordered(&self) -> Vec<&FleetEntry> {
        let mut entries: Vec<&FleetEntry> = self.clusters.iter().collect();
        entries.sort_by(|a, b| (a.order, &a.name).cmp(&(b.order, &b.name)));
        entries
    }
}

/// `existing` (the fleet file's text, `None` when there is none) with cluster `name` in it: added
/// last (its environment its name) when missing, its context filled in when it has none; anything
/// else people wrote stays as it is.
pub fn with_cluster(existing: Option<&str>, name: &str, path: &str, context: Option<&str>) -> Result<String> {
    let mut file = match existing {
        Some(text) => FleetFile::parse(text)?,
        None => FleetFile { api_version: API_VERSION.into(), kind: KIND.into(), clusters: Vec::new() },
    };
    match file.clusters.iter_mut().find(|entry| entry.name == name) {
        Some(entry) if entry.context.is_none() => entry.context = context.map(String::from),
        Some(_) => {}
        None => {
            let order = file.clusters.iter().map(|entry| entry.order).max().map_or(1, |last| last + 1);
            file.clusters.push(FleetEntry {
                name: name.to_string(),
                path: path.to_string(),
                context: context.map(String::from),
                environment: name.to_string(),
                order,
            });
        }
    }
    crate::yaml::to_string(&file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_adds_its_cluster_last_and_keeps_what_people_wrote() {
        let first = with_cluster(None, "dev", "clusters/dev", Some("kind-dev")).unwrap();
        assert_eq!(
            first,
            "apiVersion: gitops.kubectl.io/v1alpha1\nclusters:\n- context: kind-dev\n  environment: dev\n  name: dev\n  order: 1\n  path: clusters/dev\nkind: Fleet\n"
        );
        let edited = first.replace("environment: dev", "environment: development");
        let second = with_cluster(Some(&edited), "uat", "clusters/uat", None).unwrap();
        let file = FleetFile::parse(&second).unwrap();
        let names: Vec<(&str, &str, u32)> =
            file.ordered().iter().map(|entry| (entry.name.as_str(), entry.environment.as_str(), entry.order)).collect();
        assert_eq!(names, [("dev", "development", 1), ("uat", "uat", 2)]);
        // Installed again from another machine: the context someone wrote is kept, a missing one filled.
        let again = with_cluster(Some(&second), "dev", "clusters/dev", Some("other-dev")).unwrap();
        let again = with_cluster(Some(&again), "uat", "clusters/uat", Some("kind-uat")).unwrap();
        let file = FleetFile::parse(&again).unwrap();
        let contexts: Vec<Option<&str>> = file.clusters.iter().map(|entry| entry.context.as_deref()).collect();
        assert_eq!(contexts, [Some("kind-dev"), Some("kind-uat")]);
    }

    #[test]
    fn a_fleet_file_that_is_not_one_is_refused_with_why() {
        for (text, said) in [
            ("apiVersion: v1\nkind: ConfigMap\n", "not a gitops.kubectl.io/v1alpha1 Fleet"),
            (
                "apiVersion: gitops.kubectl.io/v1alpha1\nkind: Fleet\nclusters:\n- name: dev\n  path: clusters/dev\n  environment: dev\n  order: 1\n- name: dev\n  path: clusters/x\n  environment: x\n  order: 2\n",
                "listed twice",
            ),
            (
                "apiVersion: gitops.kubectl.io/v1alpha1\nkind: Fleet\nclusters:\n- name: dev\n  path: ../outside\n  environment: dev\n  order: 1\n",
                "fleet.yaml",
            ),
            (
                "apiVersion: gitops.kubectl.io/v1alpha1\nkind: Fleet\nclusters:\n- name: dev\n  path: clusters/dev\n  environment: dev\n  order: 1\n  exec: rm -rf /\n",
                "unknown field",
            ),
        ] {
            let error = FleetFile::parse(text).unwrap_err();
            assert!(error.to_string().contains(said), "{text}: {error}");
        }
    }
}
