//! Carrying out a [`Plan`]: patch the cluster, then commit and push to the config branch through
//! [`crate::publish`] (on a concurrent push: fetch, re-plan on the new head, retry), or push a
//! branch and open or update
//! a pull request. Nothing is left half-done: a pull request that cannot be opened takes its
//! new branch away again.

use std::time::Duration;

use kube::api::{Api, DynamicObject};

use super::context::{ConfigRepo, HostedRepo};
use super::new_repo::{self, AppStep};
use super::plan::{Delivery, FileChange, Plan, Step, flux_objects};
use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::git::{RemoteBranch, Signature, Workspace};
use crate::output::Printer;
use crate::plan;
use crate::provider::{MergeMethod, PullRequest, PullRequestOutcome, PullState};
use crate::publish::{self, Published, Replan};

/// What execution did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The commit pushed to the config branch (direct delivery).
    pub commit: Option<String>,
    /// The pull request opened or updated.
    pub pull_request: Option<(PullRequest, PullRequestOutcome)>,
    /// A concurrent push made the same change first: re-planned on its head, nothing was left
    /// to commit.
    pub made_meanwhile: bool,
}

/// Where a plan's file changes go, resolved before it runs, so that delivery has nothing to
/// check again: the clone they are committed on, the repository it is a clone of (the config
/// repo, or an app's own for a rollback), and for a pull request the forge that opens it.
pub enum Route<'a> {
    /// The plan changes no file: only its cluster steps run.
    NoFiles,
    /// Committed on `checkout`, a clone of `repo.branch`, and pushed to it ([`publish`]).
    Push { checkout: Workspace, repo: &'a ConfigRepo },
    /// Committed on a branch of its own, pushed, and proposed into `repo.branch` on `hosted`.
    PullRequest { checkout: Workspace, repo: &'a ConfigRepo, hosted: &'a HostedRepo },
}

impl<'a> Route<'a> {
    /// The route of `delivery` into `repo` from `checkout` (a clone of its branch); a plan of
    /// `files` needs both, and a pull request the repository's forge.
    pub fn of(
        delivery: &Delivery,
        files: &[FileChange],
        checkout: Option<Workspace>,
        repo: Option<&'a ConfigRepo>,
    ) -> Result<Route<'a>> {
        if files.is_empty() {
            return Ok(Route::NoFiles);
        }
        let (Some(checkout), Some(repo)) = (checkout, repo) else {
            return Err(Error::usage(
                "this change writes files, and there is no clone of the repository to write them to",
                "name the config repo (--config-repo URL) or run it against a cluster kubectl gitops installed",
            ));
        };
        match (delivery, &repo.hosted) {
            (Delivery::Push, _) => Ok(Route::Push { checkout, repo }),
            (Delivery::PullRequest { .. }, Some(hosted)) => Ok(Route::PullRequest { checkout, repo, hosted }),
            (Delivery::PullRequest { noun, .. }, None) => Err(Error::usage(
                format!("{} is on a plain git server: there is no {noun} to open", repo.remote.url),
                "push directly (without --pr)",
            )),
        }
    }
}

/// Runs the plan: the new repository first, the cluster patches, then the files by `route`.
/// `replan` recomputes the file changes on the new head after a concurrent push, from the same
/// request, so a retry never overwrites what the other push changed; refused pushes are retried
/// until `timeout` passes.
pub async fn execute(
    plan: &Plan,
    route: Route<'_>,
    author: &Signature,
    cluster: Option<&Cluster>,
    replan: Replan<'_>,
    timeout: Duration,
    printer: &Printer,
) -> Result<Outcome> {
    let mut execution = Execution {
        plan,
        route,
        author,
        cluster,
        replan,
        timeout,
        printer,
        outcome: Outcome::default(),
        made_repo: new_repo::Progress::default(),
        key_made: false,
        delivered: false,
    };
    let ran = execution.run_all(&plan.steps()).await;
    match ran {
        Ok(()) => Ok(execution.outcome),
        // The config repo names the new repository now: it stays.
        Err(error) if execution.delivered => Err(error),
        Err(error) => Err(execution.undo(error).await),
    }
}

