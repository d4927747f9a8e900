//! The context every change works against, resolved once and read-only: the cluster, its install
//! record, the config repo with our credentials, and the provider in front of it.

use super::layout::{self, ClusterDir};
use super::settings::{DeliveryMode, DeliverySettings, RepoSettings, Target};
use crate::cluster::Cluster;
use crate::config::hosts;
use crate::detect::{self, ClusterState, Detection};
use crate::error::{Error, Result};
use crate::flux::api::Versions;
use crate::git::{Auth, Checkout, Remote, Workspace};
use crate::http::Origin;
use crate::output::Printer;
use crate::provider::{Kind, Provider, RepoRef};
use crate::record::{InstallRecord, PlatformRepo};
use crate::repo_access::{self, parse_url};

/// The config repo, and the provider API in front of it when there is one.
#[derive(Debug, Clone)]
pub struct ConfigRepo {
    /// Where we clone and push, with our credentials.
    pub remote: Remote,
    /// The branch Flux follows.
    pub branch: String,
    /// GitHub or GitLab: for branch protection and pull requests.
    pub hosted: Option<HostedRepo>,
    /// It is the platform repo (`install --platform-repo`): the platform layer applies its
    /// commits, through a GitRepository of its own, not the sync.
    pub platform: bool,
}

/// A config repo on GitHub or GitLab.
#[derive(Debug, Clone)]
pub struct HostedRepo {
    /// The API client.
    pub provider: Provider,
    /// `owner/name`.
    pub repo: RepoRef,
    /// The API token, also used to push over HTTPS.
    pub token: crate::provider::Token,
}

/// Everything a changing command works against, resolved once.
pub struct Context {
    /// The current cluster; `None` when it is not needed and not reachable (`--config-repo`).
    pub cluster: Option<Cluster>,
    /// The Flux namespace, where the app's Flux objects live.
    pub namespace: String,
    /// The API versions to write.
    pub versions: Versions,
    /// What the current cluster holds (its install record among it); `None` without a cluster.
    pub detection: Option<Detection>,
    /// The config repo, with our credentials; resolved only for commands that read or write it.
    pub repo: Option<ConfigRepo>,
    /// Where progress and warnings go.
    pub printer: Printer,
}

impl Context {
    /// The current cluster, for commands that act on it.
    pub(crate) fn cluster(&self) -> Result<&Cluster> {
        self.cluster.as_ref().ok_or_else(|| {
            Error::usage("this needs the cluster, and none is reachable", "check --kubeconfig and --context")
        })
    }

    /// The current cluster's install record.
    pub(crate) fn record(&self) -> Option<&InstallRecord> {
        self.detection.as_ref()?.gitops.as_ref()
    }

    /// The config repo, for commands that read or write it.
    pub(crate) fn repo(&self) -> Result<&ConfigRepo> {
        self.repo.as_ref().ok_or_else(|| Error::Internal("the config repo was not resolved".into()))
    }
}

/// Resolves the cluster and, with `needs_repo`, the config repo and how to reach it. Read-only.
pub async fn context(
    target: &Target,
    repo_args: &RepoSettings,
    needs_repo: bool,
    printer: &Printer,
) -> Result<Context> {
    let connected = Cluster::connect(&target.connection, printer).await;
    let (cluster, detection) = match connected {
        Ok(cluster) => {
            let detection = detect::detect(&cluster).await?;
            if let Some(error) = detection.unreachable_error().filter(|_| repo_args.config_repo.is_none()) {
                return Err(error);
            }
            let reachable = detection.state != ClusterState::Unreachable;
            (reachable.then_some(cluster), reachable.then_some(detection))
        }
        Err(error) if repo_args.config_repo.is_none() => return Err(error),
        Err(_) => (None, None),
    };
    let detected = detection.as_ref().and_then(|detection| detection.flux.as_ref().map(|flux| flux.namespace.clone()));
    let namespace = flux_namespace(detected, target.namespace.clone())?;
    let versions = match &detection {
        Some(detection) if !detection.api_versions.is_empty() => Versions::served(detection.api_versions.clone()),
        Some(_) if repo_args.config_repo.is_none() => {
            return Err(Error::Negative {
                message: "this cluster has no Flux (no Flux API is served)".into(),
                hint: Some("run `kubectl gitops install` first".into()),
            });
        }
        _ => Versions::pinned(),
    };
    let mut context = Context { cluster, namespace, versions, detection, repo: None, printer: *printer };
    if needs_repo {
        context.attach_repo(repo_args).await?;
    }
    Ok(context)
}

