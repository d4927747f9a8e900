//! `kubectl gitops install`: bootstrap Flux and our repo layout into a cluster from a git repo.
//!
//! The command runs in three phases, so that `--dry-run` and the real run cannot drift apart:
//! 1. [`inspect`]: read-only. Detect the cluster, read the Flux Secret, clone the repo into a
//!    temp dir (deleted afterwards).
//! 2. [`Plan::build`]: pure. Decide the files to commit, the objects to apply and the steps.
//! 3. `--dry-run` prints the plan ([`Plan::render`]); otherwise [`execute`] runs its steps, each
//!    error naming the step that failed.

pub mod args;
mod execute;
pub mod settings;
pub mod source;
pub(crate) mod wait;

use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;

pub use self::args::{InstallArgs, ProviderKind};
pub use self::execute::execute;
pub use self::settings::{InstallSettings, Mode};
pub use self::source::{FluxAuth, Hosted, RepoSource};
use crate::cluster::Cluster;
use crate::config::hosts;
use crate::deploy_key::{DeployKey, KeyAlgorithm};
use crate::detect::{self, ClusterState, Detection};
use crate::error::{Error, Result};
use crate::flux::bootstrap::{self, OciComponent, SYNC_NAME, SyncTarget};
use crate::flux_cli;
use crate::git::{Checkout, Remote};
use crate::names::sanitize_name;
use crate::output::Printer;
use crate::plan::FileChange;
use crate::provider::RepoRef;
use crate::record::{self, InstallRecord, PlatformRepo};
use crate::repo_access::parse_url;
use crate::yaml;

/// Everything the plan needs to know, read without changing anything.
pub struct Inspection {
    /// What the cluster holds now.
    pub detection: Detection,
    /// The Flux Secret, when one exists (re-runs reuse its key).
    pub existing_secret: Option<Secret>,
    /// A clone of the branch (an unborn branch when it does not exist yet); `None` when the
    /// repository itself does not exist yet (created by the plan).
    pub checkout: Option<Checkout>,
    /// Where the repo is and how to reach it.
    pub source: RepoSource,
    /// The GitHub or GitLab repository, for `--provider github|gitlab`.
    pub hosted: Option<Hosted>,
    /// The platform repository (`--platform-repo`, or the one the install record names).
    pub platform: Option<PlatformSide>,
}

/// A separate platform repository, as install finds it: on the config repo's server, pushed to
/// with the config repo's credentials, read by Flux with the sync's Secret.
pub struct PlatformSide {
    /// Its URL (as Flux reads it) and branch.
    pub repo: PlatformRepo,
    /// A clone of its branch (an unborn branch when it does not exist yet).
    pub checkout: Checkout,
    /// `owner/name` on the config repo's provider; `None` on a plain git server.
    pub hosted: Option<RepoRef>,
    /// Its deploy keys, on a provider.
    pub deploy_keys: Vec<crate::provider::DeployKey>,
}

impl Inspection {
    /// A file of the branch as it is now; `None` when absent (or the repo does not exist yet).
    pub fn read(&self, path: &str) -> Result<Option<Vec<u8>>> {
        match &self.checkout {
            Some(checkout) => Ok(checkout.read(path)?),
            None => Ok(None),
        }
    }
}

/// Validated inputs.
#[derive(Debug, Clone)]
pub struct Request {
    /// The branch Flux follows.
    pub branch: String,
    /// The cluster directory, e.g. `clusters/dev` (no `./`, no trailing `/`).
    pub path: String,
    /// The cluster's name.
    pub cluster_name: String,
    /// The Flux namespace.
    pub namespace: String,
    /// The Flux version to install.
    pub flux_version: String,
    /// The controllers to install.
    pub components: Vec<String>,
    /// Create a missing repository as private.
    pub private: bool,
    /// The owner is a user rather than an organisation or group.
    pub personal: bool,
    /// Give the deploy key write access.
    pub read_write_key: bool,
    /// Components distributed as OCI artifacts.
    pub oci_components: Vec<OciComponent>,
    /// `--layers`: move a directory laid out before the layers to them.
    pub move_to_layers: bool,
    /// `--platform-repo` and its branch.
    pub platform: Option<PlatformRepo>,
}

impl Request {
    /// Where the component manifests live in the repo.
    pub fn components_path(&self) -> String {
        format!("{}/flux-system/gotk-components.yaml", self.path)
    }

    /// The record lists what the manifests really hold: the components of their header. A header
    /// of another Flux version than the one asked for is refused.
    pub fn take_components_header(&mut self, components_text: &str) -> Result<()> {
        let (header_version, header_components) = bootstrap::parse_components_header(components_text);
        if let Some(version) = header_version.filter(|version| *version != self.flux_version) {
            return Err(Error::usage(
                format!("the component manifests are Flux {version}, but Flux {} was asked for", self.flux_version),
                format!(
                    "pass --flux-version {version}, or --components-file with the manifests of {}",
                    self.flux_version
                ),
            ));
        }
        if let Some(listed) = header_components {
            self.components = listed;
        }
        Ok(())
    }
}

/// A file the plan writes into the repo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    /// Path from the repo root.
    pub path: String,
    /// The contents in the repo now; `None` when the file is new.
    pub before: Option<String>,
    /// The new contents.
    pub contents: String,
    /// Whether it is new, changed or already as wanted.
    pub change: FileState,
}

/// How a planned file compares with the repo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileState {
    /// Not in the repo yet.
    Added,
    /// In the repo with other contents.
    Modified,
    /// Already as wanted.
    Unchanged,
}

impl FileState {
    /// What the dry run says of the file: `add`, `update` or `unchanged`.
    fn word(self) -> &'static str {
        match self {
            FileState::Added => "add",
            FileState::Modified => "update",
            FileState::Unchanged => "unchanged",
        }
    }
}

