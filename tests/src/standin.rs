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

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gitops_shared::provider::{ProviderConfig, Token};
use serde_json::{Value, json};

use crate::http::{self, Incoming, Reply};

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

/// The branches of a bare repository and their commits; `None` when git cannot read it.
/// Why a merge was refused.
enum Refusal {
    Missing,
    NotMergeable,
    HeadMoved,
}

/// Merges open request `number` of the repository at `path` if its head is `sha` (when given):
/// in the git server's storage when the repository is there (a merge commit, or with `squash`
/// one commit on the base), else in the model alone. Returns the new base commit.
fn merge_pull(
    state: &mut State,
    path: &str,
    number: &str,
    sha: Option<&str>,
    squash: bool,
    login: &str,
) -> Result<String, Refusal> {
    let storage = state.git_storage.clone();
    let repo = state.repo_mut(path).ok_or(Refusal::Missing)?;
    let pull = repo.pull(number).ok_or(Refusal::Missing)?.snapshot.clone();
    let (Some(head), Some(base)) = (repo.branches.get(&pull.head).cloned(), repo.branches.get(&pull.base).cloned())
    else {
        return Err(Refusal::NotMergeable);
    };
    if !pull.open {
        return Err(Refusal::NotMergeable);
    }
    if sha.is_some_and(|sha| sha != head) {
        return Err(Refusal::HeadMoved);
    }
    let message = format!("Merge pull request #{} from {}\n\n{}", pull.number, pull.head, pull.title);
    let merged = match storage.map(|dir| dir.join(&repo.owner).join(format!("{}.git", repo.name))) {
        Some(dir) if dir.is_dir() => git_merge(&dir, (&pull.base, &base), &head, squash, &message, login)?,
        _ => head.clone(),
    };
    repo.branches.insert(pull.base.clone(), merged.clone());
    let record = repo.pull_mut(number).ok_or(Refusal::Missing)?;
    record.snapshot.open = false;
    record.snapshot.merged = true;
    record.snapshot.merge_commit = Some(merged.clone());
    record.snapshot.squashed = squash;
    Ok(merged)
}

/// Makes the merge commit of `head` into the base branch (name, commit) in a bare repository
/// and moves the branch to it, only if it is still at that commit.
fn git_merge(
    dir: &Path,
    (branch, base): (&str, &str),
    head: &str,
    squash: bool,
    message: &str,
    login: &str,
) -> Result<String, Refusal> {
    let git = |args: &[&str]| -> Option<String> {
        let output = Command::new("git")
            .arg("--git-dir")
            .arg(dir)
            .args(args)
            .env_remove("GIT_DIR")
            .env("GIT_AUTHOR_NAME", login)
            .env("GIT_AUTHOR_EMAIL", format!("{login}@users.noreply.example"))
            .env("GIT_COMMITTER_NAME", "stand-in")
            .env("GIT_COMMITTER_EMAIL", "stand-in@users.noreply.example")
            .output()
            .ok()?;
        output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
    };
    // Exit 1 with conflicts: not mergeable.
    let tree = git(&["merge-tree", "--write-tree", base, head]).ok_or(Refusal::NotMergeable)?;
    let tree = tree.lines().next().unwrap_or_default().to_string();
    let mut commit = vec!["commit-tree", tree.as_str(), "-p", base];
    if !squash {
        commit.extend(["-p", head]);
    }
    commit.extend(["-m", message]);
    let merged = git(&commit).ok_or(Refusal::NotMergeable)?;
    git(&["update-ref", &format!("refs/heads/{branch}"), &merged, base]).ok_or(Refusal::HeadMoved)?;
    Ok(merged)
}

fn read_branches(dir: &Path) -> Option<BTreeMap<String, String>> {
    let output = Command::new("git")
        .arg("--git-dir")
        .arg(dir)
        .args(["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"])
        .env_remove("GIT_DIR")
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    Some(
        text.lines()
            .filter_map(|line| line.split_once(' '))
            .filter_map(|(name, sha)| Some((name.strip_prefix("refs/heads/")?.to_string(), sha.trim().to_string())))
            .collect(),
    )
}

fn split_path(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or_else(|| panic!("repository {path:?} is not owner/name"))
}

/// GitHub stores a deploy key without its comment; GitLab as given.
fn stored_key(kind: Kind, key: &str) -> String {
    match kind {
        Kind::GitHub => key.split_whitespace().take(2).collect::<Vec<_>>().join(" "),
        Kind::GitLab => key.trim().to_string(),
        Kind::Gitea => unreachable!("{GITEA_IS_REAL}"),
    }
}

fn key_material(key: &str) -> Option<(String, String)> {
    let mut fields = key.split_whitespace();
    let kind = fields.next()?;
    let blob = fields.next()?;
    (kind.starts_with("ssh-") || kind.starts_with("ecdsa-") || kind.starts_with("sk-"))
        .then(|| (kind.to_string(), blob.to_string()))
}

/// `*` matches any run of characters, as branch protection patterns do.
fn glob_matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((prefix, rest)) => {
            let Some(remaining) = name.strip_prefix(prefix) else {
                return false;
            };
            (0..=remaining.len())
                .filter(|cut| remaining.is_char_boundary(*cut))
                .any(|cut| glob_matches(rest, &remaining[cut..]))
        }
    }
}

fn now_rfc3339() -> String {
    "2025-01-01T00:00:00Z".to_string()
}

impl Repo {
    fn comments_on<'a>(&'a self, number: &'a str) -> impl Iterator<Item = &'a CommentRecord> {
        self.comments.iter().filter(move |comment| comment.number.to_string() == number)
    }

    fn add_comment(&mut self, id: u64, number: &str, author: &str, body: &str) -> CommentRecord {
        let now = now_rfc3339();
        let comment = CommentRecord {
            id,
            number: number.parse().unwrap_or_default(),
            author: author.to_string(),
            body: body.to_string(),
            created_at: now.clone(),
            updated_at: now,
        };
        self.comments.push(comment.clone());
        comment
    }

    /// Replaces the body of comment `id` of request `number`: 404 when there is none, 403 when
    /// `editor` did not write it (both forges let only the author, or an admin, edit).
    fn edit_comment(&mut self, number: &str, id: &str, editor: &str, body: &str) -> Result<CommentRecord, u16> {
        let comment = self
            .comments
            .iter_mut()
            .find(|comment| comment.id.to_string() == id && comment.number.to_string() == number)
            .ok_or(404u16)?;
        if comment.author != editor {
            return Err(403);
        }
        comment.body = body.to_string();
        comment.updated_at = now_rfc3339();
        Ok(comment.clone())
    }

