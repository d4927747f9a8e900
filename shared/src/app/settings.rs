//! The `app` flags (args.rs) resolved into requests before any command code runs: every flag
//! checked (a bad one stops here, before the cluster or the git server is asked anything),
//! defaults applied, the author parsed. The commands in mod.rs and list.rs see these, never
//! clap's structs.

use super::args::{AddArgs, ListArgs, RemoveArgs, SuspendArgs};
use super::spec::{AppSpec, Tier, read_values};
use crate::change::new_repo::NewRepoRequest;
use crate::change::{DeliverySettings, RepoSettings};
use crate::cli::{GlobalArgs, OutputFormat};
use crate::error::{Error, Result};

/// `app add`.
#[derive(Debug, Clone)]
pub struct AddRequest {
    /// The app, validated.
    pub spec: AppSpec,
    /// `--export`: print the Flux objects, touch nothing.
    pub export: bool,
    /// `--cluster-name`: the clusters to add it to (default: the current one); values go per cluster.
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
            spec: AppSpec::from_definition(&self.definition(), new_repo.as_ref(), &read_values)?,
            new_repo,
            delivery: self.delivery.settings()?,
            repo: self.repo.settings()?,
            export: self.export,
            clusters: checked_clusters(&self.clusters)?,
            update: self.update,
        })
    }
}

/// The clusters an app goes to, by their names in the repo: the labels `install --cluster-name`
/// accepts.
pub(crate) fn checked_clusters(clusters: &[String]) -> Result<Vec<String>> {
    for cluster in clusters {
        crate::names::validate_name(cluster, "--cluster-name")?;
    }
    Ok(clusters.to_vec())
}

/// `app remove`.
#[derive(Debug, Clone)]
pub struct RemoveRequest {
    /// The app, a valid name.
    pub name: String,
    /// An app, or a platform app (`platform remove`).
    pub tier: Tier,
    /// `--cluster-name`: remove it from these only (default: the current cluster).
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

/// `app list`.
#[derive(Debug, Clone)]
pub struct ListRequest {
    /// `-A`.
    pub all_namespaces: bool,
    /// `--cluster-name`: the apps the config repo lists for this cluster.
    pub cluster: Option<String>,
    /// `--in-repo` (or `--cluster-name`): read the config repo.
    pub reads_repo: bool,
    /// The config repo.
    pub repo: RepoSettings,
    /// `-o`, one `app list` prints.
    pub format: OutputFormat,
    /// Apps, or platform apps (`platform list`).
    pub tier: Tier,
    /// Column headers (`--no-headers` turns them off).
    pub headers: bool,
    /// `-l`: the apps whose Kustomization or HelmRelease has these labels.
    pub labels: Option<String>,
    /// `--context dev,uat`: the apps of each of these contexts.
    pub contexts: Option<Vec<String>>,
}

impl ListArgs {
    /// The request these flags and the shared ones make.
    pub fn request(&self, global: &GlobalArgs) -> Result<ListRequest> {
        let format = global.output_format();
        crate::output::ensure_supported(format, &crate::output::LIST_FORMATS)?;
        let labels = self.selector.labels()?;
        let reads_repo = self.in_repo || self.cluster.is_some();
        if labels.is_some() && reads_repo {
            return Err(Error::usage(
                "-l selects by the cluster's labels; --in-repo and --cluster-name read the config repo",
                "drop -l to list the repo's apps, or drop --in-repo/--cluster-name to list the cluster's",
            ));
        }
        Ok(ListRequest {
            labels,
            all_namespaces: self.all_namespaces,
            cluster: self.cluster.clone(),
            reads_repo,
            repo: self.repo_access.settings()?,
            format,
            headers: !global.no_headers,
            tier: Tier::App,
            contexts: crate::contexts::several(global)?,
        })
    }
}
