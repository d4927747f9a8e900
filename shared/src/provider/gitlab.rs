//! GitLab REST API v4 calls behind [`super::Provider`].
//!
//! A project is addressed by its URL-encoded full path (`group%2Fsubgroup%2Fproject`, see
//! "Namespaced paths" in <https://docs.gitlab.com/api/rest/>). Endpoints, as documented at
//! <https://docs.gitlab.com/api/>:
//! - projects: `GET /projects/:id`, `POST /projects`; `GET /namespaces/:id`; `GET /user`
//! - branches: `GET /projects/:id/repository/branches/:branch`,
//!   `POST /projects/:id/repository/branches`; `GET /projects/:id/protected_branches/:name`
//! - deploy keys: `GET|POST /projects/:id/deploy_keys`, `DELETE …/deploy_keys/:key_id`
//! - merge requests: `GET|POST /projects/:id/merge_requests`,
//!   `PUT /projects/:id/merge_requests/:merge_request_iid`

use reqwest::Method;
use serde::Deserialize;
use serde_json::json;

use super::{DeployKey, Provider, ProviderError, PullRequest, RepoInfo, RepoRef, encode_segment};

/// `/projects/{url-encoded owner/name}`.
pub(super) fn project_path(repo: &RepoRef) -> String {
    format!("/projects/{}", encode_segment(&repo.path()))
}

#[derive(Deserialize)]
struct Project {
    default_branch: Option<String>,
    visibility: Option<String>,
    ssh_url_to_repo: String,
    http_url_to_repo: String,
    web_url: String,
    /// The token's access: on the project itself, or inherited from its group.
    permissions: Option<Permissions>,
}

#[derive(Deserialize)]
struct Permissions {
    project_access: Option<Access>,
    group_access: Option<Access>,
}

#[derive(Deserialize)]
struct Access {
    access_level: u32,
}

/// GitLab's Developer role, the least that may push to an unprotected branch.
const DEVELOPER_ACCESS: u32 = 30;

impl From<Project> for RepoInfo {
    fn from(project: Project) -> RepoInfo {
        RepoInfo {
            default_branch: project.default_branch,
            private: project.visibility.as_deref() != Some("public"),
            ssh_url: project.ssh_url_to_repo,
            https_url: project.http_url_to_repo,
            web_url: project.web_url,
            can_push: project.permissions.map(|permissions| {
                let level = |access: Option<Access>| access.map_or(0, |access| access.access_level);
                level(permissions.project_access).max(level(permissions.group_access)) >= DEVELOPER_ACCESS
            }),
        }
    }
}

#[derive(Deserialize)]
struct User {
    username: String,
}

#[derive(Deserialize)]
struct Namespace {
    id: u64,
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
    #[serde(default)]
    can_push: bool,
}

#[derive(Deserialize)]
struct MergeRequest {
    iid: u64,
    web_url: String,
    title: String,
}

impl From<MergeRequest> for PullRequest {
    fn from(request: MergeRequest) -> PullRequest {
        PullRequest { number: request.iid, url: request.web_url, title: request.title }
    }
}

pub(super) async fn get_repository(provider: &Provider, repo: &RepoRef) -> Result<Option<RepoInfo>, ProviderError> {
    let what = format!("reading GitLab project {repo}");
    Ok(provider.get_if_found::<Project>(&project_path(repo), &what).await?.map(RepoInfo::from))
}

