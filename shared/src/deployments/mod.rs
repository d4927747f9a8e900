//! Deployments: what Flux deployed for an app, kept beyond the 5 entries of its `status.history`.
//!
//! - this file: a [`Deployment`] (one entry of the history, as we keep it), read from a
//!   Kustomization's or HelmRelease's `status.history`, and the merge of what Flux shows now into
//!   what was seen before;
//! - the ledger that keeps them in the cluster, a ConfigMap per app, is the cluster readers'
//!   ([`crate::readers::ledger`]): this module reads and writes nothing;
//! - `timeline`: the rows of `app history`, deployments with their commits, failures and
//!   rollbacks marked;
//! - `dora`: the four DORA metrics computed over timelines.

pub mod dora;
pub mod timeline;

use serde::{Deserialize, Serialize};

use crate::duration::parse_timestamp;
use crate::git::log::CommitInfo;

/// How a Kustomization snapshot says it applied and passed its health checks.
const KUSTOMIZATION_SUCCEEDED: &str = "ReconciliationSucceeded";
/// How a Helm release says it failed.
const HELM_FAILED: &str = "failed";

/// The app kinds with a deployment history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum AppKind {
    Kustomization,
    HelmRelease,
}

impl AppKind {
    /// The kind of a Flux object's `kind` field, when it has a history.
    pub fn of(kind: &str) -> Option<AppKind> {
        match kind {
            "Kustomization" => Some(AppKind::Kustomization),
            "HelmRelease" => Some(AppKind::HelmRelease),
            _ => None,
        }
    }

    /// `Kustomization` or `HelmRelease`.
    pub fn as_str(self) -> &'static str {
        match self {
            AppKind::Kustomization => "Kustomization",
            AppKind::HelmRelease => "HelmRelease",
        }
    }
}

/// One deployment of an app: a revision Flux applied (a Kustomization's source revision, a Helm
/// release), when, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Deployment {
    /// A Kustomization's source revision (`main@sha1:…`); a HelmRelease's chart version.
    pub revision: String,
    /// The digest of what was applied: a Kustomization's built manifests; a Helm release's
    /// chart version and values (`<chart version>/<config digest>`). Equal digests deployed
    /// the same thing.
    pub digest: String,
    /// How the last reconcile of it ended: `ReconciliationSucceeded`, `HealthCheckFailed`, …;
    /// a Helm release's status (`deployed`, `superseded`, `failed`).
    pub status: String,
    /// First reconciled (first deployed), RFC 3339.
    pub first: String,
    /// `first` is when we first saw it, not Flux's time: the revision moved onto a snapshot
    /// Flux already had (the same manifests at a new commit, or back to earlier ones), so Flux's
    /// `firstReconciled` belongs to the earlier revision.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub observed: bool,
    /// Last reconciled (last deployed), RFC 3339, as last seen.
    pub last: String,
    /// How long the last reconcile took (Kustomizations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// How often it was reconciled (Kustomizations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciliations: Option<i64>,
    /// The Helm release's version (HelmReleases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<i64>,
    /// The commit behind the revision, once looked up in git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<CommitInfo>,
}

impl Deployment {
    /// Whether it failed: a Kustomization snapshot that did not succeed (apply, prune or health
    /// checks failed), a Helm release that failed.
    pub fn failed(&self) -> bool {
        if self.release.is_some() { self.status == HELM_FAILED } else { self.status != KUSTOMIZATION_SUCCEEDED }
    }

    /// What identifies it across looks: a Helm release by its version; a Kustomization snapshot
    /// by what Flux keys it on (digest and status) and the revision, which Flux updates in place.
    fn identity(&self) -> String {
        match self.release {
            Some(release) => format!("release {release}"),
            None => format!("{} {} {}", self.digest, self.status, self.revision),
        }
    }

    /// `first` in seconds since the epoch (0 when unreadable, which sorts it first).
    pub fn first_seconds(&self) -> u64 {
        parse_timestamp(&self.first).unwrap_or(0)
    }

    /// The commit hash of a git revision (`main@sha1:<hash>`, `sha1:<hash>`, or a bare hash).
    pub fn commit_sha(&self) -> Option<&str> {
        let hash = self.revision.rsplit(':').next()?;
        (hash.len() == 40 && hash.bytes().all(|byte| byte.is_ascii_hexdigit())).then_some(hash)
    }
}

