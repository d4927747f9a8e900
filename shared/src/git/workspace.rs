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

    /// The futures that hold a workspace across awaits can move between threads.
    #[test]
    fn workspace_futures_are_send() {
        fn send<T: Send>(_: &T) {}
        let remote = Remote { url: "file:///nowhere".into(), auth: crate::git::Auth::Anonymous };
        send(&Workspace::clone(&remote, "main"));
    }
}
