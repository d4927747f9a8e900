//! A local stand-in for the GitHub and GitLab REST APIs, for tests that must not reach the
//! real services.
//!
//! [`StandIn::start`] runs an HTTP/1.1 server on 127.0.0.1 (hyper, on a tokio runtime of its own
//! thread) over an in-memory model of users, organizations or groups,
//! repositories, branches and their protection, deploy keys and pull (merge) requests, and
//! answers the documented request shapes with the documented response shapes and status codes:
//!
//! - GitHub (REST API 2022-11-28), served at the root like `https://api.github.com`:
//!   `GET /user`, `GET /repos/{o}/{r}`, `POST /user/repos`, `POST /orgs/{org}/repos`,
//!   `GET /repos/{o}/{r}/branches/{branch}`, `GET|POST /repos/{o}/{r}/keys`,
//!   `DELETE /repos/{o}/{r}/keys/{id}`, `POST /repos/{o}/{r}/git/refs`,
//!   `GET|POST /repos/{o}/{r}/pulls`, `GET|PATCH /repos/{o}/{r}/pulls/{n}`,
//!   `POST /repos/{o}/{r}/pulls/{n}/reviews`, `PUT /repos/{o}/{r}/pulls/{n}/merge`,
//!   `GET|POST /repos/{o}/{r}/issues/{n}/comments`, `PATCH /repos/{o}/{r}/issues/comments/{id}`.
//! - GitLab (REST API v4), served under `/api/v4`: `GET /user`, `GET /namespaces/:id`,
//!   `GET /projects/:id`, `POST /projects`, `GET|POST /projects/:id/repository/branches[/:b]`,
//!   `GET /projects/:id/protected_branches/:name`, `GET|POST /projects/:id/deploy_keys`,
//!   `DELETE /projects/:id/deploy_keys/:key_id`, `GET|POST /projects/:id/merge_requests`,
//!   `GET|PUT /projects/:id/merge_requests/:iid`, `POST …/:iid/approve`, `PUT …/:iid/merge`,
//!   `GET|POST …/:iid/notes`, `PUT …/:iid/notes/:note_id`.
//!   `:id` is the URL-encoded path (`a%2Fb%2Fc`) or the numeric id.
//!
//! Merges are real when the repository is in the git server's storage: `git merge-tree`
//! and `git commit-tree` make the merge (or squash) commit and the base branch moves to it; a
//! conflict answers 405, as both providers do. A merge guarded by a `sha` other than the head
//! answers 409. Rebase merges are not allowed on the stand-in's repositories (GitHub's 405 for a
//! repository that disallows them). GitHub refuses an author's approval of their own request.
//!
//! Every request is recorded ([`StandIn::requests`]): method, raw path, decoded query, headers
//! with the token replaced by `***`, JSON body, and which user the token belonged to. Failures
//! can be arranged: an unknown token gets 401, a user without the right to create repositories
//! gets 403 ([`StandIn::set_token_can_create_repos`]), a token without push rights is reported
//! as such in the repository's `permissions` and gets 403 on every repository write
//! ([`StandIn::set_token_can_push`]), and [`StandIn::fail_next`] makes the next matching request
//! fail with any status and body.
//!
//! Behind a real git server ([`StandIn::set_git_storage`]), the branches of every repository
//! that exists in the server's storage are read from it before each request, so a branch pushed
//! over git is known to the API (GitHub opens a pull request only from an existing branch), and
//! one deleted over git is gone.
//!
//! It starts with one user, [`USER`] (token [`TOKEN`]), one organization or group, [`ORG`], and
//! on GitLab one subgroup, [`SUBGROUP`]; seed the rest with [`StandIn::add_repo`] and friends.

mod git;
mod github;
mod gitlab;
mod model;
mod routing;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use gitops_shared::provider::{ProviderConfig, Token};
use serde_json::Value;

use crate::http::{self, Reply};

use self::model::{split_path, stored_key};
use self::routing::handle;

/// The token of the seeded user [`USER`].
pub const TOKEN: &str = "standin-token-alice";
/// The seeded user, who owns [`TOKEN`].
pub const USER: &str = "alice";
/// The seeded GitHub organization, or GitLab top-level group.
pub const ORG: &str = "acme";
/// The seeded GitLab subgroup of [`ORG`] (GitHub has no subgroups).
pub const SUBGROUP: &str = "acme/platform";
/// The commit every seeded branch points at unless told otherwise.
pub const INITIAL_SHA: &str = "1111111111111111111111111111111111111111";

