//! `kubectl gitops install` flags, each documented where it is defined.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::deploy_key::KeyAlgorithm;
use crate::duration;

/// Where the config repo is hosted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderKind {
    /// GitHub or GitHub Enterprise (API: repository, deploy key, branch protection).
    Github,
    /// GitLab, cloud or self-managed.
    Gitlab,
    /// Gitea, gitea.com or self-hosted.
    Gitea,
    /// Any git server over SSH or HTTPS (`--url`); the deploy key is printed for you to add.
    Git,
}

impl ProviderKind {
    /// The `--provider` value as typed.
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Github => "github",
            ProviderKind::Gitlab => "gitlab",
            ProviderKind::Gitea => "gitea",
            ProviderKind::Git => "git",
        }
    }
}

/// What `install` is asked to do.
#[derive(Debug, Clone, Args)]
pub struct InstallArgs {
    /// Where the config repo lives: github, gitlab, gitea, or git (any server, with --url).
    #[arg(long, value_enum, default_value_t = ProviderKind::Git, help_heading = "Repository")]
    pub provider: ProviderKind,

    /// The repository's owner: a user, organisation or group (github, gitlab, gitea).
    #[arg(long, help_heading = "Repository")]
    pub owner: Option<String>,

    /// The repository's name (github, gitlab, gitea).
    #[arg(long, help_heading = "Repository")]
    pub repository: Option<String>,

    /// The host of GitHub Enterprise, self-managed GitLab or Gitea (default github.com / gitlab.com / gitea.com).
    #[arg(long, help_heading = "Repository")]
    pub hostname: Option<String>,

    /// Where the source is: a git URL (ssh://, https://), a Helm repository or an oci:// URL.
    ///
    /// The repository URL for --provider git: ssh://user@host[:port]/path or https://host/path.
    #[arg(long, help_heading = "Repository")]
    pub url: Option<String>,

    /// Rebuild this cluster from a repo that already holds its layout (reads <path>/gitops.yaml).
    #[arg(long, value_name = "URL", conflicts_with = "url", help_heading = "Repository")]
    pub from_repo: Option<String>,

    /// The git branch Flux follows.
    #[arg(long, default_value = "main", help_heading = "Repository")]
    pub branch: String,

    /// A directory: in a source, the one Flux applies; for an artifact, on this machine.
    ///
    /// The cluster's directory in the repo (default clusters/<cluster-name>).
    #[arg(long, value_name = "DIR", help_heading = "Repository")]
    pub path: Option<String>,

    /// A separate repository for the platform services (`platform add`, `monitoring install`), on
    /// the config repo's server and reached the same way: the platform layer applies
    /// <path>/platform of it (default: the config repo's).
    #[arg(long, value_name = "URL", help_heading = "Repository")]
    pub platform_repo: Option<String>,

    /// The branch of --platform-repo Flux follows (default: --branch).
    #[arg(long, value_name = "BRANCH", requires = "platform_repo", help_heading = "Repository")]
    pub platform_branch: Option<String>,

    /// A cluster, by its name in the config repo (its directory clusters/NAME).
    ///
    /// The name this cluster gets (default: the kube context, lower-cased to a DNS label).
    #[arg(long, value_name = "NAME", help_heading = "Repository")]
    pub cluster_name: Option<String>,

    /// The Flux release, vX.Y.Z (default: the one this kubectl-gitops pins).
    ///
    /// The release to install. `--version`, as `flux install` spells it, is taken for it (with
    /// a warning) for one more release.
    #[arg(long, alias = "version", value_name = "VERSION", help_heading = "Flux")]
    pub flux_version: Option<String>,

    /// The Flux controllers to install, comma separated.
    #[arg(long, value_delimiter = ',', default_values_t = crate::flux::DEFAULT_COMPONENTS.map(String::from), help_heading = "Flux")]
    pub components: Vec<String>,

    /// Extra controllers: image-reflector-controller, image-automation-controller.
    #[arg(long, value_delimiter = ',', help_heading = "Flux")]
    pub components_extra: Vec<String>,

