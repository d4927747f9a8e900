//! Cloning, committing to and pushing the config repo, with libgit2 (never the git CLI).
//!
//! `install` and `app` change files in the config repo Flux pulls from. They [`Checkout::clone`]
//! one branch into a temp dir, [`Checkout::write`] and [`Checkout::remove`] files,
//! [`Checkout::commit`] and [`Checkout::push`]. When someone else pushed in between, the push
//! fails with [`GitError::NonFastForward`]; [`Checkout::reset_to_remote`] moves to their head,
//! where `crate::publish` plans the change again (nothing is replayed or rebased).
//!
//! We link libgit2 rather than run `git` so that nothing depends on the user's git install,
//! ssh config, agent or `~/.ssh/known_hosts`: the credentials and host keys are exactly the
//! ones given in [`Remote`], which are also the ones Flux is given. SSH host keys are checked
//! against [`Auth::Ssh::known_hosts`] (see `known_hosts.rs`), never accepted blindly.
//!
//! Errors are [`GitError`], self-contained; the command layer maps them to exit code 4
//! (`ExitCode::Git`) and prints [`GitError::hint`].

pub mod known_hosts;
pub mod log;
mod session;
pub mod workspace;

#[cfg(test)]
pub(crate) mod tests;

use std::cell::{Cell, RefCell};
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

pub use self::session::limit_network;
use self::session::{Endpoint, Session, redact_url};
pub use self::workspace::{Workspace, network};
pub use crate::git_error::GitError;

use git2::{
    Direction, ErrorCode, IndexAddOption, Oid, PushOptions, RemoteRedirect, Repository, build::CheckoutBuilder,
};

/// What a branch of the remote holds, compared with the commit we would push to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteBranch {
    /// No such branch.
    Absent,
    /// The same change (the same tree on the same parent).
    Holds,
    /// One commit of ours (the same message), on an older base or with older contents: ours to
    /// replace.
    Stale,
    /// Commits someone else added, or another change: not ours to overwrite.
    Other,
}

/// What a push of the checked-out branch did to the remote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// The remote branch moved to our head.
    Updated,
    /// The remote branch already was at our head: someone pushed the very same commit first.
    AlreadyThere,
    /// There was no commit to push.
    Nothing,
}

/// The remote name inside our checkouts.
const ORIGIN: &str = "origin";
/// The local branch of a checkout of a tag (nothing is pushed from it).
const SNAPSHOT_BRANCH: &str = "kubectl-gitops-snapshot";
/// How often libgit2 may ask for the same kind of credential in one operation. It asks again
/// after every rejection and would loop forever on a wrong key or password.
const MAX_CREDENTIAL_TRIES: u32 = 1;

/// How we authenticate to the git server.
///
/// `Debug` never shows the private key or the password.
#[derive(Clone)]
pub enum Auth {
    /// SSH with a private key, the host key checked against `known_hosts`.
    Ssh {
        /// The SSH user; default: the user in the URL, else `git`.
        user: Option<String>,
        /// The private key in OpenSSH or PEM text, kept in memory (never written to disk or logs).
        private_key: String,
        /// `known_hosts` lines trusted for this server (`host`, `[host]:port`, comma lists).
        known_hosts: String,
    },
    /// HTTP(S) basic auth: a user name and a password or access token.
    Basic {
        /// The user name (for token auth, whatever the provider expects, e.g. `git`).
        username: String,
        /// The password or token.
        password: String,
    },
    /// No credentials (public repositories, `file://`).
    Anonymous,
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Ssh { user, known_hosts, .. } => f
                .debug_struct("Ssh")
                .field("user", user)
                .field("private_key", &"<redacted>")
                .field("known_hosts", &format!("{} lines", known_hosts.lines().count()))
                .finish(),
            Auth::Basic { username, .. } => {
                f.debug_struct("Basic").field("username", username).field("password", &"<redacted>").finish()
            }
            Auth::Anonymous => f.write_str("Anonymous"),
        }
    }
}

/// A git server URL and how to authenticate to it.
#[derive(Clone)]
pub struct Remote {
    /// `ssh://user@host[:port]/path`, `user@host:path`, `https://…`, `http://…` or `file://…`.
    pub url: String,
    /// Credentials for `url`.
    pub auth: Auth,
}

impl fmt::Debug for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Remote").field("url", &redact_url(&self.url)).field("auth", &self.auth).finish()
    }
}

