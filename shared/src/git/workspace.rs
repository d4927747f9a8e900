//! The checkout that async code holds: a [`Checkout`] behind a lock, whose network operations
//! (the clone, a fetch, a push, an ls-remote of a branch) run on tokio's blocking pool, so that
//! no async worker waits on libgit2 and the futures that hold a [`Workspace`] are `Send`. Work on
//! the files of the work tree (read, write, commit: local disk) goes through
//! [`Workspace::files`], a lock guard that a `Send` future cannot hold across an await.
//!
//! Each network operation is bounded twice: inside, by libgit2's limits ([`super::limit_network`]);
//! outside, by [`super::off_runtime`] a little after the same whole-operation limit, should
//! libgit2 not return.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{Checkout, GitError, Pushed, Remote, RemoteBranch, off_runtime, session};

/// A checkout of one branch of a remote, for async code (see the module's documentation). Its
/// temp dir is deleted when the last handle is dropped (a network operation in flight holds one).
#[derive(Debug, Clone)]
pub struct Workspace {
    checkout: Arc<Mutex<Checkout>>,
}

impl From<Checkout> for Workspace {
    fn from(checkout: Checkout) -> Workspace {
        Workspace { checkout: Arc::new(Mutex::new(checkout)) }
    }
}

impl Workspace {
    /// [`Checkout::clone`], off the async threads.
    pub async fn clone(remote: &Remote, branch: &str) -> Result<Workspace, GitError> {
        let (remote, branch) = (remote.clone(), branch.to_string());
        Ok(network(move || Checkout::clone(&remote, &branch)).await?.into())
    }

    /// The checkout, for work on its files: reading, writing, committing, planning a change.
    pub fn files(&self) -> MutexGuard<'_, Checkout> {
        // A panic in a libgit2 call leaves nothing half-changed that the next call relies on.
        self.checkout.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// [`Checkout::push`].
    pub async fn push(&self) -> Result<Pushed, GitError> {
        self.over_network(Checkout::push).await
    }

    /// [`Checkout::push_to_branch`].
    pub async fn push_to_branch(&self, branch: &str) -> Result<(), GitError> {
        let branch = branch.to_string();
        self.over_network(move |checkout| checkout.push_to_branch(&branch)).await
    }

    /// [`Checkout::delete_remote_branch`].
    pub async fn delete_remote_branch(&self, branch: &str) -> Result<(), GitError> {
        let branch = branch.to_string();
        self.over_network(move |checkout| checkout.delete_remote_branch(&branch)).await
    }

    /// [`Checkout::remote_branch`].
    pub async fn remote_branch(&self, branch: &str) -> Result<RemoteBranch, GitError> {
        let branch = branch.to_string();
        self.over_network(move |checkout| checkout.remote_branch(&branch)).await
    }

    /// [`Checkout::reset_to_remote`].
    pub async fn reset_to_remote(&self) -> Result<(), GitError> {
        self.over_network(Checkout::reset_to_remote).await
    }

    /// Runs one network operation on the checkout, on the blocking pool.
    async fn over_network<T: Send + 'static>(
        &self,
        operation: impl FnOnce(&mut Checkout) -> Result<T, GitError> + Send + 'static,
    ) -> Result<T, GitError> {
        let checkout = Arc::clone(&self.checkout);
        network(move || operation(&mut checkout.lock().unwrap_or_else(PoisonError::into_inner))).await
    }
}