/// One thing `execute` does, in order.
#[derive(Debug, Clone)]
pub enum Step {
    /// Add the deploy key to the repository through the provider's API.
    UploadDeployKey,
    /// Ask the user to add the deploy key to the git server (generic git), unless `--yes`.
    ConfirmDeployKey,
    /// Add Flux's deploy key to the platform repository too (read-only).
    UploadPlatformDeployKey,
    /// Commit the platform repository's files (the cluster's empty platform list and a copy of
    /// the record), before the config repo points Flux at them.
    SeedPlatformRepo {
        /// The commit message.
        message: String,
    },
    /// Commit the changed files and push (retrying on a concurrent push).
    CommitAndPush {
        /// The commit message.
        message: String,
    },
    /// Apply the Flux components: CRDs first, then controllers.
    ApplyComponents,
    /// Create or update the Secret Flux pulls with.
    ApplySecret,
    /// Apply the sync objects and our record.
    ApplySync,
    /// Wait until the `flux-system` Kustomization is Ready at the pushed commit.
    WaitReady,
    /// `--layers`, 1 of 3: the sync stops pruning (`gotk-sync.yaml` with `prune: false`), applied.
    StopSyncPruning,
    /// `--layers`, 2 of 3: the root kustomization, the layers and their lists, applied by the
    /// sync, which keeps what leaves its inventory for the layers to take over.
    MoveToLayers,
    /// `--layers`, 3 of 3: the sync prunes again (`gotk-sync.yaml` as `flux bootstrap` writes it).
    ResumeSyncPruning,
}

impl Step {
    fn describe(&self, plan: &Plan) -> String {
        let hosted = plan.hosted_repo.as_deref().unwrap_or_default();
        match self {
            Step::UploadDeployKey => match &plan.auth {
                FluxAuth::Ssh(key) => format!(
                    "add deploy key {} ({}) to {hosted}",
                    key.fingerprint(),
                    if plan.request.read_write_key { "read-write" } else { "read-only" }
                ),
                FluxAuth::Basic { .. } => format!("let Flux pull {hosted} over HTTPS with the token"),
            },
            Step::UploadPlatformDeployKey => match &plan.auth {
                FluxAuth::Ssh(key) => {
                    let platform =
                        plan.platform.as_ref().map(|platform| platform.repo.url.as_str()).unwrap_or_default();
                    format!("add deploy key {} (read-only) to {platform}", key.fingerprint())
                }
                FluxAuth::Basic { .. } => String::new(),
            },
            Step::SeedPlatformRepo { message } => {
                let (count, platform) = plan
                    .platform
                    .as_ref()
                    .map_or((0, ""), |platform| (platform.changed_files().count(), platform.repo.url.as_str()));
                let branch = plan.platform.as_ref().map(|platform| platform.repo.branch.as_str()).unwrap_or_default();
                format!("commit {count} file(s) to {branch} of {platform} ({message:?}) and push")
            }
            Step::ConfirmDeployKey => match &plan.auth {
                FluxAuth::Ssh(key) => format!("ask you to add the deploy key {} to {}", key.fingerprint(), plan.url),
                FluxAuth::Basic { .. } => format!("ask you to confirm access to {}", plan.url),
            },
            Step::CommitAndPush { message } => {
                format!(
                    "commit {} file(s) to {} ({message:?}) and push",
                    plan.changed_files().count(),
                    plan.request.branch
                )
            }
            Step::ApplyComponents => format!(
                "apply the Flux {} components ({} objects, CRDs first) with server-side apply",
                plan.request.flux_version,
                plan.components.len()
            ),
            Step::ApplySecret => format!("apply Secret {}/{SYNC_NAME} (deploy key)", plan.request.namespace),
            Step::ApplySync => format!(
                "apply GitRepository and Kustomization {ns}/{SYNC_NAME} and ConfigMap {ns}/{}",
                record::CONFIGMAP_NAME,
                ns = plan.request.namespace
            ),
            Step::WaitReady => {
                let layers = if plan.adds_layers() { " and the layers platform, apps and tenants are" } else { " is" };
                format!(
                    "wait until Kustomization {}/{SYNC_NAME}{layers} Ready at the pushed commit",
                    plan.request.namespace
                )
            }
            Step::StopSyncPruning => format!(
                "commit {}/flux-system/gotk-sync.yaml with prune: false and wait until the sync applied it",
                plan.request.path
            ),
            Step::MoveToLayers => format!(
                "commit the layers ({}) and wait until the sync applied them: what leaves its inventory is kept for the layers",
                plan.migration.as_ref().map(|migration| migration.layers.len()).unwrap_or_default()
            ),
            Step::ResumeSyncPruning => format!(
                "commit {}/flux-system/gotk-sync.yaml with prune: true again and wait until the sync applied it",
                plan.request.path
            ),
        }
    }
}

/// The cluster directory's root kustomization, and every layer list's file name.
const ROOT_KUSTOMIZATION: &str = "kustomization.yaml";

/// How a cluster's directory is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Layout {
    /// New, or layered already: `kustomization.yaml` lists Flux, the record, the components and
    /// the layers' Kustomizations, which apply `platform/`, `apps/` and `tenants/` in order.
    Layered,
    /// Laid out before the layers: the sync applies the lists itself. Moving them to the layers
    /// would take them out of the sync's inventory, and Flux would prune every app before its
    /// layer applied it again; install leaves such a directory as it is.
    Unlayered,
    /// It holds files of others (named): the sync keeps applying the whole directory.
    Foreign(String),
}

/// What [`Layout`] the cluster's directory `path` has, or gets.
fn layout(inspection: &Inspection, path: &str) -> Result<Layout> {
    let has = |name: &str| -> Result<bool> { Ok(inspection.read(&format!("{path}/{name}"))?.is_some()) };
    if has(ROOT_KUSTOMIZATION)? {
        return Ok(if has(&bootstrap::PLATFORM_LAYER.file())? {
            Layout::Layered
        } else {
            Layout::Foreign(ROOT_KUSTOMIZATION.into())
        });
    }
    if has(&format!("apps/{ROOT_KUSTOMIZATION}"))? {
        return Ok(Layout::Unlayered);
    }
    let Some(checkout) = &inspection.checkout else { return Ok(Layout::Layered) };
    let known = ["flux-system", record::FILE_NAME, "components"];
    let mut foreign: Vec<String> = match std::fs::read_dir(checkout.root().join(path)) {
        Ok(entries) => entries
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| !known.contains(&name.as_str()))
            .collect(),
        Err(_) => Vec::new(),
    };
    foreign.sort();
    Ok(if foreign.is_empty() { Layout::Layered } else { Layout::Foreign(foreign.join(", ")) })
}

