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
//!   `GET|PUT /projects/:id/merge_requests/:merge_request_iid`, `PUT …/:merge_request_iid/merge`,
//!   `POST …/:merge_request_iid/approve` (merge_request_approvals)

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use super::forge::{self, Forge, Lookup};
use super::{
    MergeMethod, MergeOutcome, Provider, ProviderError, PullRequestDetails, PullState, Reply, RepoInfo, RepoRef,
    encode_segment,
};

/// `/projects/{url-encoded owner/name}`.
pub(super) fn project_path(repo: &RepoRef) -> String {
    format!("/projects/{}", encode_segment(&repo.path()))
}

#[derive(Deserialize)]
pub(super) struct Project {
    default_branch: Option<String>,
    visibility: Option<String>,
    ssh_url_to_repo: String,
    http_url_to_repo: String,
    web_url: String,
    /// The token's access: on the project itself, or inherited from its group.
    permissions: Option<Permissions>,
}

#[derive(Deserialize)]
pub(super) struct Permissions {
    project_access: Option<Access>,
    group_access: Option<Access>,
}

#[derive(Deserialize)]
pub(super) struct Access {
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
            is_template: None,
        }
    }
}

#[derive(Deserialize)]
pub(super) struct User {
    pub(super) username: String,
}

#[derive(Deserialize)]
pub(super) struct Namespace {
    id: u64,
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
        provider.check_personal_owner(repo).await?;
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
        Err(other) => {
            Err(other.with_forbidden_hint(|| forge::create_refused_hint::<GitLab>(provider.host(), repo, personal)))
        }
    }
}

/// A merge request.
#[derive(Deserialize)]
pub(super) struct MergeRequest {
    iid: u64,
    web_url: String,
    title: String,
    description: Option<String>,
    /// `opened`, `closed`, `locked` or `merged`.
    state: String,
    source_branch: String,
    target_branch: String,
    sha: Option<String>,
    /// GitLab 15.6 and later: `mergeable`, or why not (`conflict`, `not_approved`, …), or
    /// `checking`/`unchecked` while it is worked out.
    detailed_merge_status: Option<String>,
    /// Before 15.6 (deprecated since): `can_be_merged`, `cannot_be_merged`, `unchecked`, …
    merge_status: Option<String>,
    merge_commit_sha: Option<String>,
    squash_commit_sha: Option<String>,
    author: Option<Author>,
    created_at: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct Author {
    username: String,
}

/// Whether a merge request can be merged, from its `detailed_merge_status` or else its
/// `merge_status`; `None` while GitLab is still working it out.
fn mergeable(detailed: Option<&str>, legacy: Option<&str>) -> Option<bool> {
    match (detailed, legacy) {
        (Some("mergeable"), _) => Some(true),
        (Some("checking" | "unchecked" | "preparing" | "approvals_syncing"), _) => None,
        (Some(_), _) => Some(false),
        (None, Some("can_be_merged")) => Some(true),
        (None, Some("cannot_be_merged")) => Some(false),
        (None, _) => None,
    }
}

impl From<MergeRequest> for PullRequestDetails {
    fn from(request: MergeRequest) -> PullRequestDetails {
        let state = match request.state.as_str() {
            "opened" => PullState::Open,
            "merged" => PullState::Merged,
            _ => PullState::Closed,
        };
        PullRequestDetails {
            number: request.iid,
            url: request.web_url,
            title: request.title,
            body: request.description.unwrap_or_default(),
            head_branch: Some(request.source_branch),
            head_sha: request.sha,
            base_branch: Some(request.target_branch),
            state,
            mergeable: mergeable(request.detailed_merge_status.as_deref(), request.merge_status.as_deref()),
            merge_detail: request.detailed_merge_status.or(request.merge_status),
            merge_commit: request.merge_commit_sha.or(request.squash_commit_sha),
            author: request.author.map(|author| author.username),
            created_at: request.created_at,
        }
    }
}

/// GitLab's side of the calls both providers make alike.
pub(super) struct GitLab;

impl Forge for GitLab {
    const REPOSITORY: &'static str = "GitLab project";
    const CHANGE_REQUEST: (&'static str, &'static str) = ("merge request", "!");

