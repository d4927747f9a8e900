//! The timeline of `app history`: an app's deployments in order, each with the commits behind
//! it, and marked when it failed, when a later one rolled it back and when a later commit
//! reverted it. Pure: the deployments come from the ledger, the commits from `git::log`.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::Deployment;
use crate::duration::parse_timestamp;
use crate::git::log::{CommitInfo, LoggedCommit};

/// One row of the timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    #[serde(flatten)]
    pub deployment: Deployment,
    /// The reconcile of it failed (apply, prune or health checks; a failed Helm release).
    pub failed: bool,
    /// It deployed again what an earlier deployment had, over the ones in between: a rollback
    /// (or a revert commit that restored earlier manifests).
    pub rollback: bool,
    /// A later deployment went back to what was deployed before this one.
    pub rolled_back: bool,
    /// A later commit reverts this one's commit.
    pub reverted: bool,
    /// When it was undone (rolled back or reverted), RFC 3339: the first reconcile of the
    /// deployment that undid it, or the revert's commit time when that is not deployed yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undone_at: Option<String>,
    /// The commits it brought that changed the app's path, newest first: from the previous
    /// deployment's commit (excluded) to its own. Empty when git was not read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<CommitInfo>,
    /// The config repo's commits to the app's definition or this cluster's overlay, newest first,
    /// made after the previous deployment was first reconciled and before this one was: by
    /// time, as nothing else links a config commit to a deployment.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub config_changes: Vec<CommitInfo>,
}

impl Row {
    /// Counts as a failed change: it failed, or was rolled back or reverted.
    pub fn failed_change(&self) -> bool {
        self.failed || self.rolled_back || self.reverted
    }
}

/// The rows of `deployments` (oldest first, as the ledger keeps them), with the commits of the
/// app's source `log` and of the config repo's `config_log` (both newest first, possibly empty)
/// attached.
pub fn build(deployments: &[Deployment], log: &[LoggedCommit], config_log: &[LoggedCommit]) -> Vec<Row> {
    let by_sha: HashMap<&str, &LoggedCommit> = log.iter().map(|commit| (commit.info.sha.as_str(), commit)).collect();
    let mut rows: Vec<Row> = deployments
        .iter()
        .map(|deployment| {
            let mut deployment = deployment.clone();
            if deployment.commit.is_none()
                && let Some(logged) = deployment.commit_sha().and_then(|sha| by_sha.get(sha))
            {
                deployment.commit = Some(logged.info.clone());
            }
            Row {
                failed: deployment.failed(),
                deployment,
                rollback: false,
                rolled_back: false,
                reverted: false,
                undone_at: None,
                changes: Vec::new(),
                config_changes: Vec::new(),
            }
        })
        .collect();
    mark_rollbacks(&mut rows);
    mark_reverts(&mut rows, log);
    attach_changes(&mut rows, &by_sha);
    attach_config_changes(&mut rows, config_log);
    rows
}

/// Each deployment's config commits: those that changed the app's files, dated after the
/// previous deployment's first reconcile and not after its own.
fn attach_config_changes(rows: &mut [Row], config_log: &[LoggedCommit]) {
    let mut after = 0;
    for row in rows.iter_mut() {
        let first = row.deployment.first_seconds();
        row.config_changes = config_log
            .iter()
            .filter(|commit| commit.touches_path)
            .filter(|commit| parse_timestamp(&commit.info.time).is_some_and(|time| time > after && time <= first))
            .map(|commit| commit.info.clone())
            .collect();
        after = first;
    }
}

/// A successful deployment whose digest an earlier success had, when something else was deployed
/// since that success, is a rollback; the deployments in between were rolled back. The same
/// manifests deployed again at a new commit, with nothing in between, are not. Over a failed
/// deployment: a Kustomization comes back to earlier manifests only through a commit (a rollback,
/// a revert), so that is a rollback; a Helm release comes back on its own when helm-controller
/// remediates a failed upgrade, which restores it and is not one.
fn mark_rollbacks(rows: &mut [Row]) {
    for index in 0..rows.len() {
        if rows[index].failed {
            continue;
        }
        let digest = rows[index].deployment.digest.clone();
        let Some(restored) = rows[..index].iter().rposition(|row| !row.failed && row.deployment.digest == digest)
        else {
            continue;
        };
        let by_commit = rows[index].deployment.release.is_none();
        let moved_on =
            rows[restored + 1..index].iter().any(|row| row.deployment.digest != digest && (!row.failed || by_commit));
        if !moved_on {
            continue;
        }
        rows[index].rollback = true;
        let at = rows[index].deployment.first.clone();
        for row in &mut rows[restored + 1..index] {
            if row.deployment.digest != digest {
                row.rolled_back = true;
                row.undone_at.get_or_insert_with(|| at.clone());
            }
        }
    }
}

/// A deployment whose commit a later commit reverts: one deployed (dated by its deployment) or
/// one of the log (dated by its commit).
fn mark_reverts(rows: &mut [Row], log: &[LoggedCommit]) {
    let deployed = rows
        .iter()
        .filter_map(|row| row.deployment.commit.as_ref().map(|commit| (commit, row.deployment.first.clone())));
    let logged = log.iter().map(|commit| (&commit.info, commit.info.time.clone()));
    let mut reverts: HashMap<String, String> = HashMap::new();
    for (commit, at) in deployed.chain(logged) {
        if let Some(reverted) = &commit.reverts {
            reverts.entry(reverted.clone()).or_insert(at);
        }
    }
    for row in rows.iter_mut() {
        let Some(at) = row.deployment.commit.as_ref().and_then(|commit| reverts.get(&commit.sha)) else { continue };
        row.reverted = true;
        if row.undone_at.as_ref().is_none_or(|undone| at < undone) {
            row.undone_at = Some(at.clone());
        }
    }
}

/// Each deployment's commits: those reachable from its commit and not from the previous
/// deployment's, that changed its path.
fn attach_changes(rows: &mut [Row], by_sha: &HashMap<&str, &LoggedCommit>) {
    if by_sha.is_empty() {
        return;
    }
    let mut previous: Option<String> = None;
    for row in rows.iter_mut() {
        let Some(sha) = row.deployment.commit_sha().map(String::from) else { continue };
        let before = previous.as_deref().map(|previous| ancestors(previous, by_sha)).unwrap_or_default();
        let mut changes: Vec<&LoggedCommit> = ancestors(&sha, by_sha)
            .into_iter()
            .filter(|ancestor| !before.contains(ancestor))
            .filter_map(|ancestor| by_sha.get(ancestor.as_str()).copied())
            .filter(|commit| commit.touches_path)
            .collect();
        if previous.is_none() {
            // The first deployment seen: what came before it is not known, only its own commit.
            changes.retain(|commit| commit.info.sha == sha);
        }
        changes.sort_by(|a, b| b.info.time.cmp(&a.info.time));
        row.changes = changes.into_iter().map(|commit| commit.info.clone()).collect();
        if previous.as_deref() != Some(sha.as_str()) {
            previous = Some(sha);
        }
    }
}

/// `sha` and its ancestors within the log.
fn ancestors(sha: &str, by_sha: &HashMap<&str, &LoggedCommit>) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut next = vec![sha.to_string()];
    while let Some(sha) = next.pop() {
        if !seen.insert(sha.clone()) {
            continue;
        }
        if let Some(commit) = by_sha.get(sha.as_str()) {
            next.extend(commit.parents.iter().cloned());
        }
    }
    seen
}