/// One execution of a plan: what it needs, and what it did so far.
struct Execution<'a> {
    plan: &'a Plan,
    route: Route<'a>,
    author: &'a Signature,
    cluster: Option<&'a Cluster>,
    replan: Replan<'a>,
    timeout: Duration,
    printer: &'a Printer,
    outcome: Outcome,
    /// `--create-repo`: what was made of the app's repository, undone if the config repo is not
    /// changed after all.
    made_repo: new_repo::Progress,
    key_made: bool,
    /// The repository holds the change (pushed, or a pull request opened).
    delivered: bool,
}

/// The steps of a pull request, run as one: each needs what the one before found.
struct PullRequestSteps<'s> {
    branch: &'s str,
    /// The words of each step (push the branch, open, check, and with `--merge` merge), and
    /// where the first stands among all the plan's steps.
    words: &'s [(Step, String)],
    first: usize,
    total: usize,
}

impl<'a> Execution<'a> {
    /// [`crate::plan::run_steps`]' loop, as a method: its async closure makes a future the
    /// compiler cannot prove `Send`, and the UI runs this on its server's tasks.
    async fn run_all(&mut self, steps: &[(Step, String)]) -> Result<()> {
        let mut index = 0;
        if let Some(new) = &self.plan.new_repo {
            while let Some((Step::NewRepo(step), words)) = steps.get(index) {
                crate::plan::may_start_step()?;
                let made = self.new_repo(new, step).await;
                made.map_err(|source| crate::plan::failed_step(index + 1, steps.len(), words, source))?;
                self.printer.done(words);
                index += 1;
            }
        }
        while let Some((step, words)) = steps.get(index) {
            crate::plan::may_start_step()?;
            if let (Step::PushBranch { branch }, Delivery::PullRequest { merge, .. }) = (step, &self.plan.delivery) {
                let count = 3 + usize::from(*merge);
                let words = &steps[index..(index + count).min(steps.len())];
                let total = steps.len();
                self.pull_request(PullRequestSteps { branch, words, first: index, total }).await?;
                index += count;
                continue;
            }
            let ran = self.run(step, words).await;
            ran.map_err(|source| crate::plan::failed_step(index + 1, steps.len(), words, source))?;
            index += 1;
        }
        Ok(())
    }

    async fn run(&mut self, step: &Step, words: &str) -> Result<()> {
        match step {
            Step::Patch(patch) => {
                let cluster = self.cluster()?;
                let api: Api<DynamicObject> =
                    Api::namespaced_with(cluster.client.clone(), &patch.namespace, &patch.kind.at(&patch.version));
                crate::flux::reconcile::set_suspended(&api, &patch.name, patch.suspend)
                    .await
                    .map_err(|error| cluster.error(error))?;
            }
            Step::MigrateStorage(kind) => drop(crate::flux::storage::migrate(self.cluster()?, kind).await?),
            Step::Push => {
                let Route::Push { checkout, .. } = &self.route else { return Err(off_route(words)) };
                let published = publish::commit_and_push(
                    checkout,
                    &self.plan.message,
                    self.author,
                    self.plan.files.clone(),
                    self.replan,
                    self.timeout,
                    self.printer,
                )
                .await?;
                self.delivered = true;
                match published {
                    Published::Commit(commit) => self.outcome.commit = commit,
                    Published::MadeMeanwhile => {
                        self.outcome.made_meanwhile = true;
                        return Ok(());
                    }
                }
            }
            // The new repository's steps come first and a pull request's run together
            // ([`Execution::run_all`]).
            Step::NewRepo(_)
            | Step::PushBranch { .. }
            | Step::OpenPullRequest { .. }
            | Step::CheckPullRequest { .. }
            | Step::MergePullRequest { .. } => return Err(off_route(words)),
            // The command waits once the change is delivered, with what it knows of the cluster
            // and the app.
            Step::Wait => return Ok(()),
        }
        self.printer.done(words);
        Ok(())
    }