/// The files of a layered cluster directory `path`: the root kustomization (keeping entries of
/// others), each layer's Kustomization, and the lists that are not there yet.
fn layer_files(
    inspection: &Inspection,
    path: &str,
    target: &SyncTarget,
    components: &[String],
) -> Result<Vec<(String, String)>> {
    let root_path = format!("{path}/{ROOT_KUSTOMIZATION}");
    let root = inspection.read(&root_path)?.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    let mut files = vec![(root_path, bootstrap::root_kustomization(root.as_deref(), components)?)];
    for layer in bootstrap::LAYERS {
        // The platform and tenants layers of `--platform-repo` apply that repository's lists.
        let platform_repo = inspection.platform.as_ref().map(|platform| &platform.repo);
        let own_repo = platform_repo.filter(|_| layer.in_platform_repo);
        files.push((format!("{path}/{}", layer.file()), layer.manifest(target, platform_repo)?));
        let list = format!("{path}/{}/{ROOT_KUSTOMIZATION}", layer.name);
        if own_repo.is_none() && inspection.read(&list)?.is_none() {
            files.push((list, bootstrap::apps_kustomization()));
        }
    }
    Ok(files)
}

/// The planned files, each compared with the repository (`read`). The layers' lists are never
/// overwritten once they exist: they belong to `app add`, `platform add` and `tenant add`.
fn planned_files(
    wanted: Vec<(String, String)>,
    path: &str,
    read: &dyn Fn(&str) -> Result<Option<Vec<u8>>>,
) -> Result<Vec<PlannedFile>> {
    let mut files = Vec::new();
    for (file, contents) in wanted {
        let before = read(&file)?.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        let change = match &before {
            None => FileState::Added,
            Some(text) if *text == contents => FileState::Unchanged,
            Some(_) if is_layer_list(path, &file) => continue,
            Some(_) => FileState::Modified,
        };
        files.push(PlannedFile { path: file, before, contents, change });
    }
    Ok(files)
}

/// A platform repo is taken only by a layered directory whose own platform list is empty: the
/// platform layer would then apply the platform repo's list, and Flux would delete what the
/// config repo's list holds.
fn check_platform_move(inspection: &Inspection, request: &Request, layout: &Layout, repo: &PlatformRepo) -> Result<()> {
    if *layout != Layout::Layered || request.move_to_layers {
        return Err(Error::usage(
            format!("--platform-repo needs {} laid out in the platform, apps and tenants layers", request.path),
            "run `kubectl gitops install --layers` first (docs/layout.md), then add --platform-repo",
        ));
    }
    for layer in bootstrap::LAYERS.iter().filter(|layer| layer.in_platform_repo) {
        let list = format!("{}/{}/{ROOT_KUSTOMIZATION}", request.path, layer.name);
        let Some(text) = inspection.read(&list)? else { continue };
        let parsed: serde_json::Value = yaml::from_str(&String::from_utf8_lossy(&text)).map_err(Error::Internal)?;
        let listed: Vec<&str> =
            parsed["resources"].as_array().into_iter().flatten().filter_map(|entry| entry.as_str()).collect();
        if listed.is_empty() {
            continue;
        }
        let (what, command) = match layer.name == bootstrap::TENANTS_LAYER.name {
            true => ("tenants", "tenant"),
            false => ("platform services", "platform"),
        };
        return Err(Error::usage(
            format!(
                "{list} lists {what} ({}); with the platform repo {} the {} layer would apply that repository's list \
                 instead, and Flux would delete them",
                listed.join(", "),
                repo.url,
                layer.name
            ),
            format!(
                "remove them first (`kubectl gitops {command} remove NAME`) and add them again once the platform repo is in place"
            ),
        ));
    }
    Ok(())
}

/// Whether `file` is one of the cluster's lists (`<path>/{apps,platform,tenants}/kustomization.yaml`).
fn is_layer_list(path: &str, file: &str) -> bool {
    bootstrap::LAYERS.iter().any(|layer| file == format!("{path}/{}/{ROOT_KUSTOMIZATION}", layer.name))
}

/// What `install` will do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The validated request.
    pub request: Request,
    /// The URL Flux pulls from.
    pub url: String,
    /// Files in the repo.
    pub files: Vec<PlannedFile>,
    /// The Flux component manifests (applied directly when the cluster has no Flux).
    pub components: Vec<serde_json::Value>,
    /// The sync objects and record (applied directly).
    pub sync_objects: Vec<serde_json::Value>,
    /// How Flux pulls: a deploy key (generated, reused or given) or HTTPS credentials.
    pub auth: FluxAuth,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// `owner/name` of a GitHub or GitLab repository.
    pub hosted_repo: Option<String>,
    /// The repository does not exist yet. Only a dry run plans in that state: a real run creates
    /// it first ([`create_repository`]) and plans against the new repository's real URLs.
    pub creates_repository: bool,
    /// Things the user should know (e.g. an existing Flux of another version).
    pub warnings: Vec<String>,
    /// `--layers` on a directory laid out before them: the three commits that move it.
    pub migration: Option<Migration>,
    /// The platform repository and the files install writes into it.
    pub platform: Option<PlannedPlatform>,
}

/// What install writes into a separate platform repository.
#[derive(Debug, Clone)]
pub struct PlannedPlatform {
    /// Its URL and branch.
    pub repo: PlatformRepo,
    /// `<path>/platform/kustomization.yaml` (when missing) and `<path>/gitops.yaml`, the record
    /// by which `platform add` finds the cluster there.
    pub files: Vec<PlannedFile>,
}

impl PlannedPlatform {
    /// The files that differ from the platform repository.
    pub fn changed_files(&self) -> impl Iterator<Item = &PlannedFile> {
        self.files.iter().filter(|file| file.change != FileState::Unchanged)
    }
}

/// Moving a cluster directory laid out before the layers to them, without Flux deleting anything
/// on the way: the sync stops pruning, the lists move to their layers (which adopt their objects
/// with server-side apply), the sync prunes again. Each commit is applied before the next.
#[derive(Debug, Clone)]
pub struct Migration {
    /// `gotk-sync.yaml` with `prune: false`.
    pub sync_without_pruning: (String, String),
    /// The root kustomization, the layers' Kustomizations and their missing lists.
    pub layers: Vec<(String, String)>,
    /// `gotk-sync.yaml` as install writes it.
    pub sync: (String, String),
}