pub(super) async fn create_repository(
    provider: &Provider,
    repo: &RepoRef,
    private: bool,
    personal: bool,
) -> Result<RepoInfo, ProviderError> {
    let mut body = json!({
        "name": repo.name,
        "path": repo.name,
        "visibility": if private { "private" } else { "public" },
        "initialize_with_readme": false,
    });
    if personal {
        provider.check_personal_owner(repo, |user: User| user.username).await?;
    } else {
        let what = format!("looking up GitLab group {}", repo.owner);
        let path = format!("/namespaces/{}", encode_segment(&repo.owner));
        let Some(namespace) = provider.get_if_found::<Namespace>(&path, &what).await? else {
            return Err(ProviderError::NotFound {
                what: format!("GitLab group {} (creating {repo})", repo.owner),
                kind: provider.kind,
            });
        };
        body["namespace_id"] = json!(namespace.id);
    }
    let what = format!("creating GitLab project {repo}");
    let reply = provider.call(Method::POST, "/projects", &[], Some(&body)).await?;
    match provider.expect::<Project>(&reply, 201, &what) {
        Ok(project) => Ok(project.into()),
        Err(ProviderError::Api { status: 400, message, .. }) if message.contains("has already been taken") => {
            Err(ProviderError::AlreadyExists { what: format!("GitLab project {repo}") })
        }
        Err(other) => Err(other.with_forbidden_hint(|| create_forbidden_hint(provider.host(), repo, personal))),
    }
}

fn create_forbidden_hint(host: &str, repo: &RepoRef, personal: bool) -> String {
    if personal {
        format!(
            "your account may not create projects on {host} (its project limit may be 0): ask a GitLab administrator (your IT or platform team) to allow it, or create {repo} yourself (empty, without README) and run again"
        )
    } else {
        format!(
            "ask an owner of the GitLab group {owner} on {host} (your IT or platform team) for a role allowed to create projects in it (the group's \"Roles allowed to create projects\", usually Maintainer), and use a token with the `api` scope; or ask them to create {repo} empty, without README, and run again",
            owner = repo.owner
        )
    }
}

pub(super) async fn is_branch_protected(
    provider: &Provider,
    repo: &RepoRef,
    branch: &str,
) -> Result<bool, ProviderError> {
    let what = format!("reading branch {branch} of GitLab project {repo}");
    let path = format!("{}/repository/branches/{}", project_path(repo), encode_segment(branch));
    if let Some(found) = provider.get_if_found::<Branch>(&path, &what).await? {
        return Ok(found.protected);
    }
    // The branch does not exist yet: is there a rule for its name?
    let what = format!("reading protection of branch {branch} of GitLab project {repo}");
    let path = format!("{}/protected_branches/{}", project_path(repo), encode_segment(branch));
    let reply = provider.call(Method::GET, &path, &[], None).await?;
    match reply.status {
        200 => Ok(true),
        404 => Ok(false),
        _ => Err(provider.failure(&reply, &what)),
    }
}

pub(super) async fn list_deploy_keys(provider: &Provider, repo: &RepoRef) -> Result<Vec<DeployKey>, ProviderError> {
    let what = format!("listing deploy keys of GitLab project {repo}");
    let keys: Vec<Key> = provider.get_all(&format!("{}/deploy_keys", project_path(repo)), &what).await?;
    Ok(keys
        .into_iter()
        .map(|key| DeployKey { id: key.id, title: key.title, key: key.key, read_only: !key.can_push })
        .collect())
}

pub(super) async fn create_deploy_key(
    provider: &Provider,
    repo: &RepoRef,
    title: &str,
    public_key: &str,
    read_only: bool,
) -> Result<(), ProviderError> {
    let what = format!("adding deploy key {title:?} to GitLab project {repo}");
    let body = json!({ "title": title, "key": public_key.trim(), "can_push": !read_only });
    let path = format!("{}/deploy_keys", project_path(repo));
    let reply = provider.call(Method::POST, &path, &[], Some(&body)).await?;
    provider.expect_status(&reply, &[201], &what).map_err(|error| {
        error.with_forbidden_hint(|| {
            format!("adding deploy keys needs the Maintainer role on {repo}: ask an owner of the project or its group")
        })
    })
}

pub(super) async fn delete_deploy_key(provider: &Provider, repo: &RepoRef, key_id: u64) -> Result<(), ProviderError> {
    let what = format!("deleting deploy key {key_id} of GitLab project {repo}");
    let path = format!("{}/deploy_keys/{key_id}", project_path(repo));
    let reply = provider.call(Method::DELETE, &path, &[], None).await?;
    provider.expect_status(&reply, &[200, 204, 404], &what)
}

