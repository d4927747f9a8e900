//! The `app` flags (args.rs) resolved into requests before any command code runs: every flag
//! checked (a bad one stops here, before the cluster or the git server is asked anything),
//! defaults applied, the author parsed. The commands in mod.rs and list.rs see these, never
//! clap's structs.

use std::path::PathBuf;
use std::time::Duration;

use super::args::{AddArgs, ComponentUpgradeArgs, DeliveryArgs, ListArgs, RemoveArgs, RepoArgs, SuspendArgs};
use super::new_repo::NewRepoRequest;
use super::spec::{self, AppSpec, Tier};
use crate::cli::{GlobalArgs, OutputFormat};
use crate::cluster::Connection;
use crate::error::{Error, Result};
use crate::git::Signature;

/// Where the commands act: the cluster and the namespace `-n` asks for.
#[derive(Debug, Clone)]
pub struct Target {
    /// How to reach the cluster.
    pub connection: Connection,
    /// `-n`: the Flux namespace when the cluster does not tell.
    pub namespace: Option<String>,
}

impl Target {
    /// The target the shared flags name.
    pub fn from_args(global: &GlobalArgs) -> Target {
        Target {
            connection: Connection::from_args(global, crate::timeouts::REQUEST),
            namespace: global.namespace.clone(),
        }
    }
}

/// How to reach the config repo; unset fields default to the install record's.
#[derive(Debug, Clone, Default)]
pub struct RepoSettings {
    /// `--config-repo`.
    pub config_repo: Option<String>,
    /// `--config-branch`, checked to be a valid branch name.
    pub config_branch: Option<String>,
    /// `--private-key-file`.
    pub private_key_file: Option<PathBuf>,
    /// `--known-hosts-file`.
    pub known_hosts_file: Option<PathBuf>,
    /// The change is a platform service's or a tenant's: it goes to the platform repo when the
    /// cluster was installed with one (`install --platform-repo`) and no `--config-repo` is given.
    pub platform: bool,
    /// `--accept-host`: new hosts the install record may send credentials to.
    pub accepted_hosts: Vec<String>,
}

impl RepoSettings {
    /// These settings, for a change of `tier`.
    pub fn for_tier(&self, tier: Tier) -> RepoSettings {
        RepoSettings { platform: tier == Tier::Platform, ..self.clone() }
    }

    /// These settings, for a change the platform repo holds when there is one (tenants).
    pub fn in_platform_repo(&self) -> RepoSettings {
        RepoSettings { platform: true, ..self.clone() }
    }
}

impl RepoArgs {
    pub(crate) fn settings(&self) -> Result<RepoSettings> {
        if let Some(url) = &self.config_repo {
            crate::repo_access::parse_url(url)?;
        }
        if let Some(branch) = &self.config_branch {
            spec::validate_git_ref(branch, "--config-branch", "heads")?;
        }
        Ok(RepoSettings {
            config_repo: self.config_repo.clone(),
            config_branch: self.config_branch.clone(),
            private_key_file: self.private_key_file.clone(),
            known_hosts_file: self.known_hosts_file.clone(),
            platform: false,
            accepted_hosts: self.trust.accept_hosts.clone(),
        })
    }
}

/// How a change reaches the config repo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryMode {
    /// Push, unless the provider says the branch is protected: then a pull request.
    Auto,
    /// `--auto-merge`: push.
    Push,
    /// `--pr`: a pull request.
    PullRequest,
}

/// How a change is delivered, and what happens after.
#[derive(Debug, Clone)]
pub struct DeliverySettings {
    /// Push or pull request.
    pub mode: DeliveryMode,
    /// `-m`: the commit message, else one that says what changed.
    pub message: Option<String>,
    /// `--author`, else `GIT_AUTHOR_NAME`/`GIT_AUTHOR_EMAIL`, else kubectl-gitops.
    pub author: Signature,
    /// `--dry-run`.
    pub dry_run: bool,
    /// `--merge`: merge the pull request once opened.
    pub merge: bool,
    /// `--wait`.
    pub wait: bool,
    /// `--timeout`: of `--wait`, and of retrying refused pushes.
    pub timeout: Duration,
}

impl DeliveryArgs {
    pub(crate) fn settings(&self) -> Result<DeliverySettings> {
        let mode = match (self.pr, self.auto_merge) {
            (true, _) => DeliveryMode::PullRequest,
            (false, true) => DeliveryMode::Push,
            (false, false) => DeliveryMode::Auto,
        };
        Ok(DeliverySettings {
            mode,
            message: self.message.clone(),
            author: author(self.author.as_deref())?,
            dry_run: self.dry_run,
            merge: self.merge,
            wait: self.wait,
            timeout: self.timeout,
        })
    }
}

/// The commit author: `--author "Name <email>"`, else `GIT_AUTHOR_NAME`/`GIT_AUTHOR_EMAIL`.
fn author(text: Option<&str>) -> Result<Signature> {
    let Some(text) = text else {
        return Ok(crate::publish::author());
    };
    let parsed = text.trim().strip_suffix('>').and_then(|rest| rest.split_once('<'));
    match parsed {
        Some((name, email)) if !name.trim().is_empty() && email.contains('@') => {
            Ok(Signature { name: name.trim().to_string(), email: email.trim().to_string() })
        }
        _ => Err(Error::usage(
            format!("--author {text:?} is not \"Name <email>\""),
            "e.g. --author \"Jo Doe <jo@example.com>\"",
        )),
    }
}