/// Which provider the stand-in imitates: GitHub (paths at the root) or GitLab (under `/api/v4`).
pub use gitops_shared::provider::Kind;

/// One request as the stand-in received it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path exactly as sent, still percent-encoded (`/api/v4/projects/acme%2Ffleet`).
    pub path: String,
    /// The query parameters, decoded, in order.
    pub query: Vec<(String, String)>,
    /// The headers, names lower-cased; `authorization` and `private-token` values have the
    /// token replaced by `***` (`Bearer ***`).
    pub headers: BTreeMap<String, String>,
    /// The body parsed as JSON; a non-JSON body is kept as a JSON string; `None` when empty.
    pub body: Option<Value>,
    /// The user the token belonged to, `None` for a missing or unknown token.
    pub user: Option<String>,
}

impl Recorded {
    /// A header's value by (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str)
    }

    /// A query parameter's first value.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }

    /// `METHOD /path`, for compact assertions.
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// Whether the request changes something (not GET or HEAD).
    pub fn is_write(&self) -> bool {
        !matches!(self.method.as_str(), "GET" | "HEAD")
    }
}

/// A deploy key as the stand-in holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySnapshot {
    /// The id the API reports.
    pub id: u64,
    /// The title.
    pub title: String,
    /// The key as stored (GitHub drops the comment).
    pub key: String,
    /// Whether it is read-only.
    pub read_only: bool,
}

/// A pull (merge) request as the stand-in holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullSnapshot {
    /// GitHub `number`, GitLab `iid`.
    pub number: u64,
    /// The title.
    pub title: String,
    /// GitHub `body`, GitLab `description`.
    pub body: String,
    /// The source branch.
    pub head: String,
    /// The target branch.
    pub base: String,
    /// Whether it is open.
    pub open: bool,
    /// Whether it was merged (then it is not open).
    pub merged: bool,
    /// Who approved it, in order.
    pub approved_by: Vec<String>,
    /// The commit that merged it, once merged.
    pub merge_commit: Option<String>,
    /// Whether it was merged as one squashed commit.
    pub squashed: bool,
    /// The method auto-merge was enabled with, while it waits for checks.
    pub auto_merge: Option<String>,
}

/// A running stand-in. Dropping it stops the server.
pub struct StandIn {
    /// The API base URL to configure clients with: `http://127.0.0.1:PORT` for GitHub,
    /// `http://127.0.0.1:PORT/api/v4` for GitLab.
    pub base_url: String,
    kind: Kind,
    state: Arc<Mutex<State>>,
    /// Ends the server when sent, or dropped.
    _server: http::Server,
}

#[derive(Debug)]
struct UserRecord {
    id: u64,
    login: String,
    can_create_repos: bool,
    can_push: bool,
}

#[derive(Debug)]
struct Repo {
    id: u64,
    owner: String,
    name: String,
    private: bool,
    default_branch: Option<String>,
    branches: BTreeMap<String, String>,
    protection_rules: BTreeSet<String>,
    keys: Vec<KeySnapshot>,
    pulls: Vec<PullRecord>,
    /// Comments on its pull (merge) requests.
    comments: Vec<CommentRecord>,
    next_number: u64,
    /// Marked as a template (GitHub `is_template`).
    template: bool,
    /// The repository it was forked from (`owner/name`).
    fork_of: Option<String>,
}

/// A comment on a pull (merge) request.
#[derive(Debug, Clone)]
struct CommentRecord {
    id: u64,
    /// The request's number.
    number: u64,
    author: String,
    body: String,
    created_at: String,
    updated_at: String,
}

#[derive(Debug)]
struct PullRecord {
    id: u64,
    /// The login of whoever opened it.
    author: String,
    snapshot: PullSnapshot,
}

#[derive(Debug)]
struct Injected {
    method: String,
    path: String,
    status: u16,
    body: Value,
}

