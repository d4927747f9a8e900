//! Carrying out a [`Plan`]: patch the cluster, then commit and push to the config branch through
//! [`crate::publish`] (on a concurrent push: fetch, re-plan on the new head, retry), or push a
//! branch and open or update
//! a pull request. Nothing is left half-done: a pull request that cannot be opened takes its
//! new branch away again.

use std::time::Duration;

use kube::api::{Api, DynamicObject};

use super::context::{ConfigRepo, HostedRepo};
use super::new_repo::{self, AppStep};
use super::plan::{FileChange, Plan, Step, flux_objects};
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

/// Runs the plan: the cluster patches, then the commit into `repo` (a clone of the config
/// branch and where it comes from), when the plan changes files. `replan` recomputes the file
/// changes on the new head after a concurrent push, from the same request, so a retry never
/// overwrites what the other push changed; refused pushes are retried until `timeout` passes.
pub async fn execute(
    plan: &Plan,
    repo: Option<(Workspace, &ConfigRepo)>,
    author: &Signature,
    cluster: Option<&Cluster>,
    replan: Replan<'_>,
    timeout: Duration,
    printer: &Printer,
) -> Result<Outcome> {
    let (checkout, repo) = repo.unzip();
    let mut execution = Execution {
        plan,
        checkout,
        repo,
        author,
        cluster,
        replan,
        timeout,
        printer,
        outcome: Outcome::default(),
        branch_existed: None,
        checked_head: None,
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
    checkout: Option<Workspace>,
    repo: Option<&'a ConfigRepo>,
    author: &'a Signature,
    cluster: Option<&'a Cluster>,
    replan: Replan<'a>,
    timeout: Duration,
    printer: &'a Printer,
    outcome: Outcome,
    /// What the pull request branch held before we pushed it: a branch we created is taken away
    /// again when its pull request cannot open.
    branch_existed: Option<RemoteBranch>,
    /// The pull request branch's head once read back and found to hold exactly the plan: what
    /// `--merge` merges, and nothing else.
    checked_head: Option<String>,
    /// `--create-repo`: what was made of the app's repository, undone if the config repo is not
    /// changed after all.
    made_repo: new_repo::Progress,
    key_made: bool,
    /// The config repo holds the change (pushed, or a pull request opened).
    delivered: bool,
}

impl<'a> Execution<'a> {
    /// [`crate::plan::run_steps`]' loop, as a method: its async closure makes a future the
    /// compiler cannot prove `Send`, and the UI runs this on its server's tasks.
    async fn run_all(&mut self, steps: &[(Step, String)]) -> Result<()> {
        for (index, (step, words)) in steps.iter().enumerate() {
            crate::plan::may_start_step()?;
            let ran = self.run(step, words).await;
            ran.map_err(|source| crate::plan::failed_step(index + 1, steps.len(), words, source))?;
        }
        Ok(())
    }

    async fn run(&mut self, step: &Step, words: &str) -> Result<()> {
        match step {
            Step::NewRepo(step) => self.new_repo(step).await?,
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
                let published = self.push().await?;
                self.delivered = true;
                match published {
                    Published::Commit(commit) => self.outcome.commit = commit,
                    Published::MadeMeanwhile => {
                        self.outcome.made_meanwhile = true;
                        return Ok(());
                    }
                }
            }
            Step::PushBranch { branch } => {
                if self.push_branch(branch).await? == RemoteBranch::Holds {
                    self.printer.done(&format!("branch {branch} already holds this change"));
                    return Ok(());
                }
            }
            Step::OpenPullRequest { branch } => self.open_pull_request(branch).await?,
            Step::CheckPullRequest { branch } => {
                let number = self.opened()?.number;
                // The commit we pushed; on a re-run whose branch already held the change, none
                // was pushed, and the branch's head is checked for what it holds.
                let pushed =
                    self.outcome.commit.as_deref().filter(|_| self.branch_existed != Some(RemoteBranch::Holds));
                let (held, head) = check_pull_request(self.repo()?, branch, number, &self.plan.files, pushed).await?;
                self.checked_head = Some(head);
                self.printer.done(&format!("checked: #{number} is open and {branch} holds {held}"));
                return Ok(());
            }
            Step::MergePullRequest { .. } => {
                self.merge_pull_request().await?;
                return Ok(());
            }
            // The command waits once the change is delivered (`finish`), with what it knows of
            // the cluster and the app.
            Step::Wait => return Ok(()),
        }
        self.printer.done(words);
        Ok(())
    }

    fn cluster(&self) -> Result<&'a Cluster> {
        self.cluster.ok_or_else(|| Error::Internal("no cluster for this step".into()))
    }

    fn repo(&self) -> Result<&'a ConfigRepo> {
        self.repo.ok_or_else(|| Error::Internal("no config repo for this step".into()))
    }

    fn hosted(&self) -> Result<&'a HostedRepo> {
        self.repo()?.hosted.as_ref().ok_or_else(|| Error::Internal("a pull request needs a provider".into()))
    }

    fn checkout(&self) -> Result<&Workspace> {
        self.checkout.as_ref().ok_or_else(|| Error::Internal("no clone to commit to".into()))
    }

    fn opened(&self) -> Result<&PullRequest> {
        let opened = self.outcome.pull_request.as_ref().map(|(opened, _)| opened);
        opened.ok_or_else(|| Error::Internal("no pull request was opened".into()))
    }

    async fn new_repo(&mut self, step: &AppStep) -> Result<()> {
        let new = self.plan.new_repo.as_ref().ok_or_else(|| Error::Internal("no plan for a new repository".into()))?;
        let hosted = self.hosted()?;
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

    async fn push(&self) -> Result<Published> {
        let plan = self.plan;
        let first = plan.files.clone();
        let printer = self.printer;
        publish::commit_and_push(
            self.checkout()?,
            &plan.message,
            self.author,
            first,
            self.replan,
            self.timeout,
            printer,
        )
        .await
    }

    /// Commits the plan and pushes it to the pull request `branch`, unless the branch holds it
    /// already; what the branch held before.
    async fn push_branch(&mut self, branch: &str) -> Result<RemoteBranch> {
        let checkout = self.checkout()?;
        let commit = {
            let mut files = checkout.files();
            publish::write(&mut files, &self.plan.files)?;
            files.commit(&self.plan.message, self.author)?
        };
        let existing = checkout.remote_branch(branch).await?;
        match existing {
            RemoteBranch::Holds => {}
            RemoteBranch::Absent | RemoteBranch::Stale => checkout.push_to_branch(branch).await?,
            RemoteBranch::Other => {
                return Err(Error::Remote {
                    message: format!("branch {branch} exists with other changes than this one"),
                    hint: Some(
                        "merge or close its pull request and delete the branch, then run this again \
                         (nothing was pushed)"
                            .into(),
                    ),
                });
            }
        }
        self.branch_existed = Some(existing);
        self.outcome.commit = commit;
        Ok(existing)
    }

    async fn open_pull_request(&mut self, branch: &str) -> Result<()> {
        let (repo, hosted) = (self.repo()?, self.hosted()?);
        let body = self.plan.pull_request_body();
        let opened =
            hosted.provider.ensure_pull_request(&hosted.repo, branch, &repo.branch, &self.plan.message, &body).await;
        match opened {
            Ok(pull_request) => {
                self.outcome.pull_request = Some(pull_request);
                self.delivered = true;
                Ok(())
            }
            Err(error) => {
                // Leave nothing behind: a branch we created for a pull request that does not
                // exist would only confuse the next run and the repo's owners.
                if self.branch_existed == Some(RemoteBranch::Absent)
                    && let Err(cleanup) = self.checkout()?.delete_remote_branch(branch).await
                {
                    self.printer.warning(&format!("could not delete branch {branch} again: {cleanup}"));
                }
                Err(error.into())
            }
        }
    }

    async fn merge_pull_request(&self) -> Result<()> {
        let (repo, hosted, opened) = (self.repo()?, self.hosted()?, self.opened()?);
        let head = self.checked_head.as_ref().ok_or_else(|| Error::Internal("nothing checked to merge".into()))?;
        // Guarded by the head we checked: the provider refuses when the branch moved since, so a
        // commit someone pushed after our check is never merged.
        hosted.provider.merge_pull_request(&hosted.repo, opened.number, head, MergeMethod::Merge).await?;
        let sign = hosted.provider.kind().pull_request_sign();
        self.printer.done(&format!("merged {sign}{} into {}", opened.number, repo.branch));
        Ok(())
    }

    /// After a failure before the config repo held the change: takes away the new repository's
    /// key and the repository itself, as far as they were made.
    async fn undo(mut self, mut error: Error) -> Error {
        let (Some(new), Ok(hosted)) = (&self.plan.new_repo, self.hosted()) else { return error };
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

/// Reads an opened pull request back: the provider lists it open from `branch` (as `number`),
/// its head is `pushed` (the commit we pushed, when we pushed one), and its whole change since it
/// left the config branch is exactly the plan `files`: every path, every blob, nothing else.
/// Returns what it holds, in words (the Flux objects of the files it adds or changes), and the
/// head checked.
async fn check_pull_request(
    repo: &ConfigRepo,
    branch: &str,
    number: u64,
    files: &[FileChange],
    pushed: Option<&str>,
) -> Result<(String, String)> {
    let hosted = repo.hosted.as_ref().ok_or_else(|| Error::Internal("a pull request needs a provider".into()))?;
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
pub(crate) async fn merged(repo: &ConfigRepo, number: u64, timeout: Duration, printer: &Printer) -> Result<String> {
    let hosted = repo.hosted.as_ref().ok_or_else(|| Error::Internal("a pull request needs a provider".into()))?;
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
                    None => crate::git::workspace::remote_head(&repo.remote, &repo.branch)
                        .await?
                        .ok_or_else(|| Error::Internal(format!("{} has no branch {}", repo.remote.url, repo.branch))),
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