    fn path(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    fn is_protected(&self, branch: &str) -> bool {
        self.protection_rules.iter().any(|rule| glob_matches(rule, branch))
    }

    fn open_pull(&mut self, id: u64, author: &str, head: &str, base: &str, title: &str, body: &str) -> u64 {
        let number = self.next_number;
        self.next_number += 1;
        self.pulls.push(PullRecord {
            id,
            author: author.to_string(),
            snapshot: PullSnapshot {
                number,
                title: title.to_string(),
                body: body.to_string(),
                head: head.to_string(),
                base: base.to_string(),
                open: true,
                merged: false,
                approved_by: Vec::new(),
                merge_commit: None,
                squashed: false,
                auto_merge: None,
            },
        });
        number
    }

    /// Request `number` (as the path gives it).
    fn pull(&self, number: &str) -> Option<&PullRecord> {
        self.pulls.iter().find(|pull| pull.snapshot.number.to_string() == number)
    }

    fn pull_mut(&mut self, number: &str) -> Option<&mut PullRecord> {
        self.pulls.iter_mut().find(|pull| pull.snapshot.number.to_string() == number)
    }

    /// The requests that are open (`Some(true)`), closed (`Some(false)`), or all (`None`).
    fn pulls_in_state(&self, open: Option<bool>) -> impl Iterator<Item = &PullRecord> {
        self.pulls.iter().filter(move |pull| open.is_none_or(|open| pull.snapshot.open == open))
    }

    /// The open request from `head` into `base`, if any.
    fn open_pull_between(&self, head: &str, base: &str) -> Option<&PullRecord> {
        self.pulls.iter().find(|pull| pull.snapshot.open && pull.snapshot.head == head && pull.snapshot.base == base)
    }

    /// Sets what `edit` gives on request `number` (a GET edits nothing); `None` when there is no
    /// such request.
    fn edit_pull(&mut self, number: &str, edit: PullEdit<'_>) -> Option<u64> {
        let pull = self.pulls.iter_mut().find(|pull| pull.snapshot.number.to_string() == number)?;
        if let Some(title) = edit.title {
            pull.snapshot.title = title.to_string();
        }
        if let Some(body) = edit.body {
            pull.snapshot.body = body.to_string();
        }
        if let Some(open) = edit.open {
            pull.snapshot.open = open;
        }
        Some(pull.snapshot.number)
    }
}

/// The fields a PATCH (GitHub) or PUT (GitLab) of a pull or merge request sets.
#[derive(Default)]
struct PullEdit<'a> {
    title: Option<&'a str>,
    body: Option<&'a str>,
    open: Option<bool>,
}

impl<'a> PullEdit<'a> {
    /// What a write's body asks for, in the provider's names: the title, the description, the
    /// state field and its value that (re)opens; a read (`writes` false) asks for nothing.
    fn asked(writes: bool, body: &'a Value, [title, text, state, opens]: [&str; 4]) -> PullEdit<'a> {
        if !writes {
            return PullEdit::default();
        }
        PullEdit {
            title: str_field(body, title),
            body: str_field(body, text),
            open: str_field(body, state).map(|value| value == opens),
        }
    }
}

impl State {
    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn add_user(&mut self, token: &str, login: &str, can_create_repos: bool) {
        let id = self.users.values().find(|user| user.login == login).map(|user| user.id);
        let id = id.unwrap_or_else(|| self.next_id());
        let user = UserRecord { id, login: login.to_string(), can_create_repos, can_push: true };
        self.users.insert(token.to_string(), user);
    }

    /// Reads the branches of every repository that exists in the git storage from it.
    fn refresh_branches(&mut self) {
        let Some(storage) = self.git_storage.clone() else {
            return;
        };
        for repo in &mut self.repos {
            let dir = storage.join(&repo.owner).join(format!("{}.git", repo.name));
            if !dir.is_dir() {
                continue;
            }
            let Some(branches) = read_branches(&dir) else {
                continue;
            };
            if repo.default_branch.is_none() && !branches.is_empty() {
                // The first push sets the default branch: the one HEAD names, else any.
                let head = std::fs::read_to_string(dir.join("HEAD")).ok();
                let head = head.as_deref().and_then(|text| text.trim().strip_prefix("ref: refs/heads/"));
                let default =
                    head.filter(|name| branches.contains_key(*name)).or(branches.keys().next().map(String::as_str));
                repo.default_branch = default.map(str::to_string);
            }
            repo.branches = branches;
        }
    }

    fn add_group(&mut self, path: &str) {
        if !self.groups.contains_key(path) {
            let id = self.next_id();
            self.groups.insert(path.to_string(), id);
        }
    }

    fn insert_repo(&mut self, owner: &str, name: &str, private: bool, main: Option<&str>) -> &mut Repo {
        let id = self.next_id();
        let mut branches = BTreeMap::new();
        if let Some(main) = main {
            branches.insert(main.to_string(), INITIAL_SHA.to_string());
        }
        self.repos.push(Repo {
            id,
            owner: owner.to_string(),
            name: name.to_string(),
            private,
            default_branch: main.map(str::to_string),
            branches,
            protection_rules: BTreeSet::new(),
            keys: Vec::new(),
            pulls: Vec::new(),
            comments: Vec::new(),
            next_number: 1,
            template: false,
            fork_of: None,
        });
        let last = self.repos.len() - 1;
        &mut self.repos[last]
    }

    fn repo(&self, path: &str) -> Option<&Repo> {
        self.repos.iter().find(|repo| repo.path().eq_ignore_ascii_case(path))
    }

    fn repo_mut(&mut self, path: &str) -> Option<&mut Repo> {
        self.repos.iter_mut().find(|repo| repo.path().eq_ignore_ascii_case(path))
    }

    /// A GitLab `:id`: the numeric id or the decoded full path.
    fn project_mut(&mut self, id: &str) -> Option<&mut Repo> {
        match id.parse::<u64>() {
            Ok(number) => self.repos.iter_mut().find(|repo| repo.id == number),
            Err(_) => self.repo_mut(id),
        }
    }

    fn ssh_url(&self, repo: &Repo) -> String {
        format!("{}{}.git", self.ssh_base, repo.path())
    }

    fn web_url(&self, repo: &Repo) -> String {
        format!("{}{}", self.https_base, repo.path())
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP

fn redact(name: &str, value: &str) -> String {
    match name {
        "authorization" => match value.split_once(' ') {
            Some((scheme, _)) => format!("{scheme} ***"),
            None => "***".to_string(),
        },
        "private-token" => "***".to_string(),
        _ => value.to_string(),
    }
}

fn handle(state: &mut State, incoming: &Incoming) -> Response {
    let token = match state.kind {
        Kind::GitHub => incoming
            .headers
            .get("authorization")
            .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("token ")))
            .map(str::to_string),
        Kind::GitLab => incoming.headers.get("private-token").cloned(),
        Kind::Gitea => unreachable!("{GITEA_IS_REAL}"),
    };
    let caller = token.as_deref().and_then(|token| state.users.get(token)).map(|user| Caller {
        login: user.login.clone(),
        id: user.id,
        can_create: user.can_create_repos,
        can_push: user.can_push,
    });
    let body = if incoming.body.is_empty() {
        None
    } else {
        Some(
            serde_json::from_slice(&incoming.body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&incoming.body).into_owned())),
        )
    };
    state.requests.push(Recorded {
        method: incoming.method.clone(),
        path: incoming.path.clone(),
        query: incoming.query.clone(),
        headers: incoming.headers.iter().map(|(name, value)| (name.clone(), redact(name, value))).collect(),
        body: body.clone(),
        user: caller.as_ref().map(|caller| caller.login.clone()),
    });

    if let Some(position) =
        state.injected.iter().position(|fail| fail.method == incoming.method && fail.path == incoming.path)
    {
        let fail = state.injected.remove(position);
        return respond(fail.status, &fail.body);
    }
    let Some(caller) = caller else {
        return match state.kind {
            Kind::GitHub => respond(
                401,
                &json!({
                    "message": if token.is_some() { "Bad credentials" } else { "Requires authentication" },
                    "documentation_url": "https://docs.github.com/rest",
                    "status": "401",
                }),
            ),
            Kind::GitLab => respond(401, &json!({ "message": "401 Unauthorized" })),
            Kind::Gitea => unreachable!("{GITEA_IS_REAL}"),
        };
    };
    if state.rate_limited {
        let reset = SystemTime::now().duration_since(UNIX_EPOCH).map(|now| now.as_secs() + 60).unwrap_or(60);
        return match state.kind {
            Kind::GitHub => {
                let mut response = respond(
                    403,
                    &json!({
                        "message": format!("API rate limit exceeded for user ID {}.", caller.id),
                        "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
                        "status": "403",
                    }),
                );
                response.headers = vec![
                    ("x-ratelimit-limit".into(), "5000".into()),
                    ("x-ratelimit-remaining".into(), "0".into()),
                    ("x-ratelimit-reset".into(), reset.to_string()),
                ];
                response
            }
            Kind::GitLab => Response {
                status: 429,
                headers: vec![("retry-after".into(), "60".into()), ("ratelimit-reset".into(), reset.to_string())],
                body: b"Retry later\n".to_vec(),
                content_type: "text/plain",
            },
            Kind::Gitea => unreachable!("{GITEA_IS_REAL}"),
        };
    }
    let body = body.unwrap_or(Value::Null);
    match state.kind {
        Kind::GitHub => github(state, incoming, &caller, &body),
        Kind::GitLab => match incoming.path.strip_prefix("/api/v4") {
            Some(rest) => gitlab(state, incoming, rest, &caller, &body),
            None => gitlab_not_found("404 Not Found"),
        },
        Kind::Gitea => unreachable!("{GITEA_IS_REAL}"),
    }
}

