//! GitHub REST API (version 2022-11-28) calls behind [`super::Provider`].
//!
//! Endpoints, as documented at <https://docs.github.com/en/rest>:
//! - repositories: `GET /repos/{owner}/{repo}`, `POST /user/repos`, `POST /orgs/{org}/repos`,
//!   `GET /user` (repos/repos, users/users)
//! - branches: `GET /repos/{owner}/{repo}/branches/{branch}` (branches/branches)
//! - deploy keys: `GET|POST /repos/{owner}/{repo}/keys`, `DELETE …/keys/{key_id}`
//!   (deploy-keys/deploy-keys)
//! - references: `POST /repos/{owner}/{repo}/git/refs` (git/refs)
//! - pull requests: `GET|POST /repos/{owner}/{repo}/pulls`, `GET|PATCH …/pulls/{pull_number}`,
//!   `PUT …/pulls/{pull_number}/merge` (pulls/pulls); `POST …/pulls/{pull_number}/reviews`
//!   (pulls/reviews)

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use super::forge::{self, Forge, Lookup};
use super::{
    MergeMethod, Provider, ProviderError, PullRequestDetails, PullState, Reply, RepoInfo, RepoRef, encode_segment,
};

/// `/repos/{owner}/{repo}{suffix}`, each part encoded.
pub(super) fn repo_path(repo: &RepoRef, suffix: &str) -> String {
    format!("/repos/{}/{}{suffix}", encode_segment(&repo.owner), encode_segment(&repo.name))
}

#[derive(Deserialize)]
pub(super) struct Repository {
    default_branch: Option<String>,
    private: bool,
    ssh_url: String,
    clone_url: String,
    html_url: String,
    /// Present when the request is authenticated.
    permissions: Option<Permissions>,
    /// Gitea calls it `template`.
    #[serde(alias = "template")]
    is_template: Option<bool>,
}

#[derive(Deserialize)]
pub(super) struct Permissions {
    push: bool,
}

impl From<Repository> for RepoInfo {
    fn from(repo: Repository) -> RepoInfo {
        RepoInfo {
            default_branch: repo.default_branch,
            private: repo.private,
            ssh_url: repo.ssh_url,
            https_url: repo.clone_url,
            web_url: repo.html_url,
            can_push: repo.permissions.map(|permissions| permissions.push),
            is_template: repo.is_template,
        }
    }
}

#[derive(Deserialize)]
pub(super) struct User {
    pub(super) login: String,
}

/// A pull request (GitHub's Pull Request shape; its listing's Pull Request Simple lacks
/// `mergeable`).
#[derive(Deserialize)]
pub(super) struct Pull {
    number: u64,
    html_url: String,
    title: String,
    body: Option<String>,
    /// `open` or `closed`; a merged one is closed with `merged_at` set.
    state: String,
    merged_at: Option<String>,
    head: Option<PullEnd>,
    base: Option<PullEnd>,
    mergeable: Option<bool>,
    mergeable_state: Option<String>,
    /// While open, GitHub's test merge; once merged, the merge (or squash, or last rebased) commit.
    merge_commit_sha: Option<String>,
    user: Option<User>,
    created_at: Option<String>,
}

/// A pull request's `head` or `base`.
#[derive(Deserialize)]
pub(super) struct PullEnd {
    #[serde(rename = "ref")]
    branch: String,
    sha: Option<String>,
}

impl From<Pull> for PullRequestDetails {
    fn from(pull: Pull) -> PullRequestDetails {
        let state = match (pull.state.as_str(), &pull.merged_at) {
            ("open", _) => PullState::Open,
            (_, Some(_)) => PullState::Merged,
            _ => PullState::Closed,
        };
        PullRequestDetails {
            number: pull.number,
            url: pull.html_url,
            title: pull.title,
            body: pull.body.unwrap_or_default(),
            head_sha: pull.head.as_ref().and_then(|head| head.sha.clone()),
            head_branch: pull.head.map(|head| head.branch),
            base_branch: pull.base.map(|base| base.branch),
            state,
            mergeable: pull.mergeable,
            merge_detail: pull.mergeable_state,
            merge_commit: pull.merge_commit_sha.filter(|_| state == PullState::Merged),
            author: pull.user.map(|user| user.login),
            created_at: pull.created_at,
        }
    }
}

pub(super) async fn create_repository(
    provider: &Provider,
    repo: &RepoRef,
    private: bool,
    personal: bool,
) -> Result<RepoInfo, ProviderError> {
    create_owned_repository::<GitHub>(provider, repo, private, personal, 422).await
}