    /// The steps of a pull request: push its branch (unless it holds the plan already), open it
    /// or update the open one, read it back, and with `--merge` merge it at the head read.
    async fn pull_request(&mut self, steps: PullRequestSteps<'_>) -> Result<()> {
        let words = |offset: usize| steps.words.get(offset).map(|(_, words)| words.as_str()).unwrap_or_default();
        let failed = |offset: usize, source: Error| {
            crate::plan::failed_step(steps.first + offset + 1, steps.total, words(offset), source)
        };
        let Route::PullRequest { checkout, repo, hosted } = &self.route else {
            return Err(failed(0, off_route("push a branch")));
        };
        let (checkout, repo, hosted, branch) = (checkout, *repo, *hosted, steps.branch);
        let (existed, commit) =
            publish::commit_to_branch(checkout, branch, &self.plan.message, self.author, &self.plan.files)
                .await
                .map_err(|error| failed(0, error))?;
        match existed {
            RemoteBranch::Holds => self.printer.done(&format!("branch {branch} already holds this change")),
            _ => self.printer.done(words(0)),
        }
        crate::plan::may_start_step()?;
        let created = existed == RemoteBranch::Absent;
        let opened = open_pull_request((repo, hosted), branch, self.plan, (created, checkout), self.printer)
            .await
            .map_err(|error| failed(1, error))?;
        self.delivered = true;
        let number = opened.0.number;
        self.outcome = Outcome { commit, pull_request: Some(opened), made_meanwhile: false };
        self.printer.done(words(1));
        crate::plan::may_start_step()?;
        // The commit we pushed; on a re-run whose branch already held the change, none was
        // pushed, and the branch's head is checked for what it holds.
        let pushed = self.outcome.commit.as_deref().filter(|_| existed != RemoteBranch::Holds);
        let (held, head) = check_pull_request((repo, hosted), branch, number, &self.plan.files, pushed)
            .await
            .map_err(|error| failed(2, error))?;
        self.printer.done(&format!("checked: #{number} is open and {branch} holds {held}"));
        if steps.words.len() > 3 {
            crate::plan::may_start_step()?;
            // Guarded by the head we checked: the provider refuses when the branch moved since,
            // so a commit someone pushed after our check is never merged.
            let merged = hosted.provider.merge_pull_request(&hosted.repo, number, &head, MergeMethod::Merge).await;
            merged.map_err(|error| failed(3, error.into()))?;
            let sign = hosted.provider.kind().pull_request_sign();
            self.printer.done(&format!("merged {sign}{number} into {}", repo.branch));
        }
        Ok(())
    }

    fn cluster(&self) -> Result<&'a Cluster> {
        self.cluster.ok_or_else(|| {
            Error::usage(
                "this change writes to the cluster, and no cluster is reachable",
                "run it with a kubeconfig context of the cluster (--context)",
            )
        })
    }

    /// The new repository's forge: the repository's own, where the app's is made beside it.
    fn forge(&self) -> Result<&'a HostedRepo> {
        let repo = match &self.route {
            Route::Push { repo, .. } | Route::PullRequest { repo, .. } => Some(*repo),
            Route::NoFiles => None,
        };
        repo.and_then(|repo| repo.hosted.as_ref()).ok_or_else(|| {
            Error::usage(
                "--create-repo makes the app's repository on the config repo's forge, and it has none",
                "install with --provider github|gitlab|gitea, or create the repository yourself and give --url",
            )
        })
    }

    async fn new_repo(&mut self, new: &new_repo::ForApp, step: &AppStep) -> Result<()> {
        let hosted = self.forge()?;
        match (step, &new.key) {
            (AppStep::Repository(step), _) => self.made_repo.run(&new.plan, hosted, step).await?,
            (AppStep::Key, Some(key)) => {
                new_repo::add_key(new, key, hosted, self.cluster()?).await?;
                self.key_made = true;
            }
            (AppStep::Key, None) => {}
        }
        Ok(())
    }

    /// After a failure before the config repo held the change: takes away the new repository's
    /// key and the repository itself, as far as they were made.
    async fn undo(mut self, mut error: Error) -> Error {
        let (Some(new), Ok(hosted)) = (&self.plan.new_repo, self.forge()) else { return error };
        if self.key_made
            && let (Some(key), Some(cluster)) = (&new.key, self.cluster)
            && let Err(left) = new_repo::remove_key(key, cluster).await
        {
            self.printer.warning(&format!("could not delete Secret {}/{} again: {left}", key.namespace, key.name));
        }
        error = self.made_repo.undo(&new.plan, hosted, error, self.printer).await;
        error
    }
}

