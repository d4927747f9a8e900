//! The stand-in's GitHub REST API (2022-11-28): its routes, JSON shapes and errors.

use serde_json::{Value, json};

use super::git::{Refusal, merge_pull};
use super::model::{PullEdit, key_material, now_rfc3339, stored_key};
use super::routing::{Caller, Route, bool_field, paginate, segments, str_field};
use super::{CommentRecord, KeySnapshot, PullRecord, Repo, Response, State, no_content, respond};
use crate::http::Incoming;

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

pub(super) fn github(state: &mut State, incoming: &Incoming, caller: &Caller, body: &Value) -> Response {
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
