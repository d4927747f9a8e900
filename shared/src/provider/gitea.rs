//! Gitea REST API v1 calls behind [`super::Provider`].
//!
//! Gitea answers most calls the way GitHub does (the same paths below `/repos/{owner}/{repo}`
//! and the same repository and pull request shapes), so it reuses github.rs' types; what differs
//! is said here. Endpoints, as its API documentation (`/api/swagger` of every instance) lists them:
//! - repositories: `GET /repos/{owner}/{repo}`, `POST /user/repos`, `POST /orgs/{org}/repos`,
//!   `GET /user`
//! - branches: `GET /repos/{owner}/{repo}/branches/{branch}`, `POST …/branches`
//!   (`new_branch_name`, `old_ref_name`); `GET …/branch_protections/{name}`
//! - deploy keys: `GET|POST /repos/{owner}/{repo}/keys`, `DELETE …/keys/{id}`
//! - pull requests: `GET|POST /repos/{owner}/{repo}/pulls`, `GET|PATCH …/pulls/{index}`,
//!   `GET …/pulls/{base}/{head}`, `POST …/pulls/{index}/merge` (`Do`, `head_commit_id`),
//!   `POST …/pulls/{index}/reviews` (`event: APPROVED`, `commit_id`)

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use super::forge::{Forge, Lookup};
use super::github::{self, Repository};
use super::{
    MergeMethod, MergeOutcome, Provider, ProviderError, PullRequestDetails, Reply, RepoInfo, RepoRef, encode_segment,
};

/// A pull request: GitHub's shape, but `mergeable` is a plain boolean that is also false while
/// Gitea checks the request for conflicts (right after it is opened or its base moved).
#[derive(Deserialize)]
#[serde(transparent)]
pub(super) struct Pull(github::Pull);

impl From<Pull> for PullRequestDetails {
    fn from(pull: Pull) -> PullRequestDetails {
        let mut details = PullRequestDetails::from(pull.0);
        if details.mergeable == Some(false) {
            // Gitea's false cannot say "not yet": asking again a few times tells a conflict from
            // a check still running.
            details.mergeable = None;
            details.merge_detail = Some(
                "Gitea says no: a conflict, a work-in-progress title, or its conflict check is still running".into(),
            );
        }
        details
    }
}

pub(super) async fn create_repository(
    provider: &Provider,
    repo: &RepoRef,
    private: bool,
    personal: bool,
) -> Result<RepoInfo, ProviderError> {
    github::create_owned_repository::<Gitea>(provider, repo, private, personal, 409).await
}

/// Gitea's side of the calls every provider makes alike.
pub(super) struct Gitea;

impl Forge for Gitea {
    const REPOSITORY: &'static str = "Gitea repository";
    const CHANGE_REQUEST: (&'static str, &'static str) = ("pull request", "#");

    type Repository = Repository;

    fn repository_path(repo: &RepoRef) -> String {
        github::repo_path(repo, "")
    }

    const CREATE_REFUSED: (&'static str, &'static str) = (
        "your Gitea account may not create repositories on {host} (its repository limit may be 0): ask a Gitea administrator to allow it, or create {repo} yourself (empty, without README) and run again",
        "ask an owner of the Gitea organization {owner} on {host} for a team allowed to create repositories in it, and use a token with the write:repository and write:organization scopes; or ask them to create {repo} empty, without README, and run again",
    );
    const BRANCHES: &'static str = "/branches";
    const PROTECTION_RULES: Option<&'static str> = Some("/branch_protections");

    const DEPLOY_KEYS: &'static str = "/keys";

    fn new_deploy_key(title: &str, key: &str, read_only: bool) -> Value {
        json!({ "title": title, "key": key, "read_only": read_only })
    }

    const DEPLOY_KEY_GONE: &'static [u16] = &[204, 404];

    fn deploy_key_refused(error: ProviderError, repo: &RepoRef) -> ProviderError {
        match error {
            ProviderError::Api { status: 422, message, .. } if message.contains("used as non-deploy key") => {
                ProviderError::Api {
                    status: 422,
                    message,
                    hint: Some(
                        "Gitea accepts a public key either as a user's key or as deploy keys, not both: generate a new key for this repository".to_string(),
                    ),
                }
            }
            other => other.with_forbidden_hint(|| {
                format!("adding deploy keys needs admin rights on {repo}: ask its owners, or use a token of an owner")
            }),
        }
    }

    fn new_branch(branch: &str, from_sha: &str) -> (&'static str, Vec<(&'static str, String)>, Option<Value>) {
        ("/branches", Vec::new(), Some(json!({ "new_branch_name": branch, "old_ref_name": from_sha })))
    }

    const BRANCH_EXISTS: u16 = 409;

    const CHANGE_REQUESTS: &'static str = "/pulls";

    fn approval(head_sha: &str) -> (&'static str, Value) {
        ("/reviews", json!({ "event": "APPROVED", "commit_id": head_sha }))
    }
    const APPROVED: u16 = 200;

    const MERGE: Method = Method::POST;

    fn merge(head_sha: &str, method: MergeMethod, auto: bool) -> Value {
        json!({ "Do": method.id(), "head_commit_id": head_sha, "merge_when_checks_succeed": auto })
    }

    /// Gitea answers 405 "Please try again later" while it checks whether the pull request can
    /// merge, which it does again after each push.
    fn merge_busy(reply: &Reply) -> bool {
        reply.status == 405 && String::from_utf8_lossy(&reply.body).contains("try again later")
    }

    /// 201: scheduled until its checks pass; 200: merged now.
    fn merge_outcome(reply: &Reply) -> MergeOutcome {
        if reply.status == 201 { MergeOutcome::Scheduled } else { MergeOutcome::Merged }
    }

    type Details = Pull;
    const OPEN: &'static str = "open";

    fn open_change_request(_repo: &RepoRef, head_branch: &str, base: &str) -> Lookup {
        // Gitea's listing cannot filter by head branch; this finds the newest request from it.
        let head: Vec<String> = head_branch.split('/').map(encode_segment).collect();
        Lookup::One(format!("/{}/{}", encode_segment(base), head.join("/")))
    }

    fn new_change_request(head_branch: &str, base: &str, title: &str, body: &str) -> Value {
        json!({ "title": title, "head": head_branch, "base": base, "body": body })
    }

    const EDIT: (Method, u16) = (Method::PATCH, 201);

    fn edited_change_request(title: &str, body: &str) -> Value {
        json!({ "title": title, "body": body })
    }

    fn comments(number: u64) -> String {
        format!("/issues/{number}/comments")
    }

    fn comment(_number: u64, id: u64) -> String {
        format!("/issues/comments/{id}")
    }

    /// Gitea sets no limit of its own; GitHub's keeps a comment readable in its web page.
    const MAX_COMMENT: usize = 65_536;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merge_refused_while_gitea_checks_the_request_is_asked_again_and_no_other() {
        let reply = |status: u16, body: &str| Reply {
            status,
            headers: reqwest::header::HeaderMap::new(),
            body: body.as_bytes().to_vec(),
        };
        assert!(Gitea::merge_busy(&reply(405, r#"{"message":"Please try again later","url":""}"#)));
        assert!(!Gitea::merge_busy(&reply(405, r#"{"message":"User not allowed to merge PR"}"#)));
        assert!(!Gitea::merge_busy(&reply(409, r#"{"message":"head out of date"}"#)));
    }
}