/// A request below one repository: who asks, the repository's path, the path after it and the body.
#[derive(Clone, Copy)]
struct Route<'a> {
    incoming: &'a Incoming,
    caller: &'a Caller,
    path: &'a str,
    rest: &'a [&'a str],
    body: &'a Value,
}

struct Caller {
    login: String,
    id: u64,
    can_create: bool,
    can_push: bool,
}

/// The decoded segments of a raw path (split on literal `/` first, so `%2F` stays inside one).
fn segments(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|segment| !segment.is_empty())
        .map(|segment| percent_encoding::percent_decode_str(segment).decode_utf8_lossy().into_owned())
        .collect()
}

fn str_field<'a>(body: &'a Value, name: &str) -> Option<&'a str> {
    body.get(name).and_then(Value::as_str)
}

fn bool_field(body: &Value, name: &str) -> Option<bool> {
    match body.get(name) {
        Some(Value::Bool(value)) => Some(*value),
        Some(Value::String(value)) => Some(value == "true"),
        _ => None,
    }
}

/// A 200 answer with the page of a list that `page` and `per_page` ask for, and the `Link`
/// header for the next and last pages.
fn paginate(incoming: &Incoming, origin: &str, items: &[Value], default_per_page: usize) -> Response {
    let param = |name: &str| incoming.query(name).and_then(|value| value.parse::<usize>().ok());
    let per_page = param("per_page").unwrap_or(default_per_page).clamp(1, 100);
    let page = param("page").unwrap_or(1).max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let start = ((page - 1) * per_page).min(items.len());
    let end = (start + per_page).min(items.len());
    let mut headers = Vec::new();
    let link = |number: usize, rel: &str| {
        format!("<{origin}{}?per_page={per_page}&page={number}>; rel=\"{rel}\"", incoming.path)
    };
    let mut links = Vec::new();
    if page < last {
        links.push(link(page + 1, "next"));
        links.push(link(last, "last"));
    }
    if page > 1 {
        links.push(link(1, "first"));
    }
    if !links.is_empty() {
        headers.push(("link".to_string(), links.join(", ")));
    }
    let mut response = respond(200, &Value::Array(items[start..end].to_vec()));
    response.headers = headers;
    response
}

// ---------------------------------------------------------------------------------------------
// GitHub

fn github_error(status: u16, message: &str, doc: &str) -> Response {
    respond(
        status,
        &json!({
            "message": message,
            "documentation_url": format!("https://docs.github.com/rest/{doc}"),
            "status": status.to_string(),
        }),
    )
}

fn github_validation(doc: &str, errors: &Value) -> Response {
    respond(
        422,
        &json!({
            "message": "Validation Failed",
            "errors": errors,
            "documentation_url": format!("https://docs.github.com/rest/{doc}"),
            "status": "422",
        }),
    )
}

/// `can_push`: what the caller's token may do, reported as GitHub does for an authenticated
/// request (`permissions`; a writer of our repositories is their admin).
fn github_repo_json(state: &State, repo: &Repo, can_push: bool) -> Value {
    let web = state.web_url(repo);
    json!({
        "id": repo.id,
        "name": repo.name,
        "full_name": repo.path(),
        "owner": { "login": repo.owner, "type": if state.groups.contains_key(&repo.owner) { "Organization" } else { "User" } },
        "private": repo.private,
        "visibility": if repo.private { "private" } else { "public" },
        "html_url": web,
        "url": format!("{}/repos/{}", state.origin, repo.path()),
        "clone_url": format!("{web}.git"),
        "ssh_url": state.ssh_url(repo),
        "default_branch": repo.default_branch,
        "size": 0,
        "is_template": repo.template,
        "fork": repo.fork_of.is_some(),
        "permissions": { "admin": can_push, "maintain": can_push, "push": can_push, "triage": can_push, "pull": true },
    })
}

fn github_key_json(state: &State, repo: &Repo, key: &KeySnapshot, login: &str) -> Value {
    json!({
        "id": key.id,
        "key": key.key,
        "url": format!("{}/repos/{}/keys/{}", state.origin, repo.path(), key.id),
        "title": key.title,
        "verified": true,
        "created_at": now_rfc3339(),
        "read_only": key.read_only,
        "added_by": login,
        "last_used": null,
        "enabled": true,
    })
}

/// A pull request's GraphQL node id (opaque on GitHub; made from its id here).
fn github_node_id(pull: &PullRecord) -> String {
    format!("PR_kwDO{}", pull.id)
}

/// GitHub's GraphQL endpoint, for the one mutation we send: `enablePullRequestAutoMerge`. As GitHub
/// does, it answers 200 with `errors` when it refuses: for a request in clean status (nothing to
/// wait for), and for a head other than `expectedHeadOid`.
fn github_graphql(state: &mut State, body: &Value) -> Response {
    let errors = |message: &str| {
        respond(
            200,
            &json!({ "data": { "enablePullRequestAutoMerge": null }, "errors": [{ "type": "UNPROCESSABLE", "message": message }] }),
        )
    };
    let query = str_field(body, "query").unwrap_or_default();
    if !query.contains("enablePullRequestAutoMerge") {
        return respond(
            200,
            &json!({ "errors": [{ "message": "the stand-in answers enablePullRequestAutoMerge only" }] }),
        );
    }
    let variables = &body["variables"];
    let (id, method, head) = (variables["id"].as_str(), variables["method"].as_str(), variables["head"].as_str());
    let pending = state.checks_pending;
    let found = state.repos.iter_mut().find_map(|repo| {
        let branches = repo.branches.clone();
        repo.pulls.iter_mut().find(|pull| Some(github_node_id(pull).as_str()) == id).map(|pull| (branches, pull))
    });
    let Some((branches, pull)) = found else {
        return errors(&format!("Could not resolve to a node with the global id of '{}'", id.unwrap_or_default()));
    };
    if branches.get(&pull.snapshot.head).map(String::as_str) != head {
        return errors("Head sha didn't match expected head sha");
    }
    if !pending {
        return errors("Pull request Pull request is in clean status");
    }
    pull.snapshot.auto_merge = method.map(str::to_lowercase);
    respond(
        200,
        &json!({ "data": { "enablePullRequestAutoMerge": { "pullRequest": { "number": pull.snapshot.number } } } }),
    )
}

