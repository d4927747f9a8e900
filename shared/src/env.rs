//! Every environment variable kubectl-gitops reads, declared once, with what it does.
//!
//! Code reads variables only through these constants, so this file is the complete list
//! (docs/ARCHITECTURE.md points here). The command line is read here too ([`command_line`]).

use std::ffi::OsString;
use std::sync::OnceLock;

/// The command line a command runs with, when the dispatcher runs it in its own process.
static COMMAND_LINE: OnceLock<Vec<OsString>> = OnceLock::new();

/// The command line: `argv[0]` (the binary's name, `kubectl-gitops-status`) and its arguments;
/// the process's own, or the one the dispatcher handed the command it runs in its own process
/// ([`crate::runtime::run_as`]).
pub fn command_line() -> Vec<OsString> {
    COMMAND_LINE.get().cloned().unwrap_or_else(|| std::env::args_os().collect())
}

/// Sets the command line [`command_line`] answers with, once per process.
pub(crate) fn set_command_line(args: Vec<OsString>) {
    if COMMAND_LINE.set(args).is_err() {
        panic!("the command line was already set in this process");
    }
}

/// Colon-separated kubeconfig files, merged the way kubectl merges them.
pub const KUBECONFIG: &str = "KUBECONFIG";
/// The Flux namespace when neither `-n` nor the cluster names one, as the flux CLI reads it.
pub const FLUX_SYSTEM_NAMESPACE: &str = "FLUX_SYSTEM_NAMESPACE";
/// When set to anything non-empty, no colour and no glyphs are printed (<https://no-color.org>).
pub const NO_COLOR: &str = "NO_COLOR";
/// Forces colour on even when stdout is not a terminal (like `--color always`).
pub const FORCE_COLOR: &str = "FORCE_COLOR";
/// Set by kubectl when it runs a plugin: the kubectl that started us.
pub const KUBECTL_PATH: &str = "KUBECTL_PATH";
/// Overrides the directory the dispatcher searches first for `kubectl-gitops-<command>` binaries.
pub const KUBECTL_GITOPS_PLUGIN_DIR: &str = "KUBECTL_GITOPS_PLUGIN_DIR";
/// Set by the dispatcher for the command it runs: the dispatcher's own path.
pub const KUBECTL_GITOPS_DISPATCHER: &str = "KUBECTL_GITOPS_DISPATCHER";
/// The GitHub API token (github.com or GitHub Enterprise Server) for creating repositories, deploy
/// keys, branches and pull requests.
pub const GITHUB_TOKEN: &str = "GITHUB_TOKEN";
/// The GitLab API token (gitlab.com or self-managed), `api` scope, for creating projects, deploy
/// keys, branches and merge requests.
pub const GITLAB_TOKEN: &str = "GITLAB_TOKEN";
/// The Gitea API token (gitea.com or self-hosted), scopes write:repository, write:user and
/// write:organization, for creating repositories, deploy keys, branches and pull requests.
pub const GITEA_TOKEN: &str = "GITEA_TOKEN";
/// The commit author name for commits kubectl-gitops makes (default `kubectl-gitops`).
pub const GIT_AUTHOR_NAME: &str = "GIT_AUTHOR_NAME";
/// The commit author e-mail for commits kubectl-gitops makes.
pub const GIT_AUTHOR_EMAIL: &str = "GIT_AUTHOR_EMAIL";
/// User name for pushing to a generic git server over HTTPS (`--provider git`).
pub const GITOPS_GIT_USERNAME: &str = "GITOPS_GIT_USERNAME";
/// Password or token for pushing to a generic git server over HTTPS (`--provider git`).
pub const GITOPS_GIT_PASSWORD: &str = "GITOPS_GIT_PASSWORD";
/// Home directory, for `~/.ssh` keys and known_hosts.
pub const HOME: &str = "HOME";
/// Overrides the GitHub API base URL (default https://api.github.com, or https://<--hostname>/api/v3).
pub const KUBECTL_GITOPS_GITHUB_API_URL: &str = "KUBECTL_GITOPS_GITHUB_API_URL";
/// Overrides the GitLab API base URL (default https://gitlab.com/api/v4, or https://<--hostname>/api/v4).
pub const KUBECTL_GITOPS_GITLAB_API_URL: &str = "KUBECTL_GITOPS_GITLAB_API_URL";
/// Overrides the Gitea API base URL (default https://gitea.com/api/v1, or https://<--hostname>/api/v1):
/// a Gitea served over plain HTTP (`http://git.internal:3000/api/v1`).
pub const KUBECTL_GITOPS_GITEA_API_URL: &str = "KUBECTL_GITOPS_GITEA_API_URL";
/// The config file holding provider tokens by host (default
/// `$XDG_CONFIG_HOME/kubectl-gitops/config.yaml`, else `~/.config/kubectl-gitops/config.yaml`).
pub const KUBECTL_GITOPS_CONFIG: &str = "KUBECTL_GITOPS_CONFIG";
/// Hosts the user accepts as a cluster's config repo or provider API host, comma separated
/// (`git.example.com:2222,ghe.example.com`): as `--accept-host` for each, and how a CI job binds
/// the hosts its first command uses (docs/security.md).
pub const KUBECTL_GITOPS_ACCEPT_HOSTS: &str = "KUBECTL_GITOPS_ACCEPT_HOSTS";
/// Set (non-empty) by CI systems: nobody reads what a command prints as it runs, so an install
/// record binds no host on first use.
pub const CI: &str = "CI";
/// The base directory for user configuration (XDG Base Directory specification).
pub const XDG_CONFIG_HOME: &str = "XDG_CONFIG_HOME";
/// The base directory for caches (XDG Base Directory specification): the flux CLI is cached in
/// `$XDG_CACHE_HOME/kubectl-gitops/flux/<version>/`, else `~/.cache/kubectl-gitops/flux/<version>/`.
pub const XDG_CACHE_HOME: &str = "XDG_CACHE_HOME";
/// The flux CLI to run, instead of the pinned release (like `--flux-bin`).
pub const KUBECTL_GITOPS_FLUX_BIN: &str = "KUBECTL_GITOPS_FLUX_BIN";
/// Overrides the Flux release base URL of dependencies.toml (`{version}` is replaced by the tag),
/// e.g. a mirror, or the test environment's local release server.
pub const KUBECTL_GITOPS_FLUX_RELEASE_URL: &str = "KUBECTL_GITOPS_FLUX_RELEASE_URL";
/// The helm CLI `diff` renders HelmReleases with, instead of the pinned release (like `--helm-bin`).
pub const KUBECTL_GITOPS_HELM_BIN: &str = "KUBECTL_GITOPS_HELM_BIN";
/// Overrides Helm's download host of dependencies.toml (`https://get.helm.sh`), e.g. a mirror.
pub const KUBECTL_GITOPS_HELM_RELEASE_URL: &str = "KUBECTL_GITOPS_HELM_RELEASE_URL";
/// The docker configuration directory (default `~/.docker`): `kubectl gitops artifact` reads
/// registry credentials from its `config.json`, as docker and flux do.
pub const DOCKER_CONFIG: &str = "DOCKER_CONFIG";