impl Context {
    /// Resolves the config repo and our credentials for it (the repo flags, else the install
    /// record): for a command that found out first, without a key, whether it has work to do.
    pub(crate) async fn attach_repo(&mut self, repo_args: &RepoSettings) -> Result<()> {
        let trusted = self.trusted_record(repo_args)?;
        let record = trusted.as_ref().map(|trusted| trusted.record);
        let platform = platform_repo(record, repo_args);
        let url = repo_args.config_repo.clone();
        let url = url.or_else(|| platform.map(|platform| platform.url.clone()));
        let url = url.or_else(|| record.map(|r| r.url.clone())).ok_or_else(|| {
            Error::usage(
                "this cluster has no kubectl-gitops layout, so there is no config repo to write to",
                "run `kubectl gitops install`, or pass --config-repo URL",
            )
        })?;
        let branch = repo_args
            .config_branch
            .clone()
            .or_else(|| platform.map(|platform| platform.branch.clone()))
            .or_else(|| record.map(|r| r.branch.clone()))
            .unwrap_or_else(|| "main".to_string());
        let hosted = provider_repo(trusted, repo_args)?;
        let pinned_hosts = match &self.cluster {
            Some(cluster) => crate::deploy_key::pinned_known_hosts(cluster, &self.namespace).await?,
            None => None,
        };
        let remote = push_remote(&url, repo_args, hosted.as_ref(), pinned_hosts.as_deref())?;
        self.repo = Some(ConfigRepo { remote, branch, hosted, platform: platform.is_some() });
        Ok(())
    }

    /// The provider in front of the repository `repo_args` ask for (the config repo, or the
    /// platform repo beside it), with our token; `None` for a plain git server.
    pub(crate) fn hosted_repo(&self, repo_args: &RepoSettings) -> Result<Option<HostedRepo>> {
        provider_repo(self.trusted_record(repo_args)?, repo_args)
    }

    /// The install record, once the hosts it sends our credentials to for `repo_args` are those
    /// this cluster is bound to in the user's config file (bound now on first use, with a line
    /// saying so, at a terminal only; another host only with `--accept-host`,
    /// [`crate::config::hosts`]), with the provider API host it is bound to. Every use of the
    /// record's repository or provider goes through here.
    fn trusted_record(&self, repo_args: &RepoSettings) -> Result<Option<Trusted<'_>>> {
        let (Some(record), Some(cluster)) = (self.record(), &self.cluster) else { return Ok(None) };
        let repo_url = match platform_repo(Some(record), repo_args) {
            Some(platform) => Some(platform.url.as_str()),
            None => repo_args.config_repo.is_none().then_some(record.url.as_str()),
        };
        let wanted = hosts::Wanted::of_record(record, repo_url)?;
        let accepted = hosts::accepted(&repo_args.accepted_hosts)?;
        let accept = hosts::Accept::Named(&accepted, hosts::FirstUse::of_this_run());
        let binding = hosts::bind(&cluster.server, &wanted, accept)?;
        if let Some(line) = &binding.line {
            self.printer.progress(line);
        }
        Ok(Some(Trusted { record, api: binding.api }))
    }
}

/// An install record whose hosts the user's config file binds, and its bound provider API host.
struct Trusted<'a> {
    record: &'a InstallRecord,
    api: Option<Origin>,
}

/// The recorded platform repo, when `repo_args` ask for the platform services' repository and
/// name no other (`--config-repo`).
fn platform_repo<'a>(record: Option<&'a InstallRecord>, repo_args: &RepoSettings) -> Option<&'a PlatformRepo> {
    record.and_then(|record| record.platform.as_ref()).filter(|_| repo_args.platform && repo_args.config_repo.is_none())
}

/// The provider in front of the repository `repo_args` ask for: the config repo, or the platform
/// repo beside it (the same provider, another repository).
fn provider_repo(trusted: Option<Trusted<'_>>, repo_args: &RepoSettings) -> Result<Option<HostedRepo>> {
    let Some(trusted) = trusted else { return Ok(None) };
    let mut hosted = config_repo_provider(&trusted)?;
    if let (Some(platform), Some(hosted)) = (platform_repo(Some(trusted.record), repo_args), hosted.as_mut()) {
        let path = repo_access::path_of(&platform.url)?;
        hosted.repo = RepoRef::parse(path.trim_start_matches('/').trim_end_matches(".git"))?;
    }
    Ok(hosted)
}

/// The provider in front of the config repo, from the install record, reached at the host it is
/// bound to: the URL is built from that typed host, and the token looked up by it.
fn config_repo_provider(trusted: &Trusted<'_>) -> Result<Option<HostedRepo>> {
    let record = trusted.record;
    let (Some(kind), Some(repository), Some(host)) =
        (record.provider.as_deref().and_then(Kind::from_id), &record.repository, &trusted.api)
    else {
        return Ok(None);
    };
    let (provider, token) = crate::config::forge(kind, host, trusted.api.as_ref())?.ok_or_else(|| {
        Error::usage(
            format!("the config repo {repository} is on {host}, and there is no token for it"),
            crate::config::token_hint(kind, &host.authority()),
        )
    })?;
    Ok(Some(HostedRepo { provider, repo: RepoRef::parse(repository)?, token }))
}