fn github_pull_json(state: &State, repo: &Repo, pull: &PullRecord) -> Value {
    let snapshot = &pull.snapshot;
    let sha = |branch: &str| repo.branches.get(branch).cloned();
    json!({
        "id": pull.id,
        "node_id": github_node_id(pull),
        "number": snapshot.number,
        "state": if snapshot.open { "open" } else { "closed" },
        "title": snapshot.title,
        "body": snapshot.body,
        "draft": false,
        "html_url": format!("{}/pull/{}", state.web_url(repo), snapshot.number),
        "url": format!("{}/repos/{}/pulls/{}", state.origin, repo.path(), snapshot.number),
        "head": { "ref": snapshot.head, "label": format!("{}:{}", repo.owner, snapshot.head), "sha": sha(&snapshot.head) },
        "base": { "ref": snapshot.base, "label": format!("{}:{}", repo.owner, snapshot.base), "sha": sha(&snapshot.base) },
        "user": { "login": pull.author, "type": "User" },
        "created_at": now_rfc3339(),
        "merged_at": if snapshot.merged { Value::from(now_rfc3339()) } else { Value::Null },
        "merged": snapshot.merged,
        "merge_commit_sha": snapshot.merge_commit,
        // The Pull Request shape (a single request's) says whether it can be merged; no conflicts
        // are modelled, so an open request whose branch exists can.
        "mergeable": snapshot.open && repo.branches.contains_key(&snapshot.head),
        "mergeable_state": if snapshot.open && repo.branches.contains_key(&snapshot.head) { "clean" } else { "unknown" },
    })
}

/// A comment as GitHub's issue comment (the shape of the published "Create an issue comment").
fn github_comment_json(origin: &str, repo: &Repo, comment: &CommentRecord) -> Value {
    json!({
        "id": comment.id,
        "node_id": format!("IC_{}", comment.id),
        "url": format!("{origin}/repos/{}/issues/comments/{}", repo.path(), comment.id),
        "html_url": format!("https://github.com/{}/pull/{}#issuecomment-{}", repo.path(), comment.number, comment.id),
        "body": comment.body,
        "user": { "login": comment.author, "type": "User" },
        "created_at": comment.created_at,
        "updated_at": comment.updated_at,
        "issue_url": format!("{origin}/repos/{}/issues/{}", repo.path(), comment.number),
        "author_association": "OWNER",
    })
}

/// Pull request `number` of the repository at `path`, answered with `status`.
fn github_pull_response(state: &State, path: &str, number: u64, status: u16) -> Response {
    let Some(repo) = state.repo(path) else {
        return github_error(404, "Not Found", "");
    };
    let Some(pull) = repo.pulls.iter().find(|pull| pull.snapshot.number == number) else {
        return github_error(500, "Server Error", "");
    };
    respond(status, &github_pull_json(state, repo, pull))
}

fn github(state: &mut State, incoming: &Incoming, caller: &Caller, body: &Value) -> Response {
    let parts = segments(&incoming.path);
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let method = incoming.method.as_str();
    match (method, parts.as_slice()) {
        ("GET", ["user"]) => respond(200, &json!({ "login": caller.login, "id": caller.id, "type": "User" })),
        ("POST", ["graphql"]) => github_graphql(state, body),
        ("POST", ["user", "repos"]) => {
            let login = caller.login.clone();
            github_create_repo(state, caller, &login, body)
        }
        ("POST", ["orgs", org, "repos"]) => {
            if !state.groups.contains_key(*org) {
                return github_error(404, "Not Found", "repos/repos#create-an-organization-repository");
            }
            github_create_repo(state, caller, org, body)
        }
        (_, ["repos", owner, name, rest @ ..]) => {
            let path = format!("{owner}/{name}");
            if state.repo(&path).is_none() {
                return github_error(404, "Not Found", "repos/repos#get-a-repository");
            }
            github_repo_route(state, &Route { incoming, caller, path: &path, rest, body })
        }
        _ => github_error(404, "Not Found", ""),
    }
}

fn github_create_repo(state: &mut State, caller: &Caller, owner: &str, body: &Value) -> Response {
    if !caller.can_create {
        return github_error(
            403,
            "Resource not accessible by personal access token",
            "repos/repos#create-an-organization-repository",
        );
    }
    let Some(name) = str_field(body, "name") else {
        return github_validation(
            "repos/repos#create-a-repository-for-the-authenticated-user",
            &json!([{ "resource": "Repository", "code": "missing_field", "field": "name" }]),
        );
    };
    if state.repo(&format!("{owner}/{name}")).is_some() {
        return respond(
            422,
            &json!({
                "message": "Repository creation failed.",
                "errors": [{ "resource": "Repository", "code": "custom", "field": "name", "message": "name already exists on this account" }],
                "documentation_url": "https://docs.github.com/rest/repos/repos#create-a-repository-for-the-authenticated-user",
                "status": "422",
            }),
        );
    }
    let private = bool_field(body, "private").unwrap_or(false);
    let auto_init = bool_field(body, "auto_init").unwrap_or(false);
    let repo = state.insert_repo(owner, name, private, auto_init.then_some("main"));
    repo.default_branch = Some("main".to_string());
    let path = repo.path();
    let Some(repo) = state.repo(&path) else {
        return github_error(500, "Server Error", "");
    };
    respond(201, &github_repo_json(state, repo, true))
}