/// Creates an empty repository the way GitHub and Gitea both do: `POST /user/repos` for the
/// token's own account, else `POST /orgs/{org}/repos`. `taken` is the status that, with the words
/// "already exists", says the name is taken (GitHub 422, Gitea 409).
pub(super) async fn create_owned_repository<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
    private: bool,
    personal: bool,
    taken: u16,
) -> Result<RepoInfo, ProviderError> {
    let path = if personal {
        provider.check_personal_owner(repo).await?;
        "/user/repos".to_string()
    } else {
        format!("/orgs/{}/repos", encode_segment(&repo.owner))
    };
    let body = json!({ "name": repo.name, "private": private, "auto_init": false });
    let what = format!("creating {} {repo}", F::REPOSITORY);
    let reply = provider.call(Method::POST, &path, &[], Some(&body)).await?;
    match reply.status {
        201 => Ok(provider.decode::<Repository>(&reply, &what)?.into()),
        404 if !personal => Err(ProviderError::NotFound {
            what: format!("{} organization {} (creating {repo})", provider.kind, repo.owner),
            kind: provider.kind,
        }),
        status => {
            let error = provider.failure(&reply, &what);
            if status == taken && error.to_string().contains("already exists") {
                return Err(ProviderError::AlreadyExists { what: format!("{} {repo}", F::REPOSITORY) });
            }
            Err(error.with_forbidden_hint(|| forge::create_refused_hint::<F>(provider.host(), repo, personal)))
        }
    }
}

/// GitHub's side of the calls both providers make alike.
pub(super) struct GitHub;

impl Forge for GitHub {
    const REPOSITORY: &'static str = "GitHub repository";
    const CHANGE_REQUEST: (&'static str, &'static str) = ("pull request", "#");

    type Repository = Repository;

    fn repository_path(repo: &RepoRef) -> String {
        repo_path(repo, "")
    }

    const CREATE_REFUSED: (&'static str, &'static str) = (
        "the token may not create repositories on {host}: use a classic token with the `repo` scope or a fine-grained token with Administration read and write; or create {repo} yourself (empty, without README) and run again",
        "ask an owner of the {host} organization {owner} (your IT or platform team) for the right to create repositories in {owner}, and use a token allowed to use it (fine-grained: Administration read and write on {owner}; classic: the `repo` scope, authorized for SSO if {owner} uses it); or ask them to create {repo} empty, without README, and run again",
    );
    const BRANCHES: &'static str = "/branches";
    const PROTECTION_RULES: Option<&'static str> = None;

    const DEPLOY_KEYS: &'static str = "/keys";

    fn new_deploy_key(title: &str, key: &str, read_only: bool) -> Value {
        json!({ "title": title, "key": key, "read_only": read_only })
    }

    const DEPLOY_KEY_GONE: &'static [u16] = &[204, 404];

    fn deploy_key_refused(error: ProviderError, repo: &RepoRef) -> ProviderError {
        match error {
            ProviderError::Api { status: 422, message, .. } if message.contains("already in use") => ProviderError::Api {
                status: 422,
                message,
                hint: Some(
                    "GitHub accepts a public key only once across all of GitHub (one repository's deploy key, or a user's key): generate a new key for this repository".to_string(),
                ),
            },
            other => other.with_forbidden_hint(|| {
                format!(
                    "adding deploy keys needs admin rights on {repo} (fine-grained token: Administration read and write), and the organization may have disabled deploy keys: ask its owners"
                )
            }),
        }
    }

    fn new_branch(branch: &str, from_sha: &str) -> (&'static str, Vec<(&'static str, String)>, Option<Value>) {
        ("/git/refs", Vec::new(), Some(json!({ "ref": format!("refs/heads/{branch}"), "sha": from_sha })))
    }

    const BRANCH_EXISTS: u16 = 422;

    const CHANGE_REQUESTS: &'static str = "/pulls";

    fn approval(head_sha: &str) -> (&'static str, Value) {
        ("/reviews", json!({ "event": "APPROVE", "commit_id": head_sha }))
    }
    const APPROVED: u16 = 200;

    /// (`auto` never comes here: GitHub enables auto-merge through GraphQL, see
    /// `Provider::auto_merge_pull_request`.)
    fn merge(head_sha: &str, method: MergeMethod, _auto: bool) -> Value {
        json!({ "merge_method": method.id(), "sha": head_sha })
    }

    type Details = Pull;
    const OPEN: &'static str = "open";

    fn open_change_request(repo: &RepoRef, head_branch: &str, base: &str) -> Lookup {
        Lookup::Listed(vec![
            ("state", "open".into()),
            ("head", format!("{}:{head_branch}", repo.owner)),
            ("base", base.into()),
        ])
    }

    fn new_change_request(head_branch: &str, base: &str, title: &str, body: &str) -> Value {
        json!({ "title": title, "head": head_branch, "base": base, "body": body })
    }

    fn change_request_exists(provider: &Provider, reply: &Reply, what: &str) -> Option<ProviderError> {
        if reply.status != 422 {
            return None;
        }
        match provider.failure(reply, what) {
            ProviderError::Api { status: 422, message, .. } if message.contains("already exists") => {
                Some(ProviderError::AlreadyExists { what: message })
            }
            _ => None,
        }
    }

    const EDIT: (Method, u16) = (Method::PATCH, 200);

    fn edited_change_request(title: &str, body: &str) -> Value {
        json!({ "title": title, "body": body })
    }

    fn comments(number: u64) -> String {
        format!("/issues/{number}/comments")
    }

    fn comment(_number: u64, id: u64) -> String {
        format!("/issues/comments/{id}")
    }

    /// GitHub refuses a longer body ("body is too long (maximum is 65536 characters)").
    const MAX_COMMENT: usize = 65_536;
}
