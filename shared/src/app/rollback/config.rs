//! `app rollback` of an app whose change lives in the config repo (a HelmRelease's chart version
//! or values; a source that follows a tag, a semver range or an artifact): what `app add` wrote
//! for it there (its definition `apps/<app>/` and this cluster's overlay `<cluster
//! path>/apps/<app>/`, docs/layout.md) restored as it was at the config commit that asked for its
//! last good deployment. Flux keeps no config commit in its history: as `app history` does, a
//! deployment belongs to the newest commit that changed the app's files at or before it was first
//! deployed.

use serde_json::Value;

use crate::deployments::{self, AppKind, Deployment};
use crate::error::{Error, Result};
use crate::git::log::LoggedCommit;

/// The Helm release statuses of a release that was installed and worked.
const GOOD: [&str; 2] = ["deployed", "superseded"];
/// The reason Flux gives a Kustomization snapshot that applied and passed its health checks.
pub(super) const SUCCEEDED: &str = "ReconciliationSucceeded";

/// The config repo directories of the app `name` `app add` added, on the cluster whose
/// directory is `cluster_path`.
pub(super) fn app_dirs(name: &str, cluster_path: &str) -> Vec<String> {
    vec![format!("apps/{name}"), format!("{}/apps/{name}", cluster_path.trim_matches('/'))]
}

/// The last deployment before the current one that worked and deployed something else, from
/// the app's `status.history`: a Helm release Helm deployed (another chart version or other
/// values), a Kustomization snapshot that succeeded (other manifests); and the current one.
pub(super) fn last_good_deployment(app: &Value) -> Result<(Deployment, Deployment)> {
    let helm = app["kind"] == "HelmRelease";
    let kind = if helm { AppKind::HelmRelease } else { AppKind::Kustomization };
    let history = deployments::from_flux(kind, app.pointer("/status/history"));
    let name = app["metadata"]["name"].as_str().unwrap_or_default();
    let Some(current) = history.first() else {
        return Err(Error::usage(
            format!("{name} has not been deployed yet: there is nothing to roll back"),
            "`kubectl gitops app status NAME` shows why",
        ));
    };
    let worked = |deployment: &Deployment| {
        if helm { GOOD.contains(&deployment.status.as_str()) } else { deployment.status == SUCCEEDED }
    };
    history
        .iter()
        .skip(1)
        .find(|deployment| worked(deployment) && deployment.digest != current.digest)
        .map(|target| (target.clone(), current.clone()))
        .ok_or_else(|| {
            Error::usage(
                format!("{name} has no earlier deployment that worked and deployed something else in the 5 Flux keeps"),
                "name the config commit to go back to with --to (`kubectl gitops app history NAME` lists them)",
            )
        })
}

/// What the deployment asked for, for the commit message.
pub(super) fn asked_for(deployment: &Deployment) -> String {
    match deployment.release {
        Some(release) => format!(", which asked for chart {} (Helm release {release})", deployment.revision),
        None => format!(", which asked for {}", deployment.revision),
    }
}

/// The config commit that asked for `target`: the newest commit of `log` (newest first) that
/// changed the app's files at or before it was first deployed. Times are seconds: a commit made
/// within the second `target` was deployed can be the one that asked for `current` (a change made
/// right after a deployment, as scripts do); the commit `current` is matched to is never `target`'s
/// unless the app's files did not change between them.
pub(super) fn config_commit(log: &[LoggedCommit], target: &Deployment, current: &Deployment) -> Result<String> {
    let touching: Vec<(u64, &str)> = log
        .iter()
        .filter(|commit| commit.touches_path)
        .filter_map(|commit| Some((crate::duration::parse_timestamp(&commit.info.time)?, commit.info.sha.as_str())))
        .collect();
    let at_or_before = |deployment: &Deployment| {
        let deployed = crate::duration::parse_timestamp(deployed_at(deployment))?;
        touching.iter().position(|(made, _)| *made <= deployed).map(|at| (at, deployed))
    };
    let Some((mut at, deployed)) = at_or_before(target) else {
        return Err(Error::usage(
            format!(
                "no commit of the config repo changed the app's files before {} was deployed ({})",
                target.revision,
                deployed_at(target)
            ),
            "name the config commit to go back to with --to (`kubectl gitops app history NAME` lists them)",
        ));
    };
    if at_or_before(current).map(|(current_at, _)| current_at) == Some(at) {
        if touching[at].0 == deployed && at + 1 < touching.len() {
            at += 1;
        } else {
            return Err(Error::usage(
                format!(
                    "the app's files in the config repo did not change between {} and {}: its source moved on by itself",
                    target.revision, current.revision
                ),
                "pin the earlier version in its definition (a tag, a chart version) with `kubectl gitops app add … --update`",
            ));
        }
    }
    Ok(touching[at].1.to_string())
}