    type Repository = Project;

    fn repository_path(repo: &RepoRef) -> String {
        project_path(repo)
    }

    const CREATE_REFUSED: (&'static str, &'static str) = (
        "your account may not create projects on {host} (its project limit may be 0): ask a GitLab administrator (your IT or platform team) to allow it, or create {repo} yourself (empty, without README) and run again",
        "ask an owner of the GitLab group {owner} on {host} (your IT or platform team) for a role allowed to create projects in it (the group's \"Roles allowed to create projects\", usually Maintainer), and use a token with the `api` scope; or ask them to create {repo} empty, without README, and run again",
    );
    const BRANCHES: &'static str = "/repository/branches";
    const PROTECTION_RULES: Option<&'static str> = Some("/protected_branches");

    const DEPLOY_KEYS: &'static str = "/deploy_keys";

    fn new_deploy_key(title: &str, key: &str, read_only: bool) -> Value {
        json!({ "title": title, "key": key, "can_push": !read_only })
    }

    const DEPLOY_KEY_GONE: &'static [u16] = &[200, 204, 404];

    fn deploy_key_refused(error: ProviderError, repo: &RepoRef) -> ProviderError {
        error.with_forbidden_hint(|| {
            format!("adding deploy keys needs the Maintainer role on {repo}: ask an owner of the project or its group")
        })
    }

    fn new_branch(branch: &str, from_sha: &str) -> (&'static str, Vec<(&'static str, String)>, Option<Value>) {
        ("/repository/branches", vec![("branch", branch.into()), ("ref", from_sha.into())], None)
    }

    const BRANCH_EXISTS: u16 = 400;

    const CHANGE_REQUESTS: &'static str = "/merge_requests";

    fn approval(head_sha: &str) -> (&'static str, Value) {
        ("/approve", json!({ "sha": head_sha }))
    }
    const APPROVED: u16 = 201;

    fn merge(head_sha: &str, method: MergeMethod, auto: bool) -> Value {
        let mut body = json!({ "sha": head_sha, "squash": method == MergeMethod::Squash });
        if auto {
            // `auto_merge` since GitLab 17.11; `merge_when_pipeline_succeeds` before (deprecated).
            body["auto_merge"] = true.into();
            body["merge_when_pipeline_succeeds"] = true.into();
        }
        body
    }

    /// GitLab answers 200 both ways: the merge request says whether it merged.
    fn merge_outcome(reply: &Reply) -> MergeOutcome {
        let state = serde_json::from_slice::<Value>(&reply.body)
            .ok()
            .and_then(|request| request["state"].as_str().map(str::to_string));
        if state.as_deref() == Some("merged") { MergeOutcome::Merged } else { MergeOutcome::Scheduled }
    }

    type Details = MergeRequest;
    const OPEN: &'static str = "opened";

    fn open_change_request(_repo: &RepoRef, head_branch: &str, base: &str) -> Lookup {
        Lookup::Listed(vec![
            ("state", "opened".into()),
            ("source_branch", head_branch.into()),
            ("target_branch", base.into()),
        ])
    }

    fn new_change_request(head_branch: &str, base: &str, title: &str, body: &str) -> Value {
        json!({ "source_branch": head_branch, "target_branch": base, "title": title, "description": body })
    }

    const EDIT: (Method, u16) = (Method::PUT, 200);

    fn edited_change_request(title: &str, body: &str) -> Value {
        json!({ "title": title, "description": body })
    }

    fn comments(number: u64) -> String {
        format!("/merge_requests/{number}/notes")
    }

    fn comment(number: u64, id: u64) -> String {
        format!("/merge_requests/{number}/notes/{id}")
    }

    const EDIT_COMMENT: Method = Method::PUT;
    /// GitLab refuses a longer note ("Note is too long (maximum is 1000000 characters)").
    const MAX_COMMENT: usize = 1_000_000;
}
