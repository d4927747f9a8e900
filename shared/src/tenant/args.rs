//! `kubectl gitops tenant` flags, each documented where it is defined, and the requests they
//! resolve into before any I/O (a bad flag stops here: nothing is read, nothing is written).

use std::time::Duration;

use clap::Args;

use crate::change::{DeliverySettings, RepoSettings};
use crate::cli::{DeliveryArgs, RepoArgs, SelectorArgs};
use crate::cli::{GlobalArgs, OutputFormat};
use crate::duration;
use crate::error::{Error, Result};
use crate::flux::objects::GitRef;
use crate::names::validate_name;

/// The role a tenant gets in its namespaces unless `--cluster-role` says otherwise: Kubernetes'
/// namespaced `admin`, bound by a RoleBinding (never cluster-wide).
pub const DEFAULT_ROLE: &str = "admin";
/// The role that is refused without `--allow-cluster-admin` (`flux create tenant`'s default).
pub const CLUSTER_ADMIN: &str = "cluster-admin";

/// `tenant add TEAM --with-namespace NS …`.
#[derive(Debug, Clone, Args)]
pub struct TenantAddArgs {
    /// The team: a DNS-1123 label, used for its directory, its ServiceAccount and its Flux objects.
    pub name: String,

    /// A namespace the team deploys to.
    ///
    /// Repeatable. Created when it does not exist; refused when another tenant owns it.
    #[arg(long = "with-namespace", value_name = "NAMESPACE", help_heading = "Tenant")]
    pub namespaces: Vec<String>,

    /// The ClusterRole the team's ServiceAccount gets in each of its namespaces (a RoleBinding).
    #[arg(long = "cluster-role", value_name = "ROLE", default_value = DEFAULT_ROLE, help_heading = "Tenant")]
    pub role: String,

    /// Allow --cluster-role cluster-admin: full control of the team's namespaces, RBAC included.
    #[arg(long, help_heading = "Tenant")]
    pub allow_cluster_admin: bool,

    /// The ServiceAccount Flux impersonates for the team (default: the team's name).
    #[arg(long, value_name = "NAME", help_heading = "Tenant")]
    pub service_account: Option<String>,

    /// The team's own repo, synced into each of its namespaces as the team's ServiceAccount.
    #[arg(long, value_name = "URL", help_heading = "Team repo")]
    pub repo: Option<String>,

    /// The git branch Flux follows.
    ///
    /// The branch of the team's repo.
    #[arg(long, value_name = "BRANCH", default_value = "main", requires = "repo", help_heading = "Team repo")]
    pub branch: String,

    /// A directory: in a source, the one Flux applies; for an artifact, on this machine.
    ///
    /// The directory of the team's repo to apply.
    #[arg(long, value_name = "DIR", default_value = "./", requires = "repo", help_heading = "Team repo")]
    pub path: String,

    /// The Secret with credentials for the source.
    ///
    /// The Secret (in each of the team's namespaces) with credentials for the team's repo.
    #[arg(long, value_name = "NAME", requires = "repo", help_heading = "Team repo")]
    pub secret_ref: Option<String>,

    /// How often Flux fetches the source and applies it again.
    ///
    /// How often Flux fetches the team's repo and re-applies it.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse, default_value = "1m", help_heading = "Team repo")]
    pub interval: Duration,

    /// A cluster, by its name in the config repo (its directory clusters/NAME).
    ///
    /// The clusters to connect the team to (repeatable; default: the current cluster).
    #[arg(long = "cluster-name", alias = "cluster", value_name = "NAME", help_heading = "Tenant")]
    pub clusters: Vec<String>,

    /// Also lock Flux down for tenants (no cross-namespace references, no remote bases, the
    /// namespace's `default` ServiceAccount when none is named), as flux2-multi-tenancy does.
    #[arg(long, help_heading = "Tenant")]
    pub lockdown: bool,

    /// Print the Flux YAML it would write and change nothing.
    ///
    /// The team's objects, as `flux create tenant --export` prints them (and its repo's source
    /// and Kustomization with --repo); no cluster, no repo.
    #[arg(long, conflicts_with = "dry_run", help_heading = "Delivery")]
    pub export: bool,

    #[command(flatten)]
    pub config: RepoArgs,

    #[command(flatten)]
    pub delivery: DeliveryArgs,
}

/// `tenant remove TEAM`.
#[derive(Debug, Clone, Args)]
pub struct TenantRemoveArgs {
    /// The team to disconnect. Flux prunes its namespaces and what was deployed into them.
    pub name: String,

    /// A cluster, by its name in the config repo (its directory clusters/NAME).
    ///
    /// Remove it from these clusters only (repeatable; default: the current cluster).
    #[arg(long = "cluster-name", alias = "cluster", value_name = "NAME")]
    pub clusters: Vec<String>,

    #[command(flatten)]
    pub config: RepoArgs,

    #[command(flatten)]
    pub delivery: DeliveryArgs,
}

/// What `tenant list -o` prints: no `-o name`, a tenant being no one object `kubectl get` takes.
pub const LIST_FORMATS: [OutputFormat; 4] =
    [OutputFormat::Table, OutputFormat::Wide, OutputFormat::Json, OutputFormat::Yaml];

/// `tenant list`.
#[derive(Debug, Clone, Args)]
pub struct TenantListArgs {
    /// A namespace the team deploys to.
    ///
    /// Only the tenant that owns it.
    #[arg(long = "with-namespace", value_name = "NAMESPACE")]
    pub with_namespace: Option<String>,

    #[command(flatten)]
    pub selector: SelectorArgs,
}

