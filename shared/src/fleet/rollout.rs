//! `fleet status --rollout COMMIT`: how far one commit of the config repo has got in each cluster,
//! from what its sync and layers applied and fetched, compared with the commit in the config
//! repo's history (a later commit that contains it counts as having it).

use serde::Serialize;

use crate::readers::{AppState, AppStatus, Report};

/// Where a commit is in one cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RolloutState {
    /// The sync and its layers applied it (or a later commit) and are Ready.
    Applied,
    /// Fetched or being applied, not Ready yet.
    Progressing,
    /// Fetched, and the sync or a layer fails.
    Failed,
    /// Not fetched yet: the cluster runs an earlier commit.
    NotYet,
    /// The cluster did not answer.
    Unknown,
}

impl RolloutState {
    /// Whether the commit is there.
    pub fn is_applied(self) -> bool {
        self == RolloutState::Applied
    }

    /// The words the table prints.
    pub fn words(self) -> &'static str {
        match self {
            RolloutState::Applied => "applied",
            RolloutState::Progressing => "progressing",
            RolloutState::Failed => "failed",
            RolloutState::NotYet => "not yet there",
            RolloutState::Unknown => "unknown",
        }
    }
}

/// One cluster's state for a commit: its sync and the layers applied from the same repository
/// (`has` says whether a revision's commit is that commit or comes after it).
pub fn state(report: &Report, has: &dyn Fn(&str) -> Option<bool>) -> RolloutState {
    let Some(sync) = report.config_repo.iter().find(|row| row.name == crate::flux::bootstrap::SYNC_NAME) else {
        return RolloutState::NotYet;
    };
    let ours: Vec<&AppStatus> = report.config_repo.iter().filter(|row| row.source_url == sync.source_url).collect();
    let holds = |revision: Option<&String>| {
        revision.and_then(|revision| crate::names::full_commit(revision)).and_then(|at| has(&at)).unwrap_or(false)
    };
    if ours.iter().all(|row| holds(row.applied_revision.as_ref()) && row.state == AppState::Ready) {
        return RolloutState::Applied;
    }
    if !holds(sync.source_revision.as_ref()) && !holds(sync.applied_revision.as_ref()) {
        return RolloutState::NotYet;
    }
    if ours.iter().any(|row| failing(row)) { RolloutState::Failed } else { RolloutState::Progressing }
}

/// Failing on its own account, not only waiting: a layer whose dependency has not applied the
/// commit yet says Ready=False (`DependencyNotReady`) until kustomize-controller tries again.
fn failing(row: &AppStatus) -> bool {
    let waiting = |object: &crate::readers::ObjectStatus| {
        object.reason.as_deref().is_some_and(|reason| crate::flux::status::WAITING_REASONS.contains(&reason))
    };
    row.state == AppState::Failing && !row.objects.iter().any(|object| object.ready == "False" && waiting(object))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readers::AppKind;

    const OLD: &str = "1111111111111111111111111111111111111111";
    const NEW: &str = "2222222222222222222222222222222222222222";

    fn row(name: &str, state: AppState, applied: &str, fetched: &str) -> AppStatus {
        AppStatus {
            source_url: Some("ssh://git@127.0.0.1/fleet.git".into()),
            source_revision: Some(format!("main@sha1:{fetched}")),
            applied_revision: Some(format!("main@sha1:{applied}")),
            ..AppStatus::bare("flux-system", name, AppKind::Kustomize, state)
        }
    }

    fn report(rows: Vec<AppStatus>) -> Report {
        Report::of(Vec::new(), rows, None)
    }

    /// Asked for OLD: NEW comes after it, so both have it.
    fn has(at: &str) -> Option<bool> {
        Some(at == NEW || at == OLD)
    }

    #[test]
    fn a_commit_is_applied_fetched_failing_or_not_there_yet() {
        use AppState::{Failing, Progressing, Ready};
        let asked = |rows| state(&report(rows), &|at: &str| Some(at == NEW));
        assert_eq!(
            asked(vec![row("flux-system", Ready, NEW, NEW), row("apps", Ready, NEW, NEW)]),
            RolloutState::Applied
        );
        assert_eq!(
            asked(vec![row("flux-system", Ready, NEW, NEW), row("apps", Progressing, OLD, NEW)]),
            RolloutState::Progressing
        );
        assert_eq!(
            asked(vec![row("flux-system", Failing, OLD, NEW), row("apps", Ready, OLD, OLD)]),
            RolloutState::Failed
        );
        // A layer waiting on another that has not applied the commit yet is on its way.
        let mut tenants = row("tenants", Failing, OLD, NEW);
        tenants.objects.push(crate::readers::ObjectStatus {
            kind: "Kustomization".into(),
            namespace: "flux-system".into(),
            name: "tenants".into(),
            ready: "False".into(),
            reason: Some("DependencyNotReady".into()),
            message: Some("dependency 'flux-system/platform' revision is not up to date".into()),
            revision: None,
            suspended: false,
        });
        assert_eq!(asked(vec![row("flux-system", Ready, NEW, NEW), tenants]), RolloutState::Progressing);
        assert_eq!(
            asked(vec![row("flux-system", Ready, OLD, OLD), row("apps", Ready, OLD, OLD)]),
            RolloutState::NotYet
        );
        // A later commit holds an earlier one.
        assert_eq!(state(&report(vec![row("flux-system", Ready, NEW, NEW)]), &has), RolloutState::Applied);
        // No sync: nothing of the config repo is there.
        assert_eq!(asked(Vec::new()), RolloutState::NotYet);
    }
}