fn github_repo_route(state: &mut State, route: &Route<'_>) -> Response {
    let Route { incoming, caller, path, rest, body } = *route;
    let method = incoming.method.as_str();
    let origin = state.origin.clone();
    let next_id = state.next_id();
    let kind = state.kind;
    // Deploy keys are unique across the whole of GitHub.
    let key_in_use = |state: &State, material: &(String, String)| {
        state.repos.iter().any(|repo| repo.keys.iter().any(|key| key_material(&key.key).as_ref() == Some(material)))
    };
    if method != "GET" && !caller.can_push {
        return github_error(403, "Resource not accessible by personal access token", "repos/repos");
    }
    match (method, rest) {
        ("GET", []) => match state.repo(path) {
            Some(repo) => respond(200, &github_repo_json(state, repo, caller.can_push)),
            None => github_error(404, "Not Found", "repos/repos#get-a-repository"),
        },
        ("POST", ["generate"]) => {
            if !state.repo(path).is_some_and(|repo| repo.template) {
                return respond(
                    422,
                    &json!({ "message": format!("{path} is not a template repository"), "status": "422" }),
                );
            }
            let owner = str_field(body, "owner").unwrap_or(&caller.login).to_string();
            let Some(name) = str_field(body, "name").map(str::to_string) else {
                return github_error(
                    422,
                    "Invalid request.\n\n\"name\" wasn't supplied.",
                    "repos/repos#create-a-repository-using-a-template",
                );
            };
            if state.repo(&format!("{owner}/{name}")).is_some() {
                return respond(422, &json!({ "message": "Name already exists on this account", "status": "422" }));
            }
            let private = bool_field(body, "private").unwrap_or(false);
            let created = state.insert_repo(&owner, &name, private, Some("main")).path();
            match state.repo(&created) {
                Some(repo) => respond(201, &github_repo_json(state, repo, true)),
                None => github_error(500, "Server Error", ""),
            }
        }
        ("POST", ["forks"]) => {
            let owner = str_field(body, "organization").unwrap_or(&caller.login).to_string();
            let name = str_field(body, "name")
                .map_or_else(|| path.rsplit('/').next().unwrap_or_default().to_string(), str::to_string);
            let created = state.insert_repo(&owner, &name, false, Some("main"));
            created.fork_of = Some(path.to_string());
            let created = created.path();
            match state.repo(&created) {
                Some(repo) => respond(202, &github_repo_json(state, repo, true)),
                None => github_error(500, "Server Error", ""),
            }
        }
        ("DELETE", []) => {
            state.repos.retain(|repo| repo.path() != path);
            no_content()
        }
        ("GET", ["commits", sha, "check-runs"]) => {
            let runs: Vec<Value> = state
                .check_runs
                .get(*sha)
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(id, (status, conclusion))| {
                    json!({ "id": id + 1, "head_sha": sha, "name": "build", "status": status, "conclusion": conclusion })
                })
                .collect();
            respond(200, &json!({ "total_count": runs.len(), "check_runs": runs }))
        }
        // The combined status: `pending` with no statuses at all, as GitHub answers.
        ("GET", ["commits", sha, "status"]) => {
            let checked = state.commit_checks.get(*sha);
            let statuses: Vec<Value> = checked
                .iter()
                .map(|checked| json!({ "state": checked, "context": "ci/stand-in", "description": "the stand-in's check" }))
                .collect();
            respond(
                200,
                &json!({
                    "state": checked.map_or("pending", String::as_str),
                    "sha": sha,
                    "total_count": statuses.len(),
                    "statuses": statuses,
                }),
            )
        }
        ("GET", ["branches", branch @ ..]) if !branch.is_empty() => {
            let branch = branch.join("/");
            let Some(repo) = state.repo(path) else {
                return github_error(404, "Not Found", "");
            };
            match repo.branches.get(&branch) {
                Some(sha) => {
                    let protected = repo.is_protected(&branch);
                    respond(
                        200,
                        &json!({
                            "name": branch,
                            "commit": { "sha": sha, "url": format!("{origin}/repos/{path}/commits/{sha}") },
                            "protected": protected,
                            "protection": { "enabled": protected, "required_status_checks": { "enforcement_level": "off", "contexts": [], "checks": [] } },
                            "protection_url": format!("{origin}/repos/{path}/branches/{branch}/protection"),
                        }),
                    )
                }
                None => github_error(404, "Branch not found", "branches/branches#get-a-branch"),
            }
        }
        ("GET", ["keys"]) => {
            let Some(repo) = state.repo(path) else {
                return github_error(404, "Not Found", "");
            };
            let keys: Vec<Value> =
                repo.keys.iter().map(|key| github_key_json(state, repo, key, &caller.login)).collect();
            paginate(incoming, &origin, &keys, 30)
        }
        ("POST", ["keys"]) => {
            let doc = "deploy-keys/deploy-keys#create-a-deploy-key";
            let Some(material) = str_field(body, "key").and_then(key_material) else {
                return github_validation(
                    doc,
                    &json!([{ "resource": "PublicKey", "code": "custom", "field": "key", "message": "key is invalid. You must supply a key in OpenSSH public key format" }]),
                );
            };
            if key_in_use(state, &material) {
                return github_validation(
                    doc,
                    &json!([{ "resource": "PublicKey", "code": "custom", "field": "key", "message": "key is already in use" }]),
                );
            }
            let key = KeySnapshot {
                id: next_id,
                title: str_field(body, "title").unwrap_or("").to_string(),
                key: stored_key(kind, str_field(body, "key").unwrap_or("")),
                read_only: bool_field(body, "read_only").unwrap_or(false),
            };
            let Some(repo) = state.repo_mut(path) else {
                return github_error(404, "Not Found", "");
            };
            repo.keys.push(key.clone());
            let Some(repo) = state.repo(path) else {
                return github_error(404, "Not Found", "");
            };
            respond(201, &github_key_json(state, repo, &key, &caller.login))
        }
        ("DELETE", ["keys", id]) => {
            let Some(repo) = state.repo_mut(path) else {
                return github_error(404, "Not Found", "");
            };
            let before = repo.keys.len();
            repo.keys.retain(|key| key.id.to_string() != *id);
            if repo.keys.len() == before {
                github_error(404, "Not Found", "deploy-keys/deploy-keys#delete-a-deploy-key")
            } else {
                no_content()
            }
        }
        ("POST", ["git", "refs"]) => {
            let doc = "git/refs#create-a-reference";
            let (Some(reference), Some(sha)) = (str_field(body, "ref"), str_field(body, "sha")) else {
                return github_validation(doc, &json!([{ "resource": "Reference", "code": "missing_field" }]));
            };
            let Some(branch) = reference.strip_prefix("refs/heads/").filter(|name| !name.is_empty()) else {
                return github_error(422, "Reference name is invalid", doc);
            };
            let Some(repo) = state.repo_mut(path) else {
                return github_error(404, "Not Found", "");
            };
            if repo.branches.contains_key(branch) {
                return github_error(422, "Reference already exists", doc);
            }
            if !repo.branches.values().any(|head| head == sha) {
                return github_error(422, "Object does not exist", doc);
            }
            repo.branches.insert(branch.to_string(), sha.to_string());
            respond(
                201,
                &json!({
                    "ref": reference,
                    "url": format!("{origin}/repos/{path}/git/{reference}"),
                    "object": { "type": "commit", "sha": sha, "url": format!("{origin}/repos/{path}/git/commits/{sha}") },
                }),
            )
        }
        ("GET", ["pulls"]) => {
            let Some(repo) = state.repo(path) else {
                return github_error(404, "Not Found", "");
            };
            let open = match incoming.query("state").unwrap_or("open") {
                "all" => None,
                "closed" => Some(false),
                _ => Some(true),
            };
            let (head, base) = (incoming.query("head"), incoming.query("base"));
            let pulls: Vec<Value> = repo
                .pulls_in_state(open)
                .filter(|pull| {
                    head.is_none_or(|head| {
                        // `user:ref-name`; without the user GitHub ignores the filter.
                        match head.split_once(':') {
                            Some((user, branch)) => {
                                user.eq_ignore_ascii_case(&repo.owner) && branch == pull.snapshot.head
                            }
                            None => true,
                        }
                    })
                })
                .filter(|pull| base.is_none_or(|base| base == pull.snapshot.base))
                .map(|pull| github_pull_json(state, repo, pull))
                .collect();
            paginate(incoming, &origin, &pulls, 30)
        }
        ("POST", ["pulls"]) => {
            let doc = "pulls/pulls#create-a-pull-request";
            let (Some(head), Some(base), Some(title)) =
                (str_field(body, "head"), str_field(body, "base"), str_field(body, "title"))
            else {
                return github_validation(doc, &json!([{ "resource": "PullRequest", "code": "missing_field" }]));
            };
            let head = head.split_once(':').map_or(head, |(_, branch)| branch);
            let Some(repo) = state.repo_mut(path) else {
                return github_error(404, "Not Found", "");
            };
            if !repo.branches.contains_key(head) {
                return github_validation(
                    doc,
                    &json!([{ "resource": "PullRequest", "field": "head", "code": "invalid" }]),
                );
            }
            if !repo.branches.contains_key(base) {
                return github_validation(
                    doc,
                    &json!([{ "resource": "PullRequest", "field": "base", "code": "invalid" }]),
                );
            }
            if repo.open_pull_between(head, base).is_some() {
                let message = format!("A pull request already exists for {}:{head}.", repo.owner);
                return github_validation(
                    doc,
                    &json!([{ "resource": "PullRequest", "code": "custom", "message": message }]),
                );
            }
            let number =
                repo.open_pull(next_id, &caller.login, head, base, title, str_field(body, "body").unwrap_or(""));
            github_pull_response(state, path, number, 201)
        }
        ("POST", ["pulls", number, "reviews"]) => {
            let doc = "pulls/reviews#create-a-review-for-a-pull-request";
            let Some(pull) = state.repo(path).and_then(|repo| repo.pull(number)) else {
                return github_error(404, "Not Found", doc);
            };
            if str_field(body, "event") == Some("APPROVE") && pull.author == caller.login {
                return github_validation(doc, &json!(["Review Can not approve your own pull request"]));
            }
            let head = state.repo(path).and_then(|repo| repo.branches.get(&pull.snapshot.head).cloned());
            if let Some(commit) = str_field(body, "commit_id")
                && Some(commit) != head.as_deref()
            {
                return github_validation(doc, &json!(["Commit is not part of the pull request"]));
            }
            let login = caller.login.clone();
            if let Some(pull) = state.repo_mut(path).and_then(|repo| repo.pull_mut(number))
                && str_field(body, "event") == Some("APPROVE")
            {
                pull.snapshot.approved_by.push(login.clone());
            }
            respond(
                200,
                &json!({ "id": next_id, "user": { "login": login }, "state": "APPROVED", "commit_id": head, "body": "" }),
            )
        }
        ("PUT", ["pulls", number, "merge"]) => {
            let doc = "pulls/pulls#merge-a-pull-request";
            if str_field(body, "merge_method") == Some("rebase") {
                return github_error(405, "Rebase merges are not allowed on this repository.", doc);
            }
            let squash = str_field(body, "merge_method") == Some("squash");
            match merge_pull(state, path, number, str_field(body, "sha"), squash, &caller.login) {
                Ok(sha) => {
                    respond(200, &json!({ "sha": sha, "merged": true, "message": "Pull Request successfully merged" }))
                }
                Err(Refusal::Missing) => github_error(404, "Not Found", doc),
                Err(Refusal::NotMergeable) => github_error(405, "Pull Request is not mergeable", doc),
                Err(Refusal::HeadMoved) => {
                    github_error(409, "Head branch was modified. Review and try the merge again.", doc)
                }
            }
        }
        ("PATCH" | "GET", ["pulls", number]) => {
            let Some(repo) = state.repo_mut(path) else {
                return github_error(404, "Not Found", "");
            };
            let writes = method == "PATCH";
            match repo.edit_pull(number, PullEdit::asked(writes, body, ["title", "body", "state", "open"])) {
                Some(number) => github_pull_response(state, path, number, 200),
                None => github_error(404, "Not Found", "pulls/pulls#update-a-pull-request"),
            }
        }
        ("GET", ["issues", number, "comments"]) => match state.repo(path) {
            Some(repo) if repo.pull(number).is_some() => {
                let comments: Vec<Value> =
                    repo.comments_on(number).map(|comment| github_comment_json(&origin, repo, comment)).collect();
                paginate(incoming, &origin, &comments, 30)
            }
            _ => github_error(404, "Not Found", "issues/comments#list-issue-comments"),
        },
        ("POST", ["issues", number, "comments"]) => {
            let doc = "issues/comments#create-an-issue-comment";
            let Some(text) = str_field(body, "body") else {
                return github_validation(
                    doc,
                    &json!([{ "resource": "IssueComment", "code": "missing_field", "field": "body" }]),
                );
            };
            if text.chars().count() > 65_536 {
                return github_validation(
                    doc,
                    &json!([{ "resource": "IssueComment", "code": "custom", "field": "body", "message": "body is too long (maximum is 65536 characters)" }]),
                );
            }
            match state.repo_mut(path) {
                Some(repo) if repo.pull(number).is_some() => {
                    let comment = repo.add_comment(next_id, number, &caller.login, text);
                    respond(201, &github_comment_json(&origin, repo, &comment))
                }
                _ => github_error(404, "Not Found", doc),
            }
        }
        ("PATCH", ["issues", "comments", id]) => {
            let doc = "issues/comments#update-an-issue-comment";
            let Some(text) = str_field(body, "body") else {
                return github_validation(
                    doc,
                    &json!([{ "resource": "IssueComment", "code": "missing_field", "field": "body" }]),
                );
            };
            let Some(repo) = state.repo_mut(path) else {
                return github_error(404, "Not Found", doc);
            };
            let number =
                repo.comments.iter().find(|comment| comment.id.to_string() == *id).map(|c| c.number.to_string());
            match repo.edit_comment(&number.unwrap_or_default(), id, &caller.login, text) {
                Ok(comment) => respond(200, &github_comment_json(&origin, repo, &comment)),
                Err(status) => github_error(status, if status == 403 { "Forbidden" } else { "Not Found" }, doc),
            }
        }
        _ => github_error(404, "Not Found", ""),
    }
}

