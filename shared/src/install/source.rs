//! Where the config repo is, how we push to it, and how Flux pulls from it.

use super::args::ProviderKind;
use super::settings::InstallSettings;
use crate::deploy_key::{DeployKey, REDACTED};
use crate::error::{Error, Result};
use crate::git::{Auth, Remote};
use crate::provider::{Kind, Provider, RepoInfo, RepoRef};
use crate::repo_access::{default_ssh_key, https_credentials, known_hosts, parse_url, read_private_key};

/// How Flux authenticates to the repo; stored in Secret `<namespace>/flux-system`.
#[derive(Debug, Clone)]
pub enum FluxAuth {
    /// An SSH deploy key plus known_hosts.
    Ssh(DeployKey),
    /// HTTPS basic auth (token).
    Basic {
        /// User name.
        username: String,
        /// Password or token; never printed.
        password: String,
    },
}

/// The repo: the URL Flux pulls, the remote we push to, and the SSH host details.
#[derive(Debug, Clone)]
pub struct RepoSource {
    /// Where the repo is hosted.
    pub provider: ProviderKind,
    /// The URL written into gotk-sync.yaml and the install record.
    pub flux_url: String,
    /// The remote (with our credentials) we clone and push with.
    pub push_remote: Remote,
    /// known_hosts lines for an SSH host (empty for HTTPS).
    pub known_hosts: String,
    /// The private key given with `--private-key-file`, if any.
    pub private_key: Option<String>,
    /// HTTPS credentials Flux pulls with (an https URL, or `--token-auth`); `None` for SSH.
    pub flux_basic: Option<(String, String)>,
}

/// A repository on GitHub or GitLab, reached through the provider's API.
#[derive(Debug, Clone)]
pub struct Hosted {
    /// The API client.
    pub provider: Provider,
    /// `owner/name`.
    pub repo: RepoRef,
    /// What the provider says about the repository; `None` when it does not exist yet.
    pub info: Option<RepoInfo>,
    /// The repository's deploy keys (empty when it does not exist yet).
    pub deploy_keys: Vec<crate::provider::DeployKey>,
}

impl Hosted {
    /// The deploy key title `flux bootstrap` uses, so both tools recognise each other's key.
    pub fn deploy_key_title(namespace: &str, branch: &str, path: &str) -> String {
        format!("{namespace}-{branch}-flux-system-./{path}")
    }

    /// Whether a deploy key with this key material and access is already there.
    pub fn has_key(&self, public_key: &str, read_only: bool) -> bool {
        has_key(&self.deploy_keys, public_key, read_only)
    }
}

/// Whether `keys` hold one with this key material and access.
pub fn has_key(keys: &[crate::provider::DeployKey], public_key: &str, read_only: bool) -> bool {
    let material = |key: &str| key.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    keys.iter().any(|key| material(&key.key) == material(public_key) && key.read_only == read_only)
}

/// Resolves a GitHub, GitLab or Gitea repository: checks the flags and the token, and asks the API
/// about the repository, its branch protection and its deploy keys (read-only calls).
pub async fn hosted(
    settings: &InstallSettings,
    pinned: Option<&str>,
    confirm: &dyn Fn(&str) -> Result<bool>,
) -> Result<(RepoSource, Hosted)> {
    let (flags, access) = (&settings.repo, &settings.access);
    let kind = match flags.provider {
        ProviderKind::Github => Kind::GitHub,
        ProviderKind::Gitlab => Kind::GitLab,
        ProviderKind::Gitea => Kind::Gitea,
        ProviderKind::Git => {
            return Err(Error::usage("--provider git has no API", "pass --url instead of --owner/--repository"));
        }
    };
    let flag = |value: &Option<String>, name: &str| {
        value.clone().ok_or_else(|| {
            Error::usage(
                format!("--{name} is required with --provider {}", flags.provider.name()),
                "pass --owner and --repository, e.g. --owner acme --repository fleet",
            )
        })
    };
    let (owner, name) = (flag(&flags.owner, "owner")?, flag(&flags.repository, "repository")?);
    // The host the user named (`--hostname`), else the public one: theirs either way.
    let origin = match &flags.hostname {
        Some(origin) => origin.clone(),
        None => crate::config::hosts::public_host(kind)?,
    };
    let host = origin.authority();
    let (provider, token) = crate::config::forge(kind, &origin, Some(&origin))?.ok_or_else(|| {
        Error::usage(
            format!("--provider {} needs an API token for {host}", flags.provider.name()),
            crate::config::token_hint(kind, &host),
        )
    })?;
    let repo = RepoRef::new(owner, name);
    let info = provider.get_repository(&repo).await?;
    let deploy_keys = match &info {
        Some(_) => provider.list_deploy_keys(&repo).await?,
        None => Vec::new(),
    };
    if info.is_some() && provider.is_branch_protected(&repo, &settings.branch).await? {
        return Err(Error::Remote {
            message: format!(
                "branch {} of {} is protected, and install pushes to it directly",
                settings.branch,
                repo.path()
            ),
            hint: Some(
                "install into another --branch, or ask a repository admin to allow the push for the install".into(),
            ),
        });
    }
    // Until the repository exists, its URLs are the provider's usual ones.
    let ssh_url = info.as_ref().map_or_else(|| format!("ssh://git@{host}/{}.git", repo.path()), |i| i.ssh_url.clone());
    let https_url =
        info.as_ref().map_or_else(|| format!("https://{host}/{}.git", repo.path()), |i| i.https_url.clone());
    let ssh = parse_url(&ssh_url)?;
    let private_key = access.private_key_file.as_deref().map(read_private_key).transpose()?;
    let basic = Auth::Basic { username: kind.token_user().to_string(), password: token.expose().to_string() };
    let (flux_url, known_hosts) = if access.token_auth {
        (parse_url(&https_url)?.canonical, String::new())
    } else if info.is_none() {
        // Only a dry run plans against a repository that does not exist yet; a real run creates
        // it first and resolves again, with the host keys of the URL the provider gives.
        (ssh.canonical.clone(), String::new())
    } else {
        (ssh.canonical.clone(), known_hosts(access.known_hosts_file.as_deref(), pinned, &ssh, confirm)?)
    };
    // We push with the user's SSH key when one is given, else over HTTPS with the token.
    let push_remote = match &private_key {
        Some(key) => Remote {
            url: ssh.canonical.clone(),
            auth: Auth::Ssh { user: ssh.user.clone(), private_key: key.clone(), known_hosts: known_hosts.clone() },
        },
        None => Remote { url: parse_url(&https_url)?.canonical, auth: basic },
    };
    let flux_basic = access.token_auth.then(|| (kind.token_user().to_string(), token.expose().to_string()));
    let source = RepoSource { provider: flags.provider, flux_url, push_remote, known_hosts, private_key, flux_basic };
    Ok((source, Hosted { provider, repo, info, deploy_keys }))
}

