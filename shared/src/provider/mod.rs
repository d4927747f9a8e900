//! Git providers (GitHub, GitLab, Gitea) over their REST APIs: repositories, branch protection,
//! deploy keys, branches and pull (merge) requests.
//!
//! One [`Provider`] is one authenticated client for one host. Every method is one operation the
//! commands need, implemented for both providers by following their published REST APIs:
//!
//! - GitHub REST API, version `2022-11-28` (<https://docs.github.com/en/rest>), on `github.com`
//!   (`https://api.github.com`) or GitHub Enterprise Server (`https://{host}/api/v3`).
//! - GitLab REST API v4 (<https://docs.gitlab.com/api/rest/>), on `gitlab.com` or a
//!   self-managed instance (`https://{host}/api/v4`). A project is addressed by its URL-encoded
//!   path (`group%2Fsubgroup%2Fproject`), so owners may be nested groups.
//! - Gitea REST API v1 (the `/api/swagger` of every instance), on gitea.com or a self-hosted
//!   instance (`https://{host}/api/v1`).
//!
//! The token never leaves this module except in the authentication header: [`Token`] prints as
//! `***`, and error messages are scrubbed of it. Every request has a timeout
//! ([`crate::timeouts::PROVIDER_REQUEST`] unless [`Provider::with_timeout`] says otherwise).
//!
//! Failures are [`ProviderError`]s, each with a [`hint`](ProviderError::hint); callers map them
//! to exit code 4 ([`crate::ExitCode::Git`]).

/// A provider's published response example, `tests/fixtures/providers/<provider>/<file>` (see
/// PROVENANCE.md there), for the parser tests of github.rs and gitlab.rs.
#[cfg(test)]
macro_rules! published_example {
    ($provider:literal, $file:literal) => {
        include_str!(concat!("../../../tests/fixtures/providers/", $provider, "/", $file))
    };
}

mod forge;
mod gitea;
mod github;
mod gitlab;
#[cfg(test)]
mod published_examples;

use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use serde::de::DeserializeOwned;

use crate::env;

/// How often GitLab is asked to auto-merge while it answers 405 (right after a request opens).
const AUTO_MERGE_TRIES: u32 = 5;

/// How many pages a listing follows before giving up (100 items a page).
const MAX_PAGES: usize = 50;

/// Which git provider a host runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// GitHub: github.com or GitHub Enterprise Server.
    GitHub,
    /// GitLab: gitlab.com or a self-managed instance.
    GitLab,
    /// Gitea: gitea.com or a self-hosted instance.
    Gitea,
}

impl Kind {
    /// The lower-case name used in flags and in the install record (`github`, `gitlab`, `gitea`).
    pub fn id(self) -> &'static str {
        match self {
            Kind::GitHub => "github",
            Kind::GitLab => "gitlab",
            Kind::Gitea => "gitea",
        }
    }

    /// The kind a lower-case name ([`Kind::id`]) stands for.
    pub fn from_id(id: &str) -> Option<Kind> {
        [Kind::GitHub, Kind::GitLab, Kind::Gitea].into_iter().find(|kind| kind.id() == id)
    }

    /// The environment variable holding this provider's API token.
    pub fn token_env(self) -> &'static str {
        match self {
            Kind::GitHub => env::GITHUB_TOKEN,
            Kind::GitLab => env::GITLAB_TOKEN,
            Kind::Gitea => env::GITEA_TOKEN,
        }
    }

    /// The environment variable that overrides this provider's API base URL.
    pub fn api_url_env(self) -> &'static str {
        match self {
            Kind::GitHub => env::KUBECTL_GITOPS_GITHUB_API_URL,
            Kind::GitLab => env::KUBECTL_GITOPS_GITLAB_API_URL,
            Kind::Gitea => env::KUBECTL_GITOPS_GITEA_API_URL,
        }
    }

    /// The user name that goes with the API token over git HTTPS (the token is the password).
    pub fn token_user(self) -> &'static str {
        match self {
            Kind::GitHub | Kind::Gitea => "git",
            Kind::GitLab => "oauth2",
        }
    }

    /// The public host, used when no hostname is configured.
    pub fn default_host(self) -> &'static str {
        match self {
            Kind::GitHub => "github.com",
            Kind::GitLab => "gitlab.com",
            Kind::Gitea => "gitea.com",
        }
    }

    /// The host a configured `hostname` names (a pasted `https://host/` is tolerated), or the
    /// public one without it.
    pub fn host(self, hostname: Option<&str>) -> String {
        match hostname.map(clean_hostname) {
            Some(host) if !host.is_empty() => host.to_string(),
            _ => self.default_host().to_string(),
        }
    }

    /// What a pull request is called on this provider, for messages.
    pub fn pull_request_noun(self) -> &'static str {
        match self {
            Kind::GitHub | Kind::Gitea => "pull request",
            Kind::GitLab => "merge request",
        }
    }

    /// What precedes a request's number: `#42`, `!42`.
    pub fn pull_request_sign(self) -> &'static str {
        match self {
            Kind::GitHub | Kind::Gitea => "#",
            Kind::GitLab => "!",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::GitHub => "GitHub",
            Kind::GitLab => "GitLab",
            Kind::Gitea => "Gitea",
        })
    }
}

/// An API token. It prints as `***` and is only ever sent in the authentication header.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Wraps a token; surrounding whitespace (a trailing newline from a file) is dropped.
    pub fn new(token: impl Into<String>) -> Token {
        let token: String = token.into();
        Token(token.trim().to_string())
    }

    /// The secret itself, for authentication only: the API header, or git over HTTPS.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Where and how to reach a provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// GitHub or GitLab.
    pub kind: Kind,
    /// The host of GitHub Enterprise Server or self-managed GitLab (`git.example.com`, optionally
    /// with `:port`); `None` means github.com or gitlab.com.
    pub hostname: Option<String>,
    /// The full API base URL (`http://127.0.0.1:8080`, `https://host/api/v4`), overriding the one
    /// derived from `hostname`. Tests point this at a local stand-in.
    pub api_base: Option<String>,
    /// The API token.
    pub token: Token,
}

impl ProviderConfig {
    /// A configuration for the public host (github.com, gitlab.com).
    pub fn new(kind: Kind, token: Token) -> ProviderConfig {
        ProviderConfig { kind, hostname: None, api_base: None, token }
    }

    /// The host named in messages: the configured hostname, or the public one.
    pub fn host(&self) -> String {
        self.kind.host(self.hostname.as_deref())
    }

    /// The API base URL, without a trailing slash: `https://api.github.com`,
    /// `https://{host}/api/v3` (GitHub Enterprise Server), `https://{host}/api/v4` (GitLab), or
    /// `api_base` as given.
    pub fn api_base_url(&self) -> Result<String, ProviderError> {
        let base = match &self.api_base {
            Some(base) => base.trim_end_matches('/').to_string(),
            None => {
                let host = self.host();
                match self.kind {
                    Kind::GitHub if host.eq_ignore_ascii_case("github.com") => "https://api.github.com".to_string(),
                    Kind::GitHub => format!("https://{host}/api/v3"),
                    Kind::GitLab => format!("https://{host}/api/v4"),
                    Kind::Gitea => format!("https://{host}/api/v1"),
                }
            }
        };
        let parsed = Url::parse(&base).map_err(|error| {
            ProviderError::InvalidConfig(format!("invalid {} API URL {base:?}: {error}", self.kind))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(ProviderError::InvalidConfig(format!(
                "invalid {} API URL {base:?}: expected http(s)://host[:port][/path]",
                self.kind
            )));
        }
        if !crate::http::carries_credentials(&parsed) {
            return Err(ProviderError::InvalidConfig(format!(
                "the {} API URL {base} is plain http to another machine, and the token is never sent over it: use https (http only to 127.0.0.1, ::1 or localhost)",
                self.kind
            )));
        }
        Ok(base)
    }
}

/// `https://host/` → `host`: tolerate a pasted URL where a hostname is expected.
fn clean_hostname(hostname: &str) -> &str {
    let host = hostname.trim();
    let host = host.strip_prefix("https://").or_else(|| host.strip_prefix("http://")).unwrap_or(host);
    host.trim_end_matches('/')
}

/// A repository: GitHub `owner/name`, or GitLab `group[/subgroup…]/name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RepoRef {
    /// The user, organization or (GitLab) group path, which may contain `/` on GitLab.
    pub owner: String,
    /// The repository (project) name, as it appears in its URL.
    pub name: String,
}