pub(super) async fn create_branch(
    provider: &Provider,
    repo: &RepoRef,
    branch: &str,
    from_sha: &str,
) -> Result<(), ProviderError> {
    let what = format!("creating branch {branch} in GitLab project {repo}");
    let path = format!("{}/repository/branches", project_path(repo));
    let reply = provider.call(Method::POST, &path, &[("branch", branch), ("ref", from_sha)], None).await?;
    provider.expect_status(&reply, &[201], &what).map_err(|error| match error {
        ProviderError::Api { status: 400, message, .. } if message.contains("already exists") => {
            ProviderError::AlreadyExists { what: format!("branch {branch} in GitLab project {repo}") }
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
    let what = format!("listing merge requests of GitLab project {repo}");
    let path = format!("{}/merge_requests", project_path(repo));
    let query = [("state", "opened"), ("source_branch", head_branch), ("target_branch", base)];
    let reply = provider.call(Method::GET, &path, &query, None).await?;
    let requests: Vec<MergeRequest> = provider.expect(&reply, 200, &what)?;
    Ok(requests.into_iter().next().map(PullRequest::from))
}

pub(super) async fn create_pull_request(
    provider: &Provider,
    repo: &RepoRef,
    head_branch: &str,
    base: &str,
    title: &str,
    body: &str,
) -> Result<PullRequest, ProviderError> {
    let what = format!("opening a merge request from {head_branch} into {base} in GitLab project {repo}");
    let request = json!({
        "source_branch": head_branch,
        "target_branch": base,
        "title": title,
        "description": body,
    });
    let path = format!("{}/merge_requests", project_path(repo));
    let reply = provider.call(Method::POST, &path, &[], Some(&request)).await?;
    match reply.status {
        409 => Err(ProviderError::AlreadyExists {
            what: format!("{what}: {}", provider.scrub(&super::server_message(&reply.body))),
        }),
        _ => Ok(provider.expect::<MergeRequest>(&reply, 201, &what)?.into()),
    }
}

pub(super) async fn update_pull_request(
    provider: &Provider,
    repo: &RepoRef,
    number: u64,
    title: &str,
    body: &str,
) -> Result<PullRequest, ProviderError> {
    let what = format!("updating merge request !{number} of GitLab project {repo}");
    let request = json!({ "title": title, "description": body });
    let path = format!("{}/merge_requests/{number}", project_path(repo));
    let reply = provider.call(Method::PUT, &path, &[], Some(&request)).await?;
    Ok(provider.expect::<MergeRequest>(&reply, 200, &what)?.into())
}

/// The structs above parse the GitLab docs' published response examples
/// (`tests/fixtures/providers/gitlab`, provenance in `tests/fixtures/providers/PROVENANCE.md`).
#[cfg(test)]
mod published_examples {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;

    macro_rules! example {
        ($file:literal) => {
            include_str!(concat!("../../../tests/fixtures/providers/gitlab/", $file))
        };
    }

    #[test]
    fn deploy_keys_read_id_title_key_and_can_push() {
        let keys: Vec<Key> = serde_json::from_str(example!("list-deploy-keys.json")).unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].id, 1);
        assert_eq!(keys[0].title, "Public key");
        assert!(keys[0].key.starts_with("ssh-rsa AAAAB3NzaC1yc2E"));
        assert!(!keys[0].can_push);

        let added: Key = serde_json::from_str(example!("add-deploy-key.json")).unwrap();
        assert_eq!(added.id, 12);
        assert_eq!(added.title, "My deploy key");
        assert_eq!(added.key, "ssh-rsa AAAA...");
        assert!(added.can_push);
    }

    #[test]
    fn branch_reads_protected() {
        let branch: Branch = serde_json::from_str(example!("get-branch.json")).unwrap();
        assert!(branch.protected);
    }

    #[test]
    fn merge_requests_read_iid_web_url_and_title() {
        let requests: Vec<MergeRequest> = serde_json::from_str(example!("list-project-merge-requests.json")).unwrap();
        let request = PullRequest::from(requests.into_iter().next().unwrap());
        assert_eq!(request.number, 1);
        assert_eq!(request.url, "http://gitlab.example.com/my-group/my-project/merge_requests/1");
        assert_eq!(request.title, "test1");
    }
}
