//! GitHub REST API (version 2022-11-28) calls behind [`super::Provider`].
//!
//! Endpoints, as documented at <https://docs.github.com/en/rest>:
//! - repositories: `GET /repos/{owner}/{repo}`, `POST /user/repos`, `POST /orgs/{org}/repos`,
//!   `GET /user` (repos/repos, users/users)
//! - branches: `GET /repos/{owner}/{repo}/branches/{branch}` (branches/branches)
//! - deploy keys: `GET|POST /repos/{owner}/{repo}/keys`, `DELETE …/keys/{key_id}`
//!   (deploy-keys/deploy-keys)
//! - references: `POST /repos/{owner}/{repo}/git/refs` (git/refs)
//! - pull requests: `GET|POST /repos/{owner}/{repo}/pulls`, `PATCH …/pulls/{pull_number}`
//!   (pulls/pulls)

use reqwest::Method;
use serde::Deserialize;
use serde_json::json;

use super::{DeployKey, Provider, ProviderError, PullRequest, RepoInfo, RepoRef, encode_segment};

/// `/repos/{owner}/{repo}{suffix}`, each part encoded.
pub(super) fn repo_path(repo: &RepoRef, suffix: &str) -> String {
    format!("/repos/{}/{}{suffix}", encode_segment(&repo.owner), encode_segment(&repo.name))
}

#[derive(Deserialize)]
struct Repository {
    default_branch: Option<String>,
    private: bool,
    ssh_url: String,
    clone_url: String,
    html_url: String,
    /// Present when the request is authenticated.
    permissions: Option<Permissions>,
}

#[derive(Deserialize)]
struct Permissions {
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
        }
    }
}

#[derive(Deserialize)]
struct User {
    login: String,
}

#[derive(Deserialize)]
struct Branch {
    protected: bool,
}

#[derive(Deserialize)]
struct Key {
    id: u64,
    title: String,
    key: String,
    read_only: bool,
}

#[derive(Deserialize)]
struct Pull {
    number: u64,
    html_url: String,
    title: String,
}

impl From<Pull> for PullRequest {
    fn from(pull: Pull) -> PullRequest {
        PullRequest { number: pull.number, url: pull.html_url, title: pull.title }
    }
}

pub(super) async fn get_repository(provider: &Provider, repo: &RepoRef) -> Result<Option<RepoInfo>, ProviderError> {
    let what = format!("reading GitHub repository {repo}");
    Ok(provider.get_if_found::<Repository>(&repo_path(repo, ""), &what).await?.map(RepoInfo::from))
}

pub(super) async fn create_repository(
    provider: &Provider,
    repo: &RepoRef,
    private: bool,
    personal: bool,
) -> Result<RepoInfo, ProviderError> {
    let path = if personal {
        provider.check_personal_owner(repo, |user: User| user.login).await?;
        "/user/repos".to_string()
    } else {
        format!("/orgs/{}/repos", encode_segment(&repo.owner))
    };
    let body = json!({ "name": repo.name, "private": private, "auto_init": false });
    let what = format!("creating GitHub repository {repo}");
    let reply = provider.call(Method::POST, &path, &[], Some(&body)).await?;
    match reply.status {
        201 => Ok(provider.decode::<Repository>(&reply, &what)?.into()),
        404 if !personal => Err(ProviderError::NotFound {
            what: format!("GitHub organization {} (creating {repo})", repo.owner),
            kind: provider.kind,
        }),
        422 => {
            let error = provider.failure(&reply, &what);
            if error.to_string().contains("already exists") {
                Err(ProviderError::AlreadyExists { what: format!("GitHub repository {repo}") })
            } else {
                Err(error)
            }
        }
        _ => Err(provider
            .failure(&reply, &what)
            .with_forbidden_hint(|| create_forbidden_hint(provider.host(), repo, personal))),
    }
}