impl RepoRef {
    /// A repository reference from its parts.
    pub fn new(owner: impl Into<String>, name: impl Into<String>) -> RepoRef {
        RepoRef { owner: owner.into(), name: name.into() }
    }

    /// Splits `owner/name` (or `group/subgroup/name`) at its last `/`.
    pub fn parse(path: &str) -> Result<RepoRef, ProviderError> {
        let path = path.trim().trim_matches('/');
        let path = path.strip_suffix(".git").unwrap_or(path);
        match path.rsplit_once('/') {
            Some((owner, name)) if !owner.is_empty() && !name.is_empty() => Ok(RepoRef::new(owner, name)),
            _ => Err(ProviderError::InvalidConfig(format!("invalid repository {path:?}: expected owner/name"))),
        }
    }

    /// `owner/name`.
    pub fn path(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
}

impl fmt::Display for RepoRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// What the provider says about a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoInfo {
    /// The default branch; `None` when the provider reports none (an empty GitLab project).
    pub default_branch: Option<String>,
    /// Whether it is not public (GitLab `internal` counts as private).
    pub private: bool,
    /// The SSH clone URL, as the provider reports it (`git@github.com:owner/name.git`).
    pub ssh_url: String,
    /// The HTTPS clone URL (`https://github.com/owner/name.git`).
    pub https_url: String,
    /// The repository's web page.
    pub web_url: String,
    /// Whether the token may push, when the provider says: GitHub `permissions.push`, GitLab
    /// Developer access (30) or more on the project or its group.
    pub can_push: Option<bool>,
    /// Whether new repositories can be generated from it: GitHub `is_template`, Gitea
    /// `template`; GitLab says nothing (its project templates are a group setting).
    pub is_template: Option<bool>,
}

/// A deploy key of a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeployKey {
    /// The provider's id of the key (what deleting it takes).
    pub id: u64,
    /// The key's title.
    pub title: String,
    /// The public key in OpenSSH format, as the provider returns it (GitHub drops the comment).
    pub key: String,
    /// Whether the key can only read (GitHub `read_only`, GitLab `!can_push`).
    pub read_only: bool,
}

/// What [`Provider::ensure_deploy_key`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeployKeyOutcome {
    /// The key was not there; it was added.
    Created,
    /// The same key material with the same access was there already; nothing was written.
    AlreadyPresent,
    /// A key with the same title but other material, or the same material with other access,
    /// was deleted and the wanted key added.
    Replaced,
}

/// A pull request (GitHub) or merge request (GitLab).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    /// The number users see: GitHub `number`, GitLab `iid` (`!42`).
    pub number: u64,
    /// Its web page.
    pub url: String,
    /// Its title.
    pub title: String,
}

/// Where a pull or merge request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PullState {
    /// Open: it can still be merged.
    Open,
    /// Closed without merging (GitLab: `closed` or `locked`).
    Closed,
    /// Merged.
    Merged,
}

/// A pull or merge request read whole: what `pr list` and `pr show` look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestDetails {
    /// GitHub `number`, GitLab `iid`.
    pub number: u64,
    /// Its web page.
    pub url: String,
    /// Its title.
    pub title: String,
    /// GitHub `body`, GitLab `description` (empty when there is none).
    pub body: String,
    /// The source branch: GitHub `head.ref` (absent from a trimmed listing), GitLab
    /// `source_branch`.
    pub head_branch: Option<String>,
    /// The source branch's commit: GitHub `head.sha`, GitLab `sha`.
    pub head_sha: Option<String>,
    /// The target branch: GitHub `base.ref`, GitLab `target_branch`.
    pub base_branch: Option<String>,
    /// Open, closed or merged.
    pub state: PullState,
    /// Whether it can be merged as it is; `None` while the provider has not worked it out
    /// (GitHub answers `null` at first and computes it in the background).
    pub mergeable: Option<bool>,
    /// The provider's word for why (GitHub `mergeable_state`, GitLab `detailed_merge_status`
    /// or `merge_status`).
    pub merge_detail: Option<String>,
    /// Once merged, the commit that merged it into the base branch (GitHub `merge_commit_sha`;
    /// GitLab `merge_commit_sha`, or `squash_commit_sha`; none for a fast-forward).
    pub merge_commit: Option<String>,
    /// Who opened it (GitHub `user.login`, GitLab `author.username`).
    pub author: Option<String>,
    /// When it was opened (RFC 3339).
    pub created_at: Option<String>,
}

/// How `pr merge` merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MergeMethod {
    /// A merge commit.
    Merge,
    /// One commit with the whole change.
    Squash,
    /// The branch's commits replayed onto the base (GitHub only: on GitLab the project's
    /// merge method decides).
    Rebase,
}

impl MergeMethod {
    /// GitHub's `merge_method` value.
    pub fn id(self) -> &'static str {
        match self {
            MergeMethod::Merge => "merge",
            MergeMethod::Squash => "squash",
            MergeMethod::Rebase => "rebase",
        }
    }
}

/// What a merge call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeOutcome {
    /// Merged now.
    Merged,
    /// The provider merges it once its checks pass (auto-merge).
    Scheduled,
}

/// What [`Provider::ensure_pull_request`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullRequestOutcome {
    /// No open request existed for the branch; one was opened.
    Created,
    /// An open request for the branch existed; its title and body were updated.
    Updated,
}

/// A failure talking to a git provider. Each has a [`hint`](ProviderError::hint); none contains
/// the token.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The configuration cannot work (bad URL, bad repository name, unusable token characters).
    #[error("{0}")]
    InvalidConfig(String),

    /// The host answered 401: the token is missing, wrong, expired or revoked.
    #[error("{host} rejected the API token (HTTP 401{})", detail_suffix(.detail))]
    Unauthorized {
        /// The host, e.g. `github.com`.
        host: String,
        /// The provider: which token variable to check.
        kind: Kind,
        /// The provider's message, e.g. `Bad credentials`.
        detail: String,
    },

    /// The host answered 403: the token works but may not do this.
    #[error("forbidden: {message}")]
    Forbidden {
        /// What we tried and what the provider said.
        message: String,
        /// Whom to ask for which right.
        hint: Option<String>,
    },

    /// The host answered 404 for something that must exist.
    #[error("not found: {what}")]
    NotFound {
        /// What is missing, e.g. `GitHub repository acme/fleet`.
        what: String,
        /// The provider.
        kind: Kind,
    },

    /// The thing to create exists already (a branch, a repository).
    #[error("already exists: {what}")]
    AlreadyExists {
        /// What exists, and the provider's message.
        what: String,
    },

    /// A personal repository was asked for under another account than the token's.
    #[error("cannot create {repo} as a personal repository: the token belongs to {authenticated}, not {requested}")]
    OwnerMismatch {
        /// The repository asked for.
        repo: String,
        /// The owner asked for.
        requested: String,
        /// The account the token authenticates.
        authenticated: String,
    },

    /// The host's rate limit is exhausted.
    #[error("rate limited by {host}{}", retry_suffix(*.retry_after_secs))]
    RateLimited {
        /// The host.
        host: String,
        /// Seconds until the limit resets, when the host says.
        retry_after_secs: Option<u64>,
    },

    /// Any other error status.
    #[error("{message} (HTTP {status})")]
    Api {
        /// The HTTP status.
        status: u16,
        /// What we tried and what the provider said.
        message: String,
        /// What to do, when we know.
        hint: Option<String>,
    },

    /// The host did not answer (DNS, connection, TLS, timeout).
    #[error("{0}")]
    Transport(String),

    /// The host answered something we could not read.
    #[error("{0}")]
    InvalidResponse(String),

    /// The host redirected to another origin (or from https to http), where the token would
    /// have gone along; the redirect was not followed.
    #[error("{from} redirected the API request to {to}; it was not followed, so the token was not sent there")]
    RedirectRefused {
        /// `scheme://host[:port]` asked.
        from: String,
        /// `scheme://host[:port]` it redirected to.
        to: String,
    },
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() { String::new() } else { format!(": {detail}") }
}

fn retry_suffix(retry_after_secs: Option<u64>) -> String {
    retry_after_secs.map_or_else(String::new, |secs| format!("; the limit resets in {secs}s"))
}

