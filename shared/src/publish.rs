//! The one git write path: write the planned files into a checkout of the branch, commit, push;
//! when the push is refused because someone pushed meanwhile, wait a jittered, doubling backoff,
//! move to the new head, plan the files again from the same request on that head, and try again,
//! until the command's timeout. Nothing is replayed or rebased: a re-plan never overwrites what
//! the other push changed unless the request itself says so (install writes whole files).
//!
//! Every commit kubectl-gitops makes goes through here: the change engine's pushes and pull
//! request branches (`app`, `platform`, `tenant`, `monitoring`, `component`, `upgrade`, `app
//! rollback`), `install`'s, and a new repository's first commit ([`seed`]).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::git::{self, Checkout, GitError, Remote, RemoteBranch, Signature, Workspace};
use crate::output::Printer;
use crate::plan::FileChange;

/// The pause after the first refused push; it doubles after each further one, up to
/// [`MAX_PUSH_BACKOFF`], jittered so that writers refused together do not retry together
/// ([`crate::retry::Backoff`]).
const FIRST_PUSH_BACKOFF: Duration = Duration::from_millis(100);
const MAX_PUSH_BACKOFF: Duration = Duration::from_secs(5);

/// The commit author: `GIT_AUTHOR_NAME`/`GIT_AUTHOR_EMAIL` or `kubectl-gitops`.
pub fn author() -> Signature {
    Signature {
        name: std::env::var(crate::env::GIT_AUTHOR_NAME).unwrap_or_else(|_| "kubectl-gitops".to_string()),
        email: std::env::var(crate::env::GIT_AUTHOR_EMAIL)
            .unwrap_or_else(|_| "kubectl-gitops@users.noreply.local".to_string()),
    }
}

/// What a push to the branch came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    /// Our commit is on the branch (`None`: the checkout had nothing new to push).
    Commit(Option<String>),
    /// The branch already holds the change: someone else's push made it first (or made the very
    /// same commit), so nothing was pushed.
    MadeMeanwhile,
}

/// How a change is planned again on a new head: the files to write, from the same request.
pub type Replan<'a> = &'a (dyn Fn(&Checkout) -> Result<Vec<FileChange>> + Sync);