fn create_forbidden_hint(host: &str, repo: &RepoRef, personal: bool) -> String {
    if personal {
        format!(
            "the token may not create repositories on {host}: use a classic token with the `repo` scope or a fine-grained token with Administration read and write; or create {repo} yourself (empty, without README) and run again"
        )
    } else {
        format!(
            "ask an owner of the {host} organization {owner} (your IT or platform team) for the right to create repositories in {owner}, and use a token allowed to use it (fine-grained: Administration read and write on {owner}; classic: the `repo` scope, authorized for SSO if {owner} uses it); or ask them to create {repo} empty, without README, and run again",
            owner = repo.owner
        )
    }
}

pub(super) async fn is_branch_protected(
    provider: &Provider,
    repo: &RepoRef,
    branch: &str,
) -> Result<bool, ProviderError> {
    let what = format!("reading branch {branch} of GitHub repository {repo}");
    let path = repo_path(repo, &format!("/branches/{}", encode_segment(branch)));
    Ok(provider.get_if_found::<Branch>(&path, &what).await?.is_some_and(|branch| branch.protected))
}

pub(super) async fn list_deploy_keys(provider: &Provider, repo: &RepoRef) -> Result<Vec<DeployKey>, ProviderError> {
    let what = format!("listing deploy keys of GitHub repository {repo}");
    let keys: Vec<Key> = provider.get_all(&repo_path(repo, "/keys"), &what).await?;
    Ok(keys
        .into_iter()
        .map(|key| DeployKey { id: key.id, title: key.title, key: key.key, read_only: key.read_only })
        .collect())
}

pub(super) async fn create_deploy_key(
    provider: &Provider,
    repo: &RepoRef,
    title: &str,
    public_key: &str,
    read_only: bool,
) -> Result<(), ProviderError> {
    let what = format!("adding deploy key {title:?} to GitHub repository {repo}");
    let body = json!({ "title": title, "key": public_key.trim(), "read_only": read_only });
    let reply = provider.call(Method::POST, &repo_path(repo, "/keys"), &[], Some(&body)).await?;
    provider.expect_status(&reply, &[201], &what).map_err(|error| match error {
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
    })
}

pub(super) async fn delete_deploy_key(provider: &Provider, repo: &RepoRef, key_id: u64) -> Result<(), ProviderError> {
    let what = format!("deleting deploy key {key_id} of GitHub repository {repo}");
    let reply = provider.call(Method::DELETE, &repo_path(repo, &format!("/keys/{key_id}")), &[], None).await?;
    provider.expect_status(&reply, &[204, 404], &what)
}

pub(super) async fn create_branch(
    provider: &Provider,
    repo: &RepoRef,
    branch: &str,
    from_sha: &str,
) -> Result<(), ProviderError> {
    let what = format!("creating branch {branch} in GitHub repository {repo}");
    let body = json!({ "ref": format!("refs/heads/{branch}"), "sha": from_sha });
    let reply = provider.call(Method::POST, &repo_path(repo, "/git/refs"), &[], Some(&body)).await?;
    provider.expect_status(&reply, &[201], &what).map_err(|error| match error {
        ProviderError::Api { status: 422, message, .. } if message.contains("already exists") => {
            ProviderError::AlreadyExists { what: format!("branch {branch} in GitHub repository {repo}") }
        }
        other => other,
    })
}

pub(super) async fn find_open_pull_request(
    provider: &Provider,
    repo: &RepoRef,
    head_branch: &str,
    base: &str,
) -> Result<Option<PullRequest>, ProviderError> {
    let what = format!("listing pull requests of GitHub repository {repo}");
    let head = format!("{}:{head_branch}", repo.owner);
    let query = [("state", "open"), ("head", head.as_str()), ("base", base)];
    let reply = provider.call(Method::GET, &repo_path(repo, "/pulls"), &query, None).await?;
    let pulls: Vec<Pull> = provider.expect(&reply, 200, &what)?;
    Ok(pulls.into_iter().next().map(PullRequest::from))
}