impl ProviderError {
    /// A [`ProviderError::Forbidden`] with `hint` (made only then) in place of its own; any other
    /// error as it is.
    fn with_forbidden_hint(self, hint: impl FnOnce() -> String) -> ProviderError {
        match self {
            ProviderError::Forbidden { message, .. } => ProviderError::Forbidden { message, hint: Some(hint()) },
            other => other,
        }
    }

    /// A line telling the user what to try next, when we know one.
    pub fn hint(&self) -> Option<String> {
        match self {
            ProviderError::InvalidConfig(_) => None,
            ProviderError::Unauthorized { host, kind, .. } => Some(match kind {
                Kind::GitHub => format!(
                    "set {} to a valid token for {host}: a fine-grained token with Administration, Contents and Pull requests read/write on the repository, or a classic token with the `repo` scope",
                    kind.token_env()
                ),
                Kind::GitLab => format!(
                    "set {} to a valid token for {host} with the `api` scope (personal, group or project access token, Maintainer role on the project)",
                    kind.token_env()
                ),
                Kind::Gitea => format!(
                    "set {} to a valid access token for {host} with the write:repository, write:user and write:organization scopes (Settings → Applications)",
                    kind.token_env()
                ),
            }),
            ProviderError::Forbidden { hint, .. } | ProviderError::Api { hint, .. } => hint.clone(),
            ProviderError::NotFound { kind, .. } => Some(format!(
                "check the owner and name, and that the token in {} can see it (private repositories answer 404 to tokens without access)",
                kind.token_env()
            )),
            ProviderError::AlreadyExists { .. } => None,
            ProviderError::OwnerMismatch { requested, .. } => Some(format!(
                "use a token of {requested}, or drop the personal option to create the repository under the organization or group {requested}"
            )),
            ProviderError::RateLimited { .. } => {
                Some("wait for the limit to reset and run the command again".to_string())
            }
            ProviderError::Transport(_) => Some(
                "check the network, proxy settings and the hostname; the provider API must be reachable from this machine".to_string(),
            ),
            ProviderError::RedirectRefused { to, .. } => Some(format!(
                "credentials never follow a redirect to another origin: if the API really moved to {to}, point the hostname (or KUBECTL_GITOPS_<PROVIDER>_API_URL) there"
            )),
            ProviderError::InvalidResponse(_) => Some(
                "check that the hostname points at the provider's API (GitHub Enterprise: https://host/api/v3, GitLab: https://host/api/v4)".to_string(),
            ),
        }
    }
}

/// One authenticated API client for one GitHub or GitLab host.
#[derive(Debug, Clone)]
pub struct Provider {
    kind: Kind,
    host: String,
    base: String,
    token: Token,
    client: reqwest::Client,
    timeout: Duration,
}

/// An answer, read in full.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn is(&self, statuses: &[u16]) -> bool {
        statuses.contains(&self.status)
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

/// `github::f(self, args…)`, `gitlab::f(…)` or `gitea::f(…)`, by the provider's kind, awaited: the
/// public methods of [`Provider`] hand each operation to the module of its provider.
macro_rules! by_kind {
    ($provider:ident . $function:ident($($arg:expr),* $(,)?)) => {
        match $provider.kind {
            Kind::GitHub => github::$function($provider, $($arg),*).await,
            Kind::GitLab => gitlab::$function($provider, $($arg),*).await,
            Kind::Gitea => gitea::$function($provider, $($arg),*).await,
        }
    };
}

/// `forge::f::<GitHub>(self, args…)`, `forge::f::<GitLab>(…)` or `forge::f::<Gitea>(…)`: an
/// operation every provider answers alike, written once in `forge` over what differs.
macro_rules! by_forge {
    ($provider:ident . $function:ident($($arg:expr),* $(,)?)) => {
        match $provider.kind {
            Kind::GitHub => forge::$function::<github::GitHub>($provider, $($arg),*).await,
            Kind::GitLab => forge::$function::<gitlab::GitLab>($provider, $($arg),*).await,
            Kind::Gitea => forge::$function::<gitea::Gitea>($provider, $($arg),*).await,
        }
    };
}

impl Provider {
    /// A client for `config`, with the default [`REQUEST_TIMEOUT`].
    pub fn new(config: ProviderConfig) -> Result<Provider, ProviderError> {
        Provider::with_timeout(config, crate::timeouts::PROVIDER_REQUEST)
    }

    /// A client whose requests each time out after `timeout`.
    pub fn with_timeout(config: ProviderConfig, timeout: Duration) -> Result<Provider, ProviderError> {
        let base = config.api_base_url()?;
        let host = match &config.api_base {
            Some(_) if config.hostname.is_none() => Url::parse(&base)
                .ok()
                .and_then(|url| url.host_str().map(str::to_string))
                .unwrap_or_else(|| config.host()),
            _ => config.host(),
        };
        if config.token.expose().is_empty() {
            return Err(ProviderError::InvalidConfig(format!(
                "no {} token: set {}",
                config.kind,
                config.kind.token_env()
            )));
        }
        let mut headers = HeaderMap::new();
        let (name, value) = match config.kind {
            Kind::GitHub => {
                headers.insert(reqwest::header::ACCEPT, HeaderValue::from_static("application/vnd.github+json"));
                headers.insert(HeaderName::from_static("x-github-api-version"), HeaderValue::from_static("2022-11-28"));
                (reqwest::header::AUTHORIZATION, format!("Bearer {}", config.token.expose()))
            }
            Kind::GitLab => {
                headers.insert(reqwest::header::ACCEPT, HeaderValue::from_static("application/json"));
                (HeaderName::from_static("private-token"), config.token.expose().to_string())
            }
            Kind::Gitea => {
                headers.insert(reqwest::header::ACCEPT, HeaderValue::from_static("application/json"));
                (reqwest::header::AUTHORIZATION, format!("token {}", config.token.expose()))
            }
        };
        let mut secret = HeaderValue::from_str(&value).map_err(|_| {
            ProviderError::InvalidConfig(format!(
                "the {} token contains characters that cannot be sent in an HTTP header; check {}",
                config.kind,
                config.kind.token_env()
            ))
        })?;
        secret.set_sensitive(true);
        headers.insert(name, secret);
        let client = crate::http::builder(timeout, crate::http::Carries::Credentials)
            .default_headers(headers)
            .build()
            .map_err(|error| {
                ProviderError::Transport(format!(
                    "cannot build an HTTP client: {}",
                    crate::diagnostic::chain_to_line(&error)
                ))
            })?;
        Ok(Provider { kind: config.kind, host, base, token: config.token, client, timeout })
    }

    /// GitHub or GitLab.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The host named in messages (`github.com`, `git.example.com`).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The repository, or `None` when the provider answers 404 (missing, or invisible to the
    /// token). GitHub `GET /repos/{owner}/{repo}`; GitLab `GET /projects/:id`.
    pub async fn get_repository(&self, repo: &RepoRef) -> Result<Option<RepoInfo>, ProviderError> {
        self.check(repo)?;
        by_forge!(self.get_repository(repo))
    }

    /// Creates an empty repository (no README, no first commit).
    ///
    /// `personal` creates it under the token's own account, which must be `repo.owner`
    /// ([`ProviderError::OwnerMismatch`] otherwise): GitHub `POST /user/repos`, GitLab
    /// `POST /projects` without a namespace. Otherwise it goes to the organization (GitHub
    /// `POST /orgs/{org}/repos`) or group (GitLab `POST /projects` with the `namespace_id` of
    /// `GET /namespaces/:owner`). A 403 becomes [`ProviderError::Forbidden`] whose hint says which
    /// right to ask the organization's administrators for.
    pub async fn create_repository(
        &self,
        repo: &RepoRef,
        private: bool,
        personal: bool,
    ) -> Result<RepoInfo, ProviderError> {
        self.check(repo)?;
        by_kind!(self.create_repository(repo, private, personal))
    }