#[derive(Debug)]
struct State {
    kind: Kind,
    origin: String,
    users: BTreeMap<String, UserRecord>,
    groups: BTreeMap<String, u64>,
    repos: Vec<Repo>,
    next_id: u64,
    requests: Vec<Recorded>,
    injected: Vec<Injected>,
    delay: Duration,
    rate_limited: bool,
    /// Whether every request has checks still running (so auto-merge waits for them).
    checks_pending: bool,
    /// Commit statuses (GitHub) and pipelines (GitLab) by commit: their state.
    commit_checks: BTreeMap<String, String>,
    /// GitHub check runs by commit: their status and conclusion.
    check_runs: BTreeMap<String, Vec<(String, Option<String>)>>,
    ssh_base: String,
    https_base: String,
    git_storage: Option<PathBuf>,
}

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    content_type: &'static str,
}

fn respond(status: u16, body: &Value) -> Response {
    Response {
        status,
        headers: Vec::new(),
        body: body.to_string().into_bytes(),
        content_type: "application/json; charset=utf-8",
    }
}

fn no_content() -> Response {
    Response { status: 204, headers: Vec::new(), body: Vec::new(), content_type: "application/json; charset=utf-8" }
}

/// Why the stand-in has no Gitea: the Gitea tests run against the real Gitea (testenv::gitea).
const GITEA_IS_REAL: &str = "the stand-in imitates GitHub and GitLab; Gitea is tested against the real Gitea";

impl StandIn {
    /// Starts a stand-in for `kind` on a free port of 127.0.0.1.
    pub fn start(kind: Kind) -> StandIn {
        let (ssh_base, https_base) = match kind {
            Kind::GitHub => ("git@github.com:", "https://github.com/"),
            Kind::GitLab => ("git@gitlab.com:", "https://gitlab.com/"),
            Kind::Gitea => panic!("{GITEA_IS_REAL}"),
        };
        let mut state = State {
            kind,
            origin: String::new(),
            users: BTreeMap::new(),
            groups: BTreeMap::new(),
            repos: Vec::new(),
            next_id: 100,
            requests: Vec::new(),
            injected: Vec::new(),
            delay: Duration::ZERO,
            rate_limited: false,
            checks_pending: false,
            commit_checks: BTreeMap::new(),
            check_runs: BTreeMap::new(),
            ssh_base: ssh_base.to_string(),
            https_base: https_base.to_string(),
            git_storage: None,
        };
        state.add_user(TOKEN, USER, true);
        state.add_group(ORG);
        if kind == Kind::GitLab {
            state.add_group(SUBGROUP);
        }
        let state = Arc::new(Mutex::new(state));
        let served = Arc::clone(&state);
        let server = http::serve(move |incoming| {
            let mut state = served.lock().unwrap_or_else(PoisonError::into_inner);
            state.refresh_branches();
            let response = handle(&mut state, &incoming);
            Reply {
                status: response.status,
                headers: response.headers,
                body: response.body,
                content_type: response.content_type,
                delay: state.delay,
            }
        });
        // No request can arrive before `start` returns the URL, so the origin is known in time.
        state.lock().unwrap_or_else(PoisonError::into_inner).origin = server.origin.clone();
        let base_url = match kind {
            Kind::GitHub => server.origin.clone(),
            Kind::GitLab => format!("{}/api/v4", server.origin),
            Kind::Gitea => unreachable!("{GITEA_IS_REAL}"),
        };
        StandIn { base_url, kind, state, _server: server }
    }

    /// Which provider this stand-in imitates.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// A client configuration for this stand-in's API with `token` ([`TOKEN`] for [`USER`]).
    pub fn provider_config(&self, token: &str) -> ProviderConfig {
        ProviderConfig { kind: self.kind, host: None, api_base: Some(self.base_url.clone()), token: Token::new(token) }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state().requests.clone()
    }

    /// The requests that change something (everything but GET and HEAD).
    pub fn writes(&self) -> Vec<Recorded> {
        self.requests().into_iter().filter(Recorded::is_write).collect()
    }

    /// Forgets the recorded requests (seeding is not recorded anyway).
    pub fn clear_requests(&self) {
        self.state().requests.clear();
    }

    /// Adds a token for a user (created if new) who may or may not create repositories.
    pub fn add_token(&self, token: &str, login: &str, can_create_repos: bool) {
        self.state().add_user(token, login, can_create_repos);
    }

    /// Whether [`TOKEN`] may create repositories (`false`: creating answers 403).
    pub fn set_token_can_create_repos(&self, allowed: bool) {
        if let Some(user) = self.state().users.get_mut(TOKEN) {
            user.can_create_repos = allowed;
        }
    }

