//! One commit's author, time and subject, fetched on its own: `app status` explains the
//! revision Flux applied without cloning the repository. And a branch's log ([`log`]), for
//! `app history`: the commits behind each deployment.
//!
//! A shallow fetch (depth 1) of the ref the revision came from usually brings the commit,
//! since Flux applies the tip. When the ref moved on, the commit is asked for by hash (servers
//! that allow it, like GitHub and GitLab), and last the ref is fetched deeper.

use git2::{Commit, Oid, Repository, Sort};

use super::{Endpoint, GitError, Remote, Session};

/// How far back a ref is fetched when neither its tip nor a fetch by hash gives the commit.
const DEEP_FETCH: i32 = 200;
/// Where fetched refs land in the scratch repository.
const FETCHED: &str = "refs/kubectl-gitops/fetched";

/// A commit as `git log -1` describes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct CommitInfo {
    /// The full hash.
    pub sha: String,
    /// The author's name.
    pub author: String,
    /// The author's e-mail address.
    pub email: String,
    /// When it was authored, RFC 3339 UTC.
    pub time: String,
    /// The first line of the message.
    pub subject: String,
    /// The commit it reverts, when its message says so as `git revert` writes it ("This
    /// reverts commit <hash>.").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverts: Option<String>,
}

impl CommitInfo {
    fn of(commit: &Commit<'_>) -> CommitInfo {
        let author = commit.author();
        let message = String::from_utf8_lossy(commit.message_bytes());
        CommitInfo {
            sha: commit.id().to_string(),
            author: String::from_utf8_lossy(author.name_bytes()).into_owned(),
            email: String::from_utf8_lossy(author.email_bytes()).into_owned(),
            time: crate::duration::format_timestamp(author.when().seconds()),
            subject: commit
                .summary_bytes()
                .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
                .unwrap_or_default(),
            reverts: reverted(&message),
        }
    }
}

/// The hash in "This reverts commit <hash>." of a message `git revert` wrote.
fn reverted(message: &str) -> Option<String> {
    let (_, after) = message.split_once("This reverts commit ")?;
    let hash: String = after.chars().take_while(char::is_ascii_hexdigit).collect();
    (hash.len() == 40).then_some(hash)
}

/// A commit of a branch's log, with its parents and whether it changed the path asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedCommit {
    pub info: CommitInfo,
    /// The parents' hashes (those beyond a shallow fetch's depth are not in the log).
    pub parents: Vec<String>,
    /// It changed something under the path (always, without a path or for a root commit).
    pub touches_path: bool,
}

/// Fetches commit `sha` of the remote into a scratch repository (deleted on return) and reads it.
///
/// `reference` is the full ref the commit came from (`refs/heads/main`), when known; without
/// it only a fetch by hash is tried.
pub fn show_commit(remote: &Remote, reference: Option<&str>, sha: &str) -> Result<CommitInfo, GitError> {
    let oid = Oid::from_str(sha)?;
    let endpoint = Endpoint::parse(&remote.url)?;
    let (_dir, repo) = scratch_repository()?;
    let by_ref = reference.map(|name| format!("+{name}:{FETCHED}"));
    let mut attempts: Vec<(String, i32)> = by_ref.iter().map(|refspec| (refspec.clone(), 1)).collect();
    attempts.push((format!("+{sha}:{FETCHED}-sha"), 1));
    attempts.extend(by_ref.map(|refspec| (refspec, DEEP_FETCH)));
    // libgit2's local transport cannot fetch shallow; a local repository is read whole.
    let shallow = endpoint != Endpoint::Local;
    let mut last_error = None;
    for (refspec, depth) in attempts {
        let depth = if shallow { depth } else { 0 };
        let session = Session::new(remote, &endpoint);
        let mut options = session.fetch_options();
        options.depth(depth);
        let mut origin = repo.remote_anonymous(&remote.url)?;
        match origin.fetch(&[refspec.as_str()], Some(&mut options), None) {
            Ok(()) => {}
            Err(error) => {
                let error = session.finish(error);
                // Credentials, host keys and the network fail every attempt alike; only a
                // refused want (a hash the server will not serve) is worth another try.
                if !matches!(error, GitError::Other(_) | GitError::NotFound { reason: Some(_), .. }) {
                    return Err(error);
                }
                last_error = Some(error);
                continue;
            }
        }
        if let Ok(commit) = repo.find_commit(oid) {
            return Ok(CommitInfo::of(&commit));
        }
    }
    Err(last_error.unwrap_or_else(|| {
        GitError::Other(git2::Error::from_str(&format!(
            "commit {sha} is not among the last {DEEP_FETCH} commits of {}",
            reference.unwrap_or("the remote")
        )))
    }))
}