impl Plan {
    /// The files that differ from the repo.
    pub fn changed_files(&self) -> impl Iterator<Item = &PlannedFile> {
        self.files.iter().filter(|file| file.change != FileState::Unchanged)
    }

    /// Whether the plan writes the layers' Kustomizations (new, or pointed at a platform repo):
    /// then the wait follows them too.
    pub fn adds_layers(&self) -> bool {
        let layer = format!("{}/{}", self.request.path, bootstrap::PLATFORM_LAYER.file());
        self.files.iter().any(|file| file.path == layer && file.change != FileState::Unchanged)
    }

    /// Whether there is nothing to do (an install of the same repo and path that is complete).
    pub fn is_noop(&self) -> bool {
        self.steps.iter().all(|step| matches!(step, Step::WaitReady))
    }

    /// Builds the plan from what was inspected.
    pub fn build(
        mut request: Request,
        inspection: &Inspection,
        components_text: String,
        auth: FluxAuth,
        confirm_key: bool,
    ) -> Result<Plan> {
        let source = &inspection.source;
        let detection = &inspection.detection;
        let mut warnings = Vec::new();

        if let Some(installed) = &detection.gitops
            && (installed.url != source.flux_url || installed.path != request.path)
        {
            return Err(Error::usage(
                format!(
                    "this cluster is already installed from {} (path {}), not from {} (path {})",
                    installed.url, installed.path, source.flux_url, request.path
                ),
                "run install with the same --url and --path to repair it, or use a cluster without our layout",
            ));
        }
        let existing_flux = detection.flux.as_ref().filter(|_| detection.state != ClusterState::Unmodified);
        // A running Flux of another release line is kept until Flux itself applies the repo's pin.
        if let Some(flux) = existing_flux
            && let Some(version) = flux.version.as_deref().filter(|v| !request.flux_version.starts_with(*v))
        {
            warnings.push(format!(
                "Flux {version} is running in {}; the repo pins {}, which Flux will roll out on its next sync \
                 (pass --flux-version {version} to keep it)",
                flux.namespace, request.flux_version
            ));
        }

        let components_path = request.components_path();
        request.take_components_header(&components_text)?;
        let cluster_dir = |name: &str| format!("{}/{name}", request.path);
        let components = yaml::documents_from_str(&components_text).map_err(|error| {
            Error::usage(format!("the component manifests are not valid YAML: {error}"), "check --components-file")
        })?;
        if !components.iter().any(|d| d.get("kind").and_then(|k| k.as_str()) == Some("CustomResourceDefinition")) {
            return Err(Error::usage(
                "the component manifests contain no CustomResourceDefinition",
                "pass the full output of `flux install --export` as --components-file",
            ));
        }

        let hosted = inspection.hosted.as_ref();
        let record = InstallRecord {
            url: source.flux_url.clone(),
            branch: request.branch.clone(),
            path: request.path.clone(),
            cluster_name: request.cluster_name.clone(),
            flux_version: request.flux_version.clone(),
            components: request.components.clone(),
            provider: hosted.map(|hosted| hosted.provider.kind().id().to_string()),
            repository: hosted.map(|hosted| hosted.repo.path()),
            hostname: hosted
                .map(|hosted| hosted.provider.host().to_string())
                .filter(|host| hosted.is_some_and(|h| h.provider.kind().default_host() != host)),
            platform: inspection.platform.as_ref().map(|platform| platform.repo.clone()),
        };
        let target = SyncTarget {
            url: source.flux_url.clone(),
            branch: request.branch.clone(),
            path: request.path.clone(),
            namespace: request.namespace.clone(),
        };
        let sync_text = bootstrap::gotk_sync(&target)?;
        let record_text = bootstrap::record_manifest(&record, &request.namespace)?;
        let existing = inspection.read(&cluster_dir("flux-system/kustomization.yaml"))?;
        let existing = existing.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        let flux_system_kustomization = bootstrap::flux_system_kustomization_keeping(existing.as_deref())?;
        let wanted = [
            (components_path, components_text),
            (cluster_dir("flux-system/gotk-sync.yaml"), sync_text.clone()),
            (cluster_dir("flux-system/kustomization.yaml"), flux_system_kustomization),
            (cluster_dir(record::FILE_NAME), record_text.clone()),
            (cluster_dir("apps/kustomization.yaml"), bootstrap::apps_kustomization()),
        ];
        let mut wanted = wanted.to_vec();
        // OCI components need OCIRepository. A cluster without Flux gets the pinned Flux, which
        // serves it; an existing Flux must serve it already (checked the way Helm charts check
        // `Capabilities.APIVersions.Has`).
        let oci_version = match existing_flux {
            None => Some(crate::flux::api::OCI_REPOSITORY.version.to_string()),
            Some(_) => detection.api_versions.version_for(&crate::flux::api::OCI_REPOSITORY).map(String::from),
        };
        let mut component_names = Vec::new();
        for component in &request.oci_components {
            match &oci_version {
                Some(version) => {
                    wanted.push((
                        cluster_dir(&format!("components/{}.yaml", component.name)),
                        component.manifest(&request.namespace, version)?,
                    ));
                    component_names.push(component.name.clone());
                }
                None => warnings.push(format!(
                    "skipped component {}: this cluster's Flux does not serve OCIRepository (Flux v2.0 or later does; v2.6 or later serves source.toolkit.fluxcd.io/v1)",
                    component.url
                )),
            }
        }
        let mut migration = None;
        let layout = layout(inspection, &request.path)?;
        if let Some(platform) = &inspection.platform {
            check_platform_move(inspection, &request, &layout, &platform.repo)?;
        }
        match layout {
            Layout::Layered => {
                for file in layer_files(inspection, &request.path, &target, &component_names)? {
                    if !wanted.iter().any(|(path, _)| *path == file.0) {
                        wanted.push(file);
                    }
                }
            }
            Layout::Unlayered if request.move_to_layers => {
                let sync_path = cluster_dir("flux-system/gotk-sync.yaml");
                // check_platform_move refused a platform repo here: it follows the move.
                migration = Some(Migration {
                    sync_without_pruning: (sync_path.clone(), bootstrap::gotk_sync_without_pruning(&target)?),
                    layers: layer_files(inspection, &request.path, &target, &component_names)?,
                    sync: (sync_path, sync_text.clone()),
                });
            }
            Layout::Unlayered => warnings.push(format!(
                "{} was laid out before the platform, apps and tenants layers, so Flux does not order platform apps \
                 before apps there; run install again with --layers to move it (docs/layout.md)",
                request.path
            )),
            Layout::Foreign(entries) => warnings.push(format!(
                "{} holds files install did not write ({entries}): it stays one directory Flux applies whole, without \
                 the layers that order platform apps before apps (docs/layout.md)",
                request.path
            )),
        }
        let read = |path: &str| inspection.read(path);
        let files = planned_files(wanted, &request.path, &read)?;
        let platform = match &inspection.platform {
            Some(platform) => {
                let lists = bootstrap::LAYERS.iter().filter(|layer| layer.in_platform_repo);
                let list = |layer: &bootstrap::Layer| cluster_dir(&format!("{}/{ROOT_KUSTOMIZATION}", layer.name));
                let mut wanted: Vec<(String, String)> =
                    lists.map(|layer| (list(layer), bootstrap::apps_kustomization())).collect();
                wanted.push((cluster_dir(record::FILE_NAME), record_text.clone()));
                let read = |path: &str| Ok(platform.checkout.read(path)?);
                let files = planned_files(wanted, &request.path, &read)?;
                Some(PlannedPlatform { repo: platform.repo.clone(), files })
            }
            None => None,
        };

        let mut sync_objects = yaml::documents_from_str(&sync_text).map_err(Error::Internal)?;
        sync_objects.extend(yaml::documents_from_str(&record_text).map_err(Error::Internal)?);

        let mut steps = Vec::new();
        if let (Some(hosted), FluxAuth::Ssh(key)) = (hosted, &auth)
            && !hosted.has_key(&key.public_openssh, !request.read_write_key)
        {
            steps.push(Step::UploadDeployKey);
        }
        if let (Some(_), Some(side), FluxAuth::Ssh(key)) = (hosted, &inspection.platform, &auth)
            && !source::has_key(&side.deploy_keys, &key.public_openssh, true)
        {
            steps.push(Step::UploadPlatformDeployKey);
        }
        if confirm_key {
            steps.push(Step::ConfirmDeployKey);
        }
        if platform.as_ref().is_some_and(|platform| platform.changed_files().next().is_some()) {
            let message = format!("Platform services of {} ({})", request.cluster_name, request.path);
            steps.push(Step::SeedPlatformRepo { message });
        }
        if files.iter().any(|file| file.change != FileState::Unchanged) {
            let message =
                if inspection.checkout.as_ref().and_then(Checkout::head).is_none() || detection.gitops.is_none() {
                    format!("Install Flux {} and kubectl-gitops layout in {}", request.flux_version, request.path)
                } else {
                    format!("Update kubectl-gitops layout in {}", request.path)
                };
            steps.push(Step::CommitAndPush { message });
        }
        if existing_flux.is_none() {
            steps.push(Step::ApplyComponents);
        }
        if !inspection.existing_secret.as_ref().is_some_and(|secret| auth.matches(secret)) {
            steps.push(Step::ApplySecret);
        }
        let in_sync = detection.gitops.as_ref().is_some_and(|installed| *installed == record);
        if !in_sync || steps.iter().any(|s| matches!(s, Step::ApplyComponents | Step::ApplySecret)) {
            steps.push(Step::ApplySync);
        }
        steps.push(Step::WaitReady);
        if migration.is_some() {
            steps.extend([Step::StopSyncPruning, Step::MoveToLayers, Step::ResumeSyncPruning]);
        }

        let hosted_repo = hosted.map(|hosted| hosted.repo.path());
        let creates_repository = hosted.is_some_and(|hosted| hosted.info.is_none());
        Ok(Plan {
            request,
            url: source.flux_url.clone(),
            files,
            components,
            sync_objects,
            auth,
            steps,
            hosted_repo,
            creates_repository,
            warnings,
            migration,
            platform,
        })
    }