pub(super) async fn create_pull_request(
    provider: &Provider,
    repo: &RepoRef,
    head_branch: &str,
    base: &str,
    title: &str,
    body: &str,
) -> Result<PullRequest, ProviderError> {
    let what = format!("opening a pull request from {head_branch} into {base} in GitHub repository {repo}");
    let request = json!({ "title": title, "head": head_branch, "base": base, "body": body });
    let reply = provider.call(Method::POST, &repo_path(repo, "/pulls"), &[], Some(&request)).await?;
    match provider.expect::<Pull>(&reply, 201, &what) {
        Ok(pull) => Ok(pull.into()),
        Err(ProviderError::Api { status: 422, message, .. }) if message.contains("already exists") => {
            Err(ProviderError::AlreadyExists { what: message })
        }
        Err(other) => Err(other),
    }
}

pub(super) async fn update_pull_request(
    provider: &Provider,
    repo: &RepoRef,
    number: u64,
    title: &str,
    body: &str,
) -> Result<PullRequest, ProviderError> {
    let what = format!("updating pull request #{number} of GitHub repository {repo}");
    let request = json!({ "title": title, "body": body });
    let reply =
        provider.call(Method::PATCH, &repo_path(repo, &format!("/pulls/{number}")), &[], Some(&request)).await?;
    Ok(provider.expect::<Pull>(&reply, 200, &what)?.into())
}

/// The structs above parse the GitHub docs' published response examples
/// (`tests/fixtures/providers/github`, provenance in `tests/fixtures/providers/PROVENANCE.md`).
#[cfg(test)]
mod published_examples {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;

    macro_rules! example {
        ($file:literal) => {
            include_str!(concat!("../../../tests/fixtures/providers/github/", $file))
        };
    }

    #[test]
    fn full_repository_reads_urls_default_branch_and_push_permission() {
        let repo: Repository = serde_json::from_str(example!("create-org-repository.json")).unwrap();
        let info = RepoInfo::from(repo);
        assert_eq!(info.default_branch.as_deref(), Some("master"));
        assert!(!info.private);
        assert_eq!(info.ssh_url, "git@github.com:octocat/Hello-World.git");
        assert_eq!(info.https_url, "https://github.com/octocat/Hello-World.git");
        assert_eq!(info.web_url, "https://github.com/octocat/Hello-World");
        assert_eq!(info.can_push, Some(false));
    }

    #[test]
    fn authenticated_user_reads_login() {
        let user: User = serde_json::from_str(example!("authenticated-user.json")).unwrap();
        assert_eq!(user.login, "octocat");
    }

    #[test]
    fn deploy_keys_read_id_title_key_and_read_only() {
        let keys: Vec<Key> = serde_json::from_str(example!("list-deploy-keys.json")).unwrap();
        assert_eq!(keys.len(), 1);
        let created: Key = serde_json::from_str(example!("create-deploy-key.json")).unwrap();
        for key in [&keys[0], &created] {
            assert_eq!(key.id, 1);
            assert_eq!(key.title, "octocat@octomac");
            assert_eq!(key.key, "ssh-rsa AAA...");
            assert!(key.read_only);
        }
    }

    #[test]
    fn branch_reads_protected() {
        let branches: Vec<Branch> = serde_json::from_str(example!("list-branches.json")).unwrap();
        assert!(branches[0].protected);
    }

    #[test]
    fn pull_requests_read_number_url_and_title() {
        let pulls: Vec<Pull> = serde_json::from_str(example!("list-pull-requests.json")).unwrap();
        let pull = PullRequest::from(pulls.into_iter().next().unwrap());
        assert_eq!(pull.number, 1347);
        assert_eq!(pull.url, "https://github.com/octocat/Hello-World/pull/1347");
        assert_eq!(pull.title, "Amazing new feature");
    }
}
