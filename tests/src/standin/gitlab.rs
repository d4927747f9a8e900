//! The stand-in's GitLab REST API (v4): its routes, JSON shapes and errors.

use serde_json::{Value, json};

use super::git::{Refusal, merge_pull};
use super::model::{PullEdit, key_material, now_rfc3339, stored_key};
use super::routing::{Caller, Route, bool_field, paginate, segments, str_field};
use super::{CommentRecord, KeySnapshot, PullRecord, Repo, Response, State, no_content, respond};
use crate::http::Incoming;

pub(super) fn gitlab_not_found(message: &str) -> Response {
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

pub(super) fn gitlab(state: &mut State, incoming: &Incoming, rest: &str, caller: &Caller, body: &Value) -> Response {
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