    /// Generates `target` from the template repository `template` (its default branch's files in
    /// one new commit): GitHub `POST /repos/{template}/generate` (`owner`, `name`, `private`),
    /// Gitea the same path (`git_content: true`). GitLab has no such call for a project: its
    /// callers copy the template's tree instead.
    pub async fn generate_repository(
        &self,
        template: &RepoRef,
        target: &RepoRef,
        private: bool,
    ) -> Result<RepoInfo, ProviderError> {
        self.check(template)?;
        self.check(target)?;
        let mut body = serde_json::json!({ "owner": target.owner, "name": target.name, "private": private });
        let what = format!("generating {} {target} from the template {template}", self.kind);
        match self.kind {
            Kind::GitHub => body["include_all_branches"] = false.into(),
            Kind::Gitea => body["git_content"] = true.into(),
            Kind::GitLab => {
                return Err(ProviderError::InvalidConfig(format!(
                    "{what}: GitLab generates projects from templates only through group settings"
                )));
            }
        }
        let path = format!("{}/generate", github::repo_path(template, ""));
        let reply = self.call(Method::POST, &path, &[], Some(&body)).await?;
        match reply.status {
            201 => Ok(self.decode::<github::Repository>(&reply, &what)?.into()),
            409 | 422 if server_message(&reply.body).contains("already exist") => {
                Err(ProviderError::AlreadyExists { what: format!("{} repository {target}", self.kind) })
            }
            _ => Err(self.failure(&reply, &what)),
        }
    }

    /// Forks `upstream` into `target` (the token's own account when `target.owner` is it, else
    /// the organization or group): GitHub and Gitea `POST /repos/{upstream}/forks` (`name`,
    /// `organization`), GitLab `POST /projects/:id/fork` (`namespace_path`, `name`, `path`).
    /// GitHub and Gitea answer 202 and may still be copying when this returns.
    pub async fn fork_repository(&self, upstream: &RepoRef, target: &RepoRef) -> Result<RepoInfo, ProviderError> {
        self.check(upstream)?;
        self.check(target)?;
        let personal = self.token_login().await?.eq_ignore_ascii_case(&target.owner);
        let what = format!("forking {} {upstream} into {target}", self.kind);
        let (path, mut body) = match self.kind {
            Kind::GitHub | Kind::Gitea => (
                format!("{}/forks", github::repo_path(upstream, "")),
                serde_json::json!({ "name": target.name, "default_branch_only": true }),
            ),
            Kind::GitLab => (
                format!("{}/fork", gitlab::project_path(upstream)),
                serde_json::json!({ "namespace_path": target.owner, "name": target.name, "path": target.name }),
            ),
        };
        if !personal && self.kind != Kind::GitLab {
            body["organization"] = target.owner.clone().into();
        }
        let reply = self.call(Method::POST, &path, &[], Some(&body)).await?;
        match (self.kind, reply.status) {
            (Kind::GitHub | Kind::Gitea, 202) => Ok(self.decode::<github::Repository>(&reply, &what)?.into()),
            (Kind::GitLab, 201) => Ok(self.decode::<gitlab::Project>(&reply, &what)?.into()),
            (_, 409) => Err(ProviderError::AlreadyExists { what: format!("{} repository {target}", self.kind) }),
            _ => Err(self.failure(&reply, &what)),
        }
    }

    /// Deletes a repository we created and could not finish (nothing is left half-made): GitHub
    /// and Gitea `DELETE /repos/{owner}/{repo}`, GitLab `DELETE /projects/:id`. One already gone
    /// is fine.
    pub async fn delete_repository(&self, repo: &RepoRef) -> Result<(), ProviderError> {
        self.check(repo)?;
        let path = match self.kind {
            Kind::GitHub | Kind::Gitea => github::repo_path(repo, ""),
            Kind::GitLab => gitlab::project_path(repo),
        };
        let reply = self.call(Method::DELETE, &path, &[], None).await?;
        self.expect_status(&reply, &[202, 204, 404], &format!("deleting {} repository {repo}", self.kind))
    }

    /// The account the token belongs to: GitHub and Gitea `login`, GitLab `username` of `GET /user`.
    pub async fn token_login(&self) -> Result<String, ProviderError> {
        let what = format!("reading the token's {} user", self.kind);
        let reply = self.call(Method::GET, "/user", &[], None).await?;
        Ok(match self.kind {
            Kind::GitHub | Kind::Gitea => self.expect::<github::User>(&reply, 200, &what)?.login,
            Kind::GitLab => self.expect::<gitlab::User>(&reply, 200, &what)?.username,
        })
    }

    /// Whether pushes to `branch` are restricted, so changes must go through a pull request.
    ///
    /// GitHub: the `protected` field of `GET /repos/{owner}/{repo}/branches/{branch}`; a missing
    /// branch (404) is not protected. GitLab: the `protected` field of
    /// `GET /projects/:id/repository/branches/:branch`, which also accounts for wildcard rules;
    /// when the branch does not exist yet, whether `GET /projects/:id/protected_branches/:name`
    /// finds a rule for the name (404: not protected).
    pub async fn is_branch_protected(&self, repo: &RepoRef, branch: &str) -> Result<bool, ProviderError> {
        self.check(repo)?;
        by_forge!(self.is_branch_protected(repo, branch))
    }

    /// The repository's deploy keys (all pages). GitHub `GET /repos/{owner}/{repo}/keys`;
    /// GitLab `GET /projects/:id/deploy_keys`.
    pub async fn list_deploy_keys(&self, repo: &RepoRef) -> Result<Vec<DeployKey>, ProviderError> {
        self.check(repo)?;
        by_forge!(self.list_deploy_keys(repo))
    }

    /// Makes sure `public_key` is a deploy key of the repository with the wanted access; safe to
    /// run again.
    ///
    /// Keys are compared by type and key material (the comment is ignored: GitHub drops it).
    /// - The same material with the same access is there: nothing is written
    ///   ([`DeployKeyOutcome::AlreadyPresent`]), whatever its title.
    /// - The same material with other access, or another key under the same `title` (a key we
    ///   added before and since rotated): that key is deleted and the wanted one added
    ///   ([`DeployKeyOutcome::Replaced`]). Neither provider can change a key's material, and
    ///   GitHub cannot change its access, so replacing is the only way.
    /// - Otherwise the key is added ([`DeployKeyOutcome::Created`]).
    ///
    /// GitHub `POST /repos/{owner}/{repo}/keys` (`title`, `key`, `read_only`) and
    /// `DELETE …/keys/{key_id}`; GitLab `POST /projects/:id/deploy_keys` (`title`, `key`,
    /// `can_push`) and `DELETE …/deploy_keys/:key_id`.
    pub async fn ensure_deploy_key(
        &self,
        repo: &RepoRef,
        title: &str,
        public_key: &str,
        read_only: bool,
    ) -> Result<DeployKeyOutcome, ProviderError> {
        self.check(repo)?;
        let wanted = key_material(public_key).ok_or_else(|| {
            ProviderError::InvalidConfig(
                "the deploy key is not an OpenSSH public key (`<type> <base64> [comment]`)".to_string(),
            )
        })?;
        let existing = self.list_deploy_keys(repo).await?;
        let same_material: Vec<&DeployKey> =
            existing.iter().filter(|key| key_material(&key.key) == Some(wanted)).collect();
        if same_material.iter().any(|key| key.read_only == read_only) {
            return Ok(DeployKeyOutcome::AlreadyPresent);
        }
        let stale: Vec<&DeployKey> =
            existing.iter().filter(|key| key_material(&key.key) == Some(wanted) || key.title == title).collect();
        for key in &stale {
            self.delete_deploy_key(repo, key.id).await?;
        }
        by_forge!(self.create_deploy_key(repo, title, public_key, read_only))?;
        Ok(if stale.is_empty() { DeployKeyOutcome::Created } else { DeployKeyOutcome::Replaced })
    }

    /// Deletes one deploy key by id; a key already gone (404) is fine.
    pub async fn delete_deploy_key(&self, repo: &RepoRef, key_id: u64) -> Result<(), ProviderError> {
        self.check(repo)?;
        by_forge!(self.delete_deploy_key(repo, key_id))
    }

    /// Creates `branch` at commit `from_sha`. An existing branch is
    /// [`ProviderError::AlreadyExists`], which callers re-running a plan may ignore.
    ///
    /// GitHub `POST /repos/{owner}/{repo}/git/refs` (`ref: refs/heads/{branch}`, `sha`); GitLab
    /// `POST /projects/:id/repository/branches?branch=…&ref=…`.
    pub async fn create_branch(&self, repo: &RepoRef, branch: &str, from_sha: &str) -> Result<(), ProviderError> {
        self.check(repo)?;
        by_forge!(self.create_branch(repo, branch, from_sha))
    }