/// The team's repo, synced into each of its namespaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamRepo {
    /// `spec.url` of the GitRepository.
    pub url: String,
    /// The branch.
    pub git_ref: GitRef,
    /// `./`-prefixed directory.
    pub path: String,
    /// `--secret-ref`.
    pub secret_ref: Option<String>,
}

/// `tenant add`, resolved.
#[derive(Debug, Clone)]
pub struct TenantAddRequest {
    /// The team.
    pub name: String,
    /// Its namespaces, sorted, without duplicates.
    pub namespaces: Vec<String>,
    /// The ClusterRole bound in each namespace.
    pub role: String,
    /// The ServiceAccount Flux impersonates.
    pub service_account: String,
    /// The team's repo, when given.
    pub repo: Option<TeamRepo>,
    /// How often Flux fetches and applies the team's repo.
    pub interval: Duration,
    /// `--cluster-name`.
    pub clusters: Vec<String>,
    /// `--lockdown`.
    pub lockdown: bool,
    /// `--export`: print the team's Flux YAML only.
    pub export: bool,
    /// How to reach the config repo.
    pub config: RepoSettings,
    /// How the change is delivered.
    pub delivery: DeliverySettings,
}

/// `tenant remove`, resolved.
#[derive(Debug, Clone)]
pub struct TenantRemoveRequest {
    /// The team.
    pub name: String,
    /// `--cluster-name`.
    pub clusters: Vec<String>,
    /// How to reach the config repo.
    pub config: RepoSettings,
    /// How the change is delivered.
    pub delivery: DeliverySettings,
}

/// `tenant list`, resolved.
#[derive(Debug, Clone)]
pub struct TenantListRequest {
    /// `-o`.
    pub format: OutputFormat,
    /// Print the header line.
    pub headers: bool,
    /// `--with-namespace`: only the tenant owning this namespace.
    pub namespace: Option<String>,
    /// `-l`: only the tenants' namespaces with these labels.
    pub labels: Option<String>,
}

impl TenantAddArgs {
    /// Checks every flag (`-n` is the Flux namespace, as everywhere: see `change::Target`).
    pub fn request(&self) -> Result<TenantAddRequest> {
        let name = validate_name(&self.name, "tenant")?;
        let mut namespaces = Vec::new();
        for namespace in &self.namespaces {
            namespaces.push(validate_name(namespace, "namespace")?);
        }
        namespaces.sort();
        namespaces.dedup();
        if namespaces.is_empty() {
            return Err(Error::usage(
                format!("tenant {name} needs at least one namespace"),
                format!(
                    "pass --with-namespace NS (repeatable), e.g. kubectl gitops tenant add {name} --with-namespace {name}"
                ),
            ));
        }
        let role = validate_role(&self.role)?;
        if role == CLUSTER_ADMIN && !self.allow_cluster_admin {
            return Err(Error::usage(
                "--cluster-role cluster-admin gives the tenant full control of its namespaces, their RBAC included",
                format!(
                    "pass --allow-cluster-admin to mean it, or leave --cluster-role at its default ({DEFAULT_ROLE})"
                ),
            ));
        }
        let service_account = match &self.service_account {
            Some(account) => validate_name(account, "--service-account")?,
            None => name.clone(),
        };
        let repo = match &self.repo {
            Some(url) => {
                crate::repo_access::parse_url(url)?;
                crate::names::validate_git_ref(&self.branch, "--branch", "heads")?;
                Some(TeamRepo {
                    url: url.clone(),
                    git_ref: GitRef::Branch(self.branch.clone()),
                    path: crate::names::source_path(Some(&self.path), "--path")?,
                    secret_ref: self.secret_ref.as_deref().map(|s| validate_name(s, "--secret-ref")).transpose()?,
                })
            }
            None => None,
        };
        Ok(TenantAddRequest {
            name,
            namespaces,
            role,
            service_account,
            repo,
            interval: self.interval,
            clusters: self.clusters.clone(),
            lockdown: self.lockdown,
            export: self.export,
            config: self.config.settings()?,
            delivery: self.delivery.settings()?,
        })
    }
}

impl TenantRemoveArgs {
    /// Checks every flag.
    pub fn request(&self) -> Result<TenantRemoveRequest> {
        Ok(TenantRemoveRequest {
            name: validate_name(&self.name, "tenant")?,
            clusters: self.clusters.clone(),
            config: self.config.settings()?,
            delivery: self.delivery.settings()?,
        })
    }
}

impl TenantListArgs {
    /// `-o`, the header and `--with-namespace`, checked.
    pub fn request(&self, global: &GlobalArgs) -> Result<TenantListRequest> {
        let format = global.output_format();
        crate::output::ensure_supported(format, &LIST_FORMATS)?;
        let namespace = self.with_namespace.as_deref().map(|ns| validate_name(ns, "--with-namespace")).transpose()?;
        let labels = self.selector.labels()?;
        Ok(TenantListRequest { format, headers: !global.no_headers, namespace, labels })
    }
}

/// A ClusterRole's name: what an RBAC name may hold (`system:aggregate-to-edit` has colons).
fn validate_role(role: &str) -> Result<String> {
    let valid = !role.is_empty()
        && role.len() <= 253
        && role.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | ':'));
    if valid {
        Ok(role.to_string())
    } else {
        Err(Error::usage(
            format!("--cluster-role {role:?} is not a ClusterRole name"),
            "e.g. --cluster-role admin, --cluster-role edit or --cluster-role view (`kubectl get clusterroles` lists them)",
        ))
    }
}
