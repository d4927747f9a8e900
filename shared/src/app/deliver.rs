//! Carrying out a [`Plan`]: patch the cluster, then commit and push to the config branch through
//! [`crate::publish`] (on a concurrent push: fetch, re-plan on the new head, retry), or push a
//! branch and open or update
//! a pull request. Nothing is left half-done: a pull request that cannot be opened takes its
//! new branch away again.

use std::time::Duration;

use kube::api::{Api, DynamicObject};

use super::new_repo::{self, AppStep};
use super::plan::{FileChange, Plan, Step, flux_objects};
use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::git::{Checkout, Remote, RemoteBranch, Signature};
use crate::output::Printer;
use crate::plan;
use crate::provider::{MergeMethod, Provider, PullRequest, PullRequestOutcome, PullState, RepoRef};
use crate::publish::{self, Published};

/// The config repo, and the provider API in front of it when there is one.
#[derive(Debug, Clone)]
pub struct ConfigRepo {
    /// Where we clone and push, with our credentials.
    pub remote: Remote,
    /// The branch Flux follows.
    pub branch: String,
    /// GitHub or GitLab: for branch protection and pull requests.
    pub hosted: Option<HostedRepo>,
    /// It is the platform repo (`install --platform-repo`): the platform layer applies its
    /// commits, through a GitRepository of its own, not the sync.
    pub platform: bool,
}