    /// The `--dry-run` text: numbered steps, then every file and object, secrets redacted.
    pub fn render(&self) -> Result<String> {
        let mut text = String::new();
        if self.is_noop() {
            text.push_str(&format!(
                "Already installed: {} (branch {}, path {}) is in sync; nothing to change.\n",
                self.url, self.request.branch, self.request.path
            ));
        }
        let mut described: Vec<String> = Vec::new();
        if self.creates_repository {
            described.push(describe_creation(self.hosted_repo.as_deref().unwrap_or_default(), self.request.private));
        }
        described.extend(self.steps.iter().map(|step| step.describe(self)));
        text.push_str(&crate::plan::render_steps(described.iter().map(String::as_str)));
        text.push_str("\nFiles in the repo:\n");
        for file in &self.files {
            text.push_str(&format!("  {:<9} {}\n", file.change.word(), file.path));
        }
        if let Some(platform) = &self.platform {
            text.push_str(&format!(
                "\nFiles in the platform repo {} (branch {}):\n",
                platform.repo.url, platform.repo.branch
            ));
            for file in &platform.files {
                text.push_str(&format!("  {:<9} {}\n", file.change.word(), file.path));
            }
        }
        text.push_str("\nObjects applied to the cluster:\n");
        if self.steps.iter().any(|s| matches!(s, Step::ApplyComponents)) {
            for document in &self.components {
                text.push_str(&format!("  {}\n", crate::apply::object_ref(document)));
            }
        }
        if self.steps.iter().any(|s| matches!(s, Step::ApplySecret)) {
            text.push_str(&format!("  Secret/{}/{SYNC_NAME}\n", self.request.namespace));
        }
        if self.steps.iter().any(|s| matches!(s, Step::ApplySync)) {
            for document in &self.sync_objects {
                text.push_str(&format!("  {}\n", crate::apply::object_ref(document)));
            }
        }
        text.push('\n');
        for file in self.changed_files() {
            if file.path.ends_with("gotk-components.yaml") {
                text.push_str(&format!("# {} ({} documents, not shown)\n", file.path, self.components.len()));
                continue;
            }
            let change =
                FileChange { path: file.path.clone(), before: file.before.clone(), after: Some(file.contents.clone()) };
            text.push_str(&crate::plan::unified_diff(&change));
        }
        for file in self.platform.iter().flat_map(PlannedPlatform::changed_files) {
            let change =
                FileChange { path: file.path.clone(), before: file.before.clone(), after: Some(file.contents.clone()) };
            text.push_str(&format!("# in the platform repo\n{}", crate::plan::unified_diff(&change)));
        }
        if self.steps.iter().any(|s| matches!(s, Step::ApplySecret)) {
            text.push_str(&format!("\n# Secret {}/{SYNC_NAME}\n", self.request.namespace));
            text.push_str(&self.auth.redacted_yaml(&self.request.namespace, SYNC_NAME)?);
        }
        Ok(text)
    }
}