// ---------------------------------------------------------------------------------------------
// GitLab

fn gitlab_not_found(message: &str) -> Response {
    respond(404, &json!({ "message": message }))
}

/// `can_push`: the caller's access as GitLab reports it (Maintainer 40, else Reporter 20).
fn gitlab_project_json(state: &State, repo: &Repo, can_push: bool) -> Value {
    let web = state.web_url(repo);
    let namespace_id = state.groups.get(&repo.owner).copied().unwrap_or(0);
    json!({
        "id": repo.id,
        "name": repo.name,
        "path": repo.name,
        "path_with_namespace": repo.path(),
        "name_with_namespace": repo.path().replace('/', " / "),
        "namespace": {
            "id": namespace_id,
            "path": repo.owner.rsplit('/').next().unwrap_or(&repo.owner),
            "full_path": repo.owner,
            "kind": if state.groups.contains_key(&repo.owner) { "group" } else { "user" },
        },
        "visibility": if repo.private { "private" } else { "public" },
        "default_branch": if repo.branches.is_empty() { None } else { repo.default_branch.clone() },
        "empty_repo": repo.branches.is_empty(),
        "ssh_url_to_repo": state.ssh_url(repo),
        "http_url_to_repo": format!("{web}.git"),
        "web_url": web,
        "permissions": {
            "project_access": { "access_level": if can_push { 40 } else { 20 }, "notification_level": 3 },
            "group_access": null,
        },
    })
}

fn gitlab_branch_json(state: &State, repo: &Repo, branch: &str, sha: &str) -> Value {
    json!({
        "name": branch,
        "merged": false,
        "protected": repo.is_protected(branch),
        "default": repo.default_branch.as_deref() == Some(branch),
        "developers_can_push": false,
        "developers_can_merge": false,
        "can_push": true,
        "web_url": format!("{}/-/tree/{branch}", state.web_url(repo)),
        "commit": { "id": sha, "short_id": &sha[..sha.len().min(8)], "title": "stand-in commit", "message": "stand-in commit" },
    })
}

fn gitlab_key_json(key: &KeySnapshot) -> Value {
    json!({
        "id": key.id,
        "title": key.title,
        "key": key.key,
        "created_at": now_rfc3339(),
        "expires_at": null,
        "can_push": !key.read_only,
    })
}

fn gitlab_mr_json(state: &State, repo: &Repo, pull: &PullRecord) -> Value {
    let snapshot = &pull.snapshot;
    json!({
        "id": pull.id,
        "iid": snapshot.number,
        "project_id": repo.id,
        "title": snapshot.title,
        "description": snapshot.body,
        "state": if snapshot.merged { "merged" } else if snapshot.open { "opened" } else { "closed" },
        "merge_when_pipeline_succeeds": snapshot.auto_merge.is_some(),
        "head_pipeline": repo
            .branches
            .get(&snapshot.head)
            .and_then(|sha| state.commit_checks.get(sha))
            .map(|status| json!({ "id": 1, "status": status })),
        "source_branch": snapshot.head,
        "target_branch": snapshot.base,
        "sha": repo.branches.get(&snapshot.head),
        "merge_commit_sha": if snapshot.merged && !snapshot.squashed { snapshot.merge_commit.clone() } else { None },
        "squash_commit_sha": if snapshot.squashed { snapshot.merge_commit.clone() } else { None },
        "author": { "id": 1, "username": pull.author, "name": pull.author, "state": "active" },
        "created_at": now_rfc3339(),
        // No conflicts are modelled: an open request whose branch exists can be merged.
        "detailed_merge_status": if snapshot.open && repo.branches.contains_key(&snapshot.head) { "mergeable" } else { "not_open" },
        "merge_status": if snapshot.open && repo.branches.contains_key(&snapshot.head) { "can_be_merged" } else { "cannot_be_merged" },
        "draft": false,
        "web_url": format!("{}/-/merge_requests/{}", state.web_url(repo), snapshot.number),
    })
}

/// Merge request `iid` of the project at `path`, answered with `status`.
fn gitlab_mr_response(state: &State, path: &str, iid: u64, status: u16) -> Response {
    let Some(repo) = state.repo(path) else {
        return gitlab_not_found("404 Project Not Found");
    };
    let Some(pull) = repo.pulls.iter().find(|pull| pull.snapshot.number == iid) else {
        return respond(500, &json!({ "message": "500 Internal Server Error" }));
    };
    respond(status, &gitlab_mr_json(state, repo, pull))
}