/// Author (and committer) of the commits we make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Display name, e.g. `kubectl-gitops`.
    pub name: String,
    /// E-mail address.
    pub email: String,
}

/// Runs libgit2 work that owns what it needs off the async runtime's threads (`spawn_blocking`),
/// giving up after `timeout`: libgit2 blocks on disk and network, and must not hold a tokio
/// worker. A [`Workspace`] runs its checkout's network operations through it.
pub async fn off_runtime<T: Send + 'static, E: From<GitError> + Send + 'static>(
    timeout: Duration,
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, E> {
    match tokio::time::timeout(timeout, tokio::task::spawn_blocking(work)).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(failed)) => {
            Err(GitError::Other(git2::Error::from_str(&format!("the git task failed: {failed}"))).into())
        }
        Err(_) => Err(GitError::TimedOut { what: "git".into(), after: crate::duration::format(timeout) }.into()),
    }
}

/// One branch of a remote repository, checked out in a temp dir that is deleted on drop.
pub struct Checkout {
    // Declared before `dir` so that libgit2 lets go of the files before the dir is deleted.
    repo: Repository,
    dir: crate::interrupt::ScratchDir,
    remote: Remote,
    branch: String,
    /// The remote commit our local commits are based on; `None` when the remote branch did
    /// not exist.
    base: Option<Oid>,
}