impl Request {
    /// The request the settings make for this cluster: `context` is the kube context the
    /// cluster's name defaults to.
    pub fn new(settings: &InstallSettings, context: Option<&str>) -> Result<Request> {
        let cluster_name = match (&settings.cluster_name, context) {
            (Some(name), _) => name.clone(),
            (None, Some(context)) => sanitize_name(context),
            (None, None) => {
                return Err(Error::usage(
                    "no kube context to name the cluster after",
                    "pass --cluster-name (and --path if it is not clusters/<cluster-name>)",
                ));
            }
        };
        Ok(Request {
            branch: settings.branch.clone(),
            path: settings.path.clone().unwrap_or_else(|| format!("clusters/{cluster_name}")),
            cluster_name,
            namespace: settings.namespace.as_deref().unwrap_or(crate::cluster::DEFAULT_FLUX_NAMESPACE).to_string(),
            flux_version: settings.flux.version.clone().unwrap_or_else(|| crate::flux::PINNED_VERSION.to_string()),
            components: settings.flux.components.clone(),
            private: settings.access.private,
            personal: settings.access.personal,
            read_write_key: settings.access.read_write_key,
            oci_components: settings.flux.oci_components.clone(),
            move_to_layers: settings.layers,
            platform: settings.repo.platform.clone(),
        })
    }
}

/// How Flux will authenticate: HTTPS credentials for an https URL, else the SSH key given
/// with `--private-key-file`, else the key already in the Flux Secret, else a new one.
pub fn flux_auth(algorithm: KeyAlgorithm, inspection: &Inspection, cluster_name: &str) -> Result<(FluxAuth, bool)> {
    let source = &inspection.source;
    if let Some((username, password)) = &source.flux_basic {
        return Ok((FluxAuth::Basic { username: username.clone(), password: password.clone() }, false));
    }
    if let Some(private_key) = &source.private_key {
        return Ok((FluxAuth::Ssh(DeployKey::from_openssh(private_key, source.known_hosts.clone())?), false));
    }
    let reused = inspection.existing_secret.as_ref().and_then(DeployKey::from_secret);
    match reused {
        Some(mut key) => {
            key.known_hosts = source.known_hosts.clone();
            Ok((FluxAuth::Ssh(key), false))
        }
        None => {
            let comment = format!("flux-{cluster_name}");
            let key = DeployKey::generate(algorithm, &comment, source.known_hosts.clone())?;
            Ok((FluxAuth::Ssh(key), true))
        }
    }
}

/// Reads the cluster and the repo; changes nothing.
pub async fn inspect(
    cluster: &Cluster,
    request: &Request,
    source: RepoSource,
    hosted: Option<Hosted>,
) -> Result<Inspection> {
    let detection = detect::detect(cluster).await?;
    if detection.state == ClusterState::Unreachable {
        return Err(Error::Unreachable {
            server: cluster.server.clone(),
            reason: detection.error.clone().unwrap_or_default(),
        });
    }
    let secrets: Api<Secret> = Api::namespaced(cluster.client.clone(), &request.namespace);
    let existing_secret = match secrets.get_opt(SYNC_NAME).await {
        Ok(secret) => secret,
        Err(error) if crate::cluster::is_forbidden(&error) => None,
        Err(error) => return Err(cluster.error(error)),
    };
    let repository_exists = hosted.as_ref().is_none_or(|hosted| hosted.info.is_some());
    let checkout = if repository_exists { Some(clone(&source, &request.branch)?) } else { None };
    Ok(Inspection { detection, existing_secret, checkout, source, hosted, platform: None })
}

impl Inspection {
    /// Finds the platform repo the install will use ([`chosen_platform`]), once the request is
    /// final (`--from-repo` takes the one the repo's record names).
    pub async fn find_platform(&mut self, request: &Request) -> Result<()> {
        let recorded = self.detection.gitops.as_ref().and_then(|record| record.platform.clone());
        if let Some(repo) = chosen_platform(recorded, request.platform.as_ref())? {
            self.platform = Some(platform_side(&self.source, self.hosted.as_ref(), repo).await?);
        }
        Ok(())
    }
}

/// The platform repo of the install: `--platform-repo`, else the one recorded (in the cluster,
/// or in the repo for `--from-repo`). A re-run without the flag keeps the recorded one (dropping
/// it would point the platform layer back at the config repo's list, and Flux would delete every
/// platform service); another one is refused.
pub fn chosen_platform(recorded: Option<PlatformRepo>, asked: Option<&PlatformRepo>) -> Result<Option<PlatformRepo>> {
    match (recorded, asked) {
        (Some(installed), Some(asked)) if installed != *asked => Err(Error::usage(
            format!(
                "this cluster's platform repo is {} (branch {}), not {} (branch {})",
                installed.url, installed.branch, asked.url, asked.branch
            ),
            "run install with the same --platform-repo and --platform-branch, or without them",
        )),
        (recorded, asked) => Ok(asked.cloned().or(recorded)),
    }
}

