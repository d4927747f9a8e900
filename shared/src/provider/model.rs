//! What the providers' operations take and give: the client's configuration and token, a
//! repository, deploy keys, pull requests and what became of them.

use std::fmt;

use reqwest::Url;

use crate::http::Origin;

use crate::provider_error::ProviderError;
use crate::provider_kind::Kind;

/// A pull request as a user names it: its number (`42`, `#42`, `!42`) or its web address, whose
/// last segment is the number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestReference {
    /// The number.
    pub number: u64,
    /// The address given, which must turn out to be the request's own.
    pub url: Option<String>,
}

impl PullRequestReference {
    /// The reference in `text`; `None` when it is neither a number nor an address ending in one.
    pub fn parse(text: &str) -> Option<PullRequestReference> {
        let text = text.trim();
        let last = text.trim_end_matches('/').rsplit('/').next().unwrap_or_default();
        let number = last.trim_start_matches(['#', '!']).parse::<u64>().ok().filter(|number| *number > 0)?;
        let url = text.contains("://").then(|| text.trim_end_matches('/').to_string());
        Some(PullRequestReference { number, url })
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
    /// The host of GitHub Enterprise Server, self-managed GitLab or a Gitea (`git.example.com`,
    /// optionally with `:port`), parsed once ([`Origin::parse`]); `None` means the public host.
    pub host: Option<Origin>,
    /// The full API base URL (`http://127.0.0.1:8080`, `https://host/api/v4`), overriding the one
    /// derived from `host`: the user's own (`KUBECTL_GITOPS_*_API_URL`). Tests point this at a
    /// local stand-in.
    pub api_base: Option<String>,
    /// The API token.
    pub token: Token,
}

impl ProviderConfig {
    /// A configuration for the public host (github.com, gitlab.com).
    pub fn new(kind: Kind, token: Token) -> ProviderConfig {
        ProviderConfig { kind, host: None, api_base: None, token }
    }

    /// The host named in messages: the configured host, or the public one.
    pub fn host(&self) -> String {
        self.host.as_ref().map_or_else(|| self.kind.default_host().to_string(), Origin::authority)
    }

    /// The API base URL, without a trailing slash, built from the typed host (never from its
    /// text): `https://api.github.com`, `https://{host}/api/v3` (GitHub Enterprise Server),
    /// `https://{host}/api/v4` (GitLab), `https://{host}/api/v1` (Gitea), or `api_base` as given.
    pub fn api_base_url(&self) -> Result<String, ProviderError> {
        let invalid = |base: &str, why: String| {
            ProviderError::InvalidConfig(format!("invalid {} API URL {base:?}: {why}", self.kind))
        };
        let public = self.host.as_ref().is_none_or(|host| host.authority() == self.kind.default_host());
        let url = match (&self.api_base, &self.host) {
            (Some(base), _) => {
                let base = base.trim_end_matches('/');
                Url::parse(base).map_err(|error| invalid(base, error.to_string()))?
            }
            (None, Some(host)) if !public => {
                host.url(self.kind.api_path()).map_err(|error| invalid(host.host(), error.to_string()))?
            }
            (None, _) => Url::parse(self.kind.public_api_url())
                .map_err(|error| invalid(self.kind.public_api_url(), error.to_string()))?,
        };
        let base = url.as_str().trim_end_matches('/').to_string();
        let origin =
            Origin::of_url(&url).map_err(|_| invalid(&base, "expected http(s)://host[:port][/path]".to_string()))?;
        if !origin.carries_credentials() {
            return Err(ProviderError::InvalidConfig(format!(
                "the {} API URL {base} is plain http to another machine, and the token is never sent over it: use https (http only to 127.0.0.1, ::1 or localhost)",
                self.kind
            )));
        }
        Ok(base)
    }
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

/// A comment on a pull or merge request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    pub id: u64,
    pub body: String,
    /// Who wrote it (the login), when the forge says.
    pub author: Option<String>,
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
