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

mod client;
mod forge;
mod gitea;
mod github;
mod gitlab;
mod model;
#[cfg(test)]
mod published_examples;

use std::time::Duration;

use reqwest::{Method, Url};

pub use self::client::Provider;
#[cfg(test)]
use self::client::next_link;
use self::client::{Reply, encode_segment, server_message};
pub use self::model::{
    Comment, DeployKey, DeployKeyOutcome, MergeMethod, MergeOutcome, ProviderConfig, PullRequest, PullRequestDetails,
    PullRequestOutcome, PullRequestReference, PullState, RepoInfo, RepoRef, Token,
};
pub use crate::provider_error::ProviderError;
pub use crate::provider_kind::Kind;

/// How long GitLab is asked again, about every second, to auto-merge while it answers 405 (right
/// after a request opens).
const AUTO_MERGE_PATIENCE: Duration = Duration::from_secs(5);

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

    /// The comments of request `number` (all pages): GitHub's and Gitea's
    /// `GET …/issues/{number}/comments`, GitLab's `GET …/merge_requests/:iid/notes`.
    pub async fn list_comments(&self, repo: &RepoRef, number: u64) -> Result<Vec<Comment>, ProviderError> {
        self.check(repo)?;
        by_forge!(self.list_comments(repo, number))
    }

    /// Posts a comment on request `number` (`POST` to the same path).
    pub async fn create_comment(&self, repo: &RepoRef, number: u64, body: &str) -> Result<Comment, ProviderError> {
        self.check(repo)?;
        by_forge!(self.create_comment(repo, number, body))
    }

    /// Replaces the body of comment `id` of request `number`: GitHub's and Gitea's
    /// `PATCH …/issues/comments/{id}`, GitLab's `PUT …/merge_requests/:iid/notes/:id`.
    pub async fn update_comment(
        &self,
        repo: &RepoRef,
        number: u64,
        id: u64,
        body: &str,
    ) -> Result<Comment, ProviderError> {
        self.check(repo)?;
        by_forge!(self.update_comment(repo, number, id, body))
    }

    /// The longest comment this provider takes, in characters.
    pub fn max_comment(&self) -> usize {
        match self.kind {
            Kind::GitHub => forge::max_comment::<github::GitHub>(),
            Kind::GitLab => forge::max_comment::<gitlab::GitLab>(),
            Kind::Gitea => forge::max_comment::<gitea::Gitea>(),
        }
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
                let patience = std::time::Instant::now() + AUTO_MERGE_PATIENCE;
                let mut tries = crate::retry::Backoff::every(Duration::from_secs(1), patience);
                loop {
                    let merged =
                        forge::merge_pull_request::<gitlab::GitLab>(self, repo, number, head_sha, method, true).await;
                    match merged {
                        Err(ProviderError::Api { status: 405, .. }) if tries.wait().await => {}
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

/// The `<type> <base64>` of an OpenSSH public key, without the comment.
fn key_material(key: &str) -> Option<(&str, &str)> {
    let mut fields = key.split_whitespace();
    let kind = fields.next()?;
    let blob = fields.next()?;
    Some((kind, blob))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use reqwest::header::{HeaderMap, HeaderValue};

    use super::*;

    fn config(kind: Kind, hostname: Option<&str>) -> ProviderConfig {
        ProviderConfig {
            kind,
            host: hostname.map(|host| crate::http::Origin::parse(host).unwrap()),
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