/// Commits `message` with the files `plan` gives for the checkout's head and pushes it to the
/// checkout's branch, re-planning on the new head after each refused push until `timeout`.
/// `first` are the files planned at clone time; `plan` is asked only after a refusal. An empty
/// plan means the branch already holds the change.
pub async fn commit_and_push(
    workspace: &Workspace,
    message: &str,
    author: &Signature,
    first: Vec<FileChange>,
    plan: Replan<'_>,
    timeout: Duration,
    printer: &Printer,
) -> Result<Published> {
    let mut backoff = crate::retry::Backoff::between(FIRST_PUSH_BACKOFF, MAX_PUSH_BACKOFF, Instant::now() + timeout);
    let mut files = first;
    let mut refused = 0;
    loop {
        if files.is_empty() {
            return Ok(Published::MadeMeanwhile);
        }
        let commit = {
            let mut checkout = workspace.files();
            write(&mut checkout, &files)?;
            checkout.commit(message, author)?
        };
        match workspace.push().await {
            Ok(git::Pushed::AlreadyThere) => return Ok(Published::MadeMeanwhile),
            Ok(git::Pushed::Updated | git::Pushed::Nothing) => return Ok(Published::Commit(commit)),
            Err(GitError::NonFastForward { branch }) => {
                refused += 1;
                let Some(pause) = backoff.pause(None) else {
                    return Err(Error::Remote {
                        message: format!(
                            "{branch} kept moving: {refused} pushes were refused within {}",
                            crate::duration::format(timeout)
                        ),
                        hint: Some("raise --timeout, or try again when fewer changes are being pushed".into()),
                    });
                };
                printer.detail(&format!("{branch} moved while we pushed; trying again on its new head"));
                tokio::time::sleep(pause).await;
                workspace.reset_to_remote().await?;
                files = plan(&workspace.files())?;
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// Commits `files` and pushes them to a branch of their own, `branch` (a pull request's), unless
/// the branch holds that change already; what the branch held before, and the commit made. A
/// branch with other changes is refused: nothing is pushed over it.
pub async fn commit_to_branch(
    workspace: &Workspace,
    branch: &str,
    message: &str,
    author: &Signature,
    files: &[FileChange],
) -> Result<(RemoteBranch, Option<String>)> {
    let commit = {
        let mut checkout = workspace.files();
        write(&mut checkout, files)?;
        checkout.commit(message, author)?
    };
    let existing = workspace.remote_branch(branch).await?;
    match existing {
        RemoteBranch::Holds => {}
        RemoteBranch::Absent | RemoteBranch::Stale => workspace.push_to_branch(branch).await?,
        RemoteBranch::Other => {
            return Err(Error::Remote {
                message: format!("branch {branch} exists with other changes than this one"),
                hint: Some(
                    "merge or close its pull request and delete the branch, then run this again (nothing was pushed)"
                        .into(),
                ),
            });
        }
    }
    Ok((existing, commit))
}

/// The first commit of a repository made a moment ago (`app add --create-repo`): `files`, as
/// bytes (a template's may be any file), pushed to `branch` of `target`. Nobody else can have
/// pushed to it yet, so there is nothing to plan again.
pub async fn seed(target: Remote, branch: &str, files: BTreeMap<String, Vec<u8>>, message: String) -> Result<()> {
    let branch = branch.to_string();
    git::network(move || -> Result<()> {
        let mut checkout = Checkout::clone(&target, &branch)?;
        for (path, contents) in &files {
            checkout.write(path, contents)?;
        }
        checkout.commit(&message, &author())?;
        checkout.push()?;
        Ok(())
    })
    .await
}

/// Writes (or removes) the files in the checkout's work tree.
pub fn write(checkout: &mut Checkout, files: &[FileChange]) -> Result<()> {
    for file in files {
        match &file.after {
            Some(contents) => checkout.write(&file.path, contents.as_bytes())?,
            None => checkout.remove(&file.path)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::git::tests::{author, bare, read_text};
    use crate::git::{Remote, remote_head};
    use crate::testing::quiet;

    /// Pushes one commit writing `path` from a clone of its own: someone else's push.
    fn push_theirs(remote: &Remote, path: &str) -> String {
        let mut theirs = Checkout::clone(remote, "main").unwrap();
        theirs.write(path, path.as_bytes()).unwrap();
        let commit = theirs.commit(&format!("theirs: {path}"), &author()).unwrap().unwrap();
        theirs.push().unwrap();
        commit
    }

    /// The plan of a request that wants these files, on whatever head the checkout is at.
    fn wanting(files: &[(&str, &str)]) -> impl Fn(&Checkout) -> Result<Vec<FileChange>> + Sync {
        let wanted: BTreeMap<String, String> =
            files.iter().map(|(path, contents)| (path.to_string(), contents.to_string())).collect();
        move |checkout: &Checkout| crate::plan::diff(checkout, &wanted, &[])
    }

    #[tokio::test]
    async fn a_refused_push_is_planned_again_on_the_new_head_and_both_changes_land() {
        let (dir, remote) = bare();
        push_theirs(&remote, "README.md");
        let ours = Workspace::clone(&remote, "main").await.unwrap();
        let plan = wanting(&[("ours.yaml", "ours")]);
        let first = plan(&ours.files()).unwrap();
        let their_commit = push_theirs(&remote, "theirs.yaml");

        let published =
            commit_and_push(&ours, "ours", &author(), first, &plan, Duration::from_secs(10), &quiet()).await;
        let Ok(Published::Commit(Some(commit))) = published else { panic!("{published:?}") };
        assert_eq!(remote_head(&remote, "main").unwrap(), Some(commit.clone()));
        let check = Checkout::clone(&remote, "main").unwrap();
        assert_eq!(read_text(&check, "theirs.yaml").as_deref(), Some("theirs.yaml"));
        assert_eq!(read_text(&check, "ours.yaml").as_deref(), Some("ours"));
        // One commit of ours, on top of theirs: nothing replayed.
        let bare = git2::Repository::open(dir.path()).unwrap();
        let head = bare.find_commit(git2::Oid::from_str(&commit).unwrap()).unwrap();
        assert_eq!(head.parent_id(0).unwrap().to_string(), their_commit);
    }

    #[tokio::test]
    async fn a_change_someone_else_pushed_first_is_made_meanwhile_and_nothing_is_pushed() {
        let (_dir, remote) = bare();
        push_theirs(&remote, "README.md");
        let ours = Workspace::clone(&remote, "main").await.unwrap();
        let plan = wanting(&[("same.yaml", "same.yaml")]);
        let first = plan(&ours.files()).unwrap();
        let their_commit = push_theirs(&remote, "same.yaml");

        let published =
            commit_and_push(&ours, "ours", &author(), first, &plan, Duration::from_secs(10), &quiet()).await;
        assert!(matches!(published, Ok(Published::MadeMeanwhile)), "{published:?}");
        assert_eq!(remote_head(&remote, "main").unwrap(), Some(their_commit));
    }

    #[tokio::test]
    async fn a_branch_that_keeps_moving_ends_at_the_timeout_with_a_hint() {
        let (_dir, remote) = bare();
        push_theirs(&remote, "README.md");
        let ours = Workspace::clone(&remote, "main").await.unwrap();
        let first = wanting(&[("ours.yaml", "ours")])(&ours.files()).unwrap();
        push_theirs(&remote, "theirs-0.yaml");
        // Every re-plan finds the branch moved again before our push.
        let moves = AtomicUsize::new(0);
        let busy = |checkout: &Checkout| {
            let moved = moves.fetch_add(1, Ordering::SeqCst) + 1;
            push_theirs(&remote, &format!("theirs-{moved}.yaml"));
            wanting(&[("ours.yaml", "ours")])(checkout)
        };
        let published =
            commit_and_push(&ours, "ours", &author(), first, &busy, Duration::from_millis(400), &quiet()).await;
        let Err(Error::Remote { message, hint }) = published else { panic!("{published:?}") };
        assert!(message.starts_with("main kept moving: "), "{message}");
        assert!(hint.is_some_and(|hint| hint.contains("--timeout")));
        assert!(moves.load(Ordering::SeqCst) >= 1);
        let check = Checkout::clone(&remote, "main").unwrap();
        assert_eq!(check.read("ours.yaml").unwrap(), None, "nothing of ours landed");
    }
}