/// The entries of `status.history` as deployments, in Flux's order (most recently reconciled
/// first). Entries without a first time are skipped: Flux always writes one.
pub fn from_flux(kind: AppKind, history: Option<&serde_json::Value>) -> Vec<Deployment> {
    let Some(entries) = history.and_then(|history| history.as_array()) else { return Vec::new() };
    let text =
        |entry: &serde_json::Value, name: &str| entry.get(name).and_then(|value| value.as_str()).map(String::from);
    entries
        .iter()
        .filter_map(|entry| match kind {
            AppKind::Kustomization => Some(Deployment {
                revision: entry.pointer("/metadata/revision").and_then(|value| value.as_str())?.to_string(),
                digest: text(entry, "digest")?,
                status: text(entry, "lastReconciledStatus").unwrap_or_default(),
                first: text(entry, "firstReconciled")?,
                observed: false,
                last: text(entry, "lastReconciled").unwrap_or_default(),
                duration: text(entry, "lastReconciledDuration"),
                reconciliations: entry.get("totalReconciliations").and_then(|value| value.as_i64()),
                release: None,
                commit: None,
            }),
            AppKind::HelmRelease => {
                let chart_version = text(entry, "chartVersion").unwrap_or_default();
                Some(Deployment {
                    digest: format!("{chart_version}/{}", text(entry, "configDigest").unwrap_or_default()),
                    revision: chart_version,
                    status: text(entry, "status").unwrap_or_default(),
                    first: text(entry, "firstDeployed")?,
                    observed: false,
                    last: text(entry, "lastDeployed").unwrap_or_default(),
                    duration: None,
                    reconciliations: None,
                    release: entry.get("version").and_then(|value| value.as_i64()),
                    commit: None,
                })
            }
        })
        .collect()
}

/// A short, stable digest of what Flux's history says (identities and statuses, not the times
/// it updates on every reconcile): when it is the one a ledger last merged, there is nothing new.
pub fn fingerprint(flux: &[Deployment]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for deployment in flux {
        hasher.update(deployment.identity().as_bytes());
        hasher.update(b"\n");
    }
    hasher.finalize().iter().take(8).map(|byte| format!("{byte:02x}")).collect()
}

/// The [`fingerprint`] of a `status.history` as the API gives it: a HelmRelease's entries carry a
/// release `version`, a Kustomization's do not. `None` for an empty history.
pub fn history_fingerprint(history: &serde_json::Value) -> Option<String> {
    let first = history.as_array()?.first()?;
    let kind = if first.get("version").is_some() { AppKind::HelmRelease } else { AppKind::Kustomization };
    Some(fingerprint(&from_flux(kind, Some(history))))
}

/// Merges what Flux shows now (`flux`, in Flux's order) into what was kept (`kept`, oldest
/// first), and returns whether it learnt something worth keeping: a new deployment or a new
/// status (times and counts are updated too, but alone they are not worth a write). Idempotent:
/// merging the same look twice learns nothing the second time.
///
/// A deployment seen before is updated (last time, count, a Helm release's status); a new one is
/// added. A Kustomization revision that moved onto a snapshot Flux already had (its digest and
/// status were kept under another revision) is dated when Flux last reconciled it, marked
/// `observed`: Flux's `firstReconciled` is the other revision's.
pub fn merge(kept: &mut Vec<Deployment>, flux: &[Deployment]) -> bool {
    let mut changed = false;
    for seen in flux.iter().rev() {
        let identity = seen.identity();
        if let Some(known) = kept.iter_mut().find(|known| known.identity() == identity) {
            // Flux moves the last time on every reconcile: only a new status is worth a write,
            // but what is written is the newest.
            changed |= known.status != seen.status;
            let commit = known.commit.take();
            *known = Deployment { first: known.first.clone(), observed: known.observed, commit, ..seen.clone() };
            continue;
        }
        let mut new = seen.clone();
        let moved = seen.release.is_none()
            && kept.iter().any(|known| {
                known.release.is_none()
                    && known.digest == seen.digest
                    && known.status == seen.status
                    && known.first == seen.first
            });
        if moved {
            new.first.clone_from(&seen.last);
            new.observed = true;
        }
        kept.push(new);
        changed = true;
    }
    if changed {
        kept.sort_by(|a, b| a.first_seconds().cmp(&b.first_seconds()).then_with(|| a.first.cmp(&b.first)));
    }
    changed
}

/// Sets the commit of every deployment of its revision that has none; returns whether any was set.
pub fn attach_commits(kept: &mut [Deployment], commits: &[CommitInfo]) -> bool {
    let mut changed = false;
    for deployment in kept.iter_mut().filter(|deployment| deployment.commit.is_none()) {
        let Some(sha) = deployment.commit_sha() else { continue };
        if let Some(commit) = commits.iter().find(|commit| commit.sha == sha) {
            deployment.commit = Some(commit.clone());
            changed = true;
        }
    }
    changed
}

#[cfg(test)]
mod tests;