    /// The open pull request from `head_branch` (in the same repository) into `base`, if any.
    ///
    /// GitHub `GET /repos/{owner}/{repo}/pulls?state=open&head={owner}:{branch}&base={base}`;
    /// GitLab `GET /projects/:id/merge_requests?state=opened&source_branch=…&target_branch=…`.
    pub async fn find_open_pull_request(
        &self,
        repo: &RepoRef,
        head_branch: &str,
        base: &str,
    ) -> Result<Option<PullRequest>, ProviderError> {
        self.check(repo)?;
        by_forge!(self.find_open_pull_request(repo, head_branch, base))
    }

    /// Opens a pull request from `head_branch` into `base`.
    ///
    /// GitHub `POST /repos/{owner}/{repo}/pulls` (`title`, `head`, `base`, `body`); GitLab
    /// `POST /projects/:id/merge_requests` (`source_branch`, `target_branch`, `title`,
    /// `description`). One already open for the branch is [`ProviderError::AlreadyExists`]; use
    /// [`Provider::ensure_pull_request`] to update it instead.
    pub async fn create_pull_request(
        &self,
        repo: &RepoRef,
        head_branch: &str,
        base: &str,
        title: &str,
        body: &str,
    ) -> Result<PullRequest, ProviderError> {
        self.check(repo)?;
        by_forge!(self.create_pull_request(repo, head_branch, base, title, body))
    }

    /// Sets the title and body of pull request `number`.
    ///
    /// GitHub `PATCH /repos/{owner}/{repo}/pulls/{number}` (`title`, `body`); GitLab
    /// `PUT /projects/:id/merge_requests/:iid` (`title`, `description`) — GitLab updates with PUT.
    pub async fn update_pull_request(
        &self,
        repo: &RepoRef,
        number: u64,
        title: &str,
        body: &str,
    ) -> Result<PullRequest, ProviderError> {
        self.check(repo)?;
        by_forge!(self.update_pull_request(repo, number, title, body))
    }

    /// The open pull requests of the repository (all pages). GitHub
    /// `GET /repos/{owner}/{repo}/pulls?state=open`; GitLab
    /// `GET /projects/:id/merge_requests?state=opened`. GitHub's listing does not say whether a
    /// request is mergeable: [`Provider::get_pull_request`] does.
    pub async fn list_open_pull_requests(&self, repo: &RepoRef) -> Result<Vec<PullRequestDetails>, ProviderError> {
        self.check(repo)?;
        by_forge!(self.list_open_pull_requests(repo))
    }

    /// Pull request `number`, or `None` when the provider answers 404. GitHub
    /// `GET /repos/{owner}/{repo}/pulls/{number}`; GitLab `GET /projects/:id/merge_requests/:iid`.
    pub async fn get_pull_request(
        &self,
        repo: &RepoRef,
        number: u64,
    ) -> Result<Option<PullRequestDetails>, ProviderError> {
        self.check(repo)?;
        by_forge!(self.get_pull_request(repo, number))
    }

    /// The state of the checks on a request's head commit, `None` when it has none: GitHub's and
    /// Gitea's combined commit status (`GET /repos/{owner}/{repo}/commits/{sha}/status`:
    /// `success`, `pending`, `failure`, `error`), on GitHub combined with its check runs
    /// (`…/commits/{sha}/check-runs`, what GitHub Actions reports) into the worst of both;
    /// GitLab's head pipeline (`head_pipeline.status` of the merge request: `success`,
    /// `running`, `failed`, …).
    pub async fn checks(&self, repo: &RepoRef, number: u64, head_sha: &str) -> Result<Option<String>, ProviderError> {
        self.check(repo)?;
        #[derive(serde::Deserialize)]
        struct Combined {
            state: Option<String>,
            total_count: Option<u64>,
        }
        #[derive(serde::Deserialize)]
        struct Pipeline {
            status: Option<String>,
        }
        #[derive(serde::Deserialize)]
        struct CheckRuns {
            check_runs: Vec<CheckRun>,
        }
        #[derive(serde::Deserialize)]
        struct WithPipeline {
            head_pipeline: Option<Pipeline>,
        }
        let what = format!(
            "reading the checks of {} {}{number} of {repo}",
            self.kind.pull_request_noun(),
            self.kind.pull_request_sign()
        );
        match self.kind {
            Kind::GitHub | Kind::Gitea => {
                let path = github::repo_path(repo, &format!("/commits/{}/status", encode_segment(head_sha)));
                let combined: Option<Combined> = self.get_if_found(&path, &what).await?;
                let statuses = combined
                    .filter(|combined| combined.total_count.unwrap_or(0) > 0)
                    .and_then(|combined| combined.state)
                    .filter(|state| !state.is_empty());
                if self.kind == Kind::Gitea {
                    return Ok(statuses);
                }
                // GitHub Actions and other apps report check runs, not statuses.
                let path = github::repo_path(repo, &format!("/commits/{}/check-runs", encode_segment(head_sha)));
                let runs: Option<CheckRuns> = self.get_if_found(&path, &what).await?;
                let runs = runs.map(|runs| runs.check_runs).unwrap_or_default();
                Ok(worst_check([statuses.as_deref(), check_runs_state(&runs)]))
            }
            Kind::GitLab => {
                let path = format!("{}/merge_requests/{number}", gitlab::project_path(repo));
                let request: Option<WithPipeline> = self.get_if_found(&path, &what).await?;
                Ok(request.and_then(|request| request.head_pipeline).and_then(|pipeline| pipeline.status))
            }
        }
    }

    /// Approves pull request `number` at commit `head_sha`. GitHub
    /// `POST /repos/{owner}/{repo}/pulls/{number}/reviews` (`event: APPROVE`, `commit_id`);
    /// GitLab `POST /projects/:id/merge_requests/:iid/approve` (`sha`: GitLab refuses with 409
    /// when the head moved). GitHub refuses an author's approval of their own request (422).
    pub async fn approve_pull_request(&self, repo: &RepoRef, number: u64, head_sha: &str) -> Result<(), ProviderError> {
        self.check(repo)?;
        by_forge!(self.approve_pull_request(repo, number, head_sha))
    }

    /// Merges pull request `number` if its head is still `head_sha` (both providers answer 409
    /// otherwise). GitHub
    /// `PUT /repos/{owner}/{repo}/pulls/{number}/merge` (`merge_method`, `sha`); GitLab
    /// `PUT /projects/:id/merge_requests/:iid/merge` (`sha`, `squash`).
    pub async fn merge_pull_request(
        &self,
        repo: &RepoRef,
        number: u64,
        head_sha: &str,
        method: MergeMethod,
    ) -> Result<(), ProviderError> {
        self.check(repo)?;
        if self.kind == Kind::GitLab && method == MergeMethod::Rebase {
            return Err(ProviderError::InvalidConfig(
                "GitLab merges with the project's merge method: use --method merge or squash".to_string(),
            ));
        }
        by_forge!(self.merge_pull_request(repo, number, head_sha, method, false)).map(|_| ())
    }

    /// Merges pull request `number` once its checks pass, guarded by `head_sha`; merged now when
    /// there is nothing to wait for. GitHub: the GraphQL mutation `enablePullRequestAutoMerge`
    /// (`expectedHeadOid`), and the REST merge when GitHub answers that the request is in clean
    /// status; GitLab: the merge call with `auto_merge`, asked again while it answers 405 (as it
    /// does right after a request is opened); Gitea: the merge call with
    /// `merge_when_checks_succeed`.
    pub async fn auto_merge_pull_request(
        &self,
        repo: &RepoRef,
        number: u64,
        head_sha: &str,
        method: MergeMethod,
    ) -> Result<MergeOutcome, ProviderError> {
        self.check(repo)?;
        match self.kind {
            Kind::GitHub => self.github_auto_merge(repo, number, head_sha, method).await,
            Kind::Gitea => forge::merge_pull_request::<gitea::Gitea>(self, repo, number, head_sha, method, true).await,
            Kind::GitLab => {
                if method == MergeMethod::Rebase {
                    return self
                        .merge_pull_request(repo, number, head_sha, method)
                        .await
                        .map(|()| MergeOutcome::Merged);
                }
                let mut tries = 1;
                loop {
                    let merged =
                        forge::merge_pull_request::<gitlab::GitLab>(self, repo, number, head_sha, method, true).await;
                    match merged {
                        Err(ProviderError::Api { status: 405, .. }) if tries < AUTO_MERGE_TRIES => {
                            tries += 1;
                            tokio::time::sleep(Duration::from_secs(1)).await;
                        }
                        other => return other,
                    }
                }
            }
        }
    }