/// How much longer than libgit2's own limit the outside bound waits: libgit2's callbacks end an
/// operation at the limit with an error that names the server, and must be the ones to end it.
const BACKSTOP: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs libgit2 work that goes over the network off the async threads ([`off_runtime`]), bounded
/// by the whole-operation limit (plus [`BACKSTOP`], should libgit2 not return).
pub async fn network<T: Send + 'static, E: From<GitError> + Send + 'static>(
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, E> {
    off_runtime(session::operation_limit() + BACKSTOP, work).await
}

/// [`super::remote_head`], off the async threads.
pub async fn remote_head(remote: &Remote, branch: &str) -> Result<Option<String>, GitError> {
    let (remote, branch) = (remote.clone(), branch.to_string());
    network(move || super::remote_head(&remote, &branch)).await
}

/// [`super::log::branch_change`], off the async threads.
pub async fn branch_change(
    remote: &Remote,
    base: &str,
    branch: &str,
) -> Result<Option<super::log::BranchChange>, GitError> {
    let (remote, base, branch) = (remote.clone(), base.to_string(), branch.to_string());
    network(move || super::log::branch_change(&remote, &base, &branch)).await
}

/// Which commits a branch later moved to contain a commit of ours: asked of the remote (a clone
/// of the branch) once per commit seen, for a wait that finds a later commit applied than the one
/// it pushed (another push landed first, and Flux fetched both at once).
#[derive(Debug, Clone)]
pub struct LaterCommits {
    remote: Remote,
    branch: String,
    ours: String,
    /// The commits asked about so far, and the answer.
    known: Vec<(String, bool)>,
}

impl LaterCommits {
    /// Commits of `remote`'s `branch` after `ours` (a full hash).
    pub fn new(remote: &Remote, branch: &str, ours: &str) -> LaterCommits {
        LaterCommits { remote: remote.clone(), branch: branch.to_string(), ours: ours.to_string(), known: Vec::new() }
    }

    /// Whether `commit` (a full hash) is ours or one the branch moved to after it. A commit the
    /// branch does not hold (a force-push took ours away), or a remote that cannot be read, is
    /// not: the wait goes on, and ends at its timeout saying what was applied.
    pub async fn contain_ours(&mut self, commit: &str) -> bool {
        if commit == self.ours {
            return true;
        }
        if let Some((_, known)) = self.known.iter().find(|(seen, _)| seen == commit) {
            return *known;
        }
        let (remote, branch, ours, seen) =
            (self.remote.clone(), self.branch.clone(), self.ours.clone(), commit.to_string());
        let answer = network(move || -> Result<bool, GitError> {
            let checkout = Checkout::clone(&remote, &branch)?;
            Ok(checkout.descends_from(&seen, &ours) == Some(true))
        })
        .await
        .unwrap_or(false);
        self.known.push((commit.to_string(), answer));
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::tests::{author, bare};

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_workspace_clones_commits_and_pushes_off_the_async_threads() {
        let (_dir, remote) = bare();
        let workspace = Workspace::clone(&remote, "main").await.unwrap();
        let commit = {
            let mut files = workspace.files();
            files.write("a.yaml", b"a").unwrap();
            files.commit("add a", &author()).unwrap()
        };
        assert_eq!(workspace.push().await.unwrap(), Pushed::Updated);
        assert_eq!(remote_head(&remote, "main").await.unwrap(), commit);
        let change = branch_change(&remote, "main", "main").await.unwrap();
        assert!(change.is_some_and(|change| Some(change.head) == commit));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_later_commit_of_the_branch_holds_ours_and_one_beside_it_does_not() {
        let (_dir, remote) = bare();
        let workspace = Workspace::clone(&remote, "main").await.unwrap();
        let commit = |path: &str| {
            let mut files = workspace.files();
            files.write(path, b"x").unwrap();
            files.commit(path, &author()).unwrap().unwrap()
        };
        let before = commit("before.yaml");
        let ours = commit("ours.yaml");
        let after = commit("after.yaml");
        workspace.push().await.unwrap();
        let mut later = LaterCommits::new(&remote, "main", &ours);
        assert!(later.contain_ours(&ours).await);
        assert!(later.contain_ours(&after).await, "the branch moved on from ours");
        assert!(!later.contain_ours(&before).await, "a commit before ours does not hold it");
        assert!(!later.contain_ours(&"0".repeat(40)).await, "nor one the branch does not have");
        assert_eq!(later.known.len(), 3, "ours needs no clone; each other commit one");
    }

    /// The futures that hold a workspace across awaits can move between threads.
    #[test]
    fn workspace_futures_are_send() {
        fn send<T: Send>(_: &T) {}
        let remote = Remote { url: "file:///nowhere".into(), auth: crate::git::Auth::Anonymous };
        send(&Workspace::clone(&remote, "main"));
    }
}