/// Finds the platform repository: on the config repo's server (so that the sync's Secret reads
/// it and our credentials push to it), and existing.
async fn platform_side(source: &RepoSource, hosted: Option<&Hosted>, repo: PlatformRepo) -> Result<PlatformSide> {
    let (config, platform) = (parse_url(&source.flux_url)?, parse_url(&repo.url)?);
    if !crate::repo_access::same_server(&config, &platform) {
        return Err(Error::usage(
            format!("the platform repo {} is not on the config repo's server ({})", repo.url, source.flux_url),
            "Flux reads the platform repo with the config repo's credentials: give a URL of the same scheme, user, \
             host and port",
        ));
    }
    let path = crate::repo_access::path_of(&repo.url)?;
    let remote = Remote {
        url: crate::repo_access::with_path(&source.push_remote.url, &path)?,
        auth: source.push_remote.auth.clone(),
    };
    let (reference, deploy_keys) = match hosted {
        Some(hosted) => {
            let reference = RepoRef::parse(path.trim_start_matches('/').trim_end_matches(".git"))?;
            if hosted.provider.get_repository(&reference).await?.is_none() {
                return Err(missing_platform_repo(&repo.url));
            }
            let keys = hosted.provider.list_deploy_keys(&reference).await?;
            (Some(reference), keys)
        }
        None => (None, Vec::new()),
    };
    let checkout = crate::git::in_place(|| Checkout::clone(&remote, &repo.branch)).map_err(|error| {
        Error::usage(
            format!("cannot read the platform repo {}: {error}", repo.url),
            "create the platform repository first (empty will do), on the config repo's server",
        )
    })?;
    Ok(PlatformSide { repo, checkout, hosted: reference, deploy_keys })
}

fn missing_platform_repo(url: &str) -> Error {
    Error::usage(
        format!("the platform repo {url} does not exist"),
        "create it first (empty will do): install does not create the platform repository",
    )
}

/// Clones the branch into a temp dir (libgit2 blocks: see [`crate::git::in_place`]).
pub fn clone(source: &RepoSource, branch: &str) -> Result<Checkout> {
    Ok(crate::git::in_place(|| Checkout::clone(&source.push_remote, branch))?)
}

/// The whole command: validate, inspect, plan, then print the plan (`--dry-run`), the
/// manifests (`--export`) or execute it. Returns the line to print on stdout.
pub async fn run(settings: &InstallSettings, printer: &Printer) -> Result<String> {
    if settings.mode == Mode::Export {
        // Export needs no cluster: only a kube context, when --cluster-name is not given.
        let context = Cluster::connect(&settings.connection, printer).await.ok().and_then(|cluster| cluster.context);
        let request = Request::new(settings, context.as_deref())?;
        let components_text = components_text(settings, &request, printer).await?;
        return export(settings, request, components_text);
    }
    let cluster = Cluster::connect(&settings.connection, printer).await?;
    let request = Request::new(settings, cluster.context.as_deref())?;
    let confirm = |question: &str| printer.confirm(question, settings.yes);
    // A re-run trusts the host keys the first run pinned instead of scanning again. Best effort:
    // an unreachable cluster is reported by `inspect`.
    let pinned = crate::deploy_key::pinned_known_hosts(&cluster, &request.namespace).await.ok().flatten();
    let pinned = pinned.as_deref();
    let (source, hosted) = match settings.repo.provider {
        ProviderKind::Git => (source::generic(settings, pinned, &confirm)?, None),
        ProviderKind::Github | ProviderKind::Gitlab | ProviderKind::Gitea => {
            let (mut source, mut hosted) = source::hosted(settings, pinned, &confirm).await?;
            if hosted.info.is_none() && settings.mode == Mode::Apply {
                create_repository(&hosted, &request, printer).await?;
                (source, hosted) = source::hosted(settings, pinned, &confirm).await?;
            }
            (source, Some(hosted))
        }
    };
    let mut inspection = inspect(&cluster, &request, source, hosted).await?;
    let request = if settings.repo.from_repo { from_repo_request(settings, request, &inspection)? } else { request };
    inspection.find_platform(&request).await?;
    let repo_copy = inspection.read(&request.components_path())?.and_then(|bytes| String::from_utf8(bytes).ok());
    // The repo's copy, when current, is planned again unchanged: no CLI, and no second read.
    let components_text = match repo_copy {
        Some(copy) if settings.flux.components_file.is_none() && is_current(&copy, &request) => copy,
        _ => components_text(settings, &request, printer).await?,
    };
    let (auth, generated) = flux_auth(settings.access.ssh_key_algorithm, &inspection, &request.cluster_name)?;
    let confirm_key = generated && inspection.source.provider == ProviderKind::Git;
    let mut plan = Plan::build(request, &inspection, components_text, auth, confirm_key)?;
    if !settings.wait {
        plan.steps.retain(|step| !matches!(step, Step::WaitReady));
    }
    for warning in &plan.warnings {
        printer.warning(warning);
    }
    if settings.mode == Mode::DryRun {
        return plan.render();
    }
    let noop = plan.is_noop();
    // The hosts given here are the ones this cluster's credentials go to from now on.
    let api = inspection.hosted.as_ref().map(|hosted| (hosted.provider.kind(), hosted.provider.host().to_string()));
    let hosts = hosts::Wanted::new(Some(&plan.url), api.as_ref().map(|(kind, host)| (*kind, host.as_str())))?;
    let outcome = execute(&cluster, &plan, inspection, settings.yes, settings.timeout, printer).await?;
    // The install is done whatever happens to the config file: a failure to write it is said, not fatal.
    match hosts::bind(&cluster.server, &hosts, hosts::Accept::Given) {
        Ok(Some(line)) => printer.progress(&line),
        Ok(None) => {}
        Err(error) => printer.warning(&format!("{error}; the first command that reads the record binds them")),
    }
    let at = outcome.commit.as_deref().map(|sha| format!(" at {}", &sha[..sha.len().min(12)])).unwrap_or_default();
    Ok(if noop {
        format!("already installed: {} (branch {}, path {}){at}\n", plan.url, plan.request.branch, plan.request.path)
    } else {
        format!("installed: {} (branch {}, path {}){at}\n", plan.url, plan.request.branch, plan.request.path)
    })
}

fn describe_creation(repo: &str, private: bool) -> String {
    format!("create the {} repository {repo} through the provider's API", if private { "private" } else { "public" })
}

/// Creates the missing repository before planning, so that the plan uses the URLs the
/// provider gives it. Nothing else has happened yet when this fails.
pub async fn create_repository(hosted: &Hosted, request: &Request, printer: &Printer) -> Result<()> {
    let description = describe_creation(&hosted.repo.path(), request.private);
    printer.step(&description);
    hosted
        .provider
        .create_repository(&hosted.repo, request.private, request.personal)
        .await
        .map(drop)
        .map_err(|error| Error::Step { number: 1, total: 1, step: description, source: Box::new(error.into()) })
}