/// A step the plan's own steps never put where it stands (they come from [`Plan::steps`], which
/// orders them): a defect of ours, named by its words.
fn off_route(words: &str) -> Error {
    Error::Internal(format!("the step {words:?} does not go with the plan's delivery"))
}

/// Opens the pull request from `branch` into the repository's branch (or updates the open one).
/// A branch we created (`created`) for a pull request that cannot be opened is deleted again:
/// it would only confuse the next run and the repository's owners.
async fn open_pull_request(
    (repo, hosted): (&ConfigRepo, &HostedRepo),
    branch: &str,
    plan: &Plan,
    (created, checkout): (bool, &Workspace),
    printer: &Printer,
) -> Result<(PullRequest, PullRequestOutcome)> {
    let body = plan.pull_request_body();
    let opened = hosted.provider.ensure_pull_request(&hosted.repo, branch, &repo.branch, &plan.message, &body).await;
    if opened.is_err()
        && created
        && let Err(cleanup) = checkout.delete_remote_branch(branch).await
    {
        printer.warning(&format!("could not delete branch {branch} again: {cleanup}"));
    }
    Ok(opened?)
}

/// Reads an opened pull request back: the provider lists it open from `branch` (as `number`),
/// its head is `pushed` (the commit we pushed, when we pushed one), and its whole change since it
/// left the config branch is exactly the plan `files`: every path, every blob, nothing else.
/// Returns what it holds, in words (the Flux objects of the files it adds or changes), and the
/// head checked.
async fn check_pull_request(
    (repo, hosted): (&ConfigRepo, &HostedRepo),
    branch: &str,
    number: u64,
    files: &[FileChange],
    pushed: Option<&str>,
) -> Result<(String, String)> {
    let listed = hosted.provider.find_open_pull_request(&hosted.repo, branch, &repo.branch).await?;
    if listed.as_ref().map(|pull| pull.number) != Some(number) {
        return Err(Error::Remote {
            message: format!("{} does not list #{number} as open from {branch} into {}", hosted.repo, repo.branch),
            hint: Some("someone may have closed it meanwhile; run the command again to open it again".into()),
        });
    }
    let change = crate::git::workspace::branch_change(&repo.remote, &repo.branch, branch).await?.ok_or_else(|| {
        Error::Remote {
            message: format!("branch {branch} of #{number} is gone"),
            hint: Some("someone deleted it meanwhile; run the command again to push it again".into()),
        }
    })?;
    let pushed_to = |what: String| Error::Remote {
        message: format!("branch {branch} of #{number} does not hold the planned change: {what}"),
        hint: Some(format!(
            "someone pushed to {branch}; nothing was merged: close #{number}, delete the branch and run this again"
        )),
    };
    if let Some(pushed) = pushed
        && change.head != pushed
    {
        return Err(pushed_to(format!("its head is {}, not the commit we pushed, {pushed}", change.head)));
    }
    let mut differs: Vec<String> =
        plan::differences(files, &change.files).iter().map(|difference| difference.describe("the plan")).collect();
    differs.extend(change.unusual.iter().map(|path| format!("the branch makes {path} more than a plain file")));
    if !differs.is_empty() {
        return Err(pushed_to(differs.join("; ")));
    }
    let objects = flux_objects(files);
    let held = match objects.is_empty() {
        true => format!("the {} planned file change(s)", files.len()),
        false => format!("the {} planned file change(s): {}", files.len(), objects.join(", ")),
    };
    Ok((held, change.head))
}