/// `app add`.
#[derive(Debug, Clone)]
pub struct AddRequest {
    /// The app, validated.
    pub spec: AppSpec,
    /// `--export`: print the Flux objects, touch nothing.
    pub export: bool,
    /// `--cluster`: the clusters to add it to (default: the current one); values go per cluster.
    pub clusters: Vec<String>,
    /// `--update`: replace a different definition.
    pub update: bool,
    /// The config repo.
    pub repo: RepoSettings,
    /// The delivery.
    pub delivery: DeliverySettings,
    /// `--create-repo`: the app's repository, made first.
    pub new_repo: Option<NewRepoRequest>,
}

impl AddArgs {
    /// The request these flags make.
    pub fn request(&self) -> Result<AddRequest> {
        let new_repo = match &self.create_repo {
            Some(name) => Some(self.new_repo.request(if name.is_empty() { &self.name } else { name })?),
            None if self.new_repo.given() => {
                return Err(Error::usage(
                    "--from-template, --from-url, --fork and --public describe a new repository",
                    "add --create-repo to create the app's repository, or give its --url",
                ));
            }
            None => None,
        };
        Ok(AddRequest {
            new_repo,
            spec: AppSpec::from_args(self)?,
            delivery: self.delivery.settings()?,
            repo: self.repo.settings()?,
            export: self.export,
            clusters: self.clusters.clone(),
            update: self.update,
        })
    }
}

/// `app remove`.
#[derive(Debug, Clone)]
pub struct RemoveRequest {
    /// The app, a valid name.
    pub name: String,
    /// An app, or a platform app (`platform remove`).
    pub tier: Tier,
    /// `--cluster`: remove it from these only (default: the current cluster).
    pub clusters: Vec<String>,
    /// The config repo.
    pub repo: RepoSettings,
    /// The delivery.
    pub delivery: DeliverySettings,
}

impl RemoveArgs {
    /// The request these flags make.
    pub fn request(&self) -> Result<RemoveRequest> {
        crate::names::validate_name(&self.name, "app name")?;
        Ok(RemoveRequest {
            name: self.name.clone(),
            tier: Tier::App,
            delivery: self.delivery.settings()?,
            repo: self.repo.settings()?,
            clusters: self.clusters.clone(),
        })
    }
}

/// `app suspend` and `app resume`.
#[derive(Debug, Clone)]
pub struct SuspendRequest {
    /// The app, a valid name.
    pub name: String,
    /// `true` for suspend, `false` for resume.
    pub suspend: bool,
    /// `--persist`: record it in the config repo too.
    pub persist: bool,
    /// The config repo.
    pub repo: RepoSettings,
    /// The delivery.
    pub delivery: DeliverySettings,
}

impl SuspendArgs {
    /// The request of `app suspend` (`suspend`) or `app resume`.
    pub fn request(&self, suspend: bool) -> Result<SuspendRequest> {
        crate::names::validate_name(&self.name, "app name")?;
        Ok(SuspendRequest {
            name: self.name.clone(),
            suspend,
            delivery: self.delivery.settings()?,
            repo: self.repo.settings()?,
            persist: self.persist,
        })
    }
}

/// `component upgrade`.
#[derive(Debug, Clone)]
pub struct ComponentUpgradeRequest {
    /// The component, a valid name.
    pub name: String,
    /// The tag to move to, a valid OCI tag.
    pub tag: String,
    /// `--cluster`: the clusters to change; empty means the current one.
    pub clusters: Vec<String>,
    /// The config repo.
    pub repo: RepoSettings,
    /// The delivery.
    pub delivery: DeliverySettings,
}

impl ComponentUpgradeArgs {
    /// The request of `component upgrade`, checked before anything is contacted.
    pub fn request(&self) -> Result<ComponentUpgradeRequest> {
        crate::names::validate_name(&self.name, "component name")?;
        crate::oci::reference::validate_tag(&self.tag)?;
        for cluster in &self.clusters {
            crate::names::validate_name(cluster, "cluster name")?;
        }
        let delivery = self.delivery.settings()?;
        if delivery.wait {
            return Err(Error::usage(
                "component upgrade has no --wait yet",
                "follow the rollout with `kubectl gitops component list` (READY, REVISION)",
            ));
        }
        Ok(ComponentUpgradeRequest {
            name: self.name.clone(),
            tag: self.tag.clone(),
            clusters: self.clusters.clone(),
            repo: self.repo.settings()?,
            delivery,
        })
    }
}

/// `app list`.
#[derive(Debug, Clone)]
pub struct ListRequest {
    /// `-A`.
    pub all_namespaces: bool,
    /// `--cluster`: the apps the config repo lists for this cluster.
    pub cluster: Option<String>,
    /// `--repo` (or `--cluster`): read the config repo.
    pub reads_repo: bool,
    /// The config repo.
    pub repo: RepoSettings,
    /// `-o`, one `app list` prints.
    pub format: OutputFormat,
    /// Apps, or platform apps (`platform list`).
    pub tier: Tier,
    /// Column headers (`--no-headers` turns them off).
    pub headers: bool,
}

/// What a list (`app list`, `tenant list`) prints: a table, its names, or the rows as data.
pub const LIST_FORMATS: [OutputFormat; 5] =
    [OutputFormat::Table, OutputFormat::Wide, OutputFormat::Json, OutputFormat::Yaml, OutputFormat::Name];

impl ListArgs {
    /// The request these flags and the shared ones make.
    pub fn request(&self, global: &GlobalArgs) -> Result<ListRequest> {
        let format = global.output_format();
        crate::output::ensure_supported(format, &LIST_FORMATS)?;
        Ok(ListRequest {
            all_namespaces: self.all_namespaces,
            cluster: self.cluster.clone(),
            reads_repo: self.repo || self.cluster.is_some(),
            repo: self.repo_access.settings()?,
            format,
            headers: !global.no_headers,
            tier: Tier::App,
        })
    }
}