/// The last [`DEEP_FETCH`] commits of `reference` (a full ref, `refs/heads/main`), newest
/// first, each marked with whether it changed something under one of `paths` (repo-relative
/// directories as a Kustomization's `spec.path` gives them: `./apps/web`; none, or `./`, is
/// the whole tree).
pub fn log(remote: &Remote, reference: &str, paths: &[String]) -> Result<Vec<LoggedCommit>, GitError> {
    let endpoint = Endpoint::parse(&remote.url)?;
    let (_dir, repo) = scratch_repository()?;
    let session = Session::new(remote, &endpoint);
    let mut options = session.fetch_options();
    // libgit2's local transport cannot fetch shallow; a local repository is read whole.
    options.depth(if endpoint == Endpoint::Local { 0 } else { DEEP_FETCH });
    let mut origin = repo.remote_anonymous(&remote.url)?;
    origin
        .fetch(&[format!("+{reference}:{FETCHED}").as_str()], Some(&mut options), None)
        .map_err(|error| session.finish(error))?;
    let paths: Vec<&str> = paths.iter().map(|path| path.trim_start_matches("./").trim_end_matches('/')).collect();
    let whole_tree = paths.iter().all(|path| path.is_empty() || *path == ".");
    let mut walk = repo.revwalk()?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME)?;
    walk.push_ref(FETCHED)?;
    let mut commits = Vec::new();
    for oid in walk.take(usize::try_from(DEEP_FETCH).unwrap_or(usize::MAX)) {
        let commit = repo.find_commit(oid?)?;
        let parents: Vec<Commit<'_>> = commit.parents().collect();
        let touches_path = match parents.first() {
            Some(parent) if !whole_tree => paths.iter().any(|path| entry_id(&commit, path) != entry_id(parent, path)),
            _ => true,
        };
        commits.push(LoggedCommit {
            info: CommitInfo::of(&commit),
            parents: commit.parent_ids().map(|id| id.to_string()).collect(),
            touches_path,
        });
    }
    Ok(commits)
}

/// What a branch changes on top of another: its own change, as a pull request shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchChange {
    /// The branch's head commit.
    pub head: String,
    /// The last commit the two branches share.
    pub merge_base: String,
    /// Each file the branch changes since the merge base, by path (sorted): its contents on the
    /// branch, `None` when the branch deletes it.
    pub files: Vec<(String, Option<Vec<u8>>)>,
    /// The paths it makes anything but a plain file (an executable, a symlink, a submodule),
    /// which no plan writes; they are not in `files`.
    pub unusual: Vec<String>,
}

