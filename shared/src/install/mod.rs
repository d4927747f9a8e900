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
mod plan;
pub mod settings;
pub mod source;

use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;

pub use self::args::{InstallArgs, ProviderKind};
pub use self::execute::execute;
pub use self::plan::{FileState, Migration, Plan, PlannedFile, PlannedPlatform, Step};
pub use self::settings::{InstallSettings, Mode};
pub use self::source::{FluxAuth, Hosted, RepoSource};
use crate::change::result::{ChangeResult, DoneChange, Waited};
use crate::cli::OutputFormat;
use crate::cluster::Cluster;
use crate::config::hosts;
use crate::deploy_key::{DeployKey, KeyAlgorithm};
use crate::detect::{self, Detection};
use crate::error::{Error, Result};
use crate::flux::bootstrap::{self, OciComponent, SYNC_NAME, SyncTarget};
use crate::flux::components::{Components, flux_components};
use crate::git::{Remote, Workspace};
use crate::http::Origin;
use crate::names::sanitize_name;
use crate::output::Printer;
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
    pub checkout: Option<Workspace>,
    /// Where the repo is and how to reach it.
    pub source: RepoSource,
    /// The GitHub or GitLab repository, for `--provider github|gitlab`.
    pub hosted: Option<Hosted>,
    /// The platform repository (`--platform-repo`, or the one the install record names).
    pub platform: Option<PlatformSide>,
    /// The kubeconfig context that reached the cluster: the fleet file's entry names it.
    pub context: Option<String>,
}

/// A separate platform repository, as install finds it: on the config repo's server, pushed to
/// with the config repo's credentials, read by Flux with the sync's Secret.
pub struct PlatformSide {
    /// Its URL (as Flux reads it) and branch.
    pub repo: PlatformRepo,
    /// A clone of its branch (an unborn branch when it does not exist yet).
    pub checkout: Workspace,
    /// `owner/name` on the config repo's provider; `None` on a plain git server.
    pub hosted: Option<RepoRef>,
    /// Its deploy keys, on a provider.
    pub deploy_keys: Vec<crate::provider::DeployKey>,
}

impl Inspection {
    /// A file of the branch as it is now; `None` when absent (or the repo does not exist yet).
    pub fn read(&self, path: &str) -> Result<Option<Vec<u8>>> {
        match &self.checkout {
            Some(checkout) => Ok(checkout.files().read(path)?),
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
            namespace: match &settings.namespace {
                Some(namespace) => namespace.clone(),
                None => crate::cluster::default_flux_namespace()?,
            },
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
    if let Some(error) = detection.unreachable_error() {
        return Err(error);
    }
    let secrets: Api<Secret> = Api::namespaced(cluster.client.clone(), &request.namespace);
    let existing_secret = match secrets.get_opt(SYNC_NAME).await {
        Ok(secret) => secret,
        Err(error) if crate::cluster::is_forbidden(&error) => None,
        Err(error) => return Err(cluster.error(error)),
    };
    let repository_exists = hosted.as_ref().is_none_or(|hosted| hosted.info.is_some());
    let checkout = if repository_exists { Some(clone(&source, &request.branch).await?) } else { None };
    let context = cluster.context.clone();
    Ok(Inspection { detection, existing_secret, checkout, source, hosted, platform: None, context })
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
    let checkout = Workspace::clone(&remote, &repo.branch).await.map_err(|error| {
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

/// Clones the branch into a temp dir (deleted when dropped).
pub async fn clone(source: &RepoSource, branch: &str) -> Result<Workspace> {
    Ok(Workspace::clone(&source.push_remote, branch).await?)
}

/// The whole command: validate, inspect, plan, then print the plan (`--dry-run`), the
/// manifests (`--export`) or execute it. Returns the line to print on stdout.
pub async fn run(settings: &InstallSettings, printer: &Printer) -> Result<String> {
    if settings.mode == Mode::Export {
        crate::change::exports_yaml(printer)?;
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
        return match printer.output() {
            format @ (OutputFormat::Json | OutputFormat::Yaml) => crate::output::render_structured(
                &crate::output::document(&change_result(&plan, None, settings)),
                format,
            ),
            _ => plan.render(),
        };
    }
    let noop = plan.is_noop();
    // The hosts given here are the ones this cluster's credentials go to from now on.
    let api = inspection.hosted.as_ref().map(|hosted| {
        let host =
            Origin::parse(hosted.provider.host()).map_err(|error| hosts::not_a_host("the provider host", &error))?;
        Ok::<_, Error>((hosted.provider.kind(), host))
    });
    let hosts = hosts::Wanted::new(Some(&plan.url), api.transpose()?)?;
    let outcome = execute(&cluster, &plan, inspection, settings.yes, settings.timeout, printer).await?;
    // The install is done whatever happens to the config file: a failure to write it is said, not fatal.
    match hosts::bind(&cluster.server, &hosts, hosts::Accept::Given) {
        Ok(hosts::Binding { line: Some(line), .. }) => printer.progress(&line),
        Ok(_) => {}
        Err(error) => printer.warning(&format!("{error}; the first command that reads the record binds them")),
    }
    if let format @ (OutputFormat::Json | OutputFormat::Yaml) = printer.output() {
        let result = change_result(&plan, Some(&outcome), settings);
        return crate::output::render_structured(&crate::output::document(&result), format);
    }
    let at = outcome.commit.as_deref().map(|sha| format!(" at {}", &sha[..sha.len().min(12)])).unwrap_or_default();
    Ok(if noop {
        format!("already installed: {} (branch {}, path {}){at}\n", plan.url, plan.request.branch, plan.request.path)
    } else {
        format!("installed: {} (branch {}, path {}){at}\n", plan.url, plan.request.branch, plan.request.path)
    })
}

/// The `Change` document of an install: the plan, and once executed what it committed and, with
/// `--wait`, the sync it waited for.
fn change_result(plan: &Plan, outcome: Option<&execute::Outcome>, settings: &InstallSettings) -> ChangeResult {
    let planned = plan.planned_change();
    let waited = match (outcome.and_then(|outcome| outcome.commit.as_ref()), &planned.wait) {
        (Some(commit), Some(what)) if settings.wait => Some(Waited {
            what: what.clone(),
            objects: vec![format!("{}/{SYNC_NAME}", plan.request.namespace)],
            ready: true,
            commit: commit.clone(),
        }),
        _ => None,
    };
    ChangeResult {
        noun: "flux".into(),
        verb: "install".into(),
        name: plan.request.cluster_name.clone(),
        dry_run: outcome.is_none(),
        plan: planned,
        done: outcome.map(|outcome| DoneChange {
            commit: outcome.commit.clone(),
            pull_request: None,
            made_meanwhile: false,
        }),
        waited,
        preview: None,
    }
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
        hostname: settings.repo.hostname.as_ref().map(Origin::authority),
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

#[cfg(test)]
mod tests;