    /// Flux component manifests to use instead of generating them (`flux install --export` output).
    ///
    /// The Flux component manifests to use (gotk-components.yaml, e.g. from `flux install --export`).
    #[arg(long, value_name = "FILE", help_heading = "Flux")]
    pub components_file: Option<PathBuf>,

    /// The flux CLI that generates the component manifests.
    ///
    /// The flux CLI that generates the component manifests (default: the pinned release, cached or
    /// downloaded and verified; see `kubectl gitops flux`).
    #[arg(long, value_name = "PATH", help_heading = "Flux")]
    pub flux_bin: Option<PathBuf>,

    /// Allow a Flux release this kubectl-gitops does not pin, checked only against its own checksums file.
    ///
    /// Run a Flux release this kubectl-gitops does not pin (--flux-version, or the repo's record
    /// with --from-repo), checked only against its own checksums file.
    #[arg(long, help_heading = "Flux")]
    pub allow_unpinned_flux: bool,

    /// An OCI-distributed component: oci://REGISTRY/REPO:TAG[?path=./dir] (repeatable).
    #[arg(long = "component", value_name = "OCI_URL", help_heading = "Flux")]
    pub oci_components: Vec<String>,

    /// Make a new repository public (default: private).
    ///
    /// Only when the repository does not exist yet.
    #[arg(long, help_heading = "Access")]
    pub public: bool,

    /// The owner is a user, not an organisation or group.
    #[arg(long, help_heading = "Access")]
    pub personal: bool,

    /// Give Flux's deploy key write access (needed for image automation).
    #[arg(long, help_heading = "Access")]
    pub read_write_key: bool,

    /// Let Flux pull over HTTPS with the token instead of an SSH deploy key.
    #[arg(long, help_heading = "Access")]
    pub token_auth: bool,

    /// The algorithm of a generated deploy key.
    #[arg(long, value_enum, default_value_t = KeyAlgorithm::Ed25519, help_heading = "Access")]
    pub ssh_key_algorithm: KeyAlgorithm,

    /// The SSH private key for git.
    ///
    /// Use this SSH private key for Flux and for pushing, instead of generating a deploy key.
    #[arg(long, value_name = "FILE", help_heading = "Access")]
    pub private_key_file: Option<PathBuf>,

    /// known_hosts for the git host.
    ///
    /// known_hosts lines for the git host (default: ~/.ssh/known_hosts, else a scan you confirm).
    #[arg(long, value_name = "FILE", help_heading = "Access")]
    pub known_hosts_file: Option<PathBuf>,

    /// Print the plan and change nothing.
    ///
    /// Print the numbered steps and every file and object without changing anything.
    #[arg(long, help_heading = "Run")]
    pub dry_run: bool,

    /// Print the Flux YAML it would write and change nothing.
    ///
    /// Print the manifests only (components, sync, record) and change nothing.
    #[arg(long, conflicts_with = "dry_run", help_heading = "Run")]
    pub export: bool,

    /// Wait until Flux has applied the change and it is Ready.
    ///
    /// Wait until Flux has applied the pushed commit (the default).
    #[arg(long, overrides_with = "no_wait", help_heading = "Run")]
    pub wait: bool,

    /// Return once everything is pushed and applied, without waiting for Flux.
    #[arg(long, help_heading = "Run")]
    pub no_wait: bool,

    /// How long to wait.
    ///
    /// How long to wait for CRDs, controllers and the first sync.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse, default_value = crate::timeouts::COMMAND_FLAG, help_heading = "Run")]
    pub timeout: Duration,

    /// Don't ask for confirmation (deploy key added, host key pinned).
    #[arg(long, short = 'y', help_heading = "Run")]
    pub yes: bool,

    /// Move a cluster directory laid out before the platform, apps and tenants layers to them, in
    /// three commits Flux applies one after the other (the sync stops pruning, the lists move to
    /// their layers, the sync prunes again), so that nothing is deleted on the way.
    #[arg(long, conflicts_with = "no_wait", help_heading = "Run")]
    pub layers: bool,
}