/// How we push: over SSH with the user's key (host keys checked, never trusted blindly), over
/// HTTPS with the provider token or `GITOPS_GIT_PASSWORD`.
fn push_remote(url: &str, args: &RepoSettings, hosted: Option<&HostedRepo>, pinned: Option<&str>) -> Result<Remote> {
    let parsed = parse_url(url)?;
    if parsed.scheme == "ssh" {
        let private_key = match &args.private_key_file {
            Some(path) => repo_access::read_private_key(path)?,
            None => repo_access::default_ssh_key()?,
        };
        let refuse_scan = |_: &str| -> Result<bool> {
            Err(Error::usage(
                format!("the SSH host keys of {} are not known", parsed.host),
                "pass --known-hosts-file with the host's known_hosts lines (`ssh-keyscan HOST`)",
            ))
        };
        let known_hosts = repo_access::known_hosts(args.known_hosts_file.as_deref(), pinned, &parsed, &refuse_scan)?;
        let auth = Auth::Ssh { user: parsed.user.clone(), private_key, known_hosts };
        return Ok(Remote { url: parsed.canonical, auth });
    }
    let (username, password) = match hosted {
        Some(hosted) => (hosted.provider.kind().token_user().to_string(), hosted.token.expose().to_string()),
        None => repo_access::https_credentials()?,
    };
    Ok(Remote { url: parsed.canonical, auth: Auth::Basic { username, password } })
}

/// Clones the config branch into a temp dir (deleted when dropped). A branch that does not
/// exist is refused: apps go into a repo that `install` set up.
pub(crate) async fn clone(repo: &ConfigRepo) -> Result<Workspace> {
    let checkout = Workspace::clone(&repo.remote, &repo.branch).await?;
    if checkout.files().head().is_none() {
        return Err(Error::usage(
            format!("branch {} of {} is empty or does not exist", repo.branch, repo.remote.url),
            "run `kubectl gitops install` to set up the config repo, or pass --config-branch",
        ));
    }
    Ok(checkout)
}

/// The clusters to change: those named with `--cluster-name`, else the current cluster.
pub(crate) fn target_clusters(
    checkout: &Checkout,
    names: &[String],
    record: Option<&InstallRecord>,
) -> Result<Vec<ClusterDir>> {
    let known = layout::clusters_in(checkout)?;
    let known_names = || known.iter().map(|cluster| cluster.name.as_str()).collect::<Vec<_>>().join(", ");
    let wanted: Vec<String> = if names.is_empty() {
        let record = record.ok_or_else(|| {
            Error::usage("no cluster given and the current cluster has no install record", "pass --cluster-name NAME")
        })?;
        vec![record.cluster_name.clone()]
    } else {
        names.to_vec()
    };
    wanted
        .iter()
        .map(|name| {
            known.iter().find(|cluster| &cluster.name == name).cloned().ok_or_else(|| {
                Error::usage(
                    format!("unknown cluster {name:?}: the config repo has no install record for it"),
                    if known.is_empty() {
                        "install a cluster into this repo first (`kubectl gitops install`)".to_string()
                    } else {
                        format!("clusters in the repo: {}", known_names())
                    },
                )
            })
        })
        .collect()
}

/// The delivery of a change that is reviewed (an upgrade, a platform app): without `--pr` or
/// `--auto-merge`, a pull request where the config repo has them (GitHub, GitLab); a plain git
/// server takes the commit, as `--auto-merge` does.
pub(crate) fn reviewed(delivery: &DeliverySettings, context: &Context) -> DeliverySettings {
    let mut delivery = delivery.clone();
    if delivery.mode == DeliveryMode::Auto && context.repo.as_ref().is_some_and(|repo| repo.hosted.is_some()) {
        delivery.mode = DeliveryMode::PullRequest;
    }
    delivery
}

/// The namespace of the Flux objects a change writes: the cluster's Flux namespace, which `-n`
/// may only repeat (the config repo's objects live there), else `-n`, else the default.
fn flux_namespace(detected: Option<String>, asked: Option<String>) -> Result<String> {
    match (detected, asked) {
        (Some(detected), Some(asked)) if detected != asked => Err(Error::usage(
            format!("-n {asked}: this cluster's Flux objects live in namespace {detected}"),
            format!("leave -n out, or pass -n {detected}"),
        )),
        (Some(namespace), _) | (None, Some(namespace)) => Ok(namespace),
        (None, None) => crate::cluster::default_flux_namespace(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minus_n_may_repeat_the_clusters_flux_namespace_and_names_it_when_the_cluster_does_not() {
        let some = |text: &str| Some(text.to_string());
        assert_eq!(flux_namespace(some("gitops"), None).unwrap(), "gitops");
        assert_eq!(flux_namespace(some("gitops"), some("gitops")).unwrap(), "gitops");
        assert_eq!(flux_namespace(None, some("elsewhere")).unwrap(), "elsewhere");
        let refused = flux_namespace(some("gitops"), some("team-a")).unwrap_err();
        assert_eq!(refused.exit_code(), crate::error::ExitCode::Usage);
        assert!(refused.to_string().contains("namespace gitops"), "{refused}");
    }
}