fn gitlab(state: &mut State, incoming: &Incoming, rest: &str, caller: &Caller, body: &Value) -> Response {
    let parts = segments(rest);
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let method = incoming.method.as_str();
    match (method, parts.as_slice()) {
        ("GET", ["user"]) => {
            respond(200, &json!({ "id": caller.id, "username": caller.login, "name": caller.login, "state": "active" }))
        }
        ("GET", ["namespaces", id]) => {
            let group = match id.parse::<u64>() {
                Ok(number) => state
                    .groups
                    .iter()
                    .find(|(_, group_id)| **group_id == number)
                    .map(|(path, group_id)| (path.clone(), *group_id)),
                Err(_) => state.groups.get(*id).map(|group_id| ((*id).to_string(), *group_id)),
            };
            match group {
                Some((path, group_id)) => respond(
                    200,
                    &json!({
                        "id": group_id,
                        "name": path.rsplit('/').next().unwrap_or(&path),
                        "path": path.rsplit('/').next().unwrap_or(&path),
                        "kind": "group",
                        "full_path": path,
                        "parent_id": path.rsplit_once('/').and_then(|(parent, _)| state.groups.get(parent)),
                    }),
                ),
                None if id.eq_ignore_ascii_case(&caller.login) => respond(
                    200,
                    &json!({ "id": caller.id, "name": caller.login, "path": caller.login, "kind": "user", "full_path": caller.login, "parent_id": null }),
                ),
                None => gitlab_not_found("404 Namespace Not Found"),
            }
        }
        ("POST", ["projects"]) => gitlab_create_project(state, caller, body),
        (_, ["projects", id, rest @ ..]) => {
            let Some(path) = state.project_mut(id).map(|repo| repo.path()) else {
                return gitlab_not_found("404 Project Not Found");
            };
            gitlab_project_route(state, &Route { incoming, caller, path: &path, rest, body })
        }
        _ => gitlab_not_found("404 Not Found"),
    }
}

fn gitlab_create_project(state: &mut State, caller: &Caller, body: &Value) -> Response {
    let Some(name) = str_field(body, "name").or_else(|| str_field(body, "path")) else {
        return respond(400, &json!({ "error": "name, path are missing, at least one parameter must be provided" }));
    };
    let path = str_field(body, "path").unwrap_or(name).to_string();
    let owner = match body.get("namespace_id").and_then(Value::as_u64) {
        Some(id) if id == caller.id => caller.login.clone(),
        Some(id) => match state.groups.iter().find(|(_, group_id)| **group_id == id) {
            Some((group, _)) => group.clone(),
            None => return gitlab_not_found("404 Namespace Not Found"),
        },
        None => caller.login.clone(),
    };
    if !caller.can_create {
        return respond(403, &json!({ "message": "403 Forbidden" }));
    }
    if state.repo(&format!("{owner}/{path}")).is_some() {
        return respond(
            400,
            &json!({ "message": { "name": ["has already been taken"], "path": ["has already been taken"] } }),
        );
    }
    let private = str_field(body, "visibility").is_none_or(|visibility| visibility != "public");
    let readme = bool_field(body, "initialize_with_readme").unwrap_or(false);
    let repo = state.insert_repo(&owner, &path, private, readme.then_some("main"));
    let full = repo.path();
    let Some(repo) = state.repo(&full) else {
        return respond(500, &json!({ "message": "500 Internal Server Error" }));
    };
    respond(201, &gitlab_project_json(state, repo, true))
}

/// A merge request note (the shape of the published "Get single merge request note").
fn gitlab_note_json(repo: &Repo, note: &CommentRecord) -> Value {
    json!({
        "id": note.id,
        "body": note.body,
        "attachment": null,
        "author": { "id": 1, "username": note.author, "name": note.author, "state": "active" },
        "created_at": note.created_at,
        "updated_at": note.updated_at,
        "system": false,
        "noteable_id": note.number,
        "noteable_type": "MergeRequest",
        "project_id": repo.id,
        "noteable_iid": note.number,
        "resolvable": false,
        "confidential": false,
        "internal": false,
    })
}

