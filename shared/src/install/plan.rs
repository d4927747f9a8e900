//! The plan of an install ([`Plan::build`]): pure, from what [`super::inspect`] read and the
//! request. The files to commit (each with what it held before), the objects to apply, and the
//! steps [`super::execute`] runs in order; `--dry-run` renders the same value.

use std::collections::BTreeMap;

use super::{FluxAuth, Inspection, Request, describe_creation, source};
use crate::change::result::{PlannedChange, PlannedDelivery, PlannedFile as ChangedFile};
use crate::detect::{ClusterState, FluxInstallation};
use crate::error::{Error, Result};
use crate::flux::bootstrap::{self, SYNC_NAME, SyncTarget};
use crate::plan::FileChange;
use crate::record::{self, InstallRecord, PlatformRepo};
use crate::yaml;

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
    pub(super) fn describe(&self, plan: &Plan) -> String {
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
    let mut foreign: Vec<String> = match std::fs::read_dir(checkout.files().root().join(path)) {
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

/// `fleet.yaml` with this cluster in it (docs/fleet.md): added when missing, with the context
/// that reached it; what people wrote there stays.
fn fleet_file(inspection: &Inspection, record: &InstallRecord) -> Result<(String, String)> {
    use crate::change::fleet;
    let existing = inspection.read(fleet::FILE_NAME)?.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    let context = inspection.context.as_deref();
    let text = fleet::with_cluster(existing.as_deref(), &record.cluster_name, &record.path, context)?;
    Ok((fleet::FILE_NAME.to_string(), text))
}

/// `wanted`'s fleet.yaml made again on `head`, a newer head than the one planned on: another
/// install may have added its cluster meanwhile, and its entry must stay (whole files are written
/// again on a newer head, and this one is shared by every cluster).
pub(crate) fn fleet_file_on(
    head: &crate::git::Checkout,
    request: &Request,
    context: Option<&str>,
    wanted: &mut BTreeMap<String, String>,
) -> Result<()> {
    use crate::change::fleet;
    if !wanted.contains_key(fleet::FILE_NAME) {
        return Ok(());
    }
    let existing = crate::plan::read(head, fleet::FILE_NAME)?;
    let text = fleet::with_cluster(existing.as_deref(), &request.cluster_name, &request.path, context)?;
    wanted.insert(fleet::FILE_NAME.to_string(), text);
    Ok(())
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
        refuse_another_install(inspection, &request)?;
        let existing_flux = detection.flux.as_ref().filter(|_| detection.state != ClusterState::Unmodified);
        let mut warnings: Vec<String> =
            existing_flux.and_then(|flux| other_flux_line(flux, &request)).into_iter().collect();

        let components_path = request.components_path();
        request.take_components_header(&components_text)?;
        let cluster_dir = |name: &str| format!("{}/{name}", request.path);
        let components = component_manifests(&components_text)?;
        let hosted = inspection.hosted.as_ref();
        let record = install_record(inspection, &request);
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
        wanted.push(fleet_file(inspection, &record)?);
        // OCI components need OCIRepository. A cluster without Flux gets the pinned Flux, which
        // serves it; an existing Flux must serve it already (checked the way Helm charts check
        // `Capabilities.APIVersions.Has`).
        let component_names = oci_component_files(inspection, &request, existing_flux, &mut wanted, &mut warnings)?;
        let layers = Layers { target: &target, component_names: &component_names, sync_text: &sync_text };
        let migration = lay_out(inspection, &request, &layers, &mut wanted, &mut warnings)?;
        let read = |path: &str| inspection.read(path);
        let files = planned_files(wanted, &request.path, &read)?;
        let platform = planned_platform(inspection, &request, &record_text)?;

        let mut sync_objects = yaml::documents_from_str(&sync_text).map_err(Error::Internal)?;
        sync_objects.extend(yaml::documents_from_str(&record_text).map_err(Error::Internal)?);

        let changes = Changes {
            files: &files,
            platform: platform.as_ref(),
            record: &record,
            existing_flux: existing_flux.is_some(),
            migration: migration.is_some(),
        };
        let steps = steps(inspection, &request, &auth, confirm_key, &changes);

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

    /// Every step in order, in words (the repository created first, when it is).
    fn step_words(&self) -> Vec<String> {
        let mut described: Vec<String> = Vec::new();
        if self.creates_repository {
            described.push(describe_creation(self.hosted_repo.as_deref().unwrap_or_default(), self.request.private));
        }
        described.extend(self.steps.iter().map(|step| step.describe(self)));
        described
    }

    /// The objects applied to the cluster directly, `Kind/namespace/name`.
    fn applied_objects(&self) -> Vec<String> {
        let applies = |wanted: fn(&Step) -> bool| self.steps.iter().any(wanted);
        let mut objects = Vec::new();
        if applies(|step| matches!(step, Step::ApplyComponents)) {
            objects.extend(self.components.iter().map(|document| crate::apply::object_ref(document).to_string()));
        }
        if applies(|step| matches!(step, Step::ApplySecret)) {
            objects.push(format!("Secret/{}/{SYNC_NAME}", self.request.namespace));
        }
        if applies(|step| matches!(step, Step::ApplySync)) {
            objects.extend(self.sync_objects.iter().map(|document| crate::apply::object_ref(document).to_string()));
        }
        objects
    }

    /// The plan as the `Change` document has it (`install -o json|yaml`).
    pub fn planned_change(&self) -> PlannedChange {
        let message = self.steps.iter().find_map(|step| match step {
            Step::CommitAndPush { message } => Some(message.clone()),
            _ => None,
        });
        let files = self.changed_files().chain(self.platform.iter().flat_map(PlannedPlatform::changed_files));
        PlannedChange {
            message: message.unwrap_or_default(),
            repo: self.url.clone(),
            branch: self.request.branch.clone(),
            delivery: PlannedDelivery { method: "push".into(), branch: None, merge: false },
            steps: self.step_words(),
            files: files
                .map(|file| ChangedFile { path: file.path.clone(), action: file.change.word().into() })
                .collect(),
            objects: self.applied_objects(),
            patches: Vec::new(),
            migrations: Vec::new(),
            wait: self.steps.iter().find(|step| matches!(step, Step::WaitReady)).map(|step| step.describe(self)),
            notes: self.warnings.clone(),
        }
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
        let described = self.step_words();
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
        for object in self.applied_objects() {
            text.push_str(&format!("  {object}\n"));
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

/// An install of this cluster from another repository or path is not ours to change.
fn refuse_another_install(inspection: &Inspection, request: &Request) -> Result<()> {
    let source = &inspection.source;
    match &inspection.detection.gitops {
        Some(installed) if installed.url != source.flux_url || installed.path != request.path => Err(Error::usage(
            format!(
                "this cluster is already installed from {} (path {}), not from {} (path {})",
                installed.url, installed.path, source.flux_url, request.path
            ),
            "run install with the same --url and --path to repair it, or use a cluster without our layout",
        )),
        _ => Ok(()),
    }
}

/// A running Flux of another release line is kept until Flux itself applies the repo's pin: the
/// warning that says so.
fn other_flux_line(flux: &FluxInstallation, request: &Request) -> Option<String> {
    let version = flux.version.as_deref().filter(|version| !request.flux_version.starts_with(*version))?;
    Some(format!(
        "Flux {version} is running in {}; the repo pins {}, which Flux will roll out on its next sync \
         (pass --flux-version {version} to keep it)",
        flux.namespace, request.flux_version
    ))
}

/// The component manifests as documents, refused unless they hold the CRDs.
fn component_manifests(text: &str) -> Result<Vec<serde_json::Value>> {
    let components = yaml::documents_from_str(text).map_err(|error| {
        Error::usage(format!("the component manifests are not valid YAML: {error}"), "check --components-file")
    })?;
    if !components.iter().any(|d| d.get("kind").and_then(|k| k.as_str()) == Some("CustomResourceDefinition")) {
        return Err(Error::usage(
            "the component manifests contain no CustomResourceDefinition",
            "pass the full output of `flux install --export` as --components-file",
        ));
    }
    Ok(components)
}

/// What the cluster directory records of this install.
fn install_record(inspection: &Inspection, request: &Request) -> InstallRecord {
    let hosted = inspection.hosted.as_ref();
    InstallRecord {
        url: inspection.source.flux_url.clone(),
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
    }
}

/// The OCI components' files, added to `wanted`; the names of those added. OCI components need
/// OCIRepository: a cluster without Flux gets the pinned Flux, which serves it; an existing Flux
/// must serve it already (checked the way Helm charts check `Capabilities.APIVersions.Has`).
fn oci_component_files(
    inspection: &Inspection,
    request: &Request,
    existing_flux: Option<&FluxInstallation>,
    wanted: &mut Vec<(String, String)>,
    warnings: &mut Vec<String>,
) -> Result<Vec<String>> {
    let oci_version = match existing_flux {
        None => Some(crate::flux::api::OCI_REPOSITORY.version.to_string()),
        Some(_) => inspection.detection.api_versions.version_for(&crate::flux::api::OCI_REPOSITORY).map(String::from),
    };
    let mut names = Vec::new();
    for component in &request.oci_components {
        match &oci_version {
            Some(version) => {
                wanted.push((
                    format!("{}/components/{}.yaml", request.path, component.name),
                    component.manifest(&request.namespace, version)?,
                ));
                names.push(component.name.clone());
            }
            None => warnings.push(format!(
                "skipped component {}: this cluster's Flux does not serve OCIRepository (Flux v2.0 or later does; v2.6 or later serves source.toolkit.fluxcd.io/v1)",
                component.url
            )),
        }
    }
    Ok(names)
}

/// What the layers' files are made from.
struct Layers<'a> {
    target: &'a SyncTarget,
    component_names: &'a [String],
    sync_text: &'a str,
}

/// The layers: their files added to `wanted` where the directory is laid out in them, the move
/// into them with `--layers` (returned), else a warning that says why there are none.
fn lay_out(
    inspection: &Inspection,
    request: &Request,
    layers: &Layers<'_>,
    wanted: &mut Vec<(String, String)>,
    warnings: &mut Vec<String>,
) -> Result<Option<Migration>> {
    let layout = layout(inspection, &request.path)?;
    if let Some(platform) = &inspection.platform {
        check_platform_move(inspection, request, &layout, &platform.repo)?;
    }
    let Layers { target, component_names, sync_text } = *layers;
    match layout {
        Layout::Layered => {
            for file in layer_files(inspection, &request.path, target, component_names)? {
                if !wanted.iter().any(|(path, _)| *path == file.0) {
                    wanted.push(file);
                }
            }
        }
        Layout::Unlayered if request.move_to_layers => {
            let sync_path = format!("{}/flux-system/gotk-sync.yaml", request.path);
            // check_platform_move refused a platform repo here: it follows the move.
            return Ok(Some(Migration {
                sync_without_pruning: (sync_path.clone(), bootstrap::gotk_sync_without_pruning(target)?),
                layers: layer_files(inspection, &request.path, target, component_names)?,
                sync: (sync_path, sync_text.to_string()),
            }));
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
    Ok(None)
}

/// The platform repo's files: its layers' lists and the install record.
fn planned_platform(inspection: &Inspection, request: &Request, record_text: &str) -> Result<Option<PlannedPlatform>> {
    let Some(platform) = &inspection.platform else { return Ok(None) };
    let cluster_dir = |name: &str| format!("{}/{name}", request.path);
    let lists = bootstrap::LAYERS.iter().filter(|layer| layer.in_platform_repo);
    let list = |layer: &bootstrap::Layer| cluster_dir(&format!("{}/{ROOT_KUSTOMIZATION}", layer.name));
    let mut wanted: Vec<(String, String)> = lists.map(|layer| (list(layer), bootstrap::apps_kustomization())).collect();
    wanted.push((cluster_dir(record::FILE_NAME), record_text.to_string()));
    let read = |path: &str| Ok(platform.checkout.files().read(path)?);
    let files = planned_files(wanted, &request.path, &read)?;
    Ok(Some(PlannedPlatform { repo: platform.repo.clone(), files }))
}

/// What the plan changes, which decides its steps.
struct Changes<'a> {
    files: &'a [PlannedFile],
    platform: Option<&'a PlannedPlatform>,
    record: &'a InstallRecord,
    existing_flux: bool,
    migration: bool,
}

/// The steps, in order: each only when there is something for it to do.
fn steps(
    inspection: &Inspection,
    request: &Request,
    auth: &FluxAuth,
    confirm_key: bool,
    changes: &Changes<'_>,
) -> Vec<Step> {
    let (hosted, detection) = (inspection.hosted.as_ref(), &inspection.detection);
    let mut steps = Vec::new();
    if let (Some(hosted), FluxAuth::Ssh(key)) = (hosted, auth)
        && !hosted.has_key(&key.public_openssh, !request.read_write_key)
    {
        steps.push(Step::UploadDeployKey);
    }
    if let (Some(_), Some(side), FluxAuth::Ssh(key)) = (hosted, &inspection.platform, auth)
        && !source::has_key(&side.deploy_keys, &key.public_openssh, true)
    {
        steps.push(Step::UploadPlatformDeployKey);
    }
    if confirm_key {
        steps.push(Step::ConfirmDeployKey);
    }
    if changes.platform.is_some_and(|platform| platform.changed_files().next().is_some()) {
        let message = format!("Platform services of {} ({})", request.cluster_name, request.path);
        steps.push(Step::SeedPlatformRepo { message });
    }
    if changes.files.iter().any(|file| file.change != FileState::Unchanged) {
        let first = inspection.checkout.as_ref().and_then(|checkout| checkout.files().head()).is_none();
        let message = if first || detection.gitops.is_none() {
            format!("Install Flux {} and kubectl-gitops layout in {}", request.flux_version, request.path)
        } else {
            format!("Update kubectl-gitops layout in {}", request.path)
        };
        steps.push(Step::CommitAndPush { message });
    }
    if !changes.existing_flux {
        steps.push(Step::ApplyComponents);
    }
    if !inspection.existing_secret.as_ref().is_some_and(|secret| auth.matches(secret)) {
        steps.push(Step::ApplySecret);
    }
    let in_sync = detection.gitops.as_ref().is_some_and(|installed| installed == changes.record);
    if !in_sync || steps.iter().any(|s| matches!(s, Step::ApplyComponents | Step::ApplySecret)) {
        steps.push(Step::ApplySync);
    }
    steps.push(Step::WaitReady);
    if changes.migration {
        steps.extend([Step::StopSyncPruning, Step::MoveToLayers, Step::ResumeSyncPruning]);
    }
    steps
}
