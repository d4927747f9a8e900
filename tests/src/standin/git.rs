//! The git side of the stand-in: merges made with `git merge-tree` and `git commit-tree` in the git
//! server's storage, and the branches read from it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use super::State;

/// The branches of a bare repository and their commits; `None` when git cannot read it.
/// Why a merge was refused.
pub(super) enum Refusal {
    Missing,
    NotMergeable,
    HeadMoved,
}

/// Merges open request `number` of the repository at `path` if its head is `sha` (when given):
/// in the git server's storage when the repository is there (a merge commit, or with `squash`
/// one commit on the base), else in the model alone. Returns the new base commit.
pub(super) fn merge_pull(
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

pub(super) fn read_branches(dir: &Path) -> Option<BTreeMap<String, String>> {
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