fn gitlab_project_route(state: &mut State, route: &Route<'_>) -> Response {
    let Route { incoming, caller, path, rest, body } = *route;
    let method = incoming.method.as_str();
    if method != "GET" && !caller.can_push {
        return respond(403, &json!({ "message": "403 Forbidden" }));
    }
    let origin = state.origin.clone();
    let next_id = state.next_id();
    let kind = state.kind;
    match (method, rest) {
        ("GET", []) => match state.repo(path) {
            Some(repo) => respond(200, &gitlab_project_json(state, repo, caller.can_push)),
            None => gitlab_not_found("404 Project Not Found"),
        },
        ("POST", ["fork"]) => {
            let owner = str_field(body, "namespace_path").unwrap_or(&caller.login).to_string();
            let name = str_field(body, "path").or(str_field(body, "name")).unwrap_or_default().to_string();
            if state.repo(&format!("{owner}/{name}")).is_some() {
                return respond(409, &json!({ "message": { "name": ["has already been taken"] } }));
            }
            let created = state.insert_repo(&owner, &name, true, Some("main"));
            created.fork_of = Some(path.to_string());
            let created = created.path();
            match state.repo(&created) {
                Some(repo) => respond(201, &gitlab_project_json(state, repo, true)),
                None => gitlab_not_found("404 Project Not Found"),
            }
        }
        ("DELETE", []) => {
            state.repos.retain(|repo| repo.path() != path);
            respond(202, &json!({ "message": "202 Accepted" }))
        }
        ("GET", ["repository", "branches", branch]) => {
            let Some(repo) = state.repo(path) else {
                return gitlab_not_found("404 Project Not Found");
            };
            match repo.branches.get(*branch) {
                Some(sha) => respond(200, &gitlab_branch_json(state, repo, branch, sha)),
                None => gitlab_not_found("404 Branch Not Found"),
            }
        }
        ("POST", ["repository", "branches"]) => {
            let (Some(branch), Some(reference)) = (incoming.query("branch"), incoming.query("ref")) else {
                return respond(400, &json!({ "error": "branch is missing, ref is missing" }));
            };
            let Some(repo) = state.repo_mut(path) else {
                return gitlab_not_found("404 Project Not Found");
            };
            if repo.branches.contains_key(branch) {
                return respond(400, &json!({ "message": "Branch already exists" }));
            }
            let sha = match repo.branches.get(reference) {
                Some(sha) => sha.clone(),
                None if repo.branches.values().any(|head| head == reference) => reference.to_string(),
                None => {
                    return respond(400, &json!({ "message": format!("Invalid reference name: {reference}") }));
                }
            };
            repo.branches.insert(branch.to_string(), sha.clone());
            let Some(repo) = state.repo(path) else {
                return gitlab_not_found("404 Project Not Found");
            };
            respond(201, &gitlab_branch_json(state, repo, branch, &sha))
        }
        ("GET", ["protected_branches", name]) => {
            let Some(repo) = state.repo(path) else {
                return gitlab_not_found("404 Project Not Found");
            };
            if repo.protection_rules.contains(*name) {
                respond(
                    200,
                    &json!({
                        "id": next_id,
                        "name": name,
                        "push_access_levels": [{ "id": next_id + 1, "access_level": 40, "access_level_description": "Maintainers" }],
                        "merge_access_levels": [{ "id": next_id + 2, "access_level": 40, "access_level_description": "Maintainers" }],
                        "allow_force_push": false,
                        "code_owner_approval_required": false,
                    }),
                )
            } else {
                gitlab_not_found("404 Not found")
            }
        }
        ("GET", ["deploy_keys"]) => {
            let Some(repo) = state.repo(path) else {
                return gitlab_not_found("404 Project Not Found");
            };
            let keys: Vec<Value> = repo.keys.iter().map(gitlab_key_json).collect();
            paginate(incoming, &origin, &keys, 20)
        }
        ("POST", ["deploy_keys"]) => {
            let (Some(title), Some(key)) = (str_field(body, "title"), str_field(body, "key")) else {
                return respond(400, &json!({ "error": "title is missing, key is missing" }));
            };
            let Some(material) = key_material(key) else {
                return respond(400, &json!({ "message": { "key": ["is invalid"] } }));
            };
            let Some(repo) = state.repo_mut(path) else {
                return gitlab_not_found("404 Project Not Found");
            };
            if repo.keys.iter().any(|existing| key_material(&existing.key).as_ref() == Some(&material)) {
                return respond(
                    400,
                    &json!({ "message": { "deploy_key.fingerprint_sha256": ["has already been taken"] } }),
                );
            }
            let snapshot = KeySnapshot {
                id: next_id,
                title: title.to_string(),
                key: stored_key(kind, key),
                read_only: !bool_field(body, "can_push").unwrap_or(false),
            };
            repo.keys.push(snapshot.clone());
            respond(201, &gitlab_key_json(&snapshot))
        }
        ("DELETE", ["deploy_keys", id]) => {
            let Some(repo) = state.repo_mut(path) else {
                return gitlab_not_found("404 Project Not Found");
            };
            let before = repo.keys.len();
            repo.keys.retain(|key| key.id.to_string() != *id);
            if repo.keys.len() == before { gitlab_not_found("404 Deploy Key Not Found") } else { no_content() }
        }
        ("GET", ["merge_requests"]) => {
            let Some(repo) = state.repo(path) else {
                return gitlab_not_found("404 Project Not Found");
            };
            let open = match incoming.query("state").unwrap_or("all") {
                "opened" => Some(true),
                "closed" => Some(false),
                _ => None,
            };
            let (source, target) = (incoming.query("source_branch"), incoming.query("target_branch"));
            let requests: Vec<Value> = repo
                .pulls_in_state(open)
                .filter(|pull| source.is_none_or(|source| source == pull.snapshot.head))
                .filter(|pull| target.is_none_or(|target| target == pull.snapshot.base))
                .map(|pull| gitlab_mr_json(state, repo, pull))
                .collect();
            paginate(incoming, &origin, &requests, 20)
        }
        ("POST", ["merge_requests"]) => {
            let (Some(source), Some(target), Some(title)) =
                (str_field(body, "source_branch"), str_field(body, "target_branch"), str_field(body, "title"))
            else {
                return respond(
                    400,
                    &json!({ "error": "source_branch is missing, target_branch is missing, title is missing" }),
                );
            };
            let Some(repo) = state.repo_mut(path) else {
                return gitlab_not_found("404 Project Not Found");
            };
            if !repo.branches.contains_key(source) {
                return respond(422, &json!({ "message": [format!("Source branch \"{source}\" does not exist")] }));
            }
            if !repo.branches.contains_key(target) {
                return respond(422, &json!({ "message": [format!("Target branch \"{target}\" does not exist")] }));
            }
            if let Some(existing) = repo.open_pull_between(source, target) {
                let message = format!(
                    "Another open merge request already exists for this source branch: !{}",
                    existing.snapshot.number
                );
                return respond(409, &json!({ "message": [message] }));
            }
            let number = repo.open_pull(
                next_id,
                &caller.login,
                source,
                target,
                title,
                str_field(body, "description").unwrap_or(""),
            );
            gitlab_mr_response(state, path, number, 201)
        }
        ("POST", ["merge_requests", iid, "approve"]) => {
            let head = state
                .repo(path)
                .and_then(|repo| repo.pull(iid))
                .and_then(|pull| state.repo(path).and_then(|repo| repo.branches.get(&pull.snapshot.head).cloned()));
            if let Some(sha) = str_field(body, "sha")
                && Some(sha) != head.as_deref()
            {
                return respond(409, &json!({ "message": "SHA does not match HEAD of source branch" }));
            }
            let login = caller.login.clone();
            let Some(pull) = state.repo_mut(path).and_then(|repo| repo.pull_mut(iid)) else {
                return gitlab_not_found("404 Not found");
            };
            pull.snapshot.approved_by.push(login.clone());
            let approvers: Vec<Value> =
                pull.snapshot.approved_by.iter().map(|user| json!({ "user": { "username": user } })).collect();
            respond(201, &json!({ "iid": pull.snapshot.number, "approved": true, "approved_by": approvers }))
        }
        ("PUT", ["merge_requests", iid, "merge"]) => {
            let squash = bool_field(body, "squash").unwrap_or(false);
            let number = iid.parse::<u64>().unwrap_or_default();
            let auto = bool_field(body, "auto_merge") == Some(true);
            if auto && state.checks_pending {
                // Set to merge once the pipeline passes: answered with the request, still open.
                let Some(pull) = state.repo_mut(path).and_then(|repo| repo.pull_mut(iid)) else {
                    return gitlab_not_found("404 Not found");
                };
                pull.snapshot.auto_merge = Some(if squash { "squash" } else { "merge" }.to_string());
                return gitlab_mr_response(state, path, number, 200);
            }
            match merge_pull(state, path, iid, str_field(body, "sha"), squash, &caller.login) {
                Ok(_) => gitlab_mr_response(state, path, number, 200),
                Err(Refusal::Missing) => gitlab_not_found("404 Not found"),
                Err(Refusal::NotMergeable) => respond(405, &json!({ "message": "405 Method Not Allowed" })),
                Err(Refusal::HeadMoved) => {
                    respond(409, &json!({ "message": "SHA does not match HEAD of source branch" }))
                }
            }
        }
        ("PUT" | "GET", ["merge_requests", iid]) => {
            let Some(repo) = state.repo_mut(path) else {
                return gitlab_not_found("404 Project Not Found");
            };
            let writes = method == "PUT";
            match repo.edit_pull(iid, PullEdit::asked(writes, body, ["title", "description", "state_event", "reopen"]))
            {
                Some(iid) => gitlab_mr_response(state, path, iid, 200),
                None => gitlab_not_found("404 Not found"),
            }
        }
        ("GET", ["merge_requests", iid, "notes"]) => match state.repo(path) {
            Some(repo) if repo.pull(iid).is_some() => {
                let notes: Vec<Value> = repo.comments_on(iid).map(|note| gitlab_note_json(repo, note)).collect();
                paginate(incoming, &origin, &notes, 20)
            }
            _ => gitlab_not_found("404 Not found"),
        },
        ("POST", ["merge_requests", iid, "notes"]) => {
            let Some(text) = str_field(body, "body") else {
                return respond(400, &json!({ "error": "body is missing" }));
            };
            match state.repo_mut(path) {
                Some(repo) if repo.pull(iid).is_some() => {
                    let note = repo.add_comment(next_id, iid, &caller.login, text);
                    respond(201, &gitlab_note_json(repo, &note))
                }
                _ => gitlab_not_found("404 Not found"),
            }
        }
        ("PUT", ["merge_requests", iid, "notes", id]) => {
            let Some(text) = str_field(body, "body") else {
                return respond(400, &json!({ "error": "body is missing" }));
            };
            let Some(repo) = state.repo_mut(path) else {
                return gitlab_not_found("404 Project Not Found");
            };
            match repo.edit_comment(iid, id, &caller.login, text) {
                Ok(note) => respond(200, &gitlab_note_json(repo, &note)),
                Err(status) => respond(status, &json!({ "message": format!("{status}") })),
            }
        }
        _ => gitlab_not_found("404 Not Found"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use gitops_shared::provider::{Provider, ProviderError, RepoRef};

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