    async fn github_auto_merge(
        &self,
        repo: &RepoRef,
        number: u64,
        head_sha: &str,
        method: MergeMethod,
    ) -> Result<MergeOutcome, ProviderError> {
        #[derive(serde::Deserialize)]
        struct Node {
            node_id: String,
        }
        let what = format!("enabling auto-merge of pull request #{number} of GitHub repository {repo}");
        let pull: Node =
            self.get_if_found(&github::repo_path(repo, &format!("/pulls/{number}")), &what).await?.ok_or_else(
                || ProviderError::NotFound { what: format!("pull request #{number} of {repo}"), kind: self.kind },
            )?;
        let body = serde_json::json!({
            "query": "mutation($id: ID!, $method: PullRequestMergeMethod!, $head: GitObjectID!) { enablePullRequestAutoMerge(input: {pullRequestId: $id, mergeMethod: $method, expectedHeadOid: $head}) { pullRequest { number } } }",
            "variables": { "id": pull.node_id, "method": method.id().to_uppercase(), "head": head_sha },
        });
        let graphql = match self.base.strip_suffix("/api/v3") {
            Some(host) => format!("{host}/api/graphql"),
            None => format!("{}/graphql", self.base),
        };
        let url = Url::parse(&graphql).map_err(|error| {
            ProviderError::InvalidConfig(format!("cannot build the GraphQL URL {graphql:?}: {error}"))
        })?;
        let reply = self.send(Method::POST, url, Some(&body)).await?;
        let answer: serde_json::Value = self.expect(&reply, 200, &what)?;
        let Some(errors) = answer["errors"].as_array() else {
            return Ok(MergeOutcome::Scheduled);
        };
        let message = errors.iter().filter_map(|error| error["message"].as_str()).collect::<Vec<_>>().join("; ");
        if message.contains("clean status") {
            // Nothing to wait for: GitHub enables auto-merge only while something is pending.
            self.merge_pull_request(repo, number, head_sha, method).await?;
            return Ok(MergeOutcome::Merged);
        }
        Err(ProviderError::Api {
            status: 422,
            message: self.scrub(&format!("{what}: {message}")),
            hint: Some(format!(
                "auto-merge must be allowed in {repo}'s settings (\"Allow auto-merge\"), and the token needs write access"
            )),
        })
    }

    /// Opens a pull request from `head_branch` into `base`, or, when one is open already (a
    /// re-run), updates its title and body: [`Provider::find_open_pull_request`], then
    /// [`Provider::update_pull_request`] or [`Provider::create_pull_request`].
    pub async fn ensure_pull_request(
        &self,
        repo: &RepoRef,
        head_branch: &str,
        base: &str,
        title: &str,
        body: &str,
    ) -> Result<(PullRequest, PullRequestOutcome), ProviderError> {
        if let Some(open) = self.find_open_pull_request(repo, head_branch, base).await? {
            let updated = self.update_pull_request(repo, open.number, title, body).await?;
            return Ok((updated, PullRequestOutcome::Updated));
        }
        let created = self.create_pull_request(repo, head_branch, base, title, body).await?;
        Ok((created, PullRequestOutcome::Created))
    }

    /// Rejects references a provider cannot address.
    fn check(&self, repo: &RepoRef) -> Result<(), ProviderError> {
        let nested_ok = self.kind == Kind::GitLab;
        let bad_owner = repo.owner.is_empty()
            || repo.owner.split('/').any(str::is_empty)
            || (!nested_ok && repo.owner.contains('/'));
        if bad_owner || repo.name.is_empty() || repo.name.contains('/') {
            let expected = if nested_ok {
                "group[/subgroup…]/name"
            } else {
                "owner/name (a user or organization, then the repository)"
            };
            return Err(ProviderError::InvalidConfig(format!(
                "invalid {} repository {:?}: expected {expected}",
                self.kind,
                repo.path()
            )));
        }
        Ok(())
    }

    /// `base + path`, with `query` appended (form-encoded). `path` must already be encoded.
    fn url(&self, path: &str, query: &[(&str, &str)]) -> Result<Url, ProviderError> {
        let mut url = Url::parse(&format!("{}{path}", self.base))
            .map_err(|error| ProviderError::InvalidConfig(format!("cannot build an API URL for {path:?}: {error}")))?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }

    /// Sends one request to `path` (with `query`, see [`Provider::url`]) and reads the whole
    /// answer. Only transport failures are errors here.
    async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&serde_json::Value>,
    ) -> Result<Reply, ProviderError> {
        self.send(method, self.url(path, query)?, body).await
    }

    /// A GET of `path` answered 200, decoded; 404 is `None`; anything else is its failure.
    async fn get_if_found<T: DeserializeOwned>(&self, path: &str, what: &str) -> Result<Option<T>, ProviderError> {
        let reply = self.call(Method::GET, path, &[], None).await?;
        match reply.status {
            200 => self.decode(&reply, what).map(Some),
            404 => Ok(None),
            _ => Err(self.failure(&reply, what)),
        }
    }

    /// The answer decoded when its status is `ok`, else the failure it is.
    fn expect<T: DeserializeOwned>(&self, reply: &Reply, ok: u16, what: &str) -> Result<T, ProviderError> {
        if reply.status == ok { self.decode(reply, what) } else { Err(self.failure(reply, what)) }
    }

    /// `Ok` when the answer's status is one of `ok`, else the failure it is; the body is not read.
    fn expect_status(&self, reply: &Reply, ok: &[u16], what: &str) -> Result<(), ProviderError> {
        if reply.is(ok) { Ok(()) } else { Err(self.failure(reply, what)) }
    }

    /// Fails with [`ProviderError::OwnerMismatch`] unless the token's own account
    /// ([`Provider::token_login`]) is `repo.owner`: the check before creating a personal
    /// repository.
    async fn check_personal_owner(&self, repo: &RepoRef) -> Result<(), ProviderError> {
        let authenticated = self.token_login().await?;
        if authenticated.eq_ignore_ascii_case(&repo.owner) {
            return Ok(());
        }
        Err(ProviderError::OwnerMismatch { repo: repo.path(), requested: repo.owner.clone(), authenticated })
    }

    /// Sends one request and reads the whole answer. Only transport failures are errors here. A
    /// read (GET) answered 429 or 5xx is asked again ([`crate::retry`]) within the timeout, which
    /// bounds the whole, retries included.
    async fn send(&self, method: Method, url: Url, body: Option<&serde_json::Value>) -> Result<Reply, ProviderError> {
        if method != Method::GET {
            return self.send_once(method, url, body, self.timeout).await;
        }
        let deadline = std::time::Instant::now() + self.timeout;
        let attempt = async |backoff: &crate::retry::Backoff| {
            self.send_once(Method::GET, url.clone(), None, backoff.remaining()).await
        };
        crate::retry::until(deadline, attempt, |answer| match answer {
            Ok(reply) if crate::retry::is_transient(reply.status) => {
                Some(reply.header("retry-after").and_then(crate::retry::retry_after))
            }
            _ => None,
        })
        .await
    }

    /// One attempt of [`Provider::send`], given `timeout`.
    async fn send_once(
        &self,
        method: Method,
        url: Url,
        body: Option<&serde_json::Value>,
        timeout: Duration,
    ) -> Result<Reply, ProviderError> {
        let mut request = self.client.request(method, url).timeout(timeout);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|error| self.transport(&error))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.bytes().await.map_err(|error| self.transport(&error))?.to_vec();
        Ok(Reply { status, headers, body })
    }

    /// A GET of every page of the list at `path`, 100 items a page (Gitea 50), following
    /// `Link: <…>; rel="next"` on the same host.
    async fn get_all<T: DeserializeOwned>(&self, path: &str, what: &str) -> Result<Vec<T>, ProviderError> {
        let mut items = Vec::new();
        // Gitea reads `limit`, and serves at most 50 a page unless its admin raised MAX_RESPONSE_ITEMS.
        let page_size = match self.kind {
            Kind::GitHub | Kind::GitLab => ("per_page", "100"),
            Kind::Gitea => ("limit", "50"),
        };
        let mut next = Some(self.url(path, &[page_size])?);
        let mut pages = 0;
        while let Some(url) = next.take() {
            pages += 1;
            let origin = url.origin();
            let reply = self.send(Method::GET, url, None).await?;
            items.extend(self.expect::<Vec<T>>(&reply, 200, what)?);
            if pages >= MAX_PAGES {
                break;
            }
            next = reply
                .header("link")
                .and_then(next_link)
                .and_then(|link| Url::parse(&link).ok())
                .filter(|link| link.origin() == origin);
        }
        Ok(items)
    }

    fn decode<T: DeserializeOwned>(&self, reply: &Reply, what: &str) -> Result<T, ProviderError> {
        serde_json::from_slice(&reply.body).map_err(|error| {
            ProviderError::InvalidResponse(format!(
                "unexpected answer from {} for {what} (HTTP {}): {error}",
                self.host, reply.status
            ))
        })
    }

    fn transport(&self, error: &reqwest::Error) -> ProviderError {
        if let Some(refused) = crate::http::refused_redirect(error) {
            let (from, to) = refused.ends();
            return ProviderError::RedirectRefused { from, to };
        }
        if error.is_timeout() {
            return ProviderError::Transport(format!(
                "{} did not answer within {}s",
                self.host,
                self.timeout.as_secs_f64()
            ));
        }
        let line = crate::diagnostic::chain_to_line(error);
        ProviderError::Transport(self.scrub(&format!("cannot reach {}: {line}", self.host)))
    }

    /// Sorts an unexpected answer into an error. `what` names the operation and its object.
    fn failure(&self, reply: &Reply, what: &str) -> ProviderError {
        let detail = self.scrub(&server_message(&reply.body));
        let rate_limited = match reply.status {
            429 => true,
            403 => {
                reply.header("x-ratelimit-remaining") == Some("0")
                    || reply.header("retry-after").is_some()
                    || detail.to_ascii_lowercase().contains("rate limit")
            }
            _ => false,
        };
        if rate_limited {
            return ProviderError::RateLimited { host: self.host.clone(), retry_after_secs: retry_after(reply) };
        }
        let message = if detail.is_empty() { what.to_string() } else { format!("{what}: {detail}") };
        match reply.status {
            401 => ProviderError::Unauthorized { host: self.host.clone(), kind: self.kind, detail },
            403 => ProviderError::Forbidden { message, hint: None },
            404 => ProviderError::NotFound { what: what.to_string(), kind: self.kind },
            status if crate::retry::is_transient(status) => {
                let hint = format!(
                    "{} is failing for now (reads are asked again until the timeout): try again later",
                    self.host
                );
                ProviderError::Api { status, message, hint: Some(hint) }
            }
            status => ProviderError::Api { status, message, hint: None },
        }
    }

    /// Removes the token from text that came from elsewhere, in case a server echoes it.
    fn scrub(&self, text: &str) -> String {
        let secret = self.token.expose();
        if secret.len() >= 4 { text.replace(secret, "***") } else { text.to_string() }
    }
}

