//! The read-only half of `upgrade`: what the config repo must become for the target (pure, over a
//! checkout, so that a refused push plans again on the new head), and after the rollout, whether
//! the cluster runs what the manifests say.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::{Api, DynamicObject};
use serde::Serialize;

use super::UpgradeRequest;
use crate::change::layout::ClusterDir;
use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::flux::api;
use crate::flux::api::Versions as ServedVersions;
use crate::flux::migrate::{self, Blocker, Rewrite};
use crate::flux::release::{self, FluxVersion};
use crate::flux::storage::Crd;
use crate::git::Checkout;
use crate::plan::{self, FileChange};
use crate::record::{self, InstallRecord};
use crate::yaml;

/// What the config repo must become.
#[derive(Debug, Clone, Default)]
pub(super) struct RepoScan {
    /// The files that change.
    pub files: Vec<FileChange>,
    /// Manifest lines migrated, by file.
    pub rewrites: Vec<(String, Rewrite)>,
    /// Flux objects at an old API version that kubectl-gitops did not generate.
    pub not_ours: Vec<(String, Rewrite)>,
    /// What needs a person.
    pub blockers: Vec<(String, Blocker)>,
}

impl RepoScan {
    /// Why each file changes, for the plan and the pull request.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for file in &self.files {
            let why = if file.path.ends_with("flux-system/gotk-components.yaml") {
                "regenerated for the target release".to_string()
            } else if file.path.ends_with(&format!("/{}", record::FILE_NAME)) {
                "the install record names the target release".to_string()
            } else {
                let rewrites: Vec<String> = self
                    .rewrites
                    .iter()
                    .filter(|(path, _)| *path == file.path)
                    .map(|(_, rewrite)| format!("{} {}", rewrite.object, rewrite.what))
                    .collect();
                format!("migrated: {}", rewrites.join("; "))
            };
            notes.push(format!("{}: {why}", file.path));
        }
        notes
    }

    /// One line per blocker.
    pub fn render_blockers(&self) -> String {
        self.blockers
            .iter()
            .map(|(path, blocker)| format!("  {path}:{}: {}: {}", blocker.line, blocker.object, blocker.why))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// One line per object left at an old version.
    pub fn render_not_ours(&self) -> String {
        self.not_ours
            .iter()
            .map(|(path, rewrite)| format!("  {path}:{}: {} needs {}", rewrite.line, rewrite.object, rewrite.what))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The files, or an error when the head holds what the upgrade cannot change (a re-plan on a
    /// newer head refuses the same way the first plan did).
    pub fn into_files(self) -> Result<Vec<FileChange>> {
        if !self.blockers.is_empty() || !self.not_ours.is_empty() {
            return Err(Error::usage(
                format!(
                    "the config repo now holds manifests the upgrade cannot migrate:\n{}{}",
                    self.render_blockers(),
                    self.render_not_ours()
                ),
                "run upgrade again to see what blocks it (nothing was pushed)",
            ));
        }
        Ok(self.files)
    }
}

/// Plans the repo for the target: each cluster's component manifests and install record, and every
/// manifest under the cluster's directory and apps/ migrated.
pub(super) fn scan(
    checkout: &Checkout,
    clusters: &[(ClusterDir, InstallRecord)],
    request: &UpgradeRequest,
    components: &BTreeMap<Vec<String>, String>,
) -> Result<RepoScan> {
    let mut scan = RepoScan::default();
    let mut wanted = BTreeMap::new();
    let mut manifests = BTreeSet::new();
    for (dir, recorded) in clusters {
        let components_path = format!("{}/flux-system/gotk-components.yaml", dir.path);
        let text = components
            .get(&recorded.components)
            .ok_or_else(|| Error::Internal(format!("no component manifests for {}", dir.path)))?;
        wanted.insert(components_path, text.clone());
        let record_path = format!("{}/{}", dir.path, record::FILE_NAME);
        let namespace = plan::read(checkout, &record_path)?
            .and_then(|text| yaml::documents_from_str(&text).ok())
            .and_then(|documents| documents.into_iter().next())
            .and_then(|document| document.pointer("/metadata/namespace").and_then(|n| n.as_str()).map(String::from))
            .unwrap_or_else(|| crate::cluster::DEFAULT_FLUX_NAMESPACE.to_string());
        let upgraded = InstallRecord { flux_version: request.target.to_string(), ..recorded.clone() };
        wanted.insert(record_path, crate::flux::bootstrap::record_manifest(&upgraded, &namespace)?);
        for directory in [dir.path.as_str(), crate::change::layout::APPS_DIR] {
            manifests.extend(plan::files_under(checkout, directory)?);
        }
    }
    for path in manifests {
        if wanted.contains_key(&path) || !(path.ends_with(".yaml") || path.ends_with(".yml")) {
            continue;
        }
        let Some(text) = plan::read(checkout, &path)? else { continue };
        // Bootstrap's own files (gotk-sync.yaml) carry no label, and are ours all the same.
        let all = request.all_manifests || path.contains("/flux-system/");
        let migrated = migrate::migrate(&text, all);
        scan.rewrites.extend(migrated.rewrites.into_iter().map(|rewrite| (path.clone(), rewrite)));
        scan.not_ours.extend(migrated.not_ours.into_iter().map(|rewrite| (path.clone(), rewrite)));
        scan.blockers.extend(migrated.blockers.into_iter().map(|blocker| (path.clone(), blocker)));
        if migrated.text != text {
            wanted.insert(path, migrated.text);
        }
    }
    scan.files = plan::diff(checkout, &wanted, &[])?;
    Ok(scan)
}

/// After Flux applied the target's manifests: the namespace label and every controller's image
/// are the target's, and every Flux CRD serves exactly the versions the manifests give it.
pub(super) async fn check_rollout(
    cluster: &Cluster,
    namespace: &str,
    target: FluxVersion,
    components: &[&String],
) -> Result<()> {
    let mut stuck = Vec::new();
    let detection = crate::detect::detect(cluster).await?;
    let running = detection.flux.as_ref().and_then(|flux| flux.version.clone());
    if running.as_deref() != Some(target.to_string().as_str()) {
        stuck.push(format!(
            "namespace {namespace} is labelled {} {}",
            crate::flux::VERSION_LABEL,
            running.as_deref().unwrap_or("with no version")
        ));
    }
    let mut images = BTreeMap::new();
    let mut crds = BTreeMap::new();
    for text in components {
        for document in yaml::documents_from_str(text).map_err(Error::Internal)? {
            match document["kind"].as_str() {
                Some("Deployment") => {
                    let name = document.pointer("/metadata/name").and_then(|n| n.as_str()).unwrap_or_default();
                    let image = document.pointer("/spec/template/spec/containers/0/image").and_then(|i| i.as_str());
                    if let Some(tag) = image.and_then(|image| image.rsplit_once(':')).map(|(_, tag)| tag) {
                        images.insert(name.to_string(), tag.to_string());
                    }
                }
                Some("CustomResourceDefinition") => {
                    let name = document.pointer("/metadata/name").and_then(|n| n.as_str()).unwrap_or_default();
                    let versions: BTreeSet<String> = document
                        .pointer("/spec/versions")
                        .and_then(|v| v.as_array())
                        .into_iter()
                        .flatten()
                        .filter_map(|version| version["name"].as_str().map(String::from))
                        .collect();
                    crds.insert(name.to_string(), versions);
                }
                _ => {}
            }
        }
    }
    for controller in &detection.controllers {
        if let Some(wanted) = images.get(&controller.name)
            && controller.tag.as_ref() != Some(wanted)
        {
            stuck.push(format!(
                "Deployment {namespace}/{} runs {}, not {wanted}",
                controller.name,
                controller.tag.as_deref().unwrap_or("no tagged image")
            ));
        }
    }
    let api = crate::flux::storage::crds(cluster);
    for (name, wanted) in &crds {
        let live = api.get_opt(name).await.map_err(|error| cluster.error(error))?.map(Crd::of);
        let versions: BTreeSet<String> =
            live.into_iter().flat_map(|crd| crd.spec.versions.into_iter().map(|version| version.name)).collect();
        if versions != *wanted {
            stuck.push(format!(
                "CRD {name} serves [{}], the manifests give [{}]",
                versions.into_iter().collect::<Vec<_>>().join(", "),
                wanted.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    if stuck.is_empty() {
        return Ok(());
    }
    Err(Error::Negative {
        message: format!(
            "Flux applied the commit, but the cluster does not run {target} yet:\n  {}",
            stuck.join("\n  ")
        ),
        hint: Some(format!("`kubectl gitops status` and `kubectl get events -n {namespace}` show why")),
    })
}

/// A repo other than the config repo whose manifests a Kustomization applied at a version the
/// target drops: it must change first, or that Kustomization fails once the new CRDs arrive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct OtherRepo {
    /// The source's URL (a git repo, or an OCI repository).
    pub url: String,
    /// The Kustomization that applies it, `namespace/name`, and the path it applies.
    pub kustomization: String,
    /// Its `spec.path`.
    pub path: String,
    /// What must change: `Kind namespace/name at group/version`.
    pub objects: Vec<String>,
}

/// The repos other than the config repo (`config_url`) that hold Flux manifests the target no
/// longer serves. Each Kustomization's inventory records the API version of every manifest it
/// applied (the object's managed fields do not: Flux skips applying what did not change), so a
/// list of the Kustomizations and a GET of each one's source tell (read-only).
pub(super) async fn other_repos(
    cluster: &Cluster,
    served: &ServedVersions,
    target: FluxVersion,
    config_url: &str,
) -> Result<Vec<OtherRepo>> {
    let Some(version) = served.lookup(&api::KUSTOMIZATION) else { return Ok(Vec::new()) };
    let all: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &api::KUSTOMIZATION.at(version));
    let kustomizations = all.list(&Default::default()).await.map_err(|error| cluster.error(error))?.items;
    let text = |object: &DynamicObject, pointer: &str| {
        object.data.pointer(pointer).and_then(|value| value.as_str()).unwrap_or_default().to_string()
    };
    let mut repos = Vec::new();
    for kustomization in &kustomizations {
        let entries = kustomization.data.pointer("/status/inventory/entries").and_then(|e| e.as_array());
        let objects: Vec<String> = entries
            .into_iter()
            .flatten()
            .filter_map(|entry| dropped_entry(entry["id"].as_str()?, entry["v"].as_str()?, target))
            .collect();
        if objects.is_empty() {
            continue;
        }
        let namespace = kustomization.metadata.namespace.clone().unwrap_or_default();
        let source_kind = match text(kustomization, "/spec/sourceRef/kind").as_str() {
            "GitRepository" => &api::GIT_REPOSITORY,
            "OCIRepository" => &api::OCI_REPOSITORY,
            "Bucket" => &api::BUCKET,
            _ => continue,
        };
        let source_namespace = Some(text(kustomization, "/spec/sourceRef/namespace"))
            .filter(|namespace| !namespace.is_empty())
            .unwrap_or_else(|| namespace.clone());
        let Some(source_version) = served.lookup(source_kind) else { continue };
        let sources: Api<DynamicObject> =
            Api::namespaced_with(cluster.client.clone(), &source_namespace, &source_kind.at(source_version));
        let source = sources
            .get_opt(&text(kustomization, "/spec/sourceRef/name"))
            .await
            .map_err(|error| cluster.error(error))?;
        let url = match source {
            Some(source) if source_kind.kind == "Bucket" => text(&source, "/spec/bucketName"),
            Some(source) => text(&source, "/spec/url"),
            None => continue,
        };
        if url == config_url {
            continue;
        }
        repos.push(OtherRepo {
            url,
            kustomization: format!("{namespace}/{}", kustomization.metadata.name.as_deref().unwrap_or_default()),
            path: text(kustomization, "/spec/path"),
            objects,
        });
    }
    repos.sort_by(|a, b| (&a.url, &a.kustomization).cmp(&(&b.url, &b.kustomization)));
    Ok(repos)
}

/// An inventory entry (`<namespace>_<name>_<group>_<kind>` at version `version`) of a Flux kind at
/// a version the target drops, as `Kind namespace/name at group/version`.
pub(super) fn dropped_entry(id: &str, version: &str, target: FluxVersion) -> Option<String> {
    let mut parts = id.rsplitn(3, '_');
    let (kind, group, rest) = (parts.next()?, parts.next()?, parts.next()?);
    let (namespace, name) = rest.split_once('_')?;
    let dropped = crate::flux::api::is_flux_group(group) && !release::serves(target, group, version);
    dropped.then(|| format!("{kind} {namespace}/{name} at {group}/{version}"))
}

/// The line a plan and `--check` show for a repo that must change first.
pub(super) fn describe_other_repo(repo: &OtherRepo) -> String {
    format!(
        "{} (path {}, applied by Kustomization {}): {}",
        repo.url,
        if repo.path.is_empty() { "." } else { repo.path.as_str() },
        repo.kustomization,
        repo.objects.join("; ")
    )
}