    /// Whether [`TOKEN`] may push to the repositories (default `true`). `false` makes the
    /// repository JSON say so (GitHub `permissions.push: false`, GitLab Reporter access) and
    /// every repository write (deploy keys, branches, pull requests) answer 403.
    pub fn set_token_can_push(&self, allowed: bool) {
        if let Some(user) = self.state().users.get_mut(TOKEN) {
            user.can_push = allowed;
        }
    }

    /// Puts the stand-in in front of a real git server whose bare repositories live at
    /// `<dir>/<owner>/<name>.git`: before each request, the branches of every stand-in
    /// repository that exists there are read from it (`git for-each-ref refs/heads`), replacing
    /// the seeded ones. Repositories not on disk keep their seeded branches.
    pub fn set_git_storage(&self, dir: &Path) {
        let mut state = self.state();
        state.git_storage = Some(dir.to_path_buf());
        state.refresh_branches();
    }

    /// Adds a GitHub organization or GitLab group (a path like `a/b` for a subgroup).
    pub fn add_org(&self, path: &str) {
        self.state().add_group(path);
    }

    /// Sets what clone and web URLs start with (defaults: `git@github.com:` and
    /// `https://github.com/`, or the gitlab.com ones), e.g. to point at a local git server.
    pub fn set_clone_bases(&self, ssh_base: &str, https_base: &str) {
        let mut state = self.state();
        state.ssh_base = ssh_base.to_string();
        state.https_base = https_base.to_string();
    }

    /// Adds a private repository `owner/name` (owner may be `group/subgroup` on GitLab) with a
    /// `main` branch at [`INITIAL_SHA`] as its default branch.
    pub fn add_repo(&self, path: &str) {
        let mut state = self.state();
        let (owner, name) = split_path(path);
        state.insert_repo(owner, name, true, Some("main"));
    }

    /// Adds an empty private repository: no branches; GitHub still reports `main` as the
    /// default branch, GitLab reports none.
    pub fn add_empty_repo(&self, path: &str) {
        let mut state = self.state();
        let (owner, name) = split_path(path);
        let default = (state.kind == Kind::GitHub).then_some("main");
        let repo = state.insert_repo(owner, name, true, None);
        repo.default_branch = default.map(str::to_string);
    }

    /// Makes a repository public or private.
    pub fn set_private(&self, path: &str, private: bool) {
        self.with_repo(path, |repo| repo.private = private);
    }

    /// Adds or moves a branch.
    pub fn add_branch(&self, path: &str, branch: &str, sha: &str) {
        self.with_repo(path, |repo| {
            repo.branches.insert(branch.to_string(), sha.to_string());
        });
    }

    /// Adds a protection rule: a branch name, or a pattern with `*`.
    pub fn protect_branch(&self, path: &str, pattern: &str) {
        self.with_repo(path, |repo| {
            repo.protection_rules.insert(pattern.to_string());
        });
    }

    /// Adds a deploy key directly; returns its id.
    pub fn add_deploy_key(&self, path: &str, title: &str, key: &str, read_only: bool) -> u64 {
        let mut state = self.state();
        let id = state.next_id();
        let kind = state.kind;
        let repo = state.repo_mut(path).unwrap_or_else(|| panic!("no repository {path} in the stand-in"));
        repo.keys.push(KeySnapshot { id, title: title.to_string(), key: stored_key(kind, key), read_only });
        id
    }

    /// Closes request `number` without merging it, as a reviewer who turns it down would.
    pub fn close_pull_request(&self, path: &str, number: u64) {
        let mut state = self.state();
        let repo = state.repo_mut(path).unwrap_or_else(|| panic!("no repository {path} in the stand-in"));
        let pull = repo.pull_mut(&number.to_string()).unwrap_or_else(|| panic!("no request {number} in {path}"));
        pull.snapshot.open = false;
    }

    /// Rewrites request `number`'s body (GitLab: description), as anyone with access may.
    pub fn edit_pull_request_body(&self, path: &str, number: u64, edit: impl FnOnce(&str) -> String) {
        let mut state = self.state();
        let repo = state.repo_mut(path).unwrap_or_else(|| panic!("no repository {path} in the stand-in"));
        let pull = repo.pull_mut(&number.to_string()).unwrap_or_else(|| panic!("no request {number} in {path}"));
        pull.snapshot.body = edit(&pull.snapshot.body);
    }