/// `--from-repo`: the cluster's name, Flux version and components come from the install
/// record in the repo (unless given on the command line), so that the rebuilt cluster matches.
fn from_repo_request(settings: &InstallSettings, mut request: Request, inspection: &Inspection) -> Result<Request> {
    let path = format!("{}/{}", request.path, record::FILE_NAME);
    let missing = || {
        Error::usage(
            format!(
                "no kubectl-gitops layout at {} in {} (branch {})",
                request.path, inspection.source.flux_url, request.branch
            ),
            "check --path and --branch, or install with --url to create the layout",
        )
    };
    let text = inspection.read(&path)?.and_then(|bytes| String::from_utf8(bytes).ok()).ok_or_else(missing)?;
    let documents = yaml::documents_from_str(&text)
        .map_err(|error| Error::usage(format!("{path} is not valid YAML: {error}"), "fix the file in the repo"))?;
    let configmap: k8s_openapi::api::core::v1::ConfigMap =
        documents.into_iter().next().and_then(|document| serde_json::from_value(document).ok()).ok_or_else(missing)?;
    let recorded = InstallRecord::from_configmap(&configmap).ok_or_else(missing)?;
    if settings.cluster_name.is_none() {
        request.cluster_name = recorded.cluster_name;
    }
    if settings.flux.version.is_none() {
        request.flux_version =
            recorded.flux_version.parse::<crate::flux_cli::Tag>().map(|tag| tag.to_string()).map_err(|error| {
                Error::usage(
                    format!("{path}: fluxVersion {error}"),
                    "fix the record in the repo, or pass --flux-version",
                )
            })?;
    }
    request.components = recorded.components;
    request.platform = chosen_platform(recorded.platform, request.platform.as_ref())?;
    Ok(request)
}

/// `--export`: the manifests, without touching the cluster or the repo.
fn export(settings: &InstallSettings, mut request: Request, components: String) -> Result<String> {
    let url = settings.repo.url.as_ref().map(|url| url.canonical.clone()).ok_or_else(|| {
        Error::usage("--export needs --url to write the sync manifests", "pass --url ssh://git@host/path/repo.git")
    })?;
    request.take_components_header(&components)?;
    let target = SyncTarget {
        url: url.clone(),
        branch: request.branch.clone(),
        path: request.path.clone(),
        namespace: request.namespace.clone(),
    };
    let hosted = settings.repo.provider != ProviderKind::Git;
    let record = InstallRecord {
        url,
        branch: request.branch.clone(),
        path: request.path.clone(),
        cluster_name: request.cluster_name.clone(),
        flux_version: request.flux_version.clone(),
        components: request.components.clone(),
        provider: hosted.then(|| settings.repo.provider.name().to_string()),
        repository: settings.repo.repository_path(),
        hostname: settings.repo.hostname.clone(),
        platform: request.platform.clone(),
    };
    let mut text = components;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&bootstrap::gotk_sync(&target)?);
    text.push_str(&bootstrap::record_manifest(&record, &request.namespace)?);
    Ok(text)
}

/// Whether the repo's copy of the component manifests is of the Flux version asked for: the plan
/// then keeps it (and the components its header lists), and no flux CLI is needed, so a re-run
/// downloads nothing.
fn is_current(repo_copy: &str, request: &Request) -> bool {
    bootstrap::parse_components_header(repo_copy).0.is_some_and(|version| version == request.flux_version)
}

/// The component manifests of an install request (see [`flux_components`]).
pub async fn components_text(settings: &InstallSettings, request: &Request, printer: &Printer) -> Result<String> {
    let wanted = Components {
        file: settings.flux.components_file.as_deref(),
        flux_bin: settings.flux.flux_bin.clone(),
        allow_unpinned: settings.flux.allow_unpinned,
        deadline: settings.timeout,
        version: &request.flux_version,
        namespace: &request.namespace,
        components: &request.components,
    };
    flux_components(&wanted, printer).await
}

/// The Flux component manifests wanted: a Flux release, its namespace and controllers.
pub struct Components<'a> {
    /// `--components-file`: the manifests as given.
    pub file: Option<&'a std::path::Path>,
    /// `--flux-bin`: the flux CLI to generate them with.
    pub flux_bin: Option<std::path::PathBuf>,
    /// `--allow-unpinned-flux`: a release this build does not pin may run.
    pub allow_unpinned: bool,
    /// `--timeout`: a download of the CLI ends by then.
    pub deadline: std::time::Duration,
    /// The Flux release.
    pub version: &'a str,
    /// The Flux namespace.
    pub namespace: &'a str,
    /// The controllers.
    pub components: &'a [String],
}

/// The component manifests: `--components-file`, else `flux install --export` of the flux CLI of
/// the version asked for (flux_cli.rs: given, cached, embedded, or downloaded and verified; a
/// release this build does not pin only with `--allow-unpinned-flux`). `install` and `upgrade`
/// obtain them alike.
pub async fn flux_components(wanted: &Components<'_>, printer: &Printer) -> Result<String> {
    if let Some(path) = wanted.file {
        return std::fs::read_to_string(path).map_err(|error| {
            Error::usage(format!("cannot read --components-file {}: {error}", path.display()), "check the path")
        });
    }
    // Checked again here, where it selects a binary to run: it may come from the repo's record.
    let version: flux_cli::Tag = wanted.version.parse()?;
    let locator = flux_cli::Locator::new(wanted.flux_bin.clone())
        .with_sibling(crate::plugin::find("flux"))
        .allowing_unpinned(wanted.allow_unpinned)
        .with_download_deadline(wanted.deadline);
    let cli = locator.locate(&version, printer).await?;
    let output = cli
        .command()
        .args(["install", "--export", "--version", wanted.version, "--namespace", wanted.namespace])
        .arg(format!("--components={}", wanted.components.join(",")))
        .output()
        .map_err(|error| Error::io(format!("running {} install --export", cli.path.display()), error))?;
    if !output.status.success() {
        return Err(Error::usage(
            format!(
                "{} install --export failed: {}",
                cli.path.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            "pass --components-file with the output of `flux install --export` instead",
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests;