/// What `branch` of the remote changes since it left `base` (`git diff base...branch`); `None`
/// when the remote has no `branch`. Both are fetched whole into a scratch repository.
pub fn branch_change(remote: &Remote, base: &str, branch: &str) -> Result<Option<BranchChange>, GitError> {
    let endpoint = Endpoint::parse(&remote.url)?;
    let (_dir, repo) = scratch_repository()?;
    let session = Session::new(remote, &endpoint);
    let mut options = session.fetch_options();
    let (base_ref, branch_ref) = (format!("{FETCHED}-base"), format!("{FETCHED}-branch"));
    let refspecs =
        [format!("+{}:{base_ref}", super::branch_ref(base)?), format!("+{}:{branch_ref}", super::branch_ref(branch)?)];
    let mut origin = repo.remote_anonymous(&remote.url)?;
    origin.fetch(&refspecs, Some(&mut options), None).map_err(|error| session.finish(error))?;
    drop(options);
    let target = |name: &str| repo.find_reference(name).ok().and_then(|reference| reference.target());
    let Some(head) = target(&branch_ref) else { return Ok(None) };
    let Some(base_head) = target(&base_ref) else {
        return Err(GitError::Other(git2::Error::from_str(&format!("the remote has no branch {base}"))));
    };
    let merge_base = repo.merge_base(base_head, head)?;
    let (old_tree, new_tree) = (repo.find_commit(merge_base)?.tree()?, repo.find_commit(head)?.tree()?);
    let diff = repo.diff_tree_to_tree(Some(&old_tree), Some(&new_tree), None)?;
    let (mut files, mut unusual) = (Vec::new(), Vec::new());
    for delta in diff.deltas() {
        let file = if delta.status() == git2::Delta::Deleted { delta.old_file() } else { delta.new_file() };
        let Some(path) = file.path().map(|path| path.to_string_lossy().into_owned()) else { continue };
        let contents = match delta.status() {
            git2::Delta::Deleted => None,
            _ if file.mode() != git2::FileMode::Blob => {
                unusual.push(path);
                continue;
            }
            _ => Some(repo.find_blob(file.id())?.content().to_vec()),
        };
        files.push((path, contents));
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    unusual.sort();
    let (head, merge_base) = (head.to_string(), merge_base.to_string());
    Ok(Some(BranchChange { head, merge_base, files, unusual }))
}

/// An empty bare repository in a temp dir, deleted when the dir is dropped: what a fetch lands in.
fn scratch_repository() -> Result<(crate::interrupt::ScratchDir, Repository), GitError> {
    let dir = crate::interrupt::ScratchDir::new("kubectl-gitops-log-")
        .map_err(|source| GitError::Io { context: "cannot create a temp dir for the fetch".into(), source })?;
    let repo = Repository::init_bare(dir.path())?;
    Ok((dir, repo))
}

/// The id of the tree or blob at `path` in a commit's tree, `None` when there is none.
fn entry_id(commit: &Commit<'_>, path: &str) -> Option<Oid> {
    commit.tree().ok()?.get_path(std::path::Path::new(path)).ok().map(|entry| entry.id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::{Auth, Checkout, Signature};

    /// A bare repository to push to, a checkout of it and an author.
    fn empty_repo() -> (tempfile::TempDir, Remote, Signature, Checkout) {
        let dir = tempfile::tempdir().unwrap();
        Repository::init_bare(dir.path()).unwrap();
        let remote = Remote { url: format!("file://{}", dir.path().display()), auth: Auth::Anonymous };
        let author = Signature { name: "Jane Doe".into(), email: "jane@example.invalid".into() };
        let checkout = Checkout::clone(&remote, "main").unwrap();
        (dir, remote, author, checkout)
    }

    #[test]
    fn a_branch_change_is_what_it_changes_since_it_left_the_base() {
        let (_dir, remote, author, mut checkout) = empty_repo();
        checkout.write("kept.yaml", b"k: 1\n").unwrap();
        checkout.write("gone.yaml", b"g: 1\n").unwrap();
        checkout.write("edited.yaml", b"e: 1\n").unwrap();
        let base = checkout.commit("base", &author).unwrap().unwrap();
        checkout.push().unwrap();
        checkout.remove("gone.yaml").unwrap();
        checkout.write("edited.yaml", b"e: 2\n").unwrap();
        checkout.write("new/added.yaml", b"a: 1\n").unwrap();
        let head = checkout.commit("change", &author).unwrap().unwrap();
        checkout.push_to_branch("gitops/change").unwrap();
        // The base moves on after the branch left it: not part of the branch's change.
        let mut main = Checkout::clone(&remote, "main").unwrap();
        main.write("later.yaml", b"l: 1\n").unwrap();
        main.commit("later", &author).unwrap();
        main.push().unwrap();

        let change = branch_change(&remote, "main", "gitops/change").unwrap().unwrap();
        assert_eq!((change.head.as_str(), change.merge_base.as_str()), (head.as_str(), base.as_str()));
        assert_eq!(
            change.files,
            [
                ("edited.yaml".to_string(), Some(b"e: 2\n".to_vec())),
                ("gone.yaml".to_string(), None),
                ("new/added.yaml".to_string(), Some(b"a: 1\n".to_vec())),
            ]
        );
        assert_eq!(branch_change(&remote, "main", "gitops/absent").unwrap(), None);
    }

    #[test]
    fn a_branch_that_makes_more_than_a_plain_file_says_so() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, remote, author, mut checkout) = empty_repo();
        checkout.write("plain.yaml", b"p: 1\n").unwrap();
        checkout.commit("base", &author).unwrap();
        checkout.push().unwrap();
        checkout.write("run.sh", b"echo hi\n").unwrap();
        let executable = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(checkout.root().join("run.sh"), executable.clone()).unwrap();
        std::fs::set_permissions(checkout.root().join("plain.yaml"), executable).unwrap();
        checkout.write("new.yaml", b"n: 1\n").unwrap();
        checkout.commit("change", &author).unwrap();
        checkout.push_to_branch("gitops/change").unwrap();

        let change = branch_change(&remote, "main", "gitops/change").unwrap().unwrap();
        assert_eq!(change.files, [("new.yaml".to_string(), Some(b"n: 1\n".to_vec()))]);
        assert_eq!(change.unusual, ["plain.yaml", "run.sh"], "a mode change too");
    }

    #[test]
    fn reads_the_tip_and_an_older_commit_of_a_branch() {
        let (_dir, remote, author, mut checkout) = empty_repo();
        checkout.write("a.yaml", b"a: 1\n").unwrap();
        let first = checkout.commit("Add a\n\nwith a body", &author).unwrap().unwrap();
        checkout.write("b.yaml", b"b: 1\n").unwrap();
        let second = checkout.commit("Add b", &author).unwrap().unwrap();
        checkout.push().unwrap();

        let tip = show_commit(&remote, Some("refs/heads/main"), &second).unwrap();
        assert_eq!(
            (tip.author.as_str(), tip.email.as_str(), tip.subject.as_str()),
            ("Jane Doe", "jane@example.invalid", "Add b")
        );
        assert!(tip.time.ends_with('Z'), "{tip:?}");
        let older = show_commit(&remote, Some("refs/heads/main"), &first).unwrap();
        assert_eq!(older.subject, "Add a");
        let missing = show_commit(&remote, Some("refs/heads/main"), &"0".repeat(40));
        assert!(missing.is_err());
    }

    #[test]
    fn logs_a_branch_with_the_commits_that_changed_a_path_and_reverts() {
        let (_dir, remote, author, mut checkout) = empty_repo();
        checkout.write("apps/web/a.yaml", b"a: 1\n").unwrap();
        let first = checkout.commit("Add web", &author).unwrap().unwrap();
        checkout.write("README.md", b"hello\n").unwrap();
        checkout.commit("Readme", &author).unwrap().unwrap();
        checkout.write("apps/web/a.yaml", b"a: 2\n").unwrap();
        let message = format!("Revert \"Add web\"\n\nThis reverts commit {first}.\n");
        let third = checkout.commit(&message, &author).unwrap().unwrap();
        checkout.push().unwrap();

        let log = log(&remote, "refs/heads/main", &["./apps/web".into()]).unwrap();
        let seen: Vec<(&str, bool)> =
            log.iter().map(|commit| (commit.info.subject.as_str(), commit.touches_path)).collect();
        assert_eq!(seen, [("Revert \"Add web\"", true), ("Readme", false), ("Add web", true)]);
        assert_eq!(log[0].info.sha, third);
        assert_eq!(log[0].info.reverts.as_deref(), Some(first.as_str()));
        assert_eq!(log[1].parents, [first.as_str()]);
        assert!(log[2].parents.is_empty());
        let whole = super::log(&remote, "refs/heads/main", &["./".into()]).unwrap();
        assert!(whole.iter().all(|commit| commit.touches_path));
        let either = super::log(&remote, "refs/heads/main", &["apps/db".into(), "README.md".into()]).unwrap();
        let touched: Vec<bool> = either.iter().map(|commit| commit.touches_path).collect();
        assert_eq!(touched, [false, true, true], "the root commit counts as touching");
    }
}