impl fmt::Debug for Checkout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checkout")
            .field("root", &self.dir.path())
            .field("remote", &self.remote)
            .field("branch", &self.branch)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Checkout {
    /// Fetches `branch` of the remote into a fresh temp dir and checks it out.
    ///
    /// An empty repository (no commits), or one where `branch` does not exist, gives an
    /// unborn branch: [`Checkout::head`] is `None` and the first commit has no parent. We
    /// deliberately do not start from the default branch: the branch Flux follows must hold
    /// only what we put there, and inheriting another branch's files would surprise.
    pub fn clone(remote: &Remote, branch: &str) -> Result<Checkout, GitError> {
        let mut checkout = Checkout::unborn(remote, branch)?;
        let base = checkout.fetch(&Endpoint::parse(&remote.url)?)?;
        checkout.reset_to(base)?;
        checkout.base = base;
        Ok(checkout)
    }

    /// A fresh repository in a temp dir with `remote` as its origin, on the unborn `branch`.
    fn unborn(remote: &Remote, branch: &str) -> Result<Checkout, GitError> {
        let local_ref = branch_ref(branch)?;
        Endpoint::parse(&remote.url)?;
        let dir = crate::interrupt::ScratchDir::new("kubectl-gitops-")
            .map_err(|source| GitError::Io { context: "cannot create a temp dir for the checkout".into(), source })?;
        let repo = Repository::init(dir.path())?;
        repo.remote(ORIGIN, &remote.url)?;
        // Unborn until we know the remote has the branch.
        repo.set_head(&local_ref)?;
        Ok(Checkout { repo, dir, remote: remote.clone(), branch: branch.to_string(), base: None })
    }

    /// Fetches tag `tag` of the remote into a fresh temp dir and checks out the commit it names
    /// (an annotated tag peeled), on a local branch of our own: a read-only look at a release, to
    /// compare what a source moved to it would apply. A tag the remote does not have is
    /// [`GitError::NotFound`].
    pub fn clone_tag(remote: &Remote, tag: &str) -> Result<Checkout, GitError> {
        let tag_ref = format!("refs/tags/{tag}");
        if tag.is_empty() || tag.starts_with('-') || !git2::Reference::is_valid_name(&tag_ref) {
            return Err(GitError::InvalidTag { tag: tag.to_string() });
        }
        let mut checkout = Checkout::unborn(remote, SNAPSHOT_BRANCH)?;
        let tracking = format!("refs/remotes/{ORIGIN}/tags/{tag}");
        let commit = checkout.fetch_ref(&Endpoint::parse(&remote.url)?, &tag_ref, &tracking)?;
        let Some(commit) = commit else {
            return Err(GitError::NotFound {
                url: redact_url(&remote.url),
                reason: Some(format!("it has no tag {tag}")),
            });
        };
        let commit = checkout.repo.find_object(commit, None)?.peel_to_commit()?.id();
        checkout.reset_to(Some(commit))?;
        checkout.base = Some(commit);
        Ok(checkout)
    }

    /// The work tree's root directory.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The branch checked out.
    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// The commit hash (hex) of the local branch, `None` while it is unborn.
    pub fn head(&self) -> Option<String> {
        self.head_oid().map(|oid| oid.to_string())
    }

    /// Whether `commit` is `ancestor` or comes after it in this clone's history; `None` when
    /// either is not a full hash of a commit the clone has.
    pub fn descends_from(&self, commit: &str, ancestor: &str) -> Option<bool> {
        let (commit, ancestor) = (Oid::from_str(commit).ok()?, Oid::from_str(ancestor).ok()?);
        self.repo.find_commit(commit).ok()?;
        self.repo.find_commit(ancestor).ok()?;
        if commit == ancestor {
            return Some(true);
        }
        self.repo.graph_descendant_of(commit, ancestor).ok()
    }

    /// A file of the work tree (including uncommitted writes); `None` when it does not exist.
    pub fn read(&self, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        let full = self.checked_path(path)?;
        match std::fs::read(&full) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(GitError::Io { context: format!("cannot read {path} in the checkout"), source }),
        }
    }

    /// Writes a file, creating its directories. The path is relative to the root, `/`-separated;
    /// absolute paths, `..`, `.git` and paths through symbolic links are refused.
    pub fn write(&mut self, path: &str, contents: &[u8]) -> Result<(), GitError> {
        let full = self.checked_path(path)?;
        write_file(&full, path, contents)
    }

    /// Removes a file or a whole directory; removing what does not exist is not an error.
    pub fn remove(&mut self, path: &str) -> Result<(), GitError> {
        let full = self.checked_path(path)?;
        remove_path(&full, path)
    }

    /// Stages every change (new, modified and removed files) and commits it on the branch.
    ///
    /// Returns the new commit's hash, or `None` without committing when nothing changed, so
    /// that running a command twice does not make empty commits.
    pub fn commit(&mut self, message: &str, author: &Signature) -> Result<Option<String>, GitError> {
        Ok(self.commit_staged(message, author)?.map(|oid| oid.to_string()))
    }

    /// Pushes the branch. Nothing to push (no commit since clone or the last push) is a no-op.
    ///
    /// Fails with [`GitError::NonFastForward`] when the remote branch moved meanwhile; then
    /// [`Checkout::reset_to_remote`], make the change again and push again (`crate::publish`).
    ///
    /// Two writers that make the same change on the same head at the same second make the very
    /// same commit (same tree, parent, author, time and message); the second push then moves
    /// nothing, and says so with [`Pushed::AlreadyThere`].
    pub fn push(&mut self) -> Result<Pushed, GitError> {
        let Some(head) = self.head_oid() else {
            return Ok(Pushed::Nothing);
        };
        if Some(head) == self.base {
            return Ok(Pushed::Nothing);
        }
        let refspec = format!("{0}:{0}", branch_ref(&self.branch)?);
        let pushed = self.push_refspec(&refspec, &self.branch)?;
        self.base = Some(head);
        Ok(pushed)
    }

    /// Pushes the local branch to another branch of the remote, replacing whatever that branch
    /// held (a pull request branch of ours, pushed again on a re-run). The checked-out branch
    /// of the remote is not touched.
    pub fn push_to_branch(&self, branch: &str) -> Result<(), GitError> {
        if self.head_oid().is_none() {
            return Ok(());
        }
        let refspec = format!("+{}:{}", branch_ref(&self.branch)?, branch_ref(branch)?);
        self.push_refspec(&refspec, branch).map(drop)
    }

    /// Deletes a branch of the remote (one we pushed and must not leave behind).
    pub fn delete_remote_branch(&self, branch: &str) -> Result<(), GitError> {
        self.push_refspec(&format!(":{}", branch_ref(branch)?), branch).map(drop)
    }

    /// Runs one push and turns libgit2's ways of refusing into [`GitError`]s naming `branch`.
    fn push_refspec(&self, refspec: &str, branch: &str) -> Result<Pushed, GitError> {
        let endpoint = Endpoint::parse(&self.remote.url)?;
        let session = Session::new(&self.remote, &endpoint);
        // libgit2 reports per-ref rejections (hooks, a ref that moved) through this callback
        // and still returns Ok from push(), so we must look.
        let refused: RefCell<Option<String>> = RefCell::new(None);
        let mut callbacks = session.callbacks();
        callbacks.push_update_reference(|_refname, status| {
            if let Some(status) = status {
                *refused.borrow_mut() = Some(status.to_string());
            }
            Ok(())
        });
        // The remote's value of each ref before the push: when it already is ours, nothing moved.
        let already_there = Cell::new(false);
        callbacks.push_negotiation(|updates| {
            // The last moment a push can be called off: nothing is sent yet.
            session.stop_check()?;
            already_there.set(!updates.is_empty() && updates.iter().all(|update| update.src() == update.dst()));
            Ok(())
        });
        let mut options = PushOptions::new();
        options.remote_callbacks(callbacks).follow_redirects(RemoteRedirect::None);
        let mut origin = self.repo.find_remote(ORIGIN)?;
        let result = origin.push(&[refspec], Some(&mut options));
        drop(options);
        match result {
            // libgit2 checks fast-forward itself before sending anything.
            Err(error) if error.code() == ErrorCode::NotFastForward => {
                return Err(GitError::NonFastForward { branch: branch.to_string() });
            }
            Err(error) => return Err(session.finish(error)),
            Ok(()) => {}
        }
        if let Some(reason) = refused.into_inner() {
            let lower = reason.to_ascii_lowercase();
            // A server that moved between our fetch and its ref update says one of these
            // ("failed to update ref": git receive-pack losing the ref lock to a concurrent push).
            let moved = [
                "non-fast-forward",
                "fetch first",
                "stale info",
                "cannot lock ref",
                "but expected",
                "failed to update ref",
            ];
            return Err(if moved.iter().any(|m| lower.contains(m)) {
                GitError::NonFastForward { branch: branch.to_string() }
            } else {
                GitError::Rejected { branch: branch.to_string(), reason: session.scrub(&reason) }
            });
        }
        Ok(if already_there.get() { Pushed::AlreadyThere } else { Pushed::Updated })
    }

    /// Drops the local commits and changes and moves to the remote branch's current head: after
    /// a refused push, to build the change again on what others pushed.
    pub fn reset_to_remote(&mut self) -> Result<(), GitError> {
        let head = self.fetch(&Endpoint::parse(&self.remote.url)?)?;
        self.reset_to(head)?;
        self.base = head;
        Ok(())
    }

    /// Moves the local branch to `commit`, which the fetch brought (an ancestor of the remote
    /// branch): to plan on the commit a pull request branch left it at.
    pub fn reset_to_commit(&mut self, commit: &str) -> Result<(), GitError> {
        let oid = Oid::from_str(commit)?;
        self.reset_to(Some(oid))?;
        self.base = Some(oid);
        Ok(())
    }

    fn head_oid(&self) -> Option<Oid> {
        self.repo.head().ok().and_then(|head| head.target())
    }

    /// Fetches the checked-out branch into `refs/remotes/origin/<branch>`; returns the remote head.
    fn fetch(&self, endpoint: &Endpoint) -> Result<Option<Oid>, GitError> {
        self.fetch_branch(endpoint, &self.branch)
    }

    /// What `branch` of the remote holds, compared with the local branch's last commit (one
    /// fetch). A re-run of the same change pushes nothing when the branch holds it already (a new
    /// commit would start CI again and can dismiss reviews).
    pub fn remote_branch(&self, branch: &str) -> Result<RemoteBranch, GitError> {
        let Some(theirs) = self.fetch_branch(&Endpoint::parse(&self.remote.url)?, branch)? else {
            return Ok(RemoteBranch::Absent);
        };
        let Some(head) = self.head_oid() else { return Ok(RemoteBranch::Other) };
        let (ours, their_commit) = (self.repo.find_commit(head)?, self.repo.find_commit(theirs)?);
        if ours.tree_id() == their_commit.tree_id() && ours.parent_ids().eq(their_commit.parent_ids()) {
            return Ok(RemoteBranch::Holds);
        }
        // The branch's own commits: those our base does not have.
        let mut walk = self.repo.revwalk()?;
        walk.push(theirs)?;
        for parent in ours.parent_ids() {
            walk.hide(parent)?;
        }
        let own: Vec<Oid> = walk.collect::<Result<_, _>>()?;
        let only_ours = match own.as_slice() {
            [one] => self.repo.find_commit(*one)?.message_bytes() == ours.message_bytes(),
            _ => false,
        };
        Ok(if only_ours { RemoteBranch::Stale } else { RemoteBranch::Other })
    }

    /// Fetches a branch of the remote into `refs/remotes/origin/<branch>`; returns its head.
    fn fetch_branch(&self, endpoint: &Endpoint, branch: &str) -> Result<Option<Oid>, GitError> {
        self.fetch_ref(endpoint, &branch_ref(branch)?, &format!("refs/remotes/{ORIGIN}/{branch}"))
    }

    /// Fetches the remote's ref `remote_ref` into `tracking`; returns what it points at, `None`
    /// when the remote has no such ref.
    fn fetch_ref(&self, endpoint: &Endpoint, remote_ref: &str, tracking: &str) -> Result<Option<Oid>, GitError> {
        // libgit2 neither fails nor prunes when the ref is missing remotely: clear the tracking
        // ref first so that its absence afterwards means "no such ref".
        if let Ok(mut reference) = self.repo.find_reference(tracking) {
            reference.delete()?;
        }
        let session = Session::new(&self.remote, endpoint);
        let mut options = session.fetch_options();
        let refspec = format!("+{remote_ref}:{tracking}");
        let mut origin = self.repo.find_remote(ORIGIN)?;
        origin.fetch(&[refspec.as_str()], Some(&mut options), None).map_err(|error| session.finish(error))?;
        drop(options);
        match self.repo.find_reference(tracking) {
            Ok(reference) => Ok(reference.target()),
            Err(error) if error.code() == ErrorCode::NotFound => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// Points the branch at `target` (or makes it unborn) and makes the work tree and index
    /// match it exactly, dropping local files.
    fn reset_to(&self, target: Option<Oid>) -> Result<(), GitError> {
        let local_ref = branch_ref(&self.branch)?;
        match target {
            Some(oid) => {
                self.repo.reference(&local_ref, oid, true, "kubectl-gitops: reset to remote")?;
                self.repo.set_head(&local_ref)?;
                self.repo
                    .checkout_head(Some(CheckoutBuilder::new().force().remove_untracked(true).remove_ignored(true)))?;
            }
            None => {
                if let Ok(mut reference) = self.repo.find_reference(&local_ref) {
                    reference.delete()?;
                }
                self.repo.set_head(&local_ref)?;
                let mut index = self.repo.index()?;
                index.clear()?;
                index.write()?;
                let entries = std::fs::read_dir(self.root())
                    .map_err(|source| GitError::Io { context: "cannot list the checkout".into(), source })?;
                for entry in entries.flatten() {
                    if entry.file_name() != ".git" {
                        remove_path(&entry.path(), &entry.file_name().to_string_lossy())?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Stages the whole work tree into the index (additions, changes and removals).
    fn stage(&self) -> Result<git2::Index, GitError> {
        let mut index = self.repo.index()?;
        // FORCE: a file we were asked to write is committed even if a .gitignore matches it;
        // the work tree holds nothing but the checkout and our writes.
        index.add_all(["*"], IndexAddOption::DEFAULT | IndexAddOption::FORCE, None)?;
        index.update_all(["*"], None)?;
        index.write()?;
        Ok(index)
    }

    fn commit_staged(&self, message: &str, author: &Signature) -> Result<Option<Oid>, GitError> {
        let mut index = self.stage()?;
        let parent = match self.head_oid() {
            Some(oid) => Some(self.repo.find_commit(oid)?),
            None => None,
        };
        let tree_id = index.write_tree()?;
        let unchanged = match &parent {
            Some(parent) => parent.tree_id() == tree_id,
            // No first commit of an empty tree: an empty branch is not worth a commit.
            None => index.is_empty(),
        };
        if unchanged {
            return Ok(None);
        }
        let tree = self.repo.find_tree(tree_id)?;
        let signature = git2::Signature::now(&author.name, &author.email)?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let oid = self.repo.commit(Some("HEAD"), &signature, &signature, message, &tree, &parents)?;
        Ok(Some(oid))
    }

    /// The absolute path of `path` in the work tree, after refusing anything that could
    /// leave it: absolute paths, `..`, `.git` and symbolic links (a cloned repo could hold a
    /// link to `/`).
    fn checked_path(&self, path: &str) -> Result<PathBuf, GitError> {
        let invalid = |reason| GitError::InvalidPath { path: path.to_string(), reason };
        if path.contains('\0') {
            return Err(invalid("it contains a NUL byte"));
        }
        // Git on Windows reads `\` as a separator; refusing it keeps repos portable.
        if path.contains('\\') {
            return Err(invalid("use `/` as the separator"));
        }
        let mut full = self.root().to_path_buf();
        let mut named = false;
        for component in Path::new(path).components() {
            match component {
                Component::Prefix(_) | Component::RootDir => {
                    return Err(invalid("it is absolute; give it relative to the repository root"));
                }
                Component::ParentDir => return Err(invalid("`..` would leave the repository")),
                Component::CurDir => {}
                Component::Normal(name) => {
                    if name.eq_ignore_ascii_case(".git") {
                        return Err(invalid("it is inside .git"));
                    }
                    full.push(name);
                    if std::fs::symlink_metadata(&full).is_ok_and(|m| m.file_type().is_symlink()) {
                        return Err(invalid("it goes through a symbolic link"));
                    }
                    named = true;
                }
            }
        }
        if !named {
            return Err(invalid("it names no file"));
        }
        Ok(full)
    }
}

/// The root of the git work tree that holds `dir`, and the URLs of its remotes: what tells
/// whether a directory is a checkout of some repository. Nothing is fetched.
pub fn work_tree_of(dir: &Path) -> Result<(PathBuf, Vec<String>), GitError> {
    let repo = Repository::discover(dir)?;
    let root = repo.workdir().ok_or_else(|| git2::Error::from_str("a bare repository has no work tree"))?;
    // libgit2 ends the path with a `/`; the path's components alone leave it out.
    let root: PathBuf = root.components().collect();
    let names = repo.remotes()?;
    let urls = names
        .iter()
        .filter_map(|name| name.ok().flatten())
        .filter_map(|name| repo.find_remote(name).ok().and_then(|remote| remote.url().ok().map(String::from)))
        .collect();
    Ok((root, urls))
}

/// Whether two URLs name the same repository: the same host and path, whatever the scheme, the
/// user, the port, a trailing `/` or `.git` (`git@host:org/repo` and `ssh://host/org/repo.git`).
pub fn same_repository(one: &str, other: &str) -> bool {
    fn key(url: &str) -> String {
        let (authority, path) = match url.split_once("://") {
            Some((_, rest)) => rest.split_once('/').unwrap_or((rest, "")),
            None => url.split_once(':').unwrap_or(("", url)),
        };
        let host = authority.rsplit('@').next().unwrap_or_default();
        let host = host.rsplit_once(':').map_or(host, |(host, _)| host).to_ascii_lowercase();
        let path = path.trim_start_matches('/').trim_end_matches('/');
        format!("{host}/{}", path.strip_suffix(".git").unwrap_or(path))
    }
    key(one) == key(other)
}

/// The commit hash (hex) of `branch` on the remote, `None` when the branch (or any commit)
/// does not exist; like `git ls-remote`, without cloning.
pub fn remote_head(remote: &Remote, branch: &str) -> Result<Option<String>, GitError> {
    let wanted = branch_ref(branch)?;
    let endpoint = Endpoint::parse(&remote.url)?;
    let session = Session::new(remote, &endpoint);
    let mut detached = git2::Remote::create_detached(remote.url.as_str())?;
    let connection = detached
        .connect_auth(Direction::Fetch, Some(session.callbacks()), None)
        .map_err(|error| session.finish(error))?;
    let heads = connection.list().map_err(|error| session.finish(error))?;
    Ok(heads.iter().find(|head| head.name() == wanted).map(|head| head.oid().to_string()))
}

/// `refs/heads/<branch>`, after checking the name.
fn branch_ref(branch: &str) -> Result<String, GitError> {
    let name = format!("refs/heads/{branch}");
    if branch.is_empty() || branch.starts_with('-') || !git2::Reference::is_valid_name(&name) {
        return Err(GitError::InvalidBranch { branch: branch.to_string() });
    }
    Ok(name)
}

fn write_file(full: &Path, path: &str, contents: &[u8]) -> Result<(), GitError> {
    let io = |source| GitError::Io { context: format!("cannot write {path} in the checkout"), source };
    if let Some(parent) = full.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    std::fs::write(full, contents).map_err(io)
}

fn remove_path(full: &Path, path: &str) -> Result<(), GitError> {
    let result = match std::fs::symlink_metadata(full) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(full),
        Ok(_) => std::fs::remove_file(full),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error),
    };
    result.map_err(|source| GitError::Io { context: format!("cannot remove {path} in the checkout"), source })
}