    /// Opens a pull (merge) request directly, as [`USER`]; returns its number.
    pub fn add_pull_request(&self, path: &str, head: &str, base: &str, title: &str) -> u64 {
        self.add_pull_request_with_body(path, head, base, title, "")
    }

    /// [`StandIn::add_pull_request`] with a body (GitLab: description).
    pub fn add_pull_request_with_body(&self, path: &str, head: &str, base: &str, title: &str, body: &str) -> u64 {
        let mut state = self.state();
        let id = state.next_id();
        let repo = state.repo_mut(path).unwrap_or_else(|| panic!("no repository {path} in the stand-in"));
        repo.open_pull(id, USER, head, base, title, body)
    }

    /// The id of a GitHub organization or GitLab group (what GitLab's `namespace_id` takes).
    pub fn group_id(&self, path: &str) -> Option<u64> {
        self.state().groups.get(path).copied()
    }

    /// Whether the repository exists.
    pub fn has_repo(&self, path: &str) -> bool {
        self.state().repo(path).is_some()
    }

    /// Whether the repository is private (`None` when it does not exist).
    pub fn is_private(&self, path: &str) -> Option<bool> {
        self.state().repo(path).map(|repo| repo.private)
    }

    /// The repository's branches and their commits.
    pub fn branches(&self, path: &str) -> BTreeMap<String, String> {
        self.state().repo(path).map(|repo| repo.branches.clone()).unwrap_or_default()
    }

    /// The repository's deploy keys.
    pub fn deploy_keys(&self, path: &str) -> Vec<KeySnapshot> {
        self.state().repo(path).map(|repo| repo.keys.clone()).unwrap_or_default()
    }

    /// The comments on request `number` of the repository at `path`: (id, author, body).
    pub fn comments(&self, path: &str, number: u64) -> Vec<(u64, String, String)> {
        let state = self.state();
        let comments = state.repo(path).map(|repo| repo.comments.clone()).unwrap_or_default();
        comments
            .into_iter()
            .filter(|comment| comment.number == number)
            .map(|comment| (comment.id, comment.author, comment.body))
            .collect()
    }

    /// The repository's pull (merge) requests, open or not.
    pub fn pull_requests(&self, path: &str) -> Vec<PullSnapshot> {
        self.state()
            .repo(path)
            .map(|repo| repo.pulls.iter().map(|pull| pull.snapshot.clone()).collect())
            .unwrap_or_default()
    }

    /// Makes the next request with this method and exact raw path (no query) fail with
    /// `status` and `body`, after it is recorded and before anything else is checked.
    pub fn fail_next(&self, method: &str, path: &str, status: u16, body: Value) {
        self.state().injected.push(Injected { method: method.to_string(), path: path.to_string(), status, body });
    }

    /// Waits this long before answering each request (to test timeouts).
    pub fn set_delay(&self, delay: Duration) {
        self.state().delay = delay;
    }

    /// Answers every request as rate limited: GitHub 403 with `x-ratelimit-remaining: 0`,
    /// GitLab 429 with `Retry-After`.
    pub fn set_rate_limited(&self, limited: bool) {
        self.state().rate_limited = limited;
    }

    /// Marks a repository as a template (GitHub: "Template repository"), or not.
    pub fn set_template(&self, path: &str, template: bool) {
        self.with_repo(path, |repo| repo.template = template);
    }

    /// The repository `path` was forked from, `None` when it is not a fork (or does not exist).
    pub fn fork_of(&self, path: &str) -> Option<String> {
        self.state().repo(path).and_then(|repo| repo.fork_of.clone())
    }

    /// Every request has checks still running (`true`), or none (`false`, the default): auto-merge
    /// then waits, or (GitHub) is refused for a request in clean status.
    pub fn set_checks_pending(&self, pending: bool) {
        self.state().checks_pending = pending;
    }

    /// The checks of commit `sha` are in `state` (GitHub: its combined status, `success`,
    /// `pending`, `failure`; GitLab: its pipeline's status, `success`, `running`, `failed`).
    pub fn set_commit_checks(&self, sha: &str, state: &str) {
        self.state().commit_checks.insert(sha.to_string(), state.to_string());
    }