/// Seconds to wait, from `Retry-After` or the reset time in `X-RateLimit-Reset` (GitHub, epoch
/// seconds) / `RateLimit-Reset` (GitLab, epoch seconds).
fn retry_after(reply: &Reply) -> Option<u64> {
    if let Some(secs) = reply.header("retry-after").and_then(|value| value.trim().parse().ok()) {
        return Some(secs);
    }
    let reset: u64 =
        reply.header("x-ratelimit-reset").or_else(|| reply.header("ratelimit-reset"))?.trim().parse().ok()?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    Some(reset.saturating_sub(now))
}

/// The provider's explanation in an error body: GitHub `message` and `errors[]`, GitLab
/// `message` (a string, a list, or a map of field → messages) or `error`/`error_description`.
fn server_message(body: &[u8]) -> String {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        return text.chars().take(200).collect();
    };
    let mut parts: Vec<String> = Vec::new();
    for field in ["message", "error", "error_description"] {
        flatten_message(value.get(field), None, &mut parts);
    }
    if let Some(errors) = value.get("errors").and_then(serde_json::Value::as_array) {
        for error in errors {
            match error {
                serde_json::Value::Object(map) => {
                    if let Some(text) = map.get("message").and_then(serde_json::Value::as_str) {
                        parts.push(text.to_string());
                    } else {
                        let field = map.get("field").and_then(serde_json::Value::as_str);
                        let code = map.get("code").and_then(serde_json::Value::as_str);
                        match (field, code) {
                            (Some(field), Some(code)) => parts.push(format!("{field} {code}")),
                            (None, Some(code)) => parts.push(code.to_string()),
                            _ => {}
                        }
                    }
                }
                other => flatten_message(Some(other), None, &mut parts),
            }
        }
    }
    parts.dedup();
    parts.join("; ")
}

fn flatten_message(value: Option<&serde_json::Value>, field: Option<&str>, parts: &mut Vec<String>) {
    match value {
        Some(serde_json::Value::String(text)) => match field {
            Some(field) => parts.push(format!("{field} {text}")),
            None => parts.push(text.clone()),
        },
        Some(serde_json::Value::Array(items)) => {
            for item in items {
                flatten_message(Some(item), field, parts);
            }
        }
        Some(serde_json::Value::Object(map)) => {
            for (key, item) in map {
                flatten_message(Some(item), Some(key), parts);
            }
        }
        _ => {}
    }
}

/// A GitHub check run (`GET /repos/{owner}/{repo}/commits/{ref}/check-runs`).
#[derive(serde::Deserialize)]
struct CheckRun {
    /// `queued`, `in_progress`, `completed`, …
    status: String,
    /// Once completed: `success`, `failure`, `neutral`, `skipped`, `cancelled`, `timed_out`, …
    conclusion: Option<String>,
}

/// The state of a commit's check runs as a combined status says it: `failure` when one did not
/// pass, `pending` while one runs, `success` when all passed (or were neutral or skipped);
/// `None` without any.
fn check_runs_state(runs: &[CheckRun]) -> Option<&'static str> {
    let failed = |run: &CheckRun| {
        run.status == "completed" && !matches!(run.conclusion.as_deref(), Some("success" | "neutral" | "skipped"))
    };
    if runs.is_empty() {
        None
    } else if runs.iter().any(failed) {
        Some("failure")
    } else if runs.iter().any(|run| run.status != "completed") {
        Some("pending")
    } else {
        Some("success")
    }
}

/// The worst of several check states (`failure`/`error` over `pending` over `success`); `None`
/// when none has any.
fn worst_check<'a>(states: impl IntoIterator<Item = Option<&'a str>>) -> Option<String> {
    let rank = |state: &str| match state {
        "success" => 0,
        "pending" => 1,
        _ => 2,
    };
    states.into_iter().flatten().max_by_key(|state| rank(state)).map(str::to_string)
}

/// The `rel="next"` URL of a `Link` header (RFC 8288), as GitHub and GitLab paginate.
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        let is_next = params.split(';').any(|param| {
            let param = param.trim().replace(' ', "");
            param == "rel=\"next\"" || param == "rel=next"
        });
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| target.to_string())
    })
}

/// The `<type> <base64>` of an OpenSSH public key, without the comment.
fn key_material(key: &str) -> Option<(&str, &str)> {
    let mut fields = key.split_whitespace();
    let kind = fields.next()?;
    let blob = fields.next()?;
    Some((kind, blob))
}

