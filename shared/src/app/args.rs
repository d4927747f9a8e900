//! `kubectl gitops app` flags, each documented where it is defined.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Args};

use crate::cli::{DeliveryArgs, RepoArgs, SelectorArgs, SourceArgs};
use crate::duration;

/// `app add NAME --url URL`.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("git_ref").args(["branch", "tag", "semver", "commit"]).multiple(false)))]
pub struct AddArgs {
    /// The app's name: a DNS-1123 label, used for its directory and its Flux objects.
    pub name: String,

    /// Where the source is: a git URL (ssh://, https://), a Helm repository or an oci:// URL.
    ///
    /// Where the app comes from: a git URL (ssh://, https://), an https Helm repository (with
    /// --chart), or oci:// (manifests, or a Helm chart with --chart).
    #[arg(long, required_unless_present = "create_repo", help_heading = "Source")]
    pub url: Option<String>,

    /// Create the app's repository on the config repo's provider first (default name: the app's,
    /// under the config repo's owner) and deploy from it: our app layout (`./deploy`), or
    /// --from-template, --fork, --from-url. Flux reads it with a new read-only deploy key, kept
    /// in a Secret named after the app in this cluster. One plan; a failure before the config
    /// repo changed deletes the repository and the Secret again.
    #[arg(
        long,
        value_name = "[OWNER/]NAME",
        num_args = 0..=1,
        default_missing_value = "",
        conflicts_with_all = ["url", "branch", "tag", "semver", "commit", "insecure", "secret_ref", "chart", "chart_version", "export"],
        help_heading = "New repository"
    )]
    pub create_repo: Option<String>,

    #[command(flatten)]
    pub new_repo: SourceArgs,

    /// The git branch Flux follows.
    ///
    /// The git branch to follow (git sources; default main).
    #[arg(long, help_heading = "Source")]
    pub branch: Option<String>,

    /// A tag: of a git or OCI source, or of an artifact.
    ///
    /// The git or OCI tag to follow (OCI default: latest).
    #[arg(long, help_heading = "Source")]
    pub tag: Option<String>,

    /// A semver range of tags to follow, e.g. ">=1.0.0 <2.0.0".
    #[arg(long, help_heading = "Source")]
    pub semver: Option<String>,

    /// A git commit to pin (with --branch to say which branch it is on).
    #[arg(long, help_heading = "Source")]
    pub commit: Option<String>,

    /// Allow plain HTTP to an OCI registry.
    ///
    /// Reach the OCI registry over plain HTTP (oci:// sources only; `insecure: true`).
    #[arg(long, help_heading = "Source")]
    pub insecure: bool,

    /// The Secret with credentials for the source.
    ///
    /// The Secret (in the Flux namespace) with credentials for a private source.
    #[arg(long, value_name = "NAME", help_heading = "Source")]
    pub secret_ref: Option<String>,

    /// A directory: in a source, the one Flux applies; for an artifact, on this machine.
    ///
    /// The directory of kustomize manifests in the source (default ./).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["chart", "chart_path"], help_heading = "Deploy")]
    pub path: Option<String>,

    /// The Helm chart's name in the Helm repository or OCI registry.
    #[arg(long, conflicts_with = "chart_path", help_heading = "Deploy")]
    pub chart: Option<String>,

    /// The chart version or semver range (Helm repositories; default: the latest).
    #[arg(long, value_name = "VERSION", requires = "chart", help_heading = "Deploy")]
    pub chart_version: Option<String>,

    /// The directory of a Helm chart in a git source.
    #[arg(long, value_name = "PATH", help_heading = "Deploy")]
    pub chart_path: Option<String>,

    /// A Helm values file (repeatable): copied into the repo, shared by all clusters, or
    /// only for the clusters given with --cluster-name.
    #[arg(long = "values", value_name = "FILE", help_heading = "Deploy")]
    pub values: Vec<PathBuf>,

    /// The namespace the app's workloads go to.
    #[arg(long, value_name = "NAMESPACE", default_value = "default", help_heading = "Deploy")]
    pub target_namespace: String,

    /// Create the target namespace when it does not exist.
    #[arg(long, help_heading = "Deploy")]
    pub create_namespace: bool,

    /// How often Flux fetches the source and applies it again.
    ///
    /// How often Flux checks the source and re-applies the app.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse, default_value = "1m", help_heading = "Deploy")]
    pub interval: Duration,

    /// Delete what disappears from the source (kustomize apps).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL", help_heading = "Deploy")]
    pub prune: bool,

    /// An app (in the same namespace) that must be Ready first (repeatable).
    #[arg(long, value_name = "APP", help_heading = "Deploy")]
    pub depends_on: Vec<String>,

    /// A cluster, by its name in the config repo (its directory clusters/NAME).
    ///
    /// The clusters to deploy to (repeatable; default: the current cluster).
    #[arg(long = "cluster-name", alias = "cluster", value_name = "NAME", help_heading = "Deploy")]
    pub clusters: Vec<String>,

    /// Replace the app's definition when it already exists with a different one.
    #[arg(long, help_heading = "Deploy")]
    pub update: bool,

    /// Print the Flux YAML it would write and change nothing.
    ///
    /// Print the app's Flux YAML only; no cluster, no repo.
    #[arg(long, conflicts_with = "dry_run", help_heading = "Delivery")]
    pub export: bool,

    #[command(flatten)]
    pub repo: RepoArgs,

    #[command(flatten)]
    pub delivery: DeliveryArgs,
}

/// `app remove NAME`.
#[derive(Debug, Clone, Args)]
pub struct RemoveArgs {
    /// The app to remove.
    pub name: String,

    /// A cluster, by its name in the config repo (its directory clusters/NAME).
    ///
    /// Remove it from these clusters only (repeatable; default: the current cluster). The app's
    /// definition goes too once no cluster lists it.
    #[arg(long = "cluster-name", alias = "cluster", value_name = "NAME")]
    pub clusters: Vec<String>,

    #[command(flatten)]
    pub repo: RepoArgs,

    #[command(flatten)]
    pub delivery: DeliveryArgs,
}

/// `app suspend NAME` and `app resume NAME`.
#[derive(Debug, Clone, Args)]
pub struct SuspendArgs {
    /// The app.
    pub name: String,

    /// Also write the change into the config repo, so that it survives a re-install.
    #[arg(long)]
    pub persist: bool,

    #[command(flatten)]
    pub repo: RepoArgs,

    #[command(flatten)]
    pub delivery: DeliveryArgs,
}

/// `app list`.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Every namespace, instead of -n's.
    ///
    /// List the apps of every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,

    /// A cluster, by its name in the config repo (its directory clusters/NAME).
    ///
    /// Only the apps it lists (reads the repo, like --repo).
    #[arg(long = "cluster-name", alias = "cluster", value_name = "NAME")]
    pub cluster: Option<String>,

    /// Read the config repo instead of the cluster: every app and the clusters that list it.
    #[arg(long = "in-repo")]
    pub in_repo: bool,

    #[command(flatten)]
    pub selector: SelectorArgs,

    #[command(flatten)]
    pub repo_access: RepoArgs,
}