/// Resolves the repo for `--provider git` (`--url` or `--from-repo`). `pinned`: the host keys a
/// previous install stored in the Flux Secret, trusted again on a re-run.
pub fn generic(
    settings: &InstallSettings,
    pinned: Option<&str>,
    confirm: &dyn Fn(&str) -> Result<bool>,
) -> Result<RepoSource> {
    let access = &settings.access;
    let parsed = settings.repo.url.clone().ok_or_else(|| {
        Error::usage("--url is required with --provider git", "pass --url ssh://git@host/path/repo.git (or https://…)")
    })?;
    let private_key = access.private_key_file.as_deref().map(read_private_key).transpose()?;
    if parsed.scheme == "ssh" {
        let known_hosts = known_hosts(access.known_hosts_file.as_deref(), pinned, &parsed, confirm)?;
        let push_key = match &private_key {
            Some(key) => key.clone(),
            None => default_ssh_key()?,
        };
        let auth = Auth::Ssh { user: parsed.user.clone(), private_key: push_key, known_hosts: known_hosts.clone() };
        Ok(RepoSource {
            provider: ProviderKind::Git,
            flux_url: parsed.canonical.clone(),
            push_remote: Remote { url: parsed.canonical, auth },
            known_hosts,
            private_key,
            flux_basic: None,
        })
    } else {
        let (username, password) = https_credentials()?;
        let flux_basic = Some((username.clone(), password.clone()));
        let auth = Auth::Basic { username, password };
        Ok(RepoSource {
            provider: ProviderKind::Git,
            flux_url: parsed.canonical.clone(),
            push_remote: Remote { url: parsed.canonical, auth },
            known_hosts: String::new(),
            private_key: None,
            flux_basic,
        })
    }
}

impl FluxAuth {
    /// The Secret Flux reads.
    pub fn secret(&self, namespace: &str, name: &str) -> k8s_openapi::api::core::v1::Secret {
        match self {
            FluxAuth::Ssh(key) => key.secret(namespace, name),
            FluxAuth::Basic { username, password } => {
                let mut secret = DeployKey::secret_shell(namespace, name);
                secret.string_data = Some(std::collections::BTreeMap::from([
                    ("username".to_string(), username.clone()),
                    ("password".to_string(), password.clone()),
                ]));
                secret
            }
        }
    }

    /// The Secret as dry-run shows it.
    pub fn redacted_yaml(&self, namespace: &str, name: &str) -> Result<String> {
        match self {
            FluxAuth::Ssh(key) => key.redacted_secret_yaml(namespace, name),
            FluxAuth::Basic { username, .. } => {
                let shown = serde_json::json!({
                    "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                    "metadata": {"name": name, "namespace": namespace},
                    "stringData": {"username": username, "password": REDACTED},
                });
                crate::yaml::to_documents(&[shown])
            }
        }
    }

    /// Whether the existing Secret already holds this auth.
    pub fn matches(&self, existing: &k8s_openapi::api::core::v1::Secret) -> bool {
        let field = |key: &str| existing.data.as_ref().and_then(|d| d.get(key)).map(|v| v.0.clone());
        match self {
            FluxAuth::Ssh(key) => DeployKey::from_secret(existing).is_some_and(|found| {
                found.public_openssh == key.public_openssh && found.known_hosts == key.known_hosts
            }),
            FluxAuth::Basic { username, password } => {
                field("username") == Some(username.clone().into_bytes())
                    && field("password") == Some(password.clone().into_bytes())
            }
        }
    }
}