/// How often `--wait` asks the provider about a pull request: the APIs have no watch.
const PULL_REQUEST_POLL: Duration = Duration::from_secs(2);

/// `--wait` on a pull request: asks the provider until request `number` is merged and returns
/// the commit that merged it (a fast-forward names none: then the base branch's head). Closed
/// without merging, or still open after `timeout`, is a "no" (exit 1).
pub(crate) async fn merged(
    (repo, hosted): (&ConfigRepo, &HostedRepo),
    number: u64,
    timeout: Duration,
    printer: &Printer,
) -> Result<String> {
    let kind = hosted.provider.kind();
    let (noun, sign) = (kind.pull_request_noun(), kind.pull_request_sign());
    let mut polls = crate::retry::Backoff::every(PULL_REQUEST_POLL, std::time::Instant::now() + timeout);
    printer.progress(&format!("waiting for {noun} {sign}{number} to be merged"));
    loop {
        let details = hosted.provider.get_pull_request(&hosted.repo, number).await?.ok_or_else(|| Error::Remote {
            message: format!("{} no longer has {noun} {sign}{number}", hosted.repo),
            hint: None,
        })?;
        match details.state {
            PullState::Merged => {
                return match details.merge_commit {
                    Some(commit) => Ok(commit),
                    None => crate::git::workspace::remote_head(&repo.remote, &repo.branch).await?.ok_or_else(|| {
                        Error::Remote {
                            message: format!("{} has no branch {} after the merge", repo.remote.url, repo.branch),
                            hint: Some("someone deleted it meanwhile".into()),
                        }
                    }),
                };
            }
            PullState::Closed => {
                return Err(Error::Negative {
                    message: format!("{noun} {sign}{number} was closed without merging: nothing was deployed"),
                    hint: Some("run the same command again to open it again".into()),
                });
            }
            PullState::Open if polls.wait().await => {}
            PullState::Open => {
                return Err(Error::Negative {
                    message: format!("{noun} {sign}{number} is still open after {}", crate::duration::format(timeout)),
                    hint: Some(format!(
                        "merge it (`kubectl gitops pr merge {number}`) and see `kubectl gitops status`"
                    )),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::{Auth, Checkout, Remote};

    /// A clone of an empty repository on this machine.
    fn clone_of_empty(dir: &std::path::Path) -> (Workspace, ConfigRepo) {
        let bare = dir.join("config.git");
        git2::Repository::init_bare(&bare).unwrap();
        let remote = Remote { url: format!("file://{}", bare.display()), auth: Auth::Anonymous };
        let checkout = Checkout::clone(&remote, "main").unwrap();
        (checkout.into(), ConfigRepo { remote, branch: "main".into(), hosted: None, platform: false })
    }

    #[test]
    fn a_route_is_resolved_once_with_what_its_steps_need() {
        let dir = tempfile::tempdir().unwrap();
        let files = [FileChange { path: "a.yaml".into(), before: None, after: Some("a: 1\n".into()) }];
        let pull_request =
            Delivery::PullRequest { branch: "gitops/add-a-0".into(), noun: "pull request", merge: false };

        assert!(matches!(Route::of(&Delivery::Push, &[], None, None), Ok(Route::NoFiles)));
        let without_clone = Route::of(&Delivery::Push, &files, None, None).err().unwrap();
        assert!(without_clone.to_string().contains("no clone of the repository"), "{without_clone}");

        let (checkout, repo) = clone_of_empty(dir.path());
        assert!(matches!(Route::of(&Delivery::Push, &files, Some(checkout), Some(&repo)), Ok(Route::Push { .. })));
        let (checkout, _) = clone_of_empty(&dir.path().join("again"));
        let no_forge = Route::of(&pull_request, &files, Some(checkout), Some(&repo)).err().unwrap();
        assert!(no_forge.to_string().contains("plain git server: there is no pull request"), "{no_forge}");
        assert!(no_forge.hint().is_some());
    }
}