/// Percent-encodes one path segment: everything but RFC 3986 unreserved characters, so `/`
/// becomes `%2F` (GitLab's namespaced paths, branch names with slashes).
fn encode_segment(segment: &str) -> String {
    let mut encoded = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;

    fn config(kind: Kind, hostname: Option<&str>) -> ProviderConfig {
        ProviderConfig {
            kind,
            hostname: hostname.map(str::to_string),
            api_base: None,
            token: Token::new("secret-token-value"),
        }
    }

    #[test]
    fn github_api_base_is_api_github_com_or_ghe_api_v3() {
        assert_eq!(config(Kind::GitHub, None).api_base_url().unwrap(), "https://api.github.com");
        assert_eq!(config(Kind::GitHub, Some("github.com")).api_base_url().unwrap(), "https://api.github.com");
        assert_eq!(
            config(Kind::GitHub, Some("ghe.example.com")).api_base_url().unwrap(),
            "https://ghe.example.com/api/v3"
        );
        assert_eq!(
            config(Kind::GitHub, Some("https://ghe.example.com:8443/")).api_base_url().unwrap(),
            "https://ghe.example.com:8443/api/v3"
        );
    }

    #[test]
    fn gitlab_api_base_is_api_v4_on_the_host() {
        assert_eq!(config(Kind::GitLab, None).api_base_url().unwrap(), "https://gitlab.com/api/v4");
        assert_eq!(
            config(Kind::GitLab, Some("gitlab.example.com")).api_base_url().unwrap(),
            "https://gitlab.example.com/api/v4"
        );
    }

    #[test]
    fn api_base_overrides_and_is_validated() {
        let mut with_base = config(Kind::GitLab, Some("ignored.example.com"));
        with_base.api_base = Some("http://127.0.0.1:8080/api/v4/".to_string());
        assert_eq!(with_base.api_base_url().unwrap(), "http://127.0.0.1:8080/api/v4");
        with_base.api_base = Some("ftp://127.0.0.1".to_string());
        assert!(matches!(with_base.api_base_url(), Err(ProviderError::InvalidConfig(_))));
        with_base.api_base = Some("http://gitlab.internal/api/v4".to_string());
        let error = with_base.api_base_url().unwrap_err().to_string();
        assert!(error.contains("plain http to another machine"), "{error}");
    }

    #[test]
    fn urls_encode_gitlab_subgroups_and_branch_slashes() {
        let provider = Provider::new(config(Kind::GitLab, Some("gitlab.example.com"))).unwrap();
        let repo = RepoRef::parse("acme/platform/fleet-infra").unwrap();
        assert_eq!(repo.owner, "acme/platform");
        assert_eq!(repo.name, "fleet-infra");
        assert_eq!(gitlab::project_path(&repo), "/projects/acme%2Fplatform%2Ffleet-infra");
        let url = provider
            .url(&format!("{}/repository/branches/{}", gitlab::project_path(&repo), encode_segment("release/v1")), &[])
            .unwrap();
        assert_eq!(
            url.as_str(),
            "https://gitlab.example.com/api/v4/projects/acme%2Fplatform%2Ffleet-infra/repository/branches/release%2Fv1"
        );
    }

    #[test]
    fn urls_for_github_enterprise_keep_api_v3_and_encode_query() {
        let provider = Provider::new(config(Kind::GitHub, Some("ghe.example.com"))).unwrap();
        let repo = RepoRef::new("acme", "fleet");
        let url = provider
            .url(&github::repo_path(&repo, "/pulls"), &[("state", "open"), ("head", "acme:gitops/install")])
            .unwrap();
        assert_eq!(
            url.as_str(),
            "https://ghe.example.com/api/v3/repos/acme/fleet/pulls?state=open&head=acme%3Agitops%2Finstall"
        );
    }

    #[test]
    fn github_rejects_nested_owners() {
        let provider = Provider::new(config(Kind::GitHub, None)).unwrap();
        let error = provider.check(&RepoRef::new("acme/platform", "fleet")).unwrap_err();
        assert!(error.to_string().contains("owner/name"), "{error}");
        let gitlab = Provider::new(config(Kind::GitLab, None)).unwrap();
        assert!(gitlab.check(&RepoRef::new("acme/platform", "fleet")).is_ok());
        assert!(gitlab.check(&RepoRef::new("acme//platform", "fleet")).is_err());
    }

    #[test]
    fn encode_segment_keeps_only_unreserved() {
        assert_eq!(encode_segment("a-b_c.d~e"), "a-b_c.d~e");
        assert_eq!(encode_segment("a/b c+d%"), "a%2Fb%20c%2Bd%25");
        assert_eq!(encode_segment("é"), "%C3%A9");
    }

    #[test]
    fn token_never_prints() {
        let token = Token::new("  ghp_supersecret\n");
        assert_eq!(format!("{token:?}"), "***");
        let provider = Provider::new(ProviderConfig::new(Kind::GitHub, token)).unwrap();
        let printed = format!("{provider:?}");
        assert!(!printed.contains("supersecret"), "{printed}");
        assert_eq!(provider.scrub("echo ghp_supersecret back"), "echo *** back");
    }

    #[test]
    fn empty_token_is_a_config_error() {
        let error = Provider::new(ProviderConfig::new(Kind::GitLab, Token::new("  "))).unwrap_err();
        assert!(error.to_string().contains("GITLAB_TOKEN"), "{error}");
    }

    #[test]
    fn server_messages_of_both_providers_flatten_to_one_line() {
        let github = br#"{"message":"Validation Failed","errors":[{"resource":"PublicKey","code":"custom","field":"key","message":"key is already in use"}],"documentation_url":"https://docs.github.com/rest"}"#;
        assert_eq!(server_message(github), "Validation Failed; key is already in use");
        let gitlab_map = br#"{"message":{"name":["has already been taken"],"path":["has already been taken"]}}"#;
        assert_eq!(server_message(gitlab_map), "name has already been taken; path has already been taken");
        let gitlab_list = br#"{"message":["Another open merge request already exists for this source branch: !1"]}"#;
        assert_eq!(server_message(gitlab_list), "Another open merge request already exists for this source branch: !1");
        assert_eq!(
            server_message(br#"{"error":"invalid_token","error_description":"Token was revoked"}"#),
            "invalid_token; Token was revoked"
        );
        assert_eq!(server_message(b"<html>bad gateway</html>"), "<html>bad gateway</html>");
    }

    #[test]
    fn link_header_next_is_found() {
        let header = r#"<https://api.github.com/repositories/1/keys?page=2>; rel="next", <https://api.github.com/repositories/1/keys?page=5>; rel="last""#;
        assert_eq!(next_link(header).as_deref(), Some("https://api.github.com/repositories/1/keys?page=2"));
        let gitlab = r#"<https://gitlab.example.com/api/v4/projects/8/deploy_keys?page=1&per_page=100>; rel="first", <https://gitlab.example.com/api/v4/projects/8/deploy_keys?page=3&per_page=100>; rel="last""#;
        assert_eq!(next_link(gitlab), None);
    }

    #[test]
    fn key_material_ignores_comments() {
        assert_eq!(key_material("ssh-ed25519 AAAAC3Nza flux@cluster"), key_material("ssh-ed25519   AAAAC3Nza"));
        assert_ne!(key_material("ssh-ed25519 AAAAC3Nza"), key_material("ssh-ed25519 AAAAC3Nzb"));
        assert_eq!(key_material("garbage"), None);
    }

    #[test]
    fn rate_limit_and_auth_errors_are_classified() {
        let provider = Provider::new(config(Kind::GitHub, None)).unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
        let reply = Reply { status: 403, headers, body: br#"{"message":"API rate limit exceeded"}"#.to_vec() };
        assert!(matches!(provider.failure(&reply, "listing keys"), ProviderError::RateLimited { .. }));
        let reply =
            Reply { status: 401, headers: HeaderMap::new(), body: br#"{"message":"Bad credentials"}"#.to_vec() };
        let error = provider.failure(&reply, "listing keys");
        assert_eq!(error.to_string(), "github.com rejected the API token (HTTP 401: Bad credentials)");
        assert!(error.hint().unwrap().contains("GITHUB_TOKEN"));
    }

    #[test]
    fn check_runs_and_statuses_combine_into_the_worst_state() {
        let run = |status: &str, conclusion: Option<&str>| CheckRun {
            status: status.to_string(),
            conclusion: conclusion.map(str::to_string),
        };
        assert_eq!(check_runs_state(&[]), None);
        let passed =
            [run("completed", Some("success")), run("completed", Some("skipped")), run("completed", Some("neutral"))];
        assert_eq!(check_runs_state(&passed), Some("success"));
        assert_eq!(check_runs_state(&[run("completed", Some("success")), run("in_progress", None)]), Some("pending"));
        assert_eq!(check_runs_state(&[run("in_progress", None), run("completed", Some("timed_out"))]), Some("failure"));
        assert_eq!(worst_check([None, None]), None);
        assert_eq!(worst_check([Some("success"), None]).as_deref(), Some("success"));
        assert_eq!(worst_check([Some("success"), Some("pending")]).as_deref(), Some("pending"));
        assert_eq!(worst_check([Some("pending"), Some("error")]).as_deref(), Some("error"));
    }
}