/// A config repo on GitHub or GitLab.
#[derive(Debug, Clone)]
pub struct HostedRepo {
    /// The API client.
    pub provider: Provider,
    /// `owner/name`.
    pub repo: RepoRef,
    /// The API token, also used to push over HTTPS.
    pub token: crate::provider::Token,
}

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
    repo: Option<(Checkout, &ConfigRepo)>,
    author: &Signature,
    cluster: Option<&Cluster>,
    replan: &dyn Fn(&Checkout) -> Result<Vec<FileChange>>,
    timeout: Duration,
    printer: &Printer,
) -> Result<Outcome> {
    let done = |words: &str| printer.done(words);
    let mut outcome = Outcome::default();
    let (mut checkout, repo) = match repo {
        Some((checkout, repo)) => (Some(checkout), Some(repo)),
        None => (None, None),
    };
    // What the pull request branch held before we pushed it: a branch we created is taken away
    // again when its pull request cannot open.
    let mut branch_existed: Option<RemoteBranch> = None;
    // The pull request branch's head once read back and found to hold exactly the plan: what
    // `--merge` merges, and nothing else.
    let mut checked_head: Option<String> = None;
    // `--create-repo`: what was made of the app's repository, undone if the config repo is not
    // changed after all.
    let mut made_repo = new_repo::Progress::default();
    let mut key_made = false;
    let mut delivered = false;
    let steps = plan.steps();
    let ran = plan::run_steps(&steps, async |_, step: &Step, words: &str| -> Result<()> {
        match step {
            Step::NewRepo(step) => {
                let (Some(new), Some(hosted)) = (&plan.new_repo, repo.and_then(|repo| repo.hosted.as_ref())) else {
                    return Err(Error::Internal("a new repository needs its plan and the provider".into()));
                };
                match (step, &new.key) {
                    (AppStep::Repository(step), _) => made_repo.run(&new.plan, hosted, step).await?,
                    (AppStep::Key, Some(key)) => {
                        let cluster = cluster.ok_or_else(|| Error::Internal("no cluster for the key".into()))?;
                        new_repo::add_key(new, key, hosted, cluster).await?;
                        key_made = true;
                    }
                    (AppStep::Key, None) => {}
                }
                done(words);
            }
            Step::Patch(patch) => {
                let cluster = cluster.ok_or_else(|| Error::Internal("no cluster to patch".into()))?;
                let api: Api<DynamicObject> =
                    Api::namespaced_with(cluster.client.clone(), &patch.namespace, &patch.kind.at(&patch.version));
                crate::flux::reconcile::set_suspended(&api, &patch.name, patch.suspend)
                    .await
                    .map_err(|error| cluster.error(error))?;
                done(words);
            }
            Step::MigrateStorage(kind) => {
                let cluster = cluster.ok_or_else(|| Error::Internal("no cluster to migrate".into()))?;
                crate::flux::storage::migrate(cluster, kind).await?;
                done(words);
            }
            Step::Push => {
                let checkout = checkout.as_mut().ok_or_else(|| Error::Internal("no clone to commit to".into()))?;
                let first = plan.files.clone();
                match publish::commit_and_push(checkout, &plan.message, author, first, replan, timeout, printer).await?
                {
                    Published::Commit(commit) => {
                        done(words);
                        outcome.commit = commit;
                    }
                    Published::MadeMeanwhile => outcome.made_meanwhile = true,
                }
                delivered = true;
            }
            Step::PushBranch { branch } => {
                let checkout = checkout.as_mut().ok_or_else(|| Error::Internal("no clone to commit to".into()))?;
                let (commit, existing) = crate::git::in_place(|| -> Result<(Option<String>, RemoteBranch)> {
                    publish::write(checkout, &plan.files)?;
                    let commit = checkout.commit(&plan.message, author)?;
                    let existing = checkout.remote_branch(branch)?;
                    match existing {
                        RemoteBranch::Holds => {}
                        RemoteBranch::Absent | RemoteBranch::Stale => checkout.push_to_branch(branch)?,
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
                    Ok((commit, existing))
                })?;
                branch_existed = Some(existing);
                outcome.commit = commit;
                match existing {
                    RemoteBranch::Holds => done(&format!("branch {branch} already holds this change")),
                    _ => done(words),
                }
            }
            Step::OpenPullRequest { branch } => {
                let (Some(repo), Some(checkout)) = (repo, checkout.as_ref()) else {
                    return Err(Error::Internal("a pull request needs the config repo".into()));
                };
                let hosted = repo
                    .hosted
                    .as_ref()
                    .ok_or_else(|| Error::Internal("a pull request needs a GitHub or GitLab repo".into()))?;
                let body = plan.pull_request_body();
                match hosted
                    .provider
                    .ensure_pull_request(&hosted.repo, branch, &repo.branch, &plan.message, &body)
                    .await
                {
                    Ok(pull_request) => {
                        done(words);
                        outcome.pull_request = Some(pull_request);
                        delivered = true;
                    }
                    Err(error) => {
                        // Leave nothing behind: a branch we created for a pull request that does
                        // not exist would only confuse the next run and the repo's owners.
                        if branch_existed == Some(RemoteBranch::Absent)
                            && let Err(cleanup) = crate::git::in_place(|| checkout.delete_remote_branch(branch))
                        {
                            printer.warning(&format!("could not delete branch {branch} again: {cleanup}"));
                        }
                        return Err(error.into());
                    }
                }
            }
            Step::CheckPullRequest { branch } => {
                let (Some(repo), Some((opened, _))) = (repo, &outcome.pull_request) else {
                    return Err(Error::Internal("nothing to check: no pull request was opened".into()));
                };
                // The commit we pushed; on a re-run whose branch already held the change, none
                // was pushed, and the branch's head is checked for what it holds.
                let pushed = outcome.commit.as_deref().filter(|_| branch_existed != Some(RemoteBranch::Holds));
                let (held, head) = check_pull_request(repo, branch, opened.number, &plan.files, pushed).await?;
                checked_head = Some(head);
                done(&format!("checked: #{} is open and {branch} holds {held}", opened.number));
            }
            Step::MergePullRequest { .. } => {
                let (Some(repo), Some((opened, _)), Some(head)) = (repo, &outcome.pull_request, &checked_head) else {
                    return Err(Error::Internal("nothing to merge: no pull request was opened and checked".into()));
                };
                let hosted =
                    repo.hosted.as_ref().ok_or_else(|| Error::Internal("a pull request needs a provider".into()))?;
                // Guarded by the head we checked: the provider refuses when the branch moved since,
                // so a commit someone pushed after our check is never merged.
                hosted.provider.merge_pull_request(&hosted.repo, opened.number, head, MergeMethod::Merge).await?;
                done(&format!(
                    "merged {}{} into {}",
                    hosted.provider.kind().pull_request_sign(),
                    opened.number,
                    repo.branch
                ));
            }
            // The command waits once the change is delivered (`finish`), with what it knows of
            // the cluster and the app.
            Step::Wait => {}
        }
        Ok(())
    })
    .await;
    match (ran, &plan.new_repo, repo.and_then(|repo| repo.hosted.as_ref())) {
        (Ok(()), _, _) => Ok(outcome),
        // The config repo names the new repository now: it stays.
        (Err(error), _, _) if delivered => Err(error),
        (Err(mut error), Some(new), Some(hosted)) => {
            if key_made
                && let (Some(key), Some(cluster)) = (&new.key, cluster)
                && let Err(left) = new_repo::remove_key(key, cluster).await
            {
                printer.warning(&format!("could not delete Secret {}/{} again: {left}", key.namespace, key.name));
            }
            error = made_repo.undo(&new.plan, hosted, error, printer).await;
            Err(error)
        }
        (Err(error), _, _) => Err(error),
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
    let change = crate::git::in_place(|| crate::git::log::branch_change(&repo.remote, &repo.branch, branch))?
        .ok_or_else(|| Error::Remote {
            message: format!("branch {branch} of #{number} is gone"),
            hint: Some("someone deleted it meanwhile; run the command again to push it again".into()),
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
    let deadline = std::time::Instant::now() + timeout;
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
                    None => crate::git::in_place(|| crate::git::remote_head(&repo.remote, &repo.branch))?
                        .ok_or_else(|| Error::Internal(format!("{} has no branch {}", repo.remote.url, repo.branch))),
                };
            }
            PullState::Closed => {
                return Err(Error::Negative {
                    message: format!("{noun} {sign}{number} was closed without merging: nothing was deployed"),
                    hint: Some("run the same command again to open it again".into()),
                });
            }
            PullState::Open if std::time::Instant::now() >= deadline => {
                return Err(Error::Negative {
                    message: format!("{noun} {sign}{number} is still open after {}", crate::duration::format(timeout)),
                    hint: Some(format!(
                        "merge it (`kubectl gitops pr merge {number}`) and see `kubectl gitops status`"
                    )),
                });
            }
            PullState::Open => tokio::time::sleep(PULL_REQUEST_POLL).await,
        }
    }
}