/// When a deployment was made: a Kustomization snapshot's first reconcile; a Helm release's last
/// deployment (Helm carries the release's first install over into every upgrade's
/// `firstDeployed`).
fn deployed_at(deployment: &Deployment) -> &str {
    if deployment.release.is_some() { &deployment.last } else { &deployment.first }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use serde_json::json;

    use super::*;
    use crate::git::log::CommitInfo;

    fn release(history: Value) -> Value {
        json!({"kind": "HelmRelease", "metadata": {"name": "greeter"}, "status": {"history": history}})
    }

    fn entry(version: i64, chart: &str, digest: &str, status: &str, deployed: &str) -> Value {
        json!({"name": "greeter", "namespace": "default", "version": version, "chartName": "hello",
               "chartVersion": chart, "configDigest": digest, "status": status,
               "firstDeployed": deployed, "lastDeployed": deployed, "digest": format!("sha256:{version}")})
    }

    fn commit(sha: &str, time: &str, touches_path: bool) -> LoggedCommit {
        let info = CommitInfo {
            sha: sha.into(),
            author: "a".into(),
            email: "a@example.com".into(),
            time: time.into(),
            subject: sha.into(),
            reverts: None,
        };
        LoggedCommit { info, parents: Vec::new(), touches_path }
    }

    #[test]
    fn the_target_is_the_last_release_that_worked_and_deployed_something_else() {
        let history = release(json!([
            entry(4, "0.2.0", "sha256:b", "deployed", "2026-12-06T10:04:00Z"),
            entry(3, "0.2.0", "sha256:b", "superseded", "2026-12-06T10:03:00Z"),
            entry(2, "0.1.0", "sha256:c", "failed", "2026-12-06T10:02:00Z"),
            entry(1, "0.1.0", "sha256:a", "superseded", "2026-12-06T10:01:00Z"),
        ]));
        let (target, _) = last_good_deployment(&history).unwrap();
        assert_eq!((target.revision.as_str(), target.release), ("0.1.0", Some(1)));
        let only_same = release(json!([
            entry(2, "0.2.0", "sha256:b", "deployed", "2026-12-06T10:02:00Z"),
            entry(1, "0.2.0", "sha256:b", "superseded", "2026-12-06T10:01:00Z"),
        ]));
        assert!(last_good_deployment(&only_same).unwrap_err().to_string().contains("no earlier deployment"));
        assert!(last_good_deployment(&release(json!([]))).unwrap_err().to_string().contains("not been deployed yet"));
    }

    #[test]
    fn a_release_belongs_to_the_newest_config_commit_of_the_app_before_it() {
        let (target, now) = last_good_deployment(&release(json!([
            entry(2, "0.2.0", "sha256:b", "deployed", "2026-12-06T10:05:00Z"),
            entry(1, "0.1.0", "sha256:a", "superseded", "2026-12-06T10:02:00Z"),
        ])))
        .unwrap();
        let log = [
            commit("c4", "2026-12-06T10:04:00Z", true),
            commit("c3", "2026-12-06T10:02:00Z", false),
            commit("c2", "2026-12-06T10:01:30Z", true),
            commit("c1", "2026-12-06T10:00:00Z", true),
        ];
        assert_eq!(config_commit(&log, &target, &now).unwrap(), "c2");
        assert!(config_commit(&log[..2], &target, &now).unwrap_err().to_string().contains("before 0.1.0 was deployed"));
        // The next change committed within the second the target was deployed.
        let quick = [commit("c5", "2026-12-06T10:02:00Z", true), commit("c2", "2026-12-06T10:01:30Z", true)];
        assert_eq!(config_commit(&quick, &target, &now).unwrap(), "c2");
        // Nothing changed in the config repo between them.
        let still = [commit("c2", "2026-12-06T10:01:30Z", true)];
        assert!(config_commit(&still, &target, &now).unwrap_err().to_string().contains("did not change between"));
        assert_eq!(asked_for(&target), ", which asked for chart 0.1.0 (Helm release 1)");
    }

    #[test]
    fn the_app_s_files_are_its_definition_and_this_cluster_s_overlay() {
        assert_eq!(app_dirs("greeter", "clusters/dev/"), ["apps/greeter", "clusters/dev/apps/greeter"]);
    }
}