    /// A GitHub check run on commit `sha` (GitHub Actions reports these): `status` `queued`,
    /// `in_progress` or `completed`, with its `conclusion` once completed.
    pub fn add_check_run(&self, sha: &str, status: &str, conclusion: Option<&str>) {
        let run = (status.to_string(), conclusion.map(str::to_string));
        self.state().check_runs.entry(sha.to_string()).or_default().push(run);
    }

    fn with_repo(&self, path: &str, change: impl FnOnce(&mut Repo)) {
        let mut state = self.state();
        let repo = state.repo_mut(path).unwrap_or_else(|| panic!("no repository {path} in the stand-in"));
        change(repo);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use std::process::Command;

    use gitops_shared::provider::{Provider, ProviderError, RepoRef};

    use super::model::glob_matches;
    use super::routing::segments;
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let output = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    fn client(standin: &StandIn) -> Provider {
        Provider::new(standin.provider_config(TOKEN)).unwrap()
    }

    fn run<T>(future: impl std::future::Future<Output = T>) -> T {
        crate::block_on(future)
    }

    #[test]
    fn branches_follow_the_git_storage_and_permissions_follow_the_token() {
        let temp = tempfile::tempdir().unwrap();
        let work = temp.path().join("work");
        let storage = temp.path().join("storage");
        std::fs::create_dir_all(storage.join("acme")).unwrap();
        git(temp.path(), &["init", "-q", "-b", "main", work.to_str().unwrap()]);
        git(&work, &["commit", "-q", "--allow-empty", "-m", "one"]);
        git(&work, &["branch", "gitops/x"]);
        let sha = git(&work, &["rev-parse", "HEAD"]);
        let bare = storage.join("acme/fleet.git");
        git(temp.path(), &["clone", "-q", "--bare", work.to_str().unwrap(), bare.to_str().unwrap()]);

        for kind in [Kind::GitHub, Kind::GitLab] {
            let standin = StandIn::start(kind);
            standin.add_repo("acme/fleet");
            standin.add_repo("acme/elsewhere");
            standin.set_git_storage(&storage);
            let expected = BTreeMap::from([("gitops/x".to_string(), sha.clone()), ("main".to_string(), sha.clone())]);
            assert_eq!(standin.branches("acme/fleet"), expected);
            assert_eq!(standin.branches("acme/elsewhere"), BTreeMap::from([("main".into(), INITIAL_SHA.into())]));

            // A branch deleted over git is gone for the next request; the API opens a pull
            // request only from a branch that exists.
            git(&bare, &["branch", "-q", "-D", "gitops/x"]);
            let provider = client(&standin);
            let repo = RepoRef::new("acme", "fleet");
            let info = run(provider.get_repository(&repo)).unwrap().unwrap();
            assert_eq!(info.can_push, Some(true));
            assert_eq!(standin.branches("acme/fleet").keys().collect::<Vec<_>>(), ["main"]);
            let missing_head = run(provider.create_pull_request(&repo, "gitops/x", "main", "t", "b"));
            assert!(matches!(missing_head, Err(ProviderError::Api { status: 422, .. })), "{missing_head:?}");
            git(&bare, &["branch", "-q", "gitops/x", "main"]);
            run(provider.create_pull_request(&repo, "gitops/x", "main", "t", "b")).unwrap();

            standin.set_token_can_push(false);
            let info = run(provider.get_repository(&repo)).unwrap().unwrap();
            assert_eq!(info.can_push, Some(false), "{kind}");
            let refused = run(provider.create_pull_request(&repo, "gitops/x", "main", "t2", "b"));
            assert!(matches!(refused, Err(ProviderError::Forbidden { .. })), "{kind}: {refused:?}");
            assert_eq!(standin.pull_requests("acme/fleet").len(), 1);
        }
    }

    #[test]
    fn globs_match_like_protection_rules() {
        assert!(glob_matches("main", "main"));
        assert!(!glob_matches("main", "main2"));
        assert!(glob_matches("release/*", "release/v1"));
        assert!(glob_matches("*", "anything"));
        assert!(!glob_matches("release/*", "main"));
    }

    #[test]
    fn segments_split_before_decoding() {
        assert_eq!(
            segments("/projects/acme%2Ffleet/repository/branches/feature%2Fx"),
            vec!["projects", "acme/fleet", "repository", "branches", "feature/x"]
        );
        assert_eq!(segments("/projects/a+b/x%zz"), vec!["projects", "a+b", "x%zz"], "+ is a plus in a path");
    }
}
