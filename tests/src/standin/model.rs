//! The stand-in's model of repositories, their deploy keys, pull requests and comments, and the
//! state that holds them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::git::read_branches;
use super::routing::str_field;
use super::{CommentRecord, GITEA_IS_REAL, INITIAL_SHA, Kind, PullRecord, PullSnapshot, Repo, State, UserRecord};

pub(super) fn split_path(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or_else(|| panic!("repository {path:?} is not owner/name"))
}

/// GitHub stores a deploy key without its comment; GitLab as given.
pub(super) fn stored_key(kind: Kind, key: &str) -> String {
    match kind {
        Kind::GitHub => key.split_whitespace().take(2).collect::<Vec<_>>().join(" "),
        Kind::GitLab => key.trim().to_string(),
        Kind::Gitea => unreachable!("{GITEA_IS_REAL}"),
    }
}

pub(super) fn key_material(key: &str) -> Option<(String, String)> {
    let mut fields = key.split_whitespace();
    let kind = fields.next()?;
    let blob = fields.next()?;
    (kind.starts_with("ssh-") || kind.starts_with("ecdsa-") || kind.starts_with("sk-"))
        .then(|| (kind.to_string(), blob.to_string()))
}

/// `*` matches any run of characters, as branch protection patterns do.
pub(super) fn glob_matches(pattern: &str, name: &str) -> bool {
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

pub(super) fn now_rfc3339() -> String {
    "2025-01-01T00:00:00Z".to_string()
}

impl Repo {
    pub(super) fn comments_on<'a>(&'a self, number: &'a str) -> impl Iterator<Item = &'a CommentRecord> {
        self.comments.iter().filter(move |comment| comment.number.to_string() == number)
    }

    pub(super) fn add_comment(&mut self, id: u64, number: &str, author: &str, body: &str) -> CommentRecord {
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
    pub(super) fn edit_comment(
        &mut self,
        number: &str,
        id: &str,
        editor: &str,
        body: &str,
    ) -> Result<CommentRecord, u16> {
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

    pub(super) fn path(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    pub(super) fn is_protected(&self, branch: &str) -> bool {
        self.protection_rules.iter().any(|rule| glob_matches(rule, branch))
    }

    pub(super) fn open_pull(&mut self, id: u64, author: &str, head: &str, base: &str, title: &str, body: &str) -> u64 {
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
    pub(super) fn pull(&self, number: &str) -> Option<&PullRecord> {
        self.pulls.iter().find(|pull| pull.snapshot.number.to_string() == number)
    }

    pub(super) fn pull_mut(&mut self, number: &str) -> Option<&mut PullRecord> {
        self.pulls.iter_mut().find(|pull| pull.snapshot.number.to_string() == number)
    }

    /// The requests that are open (`Some(true)`), closed (`Some(false)`), or all (`None`).
    pub(super) fn pulls_in_state(&self, open: Option<bool>) -> impl Iterator<Item = &PullRecord> {
        self.pulls.iter().filter(move |pull| open.is_none_or(|open| pull.snapshot.open == open))
    }

    /// The open request from `head` into `base`, if any.
    pub(super) fn open_pull_between(&self, head: &str, base: &str) -> Option<&PullRecord> {
        self.pulls.iter().find(|pull| pull.snapshot.open && pull.snapshot.head == head && pull.snapshot.base == base)
    }

    /// Sets what `edit` gives on request `number` (a GET edits nothing); `None` when there is no
    /// such request.
    pub(super) fn edit_pull(&mut self, number: &str, edit: PullEdit<'_>) -> Option<u64> {
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
pub(super) struct PullEdit<'a> {
    title: Option<&'a str>,
    body: Option<&'a str>,
    open: Option<bool>,
}

impl<'a> PullEdit<'a> {
    /// What a write's body asks for, in the provider's names: the title, the description, the
    /// state field and its value that (re)opens; a read (`writes` false) asks for nothing.
    pub(super) fn asked(writes: bool, body: &'a Value, [title, text, state, opens]: [&str; 4]) -> PullEdit<'a> {
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
    pub(super) fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub(super) fn add_user(&mut self, token: &str, login: &str, can_create_repos: bool) {
        let id = self.users.values().find(|user| user.login == login).map(|user| user.id);
        let id = id.unwrap_or_else(|| self.next_id());
        let user = UserRecord { id, login: login.to_string(), can_create_repos, can_push: true };
        self.users.insert(token.to_string(), user);
    }

    /// Reads the branches of every repository that exists in the git storage from it.
    pub(super) fn refresh_branches(&mut self) {
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

    pub(super) fn add_group(&mut self, path: &str) {
        if !self.groups.contains_key(path) {
            let id = self.next_id();
            self.groups.insert(path.to_string(), id);
        }
    }

    pub(super) fn insert_repo(&mut self, owner: &str, name: &str, private: bool, main: Option<&str>) -> &mut Repo {
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

    pub(super) fn repo(&self, path: &str) -> Option<&Repo> {
        self.repos.iter().find(|repo| repo.path().eq_ignore_ascii_case(path))
    }

    pub(super) fn repo_mut(&mut self, path: &str) -> Option<&mut Repo> {
        self.repos.iter_mut().find(|repo| repo.path().eq_ignore_ascii_case(path))
    }

    /// A GitLab `:id`: the numeric id or the decoded full path.
    pub(super) fn project_mut(&mut self, id: &str) -> Option<&mut Repo> {
        match id.parse::<u64>() {
            Ok(number) => self.repos.iter_mut().find(|repo| repo.id == number),
            Err(_) => self.repo_mut(id),
        }
    }

    pub(super) fn ssh_url(&self, repo: &Repo) -> String {
        format!("{}{}.git", self.ssh_base, repo.path())
    }

    pub(super) fn web_url(&self, repo: &Repo) -> String {
        format!("{}{}", self.https_base, repo.path())
    }
}
